"""The book on one GPU, in one prepared run of about 8 minutes (issue 39).

    python benchmarks/gpu_run.py [--out DIR] [--wheels .whl] [--commit HASH]
        [--budget 510] [--parts ...] [--train-batch 192 128]
        [--translator [--translator-args="--updates 3000 ..."]]
    python benchmarks/gpu_run.py --device cpu --tiny --out DIR  # the dry run
    python benchmarks/gpu_run.py --unpack DIR [--into benchmarks/results]

Each part runs in a process of its own, under a time limit (its own, and what
is left of --budget seconds); a part that fails or runs out of time is recorded
with its error, and the next one runs. In this order:

1. training: the paper's base model (the book's Transformer, d_model 512,
   h 8, 6 + 6 layers, d_ff 2048, dropout 0.1, vocabulary 37,000) trained on
   random token batches of 192 x 128 source and 192 x 128 target tokens (the
   paper's batches held about 25,000 of each) in bf16 autocast with fused
   AdamW: tokens per second, the median of 7 timed windows of 10 updates with
   the fastest and slowest; MFU against a bf16 matrix product timed in the
   same run and against the datasheet; nn.Transformer with the same weights
   on the same batches, its windows alternating with ours; torch.compile of
   our model, tried, and whether it paid; the SDPA backend and attention
   kernels of a step (PyTorch's profiler); whether a step syncs with the host
   (torch.cuda.set_sync_debug_mode("error") around one step); our model again
   at 96 and 384 sentences a batch (5 windows each), to see whether the
   batch size holds the speed back.
2. nbval: every chapter (book/NN_*.ipynb) under nbval with the repository's
   settings (pyproject.toml: the same sanitising as on a CPU), ten kernels at
   a time, the longest chapters first; each chapter's outcome and its failing
   cells.
3. kv_cache, fused_attention, gqa_repeat: those benchmarks on the GPU,
   medians of 5 runs (7 for fused_attention) with the spread, and the
   kernels that ran (PyTorch's profiler); gqa_repeat in float32 and bfloat16,
   with a padding mask and with none (a decode step of unpadded sentences),
   so that it shows which kernels take grouped heads (enable_gqa).
4. fp16: the path Colab's T4 takes, `fit` with TrainConfig(precision="fp16")
   and its GradScaler, a few updates of the base model; the losses must stay
   finite.
5. multi_head_attention: chapter 5's module against its peers on the GPU,
   medians of 7 rounds with the range (last of the timings: it runs only if
   the budget leaves time).
6. translator (only with --translator): benchmarks/train_gettext.py --device
   cuda, once per --translator-args (each string passed on to one run, last,
   so that it wins: `--translator-args="--set dropout=0.4"` again and again
   is a dev sweep), all the runs at once, each ended by --seconds before the
   part's time is up; with --translator-dev, each run's weights decoded on
   the dev split on the device after it (evaluate_gettext.py: scores and
   translations); every run's dev-loss curve, record and dev decoding in
   gpu_run.json, and the weights of the 4 best in gettext_zh_HHMMSS_N.pt
   (the part's start, and N the run's place among --translator-args): the
   best by constrained dev BLEU when decoded, else by the dev loss of their
   last evaluation. It does not fit in the default
   budget beside the rest: run it alone (--parts translator --translator
   --budget 560, the call's timeout_s 590: up to 540 s for the runs) or
   raise --budget and the call's timeout.

Results in --out (default $OUT): gpu_run.json (every part, each with the
device, torch, CUDA, date and commit), gpu_run.md (the tables), gpu_run.log
(every part's output) and, with --translator, up to 4 gettext_zh_*.pt: at
most the 8 files the device tool brings back. The benchmarks' own files (kv_cache_cuda.*,
gqa_repeat_cuda.*, fused_attention_cuda.*, multi_head_attention_cuda.*) travel
inside gpu_run.json;
--unpack writes them, gpu_run.json and gpu_run.md to benchmarks/results/.
--device cpu --tiny runs every part at toy sizes, each in seconds once its
process has imported torch (tests/test_gpu_run.py), with nbval on two probe
notebooks, one made to fail.

On a lent GPU machine (the device tool: Python 3.12, torch 2.11, no package
registry):
1. here: `python tools/gpu_wheels.py` fills .whl/ (git-ignored) with the wheels
   of benchmarks/gpu_requirements.txt and the catalogs chapter 7 reads;
2. one call of the tool's run, with carry [".whl"] and timeout_s 570, command
   `PYTHONUNBUFFERED=1 python3 benchmarks/gpu_run.py --wheels .whl --commit
   HASH` where HASH is `git rev-parse HEAD` here (the copy there has no .git;
   commit first, so that the hash names what ran);
3. then, here: `python benchmarks/gpu_run.py --unpack FILES_AT` (the reply's
   files_at) and commit by path benchmarks/results/gpu_run.json,
   gpu_run.md, kv_cache_cuda.*, gqa_repeat_cuda.*, fused_attention_cuda.* and
   multi_head_attention_cuda.*;
   the translators' dev decodings (--translator-dev) go to
   benchmarks/gettext_sweep.py, or gettext_zh_*.pt are judged on dev here
   (benchmarks/evaluate_gettext.py --split dev --model FILE).
"""

