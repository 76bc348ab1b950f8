"""Writing a benchmark's results: a JSON document and a Markdown table beside it.

The scripts that decode, time or train seeds on this machine (beam_stopping.py,
search_errors.py, gqa_repeat.py, first_loop_seeds.py...) all write the same pair
of files, headed by the script, the date, the commit and the machine, so that a
chapter can read the JSON and a reader the table. (Results written before the
commit was recorded lack it until their script runs again.)
"""

import datetime
import json
import os
import platform
import re
import subprocess
from pathlib import Path

import torch


def processor() -> tuple[str, list[str]]:
    """The processor's model name and its AVX-512 and AMX extensions, where
    Linux tells them (/proc/cpuinfo), else what platform knows and none. Two
    machines whose PyTorch both use AVX-512 kernels can still differ in the
    math libraries' code paths (AVX-512 FP16, AMX), so in their sums. The one
    description of the processor that every benchmark records."""
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        info = []
    fields = {}
    for line in info:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    model = (
        fields.get("model name") or platform.processor() or platform.machine()
    )
    flags = fields.get("flags", "").split()
    return model, sorted(f for f in flags if f.startswith(("avx512", "amx")))


ROOT = Path(__file__).resolve().parent.parent


COMMIT_VARIABLE = "TRANSFORMER_COURSE_COMMIT"


def commit() -> str:
    """The repository's HEAD, marked -dirty when files differ from it: the
    code a result was made with. $TRANSFORMER_COURSE_COMMIT, where set,
    instead: benchmarks/gpu_run.py sets it to the commit it was given, since
    on a lent GPU the copy of the repository is no checkout of it."""
    if os.environ.get(COMMIT_VARIABLE):
        return os.environ[COMMIT_VARIABLE]

    def git(*args):
        try:
            done = subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True
            )
        except OSError:  # no git on this machine
            return ""
        return done.stdout.strip()

    head = git("rev-parse", "HEAD") or "unknown"
    return head + ("-dirty" if git("status", "--porcelain", "--", ".") else "")


def provenance(command: str, commit: str, threads: int) -> dict:
    """The head of a shipped checkpoint's record: how to make it again (the
    command, the commit it was made at) and where (torch, the processor and
    its extensions, the threads, the date)."""
    model, extensions = processor()
    return {
        "command": command,
        "commit": commit,
        "torch": str(torch.__version__),
        "processor": model,
        "extensions": extensions,
        "threads": threads,
        "date": datetime.date.today().isoformat(),
    }


def machine() -> str:
    """The architecture, PyTorch's threads and version: what a timing needs."""
    return (
        f"{platform.machine()}, {torch.get_num_threads()} thread(s), "
        f"torch {torch.__version__}"
    )


def seed_summary(values) -> dict:
    """A figure over the seeds, as benchmarks/training_seeds.py writes it:
    every run's value, and their mean, min and max."""
    return {
        "runs": values,
        "mean": sum(values) / len(values),
        "min": min(values),
        "max": max(values),
    }


def write_results(
    directory: Path, stem: str, script: str, fields, table, made_at=None
):
    """directory/stem.json (script, date, commit, machine, then fields) and
    directory/stem.md (a heading and the table's lines); the JSON's path.
    made_at: the commit() the script took when it started (a long run may
    outlast a commit); by default the commit now."""
    document = {
        "script": script,
        "date": datetime.date.today().isoformat(),
        "commit": made_at or commit(),
        "machine": machine(),
        **fields,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.json"
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n")
    (directory / f"{stem}.md").write_text(
        f"# {Path(script).stem}\n\n`{script}`, {document['date']}, "
        f"{document['machine']}.\n\n" + "\n".join(table) + "\n"
    )
    return path


def profiler(device: str, profile_memory: bool = False):
    """PyTorch's profiler of the CPU's operators and, on a GPU, its kernels:
    torch.autograd.profiler.profile, made with the arguments that
    torch.profiler.profile gives it (that wrapper hands on its events). Not
    the wrapper: it asks hasattr(torch, "_inductor"), which imports
    torch._inductor and torch._dynamo (about 2 s of CPU) to read a setting of
    compiled code."""
    from torch.autograd.profiler import profile

    return profile(
        use_cpu=True,
        use_device="cuda" if device == "cuda" else None,
        profile_memory=profile_memory,
        use_kineto=True,  # as torch.profiler.profile passes it
    )


def kernels_of(run, device: str, top: int = 8) -> dict:
    """What one call of run() ran, by PyTorch's profiler: the
    scaled-dot-product-attention operators that PyTorch dispatched to (their
    names say the backend: flash, efficient, cudnn, math), and on a GPU the
    `top` kernels by GPU time, each with its calls and microseconds, and the
    names of the attention kernels among all it ran."""
    from torch.autograd import DeviceType

    with profiler(device) as trace:
        run()
        if device == "cuda":
            torch.cuda.synchronize()
    operators = sorted(
        {
            event.name
            for event in trace.function_events
            if event.name.startswith("aten::_scaled_dot_product")
            or event.name.startswith("aten::_flash_attention")
            or event.name.startswith("aten::_efficient_attention")
        }
    )
    kernels, attention = [], []
    if device == "cuda":
        rows = [
            event
            for event in trace.key_averages()
            if event.device_type == DeviceType.CUDA
        ]
        rows.sort(key=lambda event: -event.self_device_time_total)
        kernels = [
            {
                "name": event.key,
                "calls": event.count,
                "us": round(event.self_device_time_total, 1),
            }
            for event in rows[:top]
        ]
        attention = sorted(  # wherever they rank: the attention kernels
            {
                event.key
                for event in rows
                if re.search(r"flash|fmha|attention|attn|sdpa", event.key, re.I)
            }
        )
    return {
        "sdpa_operators": operators,
        "sdpa_backends": sorted({backend_of(name) for name in operators}),
        "device_kernels": kernels,
        "attention_kernels": attention,
    }


def backend_of(operator: str) -> str:
    """The SDPA backend an operator's name belongs to."""
    for backend in ("flash", "efficient", "cudnn", "math"):
        if backend in operator:
            return backend
    return operator.removeprefix("aten::")