import argparse
import concurrent.futures
import contextlib
import copy
import datetime
import json
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import xml.etree.ElementTree as ElementTree
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# in the order they run: the most wanted first, the timings on an idle GPU
PARTS = (
    "training",
    "nbval",
    "kv_cache",
    "fused_attention",
    "gqa_repeat",
    "fp16",
    "multi_head_attention",
    "translator",
)
BASE = dict(d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1)
# the GPU run, and the dry run (--tiny) at toy sizes
SIZES = {
    "gpu": {
        "limits_s": {
            "training": 150,
            "nbval": 270,
            "kv_cache": 60,
            "fused_attention": 40,
            "gqa_repeat": 45,
            "fp16": 50,
            "multi_head_attention": 90,
            "translator": 540,  # alone in a call: --parts translator
        },
        "model": BASE,
        "vocab": 37000,  # the paper's shared BPE vocabulary (En-De)
        "batch": 192,
        "length": 128,
        "warm_up": 5,
        "windows": 7,
        "steps_per_window": 10,
        "sweep": [96, 384],  # sentences: half and twice the batch above
        "matmul_n": 8192,
        "compile_backend": "inductor",
        "kv_cache": ["--repeats", "5"],
        "gqa_repeat": [
            "--dtypes", "float32", "bfloat16", "--masks", "padding", "none",
            "--min-time", "0.02", "--repeats", "5",
        ],
        "fused_attention": [],
        "multi_head_attention": ["--min-run-time", "0.2", "--repeats", "7"],
        "fp16": dict(
            task="grammar", n=None, model=BASE, max_tokens=8192, warm_up=5,
            timed=20,
        ),
        "nbval_jobs": 10,
    },
    "tiny": {
        "limits_s": dict.fromkeys(PARTS, 120),
        "model": dict(d_model=32, n_heads=4, n_layers=1, d_ff=64, dropout=0.1),
        "vocab": 100,
        "batch": 2,
        "length": 8,
        "warm_up": 1,
        "windows": 5,
        "steps_per_window": 1,
        "sweep": [1, 4],
        "matmul_n": 128,
        "compile_backend": "eager",  # dynamo without a C++ build: seconds
        "kv_cache": [
            "--lengths", "4", "8", "--batches", "1", "2",
            "--new-tokens", "4", "8", "--repeats", "5",
        ],
        "gqa_repeat": [
            "--batch", "2", "--decode-length", "32", "--prefill-length",
            "16", "--min-time", "0.001", "--repeats", "5", "--threads", "1",
            "--masks", "padding", "none",
        ],
        "fused_attention": ["--lengths", "16", "32", "--repeats", "5"],
        "multi_head_attention": [
            "--lengths", "16", "--repeats", "5", "--min-run-time", "0.01",
        ],
        "fp16": dict(
            task="numbers",
            n=16,
            model=dict(
                d_model=32, n_heads=4, n_layers=1, d_ff=64, dropout=0.1
            ),
            max_tokens=64,
            warm_up=1,
            timed=2,
        ),
        "nbval_jobs": 2,
    },
}  # fmt: skip
# Dense bf16 tensor-core peaks from NVIDIA's datasheets (half the figures
# they print "with sparsity"), by a piece of torch.cuda.get_device_name()
DATASHEET_BF16 = {
    "H200": 989.5e12,
    "H100 80GB HBM3": 989.5e12,  # H100 SXM5
    "H100 NVL": 835.5e12,
    "H100 PCIe": 756.5e12,
    "A100": 312e12,
}
RESULT_FILE = re.compile(r"[a-z0-9_]+_(cpu|cuda)\.(json|md)")


# ---------------------------------------------------------------- helpers


def spread(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": values,
    }


def environment(device: str, commit: str | None) -> dict:
    """What a result needs beside it: device, versions, date, commit; on a
    CPU without importing torch (about 2 s that the parent and the nbval
    part need for nothing else)."""
    name, capability, cudnn = f"{platform.machine()} CPU", None, None
    if device == "cuda":
        import torch

        name = torch.cuda.get_device_name()
        capability = ".".join(map(str, torch.cuda.get_device_capability()))
        cudnn = torch.backends.cudnn.version()
    version = torch_version()
    return {
        "device": name,
        "compute_capability": capability,
        "torch": version.__version__,
        "cuda": version.cuda,
        "cudnn": cudnn,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(
            timespec="seconds"
        ),
        "commit": commit,
    }


def torch_version():
    """torch/version.py (torch.__version__ and torch.version.cuda are its),
    read without importing torch."""
    import importlib.util

    if "torch" in sys.modules:
        return sys.modules["torch"].version
    folder = importlib.util.find_spec("torch").submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location(
        "torch_version", Path(folder) / "version.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git_commit() -> str | None:
    """HEAD of the repository, where it is one (the device's copy is not)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def run_command(command, timeout: float, env=None, cwd=ROOT, session=True):
    """(return code or None when it ran out of time, output): the command in
    a session of its own, killed with all it started when time runs out
    (session=False: in this one's process group, so that killing this one's
    group kills it too; only the command itself is killed at its time)."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=session,
    )
    try:
        output, _ = process.communicate(timeout=max(timeout, 1))
        return process.returncode, output
    except subprocess.TimeoutExpired:
        if session:
            os.killpg(process.pid, signal.SIGKILL)
        else:  # its Jupyter kernel quits when its parent is gone
            process.kill()
        output, _ = process.communicate()
        return None, output


def tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------- part: training


def step_flops(config, batch: int, t_src: int, t_tgt: int) -> dict:
    """Floating-point operations of one training step (forward and
    backward: 3 x the forward's), counting each multiply-add as 2: the
    matrix products by weights, and attention's two products per layer
    (Q K^T and the weighted sum), a causal one counted whole (PaLM's
    convention for MFU)."""
    d, d_ff, n = config.d_model, config.d_ff, config.n_layers
    src, tgt = batch * t_src, batch * t_tgt  # tokens
    weights = n * src * (4 * d * d + 2 * d * d_ff)  # encoder layers
    weights += n * tgt * (6 * d * d + 2 * d * d_ff)  # decoder: self, cross
    weights += n * src * 2 * d * d  # cross-attention's keys and values
    weights += tgt * d * config.vocab_size  # output projection
    attention = 2 * n * batch * d * (t_src * t_src + t_tgt * t_tgt)
    attention += 2 * n * batch * d * t_tgt * t_src  # cross-attention
    return {
        "weights": 3 * 2 * weights,
        "attention": 3 * 2 * attention,
        "total": 3 * 2 * (weights + attention),
    }


def datasheet_peak(name: str) -> float | None:
    for piece, peak in DATASHEET_BF16.items():
        if piece in name:
            return peak
    return None


def matmul_peak(device: str, n: int, repeats: int = 7) -> dict:
    """bf16 FLOP/s of an n x n x n product on random data: the median of
    `repeats` runs of 10 products, with the spread."""
    import torch

    generator = torch.Generator().manual_seed(0)
    a, b = (
        torch.randn(n, n, generator=generator).to(device, torch.bfloat16)
        for _ in range(2)
    )
    for _ in range(3):
        a @ b
    rates = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        for _ in range(10):
            a @ b
        sync(device)
        rates.append(10 * 2 * n**3 / (time.perf_counter() - start))
    return {"n": n, "flops_per_s": spread(rates)}


def trainer(model, batches, device: str):
    """One training step of `model` (bf16 autocast, fused AdamW) on the next
    of `batches`, and nothing that waits for the GPU."""
    import torch
    import torch.nn.functional as F

    optimizer = torch.optim.AdamW(
        model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, fused=True
    )
    position = [0]

    def step():
        src, tgt_in, tgt_out = batches[position[0] % len(batches)]
        position[0] += 1
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(src, tgt_in)
            loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def window_seconds(step, steps: int, device: str) -> float:
    import torch

    if device == "cuda":  # events: no host clock inside the window
        start, end = (torch.cuda.Event(enable_timing=True) for _ in "se")
        start.record()
        for _ in range(steps):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    begin = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - begin


def alternating(steps: dict, windows: int, per_window: int, device: str):
    """{name: seconds of each window}, the models' windows alternating, in
    both orders, so that a slow moment hits them all."""
    times = {name: [] for name in steps}
    for window in range(windows):
        names = list(steps)[:: 1 if window % 2 == 0 else -1]
        for name in names:
            times[name].append(window_seconds(steps[name], per_window, device))
    return times


def host_syncs(step, device: str) -> str:
    """'none' when one step runs under torch.cuda.set_sync_debug_mode
    ("error"), else the error: the operation that waited for the GPU."""
    import torch

    if device != "cuda":
        return "not checked: no GPU, nothing to wait for"
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
        return "none"
    except RuntimeError as error:
        return str(error).strip().splitlines()[0][:300]
    finally:
        torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()


def counted_flops(model, batch, device: str) -> dict:
    """torch.utils.flop_counter's count of one forward and backward."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    src, tgt_in, _ = batch
    with FlopCounterMode(display=False) as counter:
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(src, tgt_in)
        logits.float().sum().backward()
    model.zero_grad(set_to_none=True)
    by_operator = {
        str(name): count
        for name, count in counter.get_flop_counts()["Global"].items()
    }
    return {"total": counter.get_total_flops(), "by_operator": by_operator}


def training_part(args, sizes, save) -> dict:
    import torch
    from results_files import kernels_of
    from transformer import TorchTransformer

    from transformer_course.transformer import Transformer, TransformerConfig

    device, s = args.device, sizes
    if args.train_batch:
        s = {**s, "batch": args.train_batch[0], "length": args.train_batch[1]}
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=s["vocab"], **s["model"])
    ours = Transformer(config).to(device).train()
    theirs = TorchTransformer(copy.deepcopy(ours)).to(device).train()
    B, T = s["batch"], s["length"]
    batches = random_batches(s["vocab"], B, T, device)
    flops = step_flops(config, B, T, T)
    counted = attempt(counted_flops, ours, batches[0], device)
    steps = {
        "Transformer (this book)": trainer(ours, batches, device),
        "nn.Transformer": trainer(theirs, batches, device),
    }
    for step in steps.values():
        for _ in range(s["warm_up"]):
            step()
    sync(device)
    syncs = attempt(host_syncs, steps["Transformer (this book)"], device)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = alternating(steps, s["windows"], s["steps_per_window"], device)
    memory = None
    if device == "cuda":
        memory = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    kernels = {
        name: attempt(kernels_of, step, device) for name, step in steps.items()
    }
    peak = matmul_peak(device, s["matmul_n"])
    tokens = 2 * B * T * s["steps_per_window"]  # source + target, a window
    work = flops["total"] * s["steps_per_window"]
    datasheet = datasheet_peak(environment(device, None)["device"])
    rows = {}
    for name, seconds in times.items():
        rows[name] = rates(seconds, tokens, work, peak, datasheet)
    reference = times["nn.Transformer"]
    for name in ("Transformer (this book)",):
        ratios = [b / a for a, b in zip(times[name], reference, strict=True)]
        rows[name]["tokens_per_s_over_nn_transformer"] = spread(ratios)
    sweep = attempt(batch_sweep, ours, config, s, device, peak, datasheet)
    result = {
        "model": {"vocab_size": s["vocab"], **s["model"]},
        "batch": {"sentences": B, "source_tokens": T, "target_tokens": T},
        "precision": "bf16 autocast",
        "optimizer": "AdamW(fused=True)",
        "windows": s["windows"],
        "steps_per_window": s["steps_per_window"],
        "warm_up_steps": s["warm_up"],
        "flops_per_step": flops,
        "flop_counter_per_step": counted,
        "matmul_peak": peak,
        "datasheet_peak_flops_per_s": datasheet,
        "host_syncs_in_step": syncs,
        "peak_memory_GiB": memory,
        "kernels": kernels,
        "batch_sweep": sweep,
        "compile": {"error": "not finished: stopped at the part's limit"},
        "rows": rows,
    }
    save(result)  # kept if compiling outlasts the part's limit
    compiled = try_compile(ours, batches, steps, s, device)
    for name, seconds in compiled.pop("times", {}).items():
        rows[name] = rates(seconds, tokens, work, peak, datasheet)
    result["compile"] = compiled
    return result


def random_batches(vocab_size: int, B: int, T: int, device: str, n=4):
    """n (source, decoder input, decoder target) batches of B x T random
    ids >= 3: no padding, <bos> or <eos>."""
    import torch

    generator = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(n):
        src, tgt = (
            torch.randint(3, vocab_size, (B, T + k), generator=generator)
            for k in (0, 1)
        )
        batches.append(
            (src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device))
        )
    return batches


def batch_sweep(model, config, s, device, peak, datasheet) -> list[dict]:
    """Our model, eager, at the other batch sizes of s["sweep"] (sentences
    of s["length"] tokens): 5 windows each, after 2 untimed steps."""
    import torch

    rows, T, per_window = [], s["length"], s["steps_per_window"]
    for B in s["sweep"]:
        step = trainer(model, random_batches(s["vocab"], B, T, device), device)
        for _ in range(2):
            step()
        seconds = [window_seconds(step, per_window, device) for _ in range(5)]
        work = step_flops(config, B, T, T)["total"] * per_window
        tokens = 2 * B * T * per_window
        rows.append(
            {"sentences": B, **rates(seconds, tokens, work, peak, datasheet)}
        )
        del step
        if device == "cuda":
            torch.cuda.empty_cache()
    return rows


def attempt(function, *arguments):
    """function(*arguments), or {"error": ...}: a measurement beside the
    main one must not lose the part."""
    try:
        return function(*arguments)
    except Exception as error:  # noqa: BLE001 (recorded as the result)
        return {"error": f"{type(error).__name__}: {error}"[:500]}


def rates(seconds, tokens, work, peak, datasheet) -> dict:
    measured = peak["flops_per_s"]["median"]
    row = {
        "window_s": spread(seconds),
        "tokens_per_s": spread([tokens / t for t in seconds]),
        "mfu_measured_peak": spread([work / t / measured for t in seconds]),
    }
    if datasheet:
        row["mfu_datasheet"] = spread([work / t / datasheet for t in seconds])
    return row


def try_compile(model, batches, steps, s, device) -> dict:
    """torch.compile of our model, timed against the eager one (windows
    alternating); an error is recorded, not raised."""
    import torch

    try:
        compiled = torch.compile(model, backend=s["compile_backend"])
        step = trainer(compiled, batches, device)
        start = time.perf_counter()
        for _ in range(max(2, s["warm_up"])):  # the first steps compile
            step()
        sync(device)
        seconds = time.perf_counter() - start
        eager = "Transformer (this book)"
        both = {"compiled": step, eager: steps[eager]}
        times = alternating(both, s["windows"], s["steps_per_window"], device)
    except Exception as error:  # noqa: BLE001 (any failure is a result)
        return {
            "backend": s["compile_backend"],
            "error": f"{type(error).__name__}: {error}"[:500],
        }
    pairs = zip(times[eager], times["compiled"], strict=True)
    speedup = [a / b for a, b in pairs]
    return {
        "backend": s["compile_backend"],
        "warm_up_s": round(seconds, 1),
        "speedup_over_eager": spread(speedup),
        "paid": statistics.median(speedup) > 1,
        "times": {f"{eager}, torch.compile": times["compiled"]},
    }


# ------------------------------------------------- parts: the benchmarks


def benchmark_part(name: str):
    """A part that runs benchmarks/<name>.py's main on the device, writing
    into a temporary folder whose files travel in the result."""

    def part(args, sizes, save) -> dict:
        module = __import__(name)
        device_flag = "--device" if name == "gqa_repeat" else "--devices"
        with tempfile.TemporaryDirectory() as folder:
            module.main(
                [device_flag, args.device, "--write", folder, *sizes[name]]
            )
            files = {}
            for path in sorted(Path(folder).iterdir()):
                text = path.read_text(encoding="utf-8")
                files[path.name] = (
                    json.loads(text) if path.suffix == ".json" else text
                )
        summary = {}
        for document in files.values():
            if isinstance(document, dict):
                summary = kernel_summary(name, document)
        return {"kernels": summary, "files": files}

    return part


def kernel_summary(name: str, document: dict) -> dict:
    """The kernels a benchmark's JSON names, gathered for gpu_run.md."""
    if name == "kv_cache":
        ran = document["decode_step_kernels"]
        return {"decode step": ran["sdpa_backends"] + ran["attention_kernels"]}
    if name == "multi_head_attention":
        return {}  # times only: the module's own paths, no profiler trace
    if name == "fused_attention":
        return {
            dtype: ran["sdpa_backends"] + ran["attention_kernels"]
            for dtype, ran in document["kernels_ran"].items()
        }
    kernels = {}
    for row in document["rows"]:
        key = (
            f"{row['shape']} {row['dtype']} mask {row['mask']} "
            f"h_kv={row['h_kv']} {row['method']}"
        )
        kernels[key] = row.get("error") or row["kernels"] + [
            k["name"] for k in row.get("device_kernels", [])[:1]
        ]
    return kernels


# ------------------------------------------------------------ part: fp16


def fp16_part(args, sizes, save) -> dict:
    import math

    from training_gpu import speed

    from transformer_course.training import make_task

    s = sizes["fp16"]
    if s["n"] is None:
        task = make_task(s["task"])
    else:
        task = make_task(
            s["task"], n_train=s["n"], n_test=s["n"], n_validation=s["n"]
        )
    result = speed(
        task,
        "fp16",
        s["max_tokens"],
        s["warm_up"],
        s["timed"],
        device=args.device,
        model=s["model"],
    )
    if not all(math.isfinite(loss) for loss in result["losses"]):
        raise RuntimeError(f"fp16 training losses not finite: {result}")
    if not result["grad_scale"] or not math.isfinite(result["grad_scale"]):
        raise RuntimeError(f"GradScaler's scale is {result['grad_scale']}")
    return {"task": s["task"], "model": s["model"], **result}


# ----------------------------------------------------------- part: nbval


def probe_notebooks(folder: Path) -> list[Path]:
    """Two one-cell notebooks for the dry run: one whose stored output is
    right, one whose stored output nbval must reject."""
    import nbformat

    paths = []
    for name, stored in (("probe_pass", "42\n"), ("probe_fail", "41\n")):
        output = nbformat.v4.new_output("stream", name="stdout", text=stored)
        cell = nbformat.v4.new_code_cell(
            "print(6 * 7)", outputs=[output], execution_count=1
        )
        cell.id = "probe"
        notebook = nbformat.v4.new_notebook(cells=[cell])
        paths.append(folder / f"{name}.ipynb")
        nbformat.write(notebook, paths[-1])
    return paths


def chapters() -> list[Path]:
    """The chapters, the longest first (by tools/colab.py's times)."""
    paths = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    minutes = {}
    colab = ROOT / "benchmarks" / "results" / "colab_simulation.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        for name, row in json.loads(colab.read_text())["chapters"].items():
            minutes[name] = float(row["seconds"])
    return sorted(paths, key=lambda path: -minutes.get(path.stem, 0))


def junit_outcome(path: Path) -> dict:
    """Cells passed, failed and skipped, and the failures, from pytest's
    JUnit XML."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            counts["failed"] += 1
            # the text: the whole report, whose end names the error (the
            # message attribute is cut short)
            message = (problem.text or problem.get("message") or "").strip()
            failures.append({"cell": case.get("name"), "message": message})
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    for failure in failures:  # without colours: ESC [ ... m, escaped
        message = re.sub(r"(\x1b|#x1B)\[[0-9;]*m", "", failure["message"])
        failure["message"] = tail(message, 6)[:600]
    return {**counts, "failures": failures}


def nbval_one(notebook: Path, timeout: float, env) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(ROOT),
            "-c",
            str(ROOT / "pyproject.toml"),
            f"--junitxml={report}",
            str(notebook),
        ]
        start = time.perf_counter()
        code, output = run_command(command, timeout, env=env, session=False)
        record = {
            "notebook": notebook.name,
            "seconds": round(time.perf_counter() - start, 1),
            "returncode": code,
        }
        if report.exists():
            record.update(junit_outcome(report))
    if code is None:
        record["outcome"] = f"timed out after {timeout:.0f} s"
    elif code == 0 and record.get("passed") and not record.get("failed"):
        record["outcome"] = "passed"
    else:
        record["outcome"] = "failed"
        if "failures" not in record or not record["failures"]:
            record["error"] = tail(output)
    print(f"== {notebook.name}: {record['outcome']}\n{tail(output, 40)}")
    return record


def nbval_part(args, sizes, save) -> dict:
    deadline = time.monotonic() + args.part_timeout - 15
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # as in CI: a thread each
    with tempfile.TemporaryDirectory() as folder:
        if args.chapters:
            notebooks = [Path(path).resolve() for path in args.chapters]
            reason = "the notebooks --chapters names"
        elif args.tiny:
            notebooks = probe_notebooks(Path(folder))
            reason = "--tiny: two probe notebooks, not the chapters"
        else:
            notebooks, reason = chapters(), "every chapter"
        jobs = min(sizes["nbval_jobs"], len(notebooks))
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            records = list(
                pool.map(
                    lambda path: nbval_one(
                        path, deadline - time.monotonic(), env
                    ),
                    notebooks,
                )
            )
    return {
        "notebooks": reason,
        "parallel": jobs,
        "all_passed": all(r["outcome"] == "passed" for r in records),
        "chapters": sorted(records, key=lambda r: r["notebook"]),
    }


# ------------------------------------------------------ part: translator


TRANSLATORS_BACK = 4  # 15.4 MB each: 4 fit in what the device tool returns
FILE_BYTES = 16 * 2**20  # the largest file the device tool brings back
EVALUATION = re.compile(r"update (\d+): loss ([\d.]+), dev loss ([\d.na]+)")
DEV_SECONDS = 100  # kept for the dev decoding (--translator-dev), per run
DEV_KEPT = ("model_sha256", "split", "averaged", "decoding", "seconds",
            "device", "scores", "differences", "constrained", "greedy")  # fmt: skip


def train_one_translator(index, arguments, folder, args, limit):
    """benchmarks/train_gettext.py in a process of its own, into folder;
    what it printed, and its record when it finished; with args.dev, its
    weights decoded on the dev split (evaluate_gettext.py) after it."""
    start = time.perf_counter()
    out = folder / f"gettext_zh_{args.stamp}_{index}.pt"
    training = limit - 60 - (DEV_SECONDS if args.translator_dev else 0)
    command = [
        sys.executable, str(HERE / "train_gettext.py"),
        "--device", args.device, "--runs", str(folder / f"runs_{index}"),
        "--out", str(out), "--seconds", str(max(training, 10)),
        *shlex.split(arguments),
    ]  # fmt: skip
    code, output = run_command(command, limit)  # the commit: in its env
    found = {
        "arguments": arguments,
        "code": code,
        "seconds": round(time.perf_counter() - start, 1),
        "evaluations": [
            [int(step), float(loss), float(dev)]
            for step, loss, dev in EVALUATION.findall(output)
        ],
        "printed": tail(output, 6),
    }
    if code == 0 and out.exists():
        import torch

        saved = torch.load(out, map_location="cpu", weights_only=True)
        found.update(
            record=saved["record"],
            train_config=saved["train_config"],
            megabytes=round(out.stat().st_size / 1e6, 1),
        )
        if args.translator_dev:
            left = limit - (time.perf_counter() - start)
            found["dev"] = dev_evaluation(out, folder, args.device, left)
    return found, out


def dev_evaluation(
    weights: Path, folder: Path, device: str, limit, messages=None
) -> dict:
    """evaluate_gettext.py --split dev of the weights (the first `messages`
    only, for a test), decoded on the device: its scores, differences and
    translations (DEV_KEPT), or why there are none."""
    out = folder / f"dev_{weights.stem}.json"
    command = [
        sys.executable, str(HERE / "evaluate_gettext.py"), "--split", "dev",
        "--sample", "0", "--threads", "1", "--device", device,
        "--model", str(weights), "--out", str(out),
        *(["--limit", str(messages)] if messages else []),
    ]  # fmt: skip
    start = time.perf_counter()
    code, output = run_command(command, max(limit, 1))
    if code != 0 or not out.exists():
        return {"error": f"exit {code}: {tail(output, 6)}"}
    document = json.loads(out.read_text())
    kept = {key: document[key] for key in DEV_KEPT}
    return {**kept, "wall_seconds": round(time.perf_counter() - start, 1)}


def ranking_key(found: dict):
    """Best first: the highest constrained dev BLEU when the runs were
    decoded on dev, else the lowest dev loss at the run's last evaluation
    (what its averaged weights end at), not its lowest along the way."""
    scores = found.get("dev", {}).get("scores")
    if scores:
        return (0, -scores["the model, constrained"]["BLEU"])
    return (1, found["evaluations"][-1][2])


def translator_part(args, sizes, save) -> dict:
    """One train_gettext.py run per --translator-args, all at once on the
    device (a dev sweep), each decoded on dev after it with
    --translator-dev; of the weights the device tool can bring back
    (FILE_BYTES), the TRANSLATORS_BACK best (ranking_key) are copied to the
    results folder; every run's curve is kept. File names carry the part's
    start (UTC hour, minute, second) so that two calls' files differ."""
    configurations = args.translator_args or [""]
    limit = (args.part_timeout or 300) - 15  # to copy and record
    args.stamp = time.strftime("%H%M%S", time.gmtime())
    with tempfile.TemporaryDirectory() as scratch:
        with concurrent.futures.ThreadPoolExecutor(len(configurations)) as pool:
            futures = [
                pool.submit(
                    train_one_translator, i, a, Path(scratch), args, limit
                )
                for i, a in enumerate(configurations, 1)
            ]
            runs = [future.result() for future in futures]
        finished = [  # a NaN or no dev loss cannot be ranked
            (f, out)
            for f, out in runs
            if "record" in f
            and f["evaluations"]
            and all(e[2] == e[2] for e in f["evaluations"])
        ]
        small = [r for r in finished if r[1].stat().st_size <= FILE_BYTES]
        best = sorted(small, key=lambda r: ranking_key(r[0]))
        for found, out in best[:TRANSLATORS_BACK]:
            target = Path(args.out) / out.name
            target.write_bytes(out.read_bytes())
            found["file"] = out.name
    for found, _ in runs:
        print(found["arguments"], found["code"], found["printed"], sep="\n")
    return {"runs": [found for found, _ in runs]}


PART_FUNCTIONS = {
    "training": training_part,
    "kv_cache": benchmark_part("kv_cache"),
    "gqa_repeat": benchmark_part("gqa_repeat"),
    "fused_attention": benchmark_part("fused_attention"),
    "multi_head_attention": benchmark_part("multi_head_attention"),
    "fp16": fp16_part,
    "nbval": nbval_part,
    "translator": translator_part,
}


def child(args) -> int:
    """Run one part in this process; write its record to --part-out."""
    sys.path.insert(0, str(HERE))  # the benchmarks import each other
    sizes = SIZES["tiny" if args.tiny else "gpu"]
    record = {"environment": environment(args.device, args.commit or None)}
    out = Path(args.part_out)

    def save(result):  # what is done so far, in case time runs out
        partial = {**record, "status": "ok", "result": result}
        out.write_text(json.dumps(partial, indent=1) + "\n")

    try:
        result = PART_FUNCTIONS[args.part](args, sizes, save)
        record.update(status="ok", result=result)
        code = 0
    except Exception as error:  # noqa: BLE001 (recorded; the run goes on)
        traceback.print_exc()
        record.update(
            status="failed",
            error=f"{type(error).__name__}: {error}"[:2000],
        )
        code = 1
    out.write_text(json.dumps(record, indent=1) + "\n")
    return code


# ---------------------------------------------------------------- parent


def install_wheels(folder: Path, scratch: Path) -> dict:
    """pip install --target the folder's wheels; its catalogs.tar.gz
    unpacked for chapter 7 (tools/gpu_wheels.py makes both)."""
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"--wheels {folder}: no .whl files there")
    site = scratch / "site"
    command = [
        sys.executable, "-m", "pip", "install", "-q", "--no-index",
        "--no-deps", "--no-compile", "--no-cache-dir", "--upgrade",
        "--target", str(site), *map(str, wheels),
    ]  # fmt: skip
    code, output = run_command(command, 300)
    if code != 0:
        raise SystemExit(f"installing the wheels failed:\n{tail(output)}")
    installed = {"wheels": [wheel.name for wheel in wheels], "site": str(site)}
    catalogs = folder / "catalogs.tar.gz"
    if catalogs.exists():
        with tarfile.open(catalogs) as archive:
            archive.extractall(scratch / "catalogs", filter="data")
        installed["catalogs"] = str(scratch / "catalogs")
    return installed


def run_parts(args, out: Path, env, log) -> dict:
    sizes = SIZES["tiny" if args.tiny else "gpu"]
    deadline = time.monotonic() + args.budget
    records = {}
    for part in args.parts:
        if part == "translator" and not args.translator:
            records[part] = {"status": "skipped", "reason": "not asked"}
            continue
        limit = min(sizes["limits_s"][part], deadline - time.monotonic())
        if limit < 10:
            records[part] = {
                "status": "skipped",
                "reason": f"--budget {args.budget} s spent",
            }
            continue
        with tempfile.TemporaryDirectory() as folder:
            part_out = Path(folder) / "part.json"
            command = [
                sys.executable, str(Path(__file__).resolve()),
                "--part", part, "--part-out", str(part_out),
                "--part-timeout", str(round(limit)),
                "--device", args.device, "--out", str(out),
                *[f"--translator-args={a}" for a in args.translator_args or []],
                *(["--translator-dev"] if args.translator_dev else []),
                "--commit", args.commit or "",
                *(["--tiny"] if args.tiny else []),
                *(["--chapters", *args.chapters] if args.chapters else []),
                *(["--train-batch", *map(str, args.train_batch)]
                  if args.train_batch else []),
            ]  # fmt: skip
            start = time.perf_counter()
            code, output = run_command(command, limit, env=env)
            seconds = round(time.perf_counter() - start, 1)
            log.write(f"\n===== {part} ({seconds} s, limit {limit:.0f} s)\n")
            log.write(output)
            log.flush()
            if part_out.exists():  # finished, or saved before time ran out
                record = json.loads(part_out.read_text())
                if code is None:
                    record["stopped"] = f"at its limit, {limit:.0f} s"
            elif code is None:
                record = {
                    "status": "timed out",
                    "error": f"stopped after {limit:.0f} s\n{tail(output)}",
                }
            else:
                record = {"status": "failed", "error": tail(output)}
        record.update(seconds=seconds, limit_s=round(limit))
        records[part] = record
        print(f"{part}: {record['status']} in {seconds} s", flush=True)
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--tiny", action="store_true", help="toy sizes")
    parser.add_argument("--out", help="the results folder (default: $OUT)")
    parser.add_argument(
        "--budget", type=float, help="seconds for all parts (510; --tiny 600)"
    )
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=list(PARTS)
    )
    parser.add_argument("--chapters", nargs="+", help="nbval these instead")
    parser.add_argument("--wheels", type=Path, help="install these first")
    parser.add_argument("--commit", help="the commit that runs (default HEAD)")
    parser.add_argument("--translator", action="store_true")
    parser.add_argument(
        "--translator-args",
        action="append",
        help='for train_gettext.py, one string: --translator-args="..."; '
        "again for another run beside it (a sweep)",
    )
    parser.add_argument(
        "--translator-dev",
        action="store_true",
        help="decode each translator on the dev split after it, on the device "
        f"(evaluate_gettext.py; {DEV_SECONDS} s of its time kept for that)",
    )
    parser.add_argument(
        "--train-batch",
        nargs=2,
        type=int,
        metavar=("SENTENCES", "TOKENS"),
        help="the training part's batch (default 192 128; --tiny 2 8)",
    )
    parser.add_argument("--unpack", type=Path, help="a results folder")
    parser.add_argument(
        "--into", type=Path, default=ROOT / "benchmarks" / "results"
    )
    # a part's own process (run_parts starts it)
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)
    parser.add_argument("--part-out", help=argparse.SUPPRESS)
    parser.add_argument("--part-timeout", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.part:
        return child(args)
    if args.unpack:
        for path in unpack(args.unpack, args.into):
            print(f"wrote {path}")
        return 0
    out = args.out or os.environ.get("OUT")
    if not out:
        parser.error("give --out DIR (or set $OUT)")
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.chapters:  # the parts run from the repository's root
        args.chapters = [str(Path(path).resolve()) for path in args.chapters]
    if args.train_batch and min(args.train_batch) < 1:
        parser.error("--train-batch takes two positive numbers")
    if args.budget is None:
        args.budget = 600 if args.tiny else 510
    args.commit = args.commit or git_commit()
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="gpu_run_"))
    env = dict(os.environ)
    installed = None
    if args.wheels:
        installed = install_wheels(args.wheels.resolve(), scratch)
        if "catalogs" in installed:
            env["TRANSFORMER_COURSE_CATALOGS"] = installed["catalogs"]
        env["PYTHONPATH"] = installed["site"]
    paths = [str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths[::-1] if p)
    if args.commit:  # what the benchmarks record (results_files.commit)
        env["TRANSFORMER_COURSE_COMMIT"] = args.commit
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            parser.error("--device cuda: PyTorch finds no CUDA GPU")
    with open(out / "gpu_run.log", "w") as log:
        records = run_parts(args, out, env, log)
    document = {
        "script": "benchmarks/gpu_run.py",
        "tiny": args.tiny,
        "arguments": argv if argv is not None else sys.argv[1:],
        "environment": environment(args.device, args.commit),
        "budget_s": args.budget,
        "seconds": round(time.perf_counter() - started, 1),
        "wheels": installed,
        "parts": records,
    }
    (out / "gpu_run.json").write_text(json.dumps(document, indent=1) + "\n")
    summary = report(document)
    (out / "gpu_run.md").write_text(summary)
    print(summary)
    return 0


# --------------------------------------------------------- report, unpack


def report(document: dict) -> str:
    env = document["environment"]
    lines = [
        f"# The book on {env['device']}: benchmarks/gpu_run.py",
        "",
        f"{env['date']}, torch {env['torch']}, CUDA {env['cuda']}, "
        f"Python {env['python']}, commit {env['commit']}"
        + (", a dry run at toy sizes (--tiny)" if document["tiny"] else "")
        + f"; {document['seconds']} s of a {document['budget_s']:.0f} s "
        "budget.",
        "",
        "| part | status | seconds | limit s |",
        "|---|---|---:|---:|",
    ]
    parts = document["parts"]
    for name, record in parts.items():
        status = record["status"]
        if status != "ok":
            why = record.get("error") or record.get("reason", "")
            why = why.splitlines()[0] if why else ""  # a table's cell
            status = f"{status}: {why}"[:200].replace("|", "/")
        lines.append(
            f"| {name} | {status} | {record.get('seconds', '')} "
            f"| {record.get('limit_s', '')} |"
        )
    training = parts.get("training", {}).get("result")
    if training:
        lines += training_table(training)
    nbval = parts.get("nbval", {}).get("result")
    if nbval:
        lines += ["", f"## nbval ({nbval['notebooks']})", ""]
        lines += ["| notebook | outcome | cells passed | failed | s |"]
        lines += ["|---|---|---:|---:|---:|"]
        for r in nbval["chapters"]:
            lines.append(
                f"| {r['notebook']} | {r['outcome']} | {r.get('passed', '')} "
                f"| {r.get('failed', '')} | {r['seconds']} |"
            )
            for failure in r.get("failures", []):
                message = failure["message"].replace("\n", " ")[:150]
                lines.append(f"|  | {failure['cell']}: {message} | | | |")
    fp16 = parts.get("fp16", {}).get("result")
    if fp16:
        lines += [
            "",
            "## fp16 with a GradScaler (Colab's T4 path)",
            "",
            f"{fp16['task']} task, {fp16['model']}: "
            f"{fp16['tokens_per_second']:,} tokens/s, losses "
            f"{fp16['losses']}, scale {fp16['grad_scale']}.",
        ]
    translators = parts.get("translator", {}).get("result")
    if translators:
        lines += ["", "## Translators (benchmarks/train_gettext.py)", ""]
        lines += translator_table(translators["runs"])
    for name in (
        "kv_cache",
        "gqa_repeat",
        "fused_attention",
        "multi_head_attention",
    ):
        result = parts.get(name, {}).get("result")
        if result:
            for file, text in result.get("files", {}).items():
                if file.endswith(".md"):
                    lines += ["", f"## {file}", "", text.strip()]
    return "\n".join(lines) + "\n"


def translator_table(runs: list[dict]) -> list[str]:
    """One row per run: its arguments, updates, dev loss at the last
    evaluation, constrained dev BLEU and chrF when decoded there, the
    file it came back in."""
    lines = [
        "| arguments | updates | last dev loss | dev BLEU, chrF (constrained) "
        "| seconds | file |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for run in runs:
        last = run["evaluations"][-1][2] if run["evaluations"] else ""
        updates = run.get("record", {}).get("updates", "")
        scores = run.get("dev", {}).get("scores")
        dev = run.get("dev", {}).get("error", "").split("\n")[0]
        if scores:
            c = scores["the model, constrained"]
            dev = f"{c['BLEU']:.1f}, {c['chrF']:.1f}"
        lines.append(
            f"| `{run['arguments'] or '(the defaults)'}` | {updates} | {last} "
            f"| {dev} | {run['seconds']} | {run.get('file', '')} |"
        )
    return lines


def training_table(t: dict) -> list[str]:
    m = t["model"]
    peak = t["matmul_peak"]["flops_per_s"]
    datasheet = t["datasheet_peak_flops_per_s"]
    lines = [
        "",
        "## Training speed",
        "",
        f"d_model {m['d_model']}, h {m['n_heads']}, N {m['n_layers']}, d_ff "
        f"{m['d_ff']}, dropout {m['dropout']}, vocabulary {m['vocab_size']:,}"
        f"; {t['batch']['sentences']} sentences x {t['batch']['source_tokens']}"
        f" + {t['batch']['target_tokens']} tokens; {t['precision']}, "
        f"{t['optimizer']}; median of {t['windows']} windows of "
        f"{t['steps_per_window']} steps (fastest-slowest).",
        "",
        "| model | tokens/s | MFU (measured peak) | MFU (datasheet) |",
        "|---|---:|---:|---:|",
    ]

    def cell(values, scale=1.0, digits=0):
        return (
            f"{values['median'] * scale:,.{digits}f} "
            f"({values['min'] * scale:,.{digits}f}-"
            f"{values['max'] * scale:,.{digits}f})"
        )

    for name, row in t["rows"].items():
        sheet = row.get("mfu_datasheet")
        lines.append(
            f"| {name} | {cell(row['tokens_per_s'])} "
            f"| {cell(row['mfu_measured_peak'], 1, 3)} "
            f"| {cell(sheet, 1, 3) if sheet else 'no datasheet entry'} |"
        )
    ours = t["rows"]["Transformer (this book)"]
    ratio = ours["tokens_per_s_over_nn_transformer"]
    flops = t["flops_per_step"]
    counted = t["flop_counter_per_step"]
    compiled = t["compile"]
    lines += [
        "",
        f"- tokens/s over nn.Transformer's, same windows: {cell(ratio, 1, 2)}",
        f"- bf16 {t['matmul_peak']['n']}^3 product: {cell(peak, 1e-12, 1)} "
        "TFLOP/s; datasheet "
        + (f"{datasheet / 1e12:.1f} TFLOP/s" if datasheet else "none"),
        f"- FLOPs per step: {flops['total']:.4g} ({flops['attention']:.3g} in "
        f"attention); torch's FlopCounterMode: "
        + (f"{counted['total']:.4g}" if "total" in counted else str(counted)),
        f"- host syncs in a step: {t['host_syncs_in_step']}",
        f"- peak GPU memory: {t['peak_memory_GiB'] or '-'} GiB",
    ]
    for name, ran in t["kernels"].items():
        if "error" in ran:
            lines.append(f"- {name}: profiler failed, {ran['error'][:200]}")
            continue
        kernels = ", ".join(ran["attention_kernels"]) or "-"
        lines.append(
            f"- {name}: SDPA {', '.join(ran['sdpa_backends']) or 'none'}; "
            f"attention kernels: {kernels[:300]}"
        )
    sweep = t.get("batch_sweep", [])
    if isinstance(sweep, dict):  # its error
        lines.append(f"- batch sweep: failed, {sweep['error'][:200]}")
    for row in sweep if isinstance(sweep, list) else []:
        lines.append(
            f"- ours, eager, {row['sentences']} sentences: "
            f"{cell(row['tokens_per_s'])} tokens/s, MFU (measured peak) "
            f"{cell(row['mfu_measured_peak'], 1, 3)}"
        )
    if "error" in compiled:
        lines.append(f"- torch.compile: failed, {compiled['error'][:200]}")
    else:
        lines.append(
            f"- torch.compile ({compiled['backend']}): warm-up "
            f"{compiled['warm_up_s']} s, speed-up "
            f"{cell(compiled['speedup_over_eager'], 1, 2)}, paid: "
            f"{compiled['paid']}"
        )
    return lines


def unpack(folder: Path, into: Path) -> list[Path]:
    """gpu_run.json (without the files it carries), gpu_run.md (written
    again by this version of report()) and the benchmarks' files, from a GPU
    run's results folder into `into`."""
    document = json.loads((folder / "gpu_run.json").read_text())
    summary = report(document)
    if document["tiny"] or document["environment"]["device"].endswith("CPU"):
        raise SystemExit(
            f"{folder} holds a dry run (--tiny or a CPU): not results to keep"
        )
    into.mkdir(parents=True, exist_ok=True)
    written = []
    ran = document["environment"]["commit"]
    for record in document["parts"].values():
        for name, content in record.get("result", {}).pop("files", {}).items():
            if not RESULT_FILE.fullmatch(name):
                raise SystemExit(f"unexpected file name in the results: {name}")
            text = content
            if isinstance(content, dict) and content.get("commit") != ran:
                # a run before TRANSFORMER_COURSE_COMMIT: git on the device
                # read a copy that is no checkout of the commit that ran
                if content.get("commit"):
                    content["commit_on_the_device"] = content["commit"]
                content["commit"] = ran
            if name.endswith(".json"):
                text = json.dumps(content, ensure_ascii=False, indent=1) + "\n"
            (into / name).write_text(text, encoding="utf-8")
            written.append(into / name)
    (into / "gpu_run.json").write_text(json.dumps(document, indent=1) + "\n")
    (into / "gpu_run.md").write_text(summary)
    return [*written, into / "gpu_run.json", into / "gpu_run.md"]


if __name__ == "__main__":
    sys.exit(main())
