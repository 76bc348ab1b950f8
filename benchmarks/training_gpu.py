"""Chapter 7 on a GPU: training speed in fp32, bf16 and fp16, and time to target.

    python benchmarks/training_gpu.py [--output benchmarks/results/training_gpu.json]

1. Tokens per second of `fit` (the chapter's loop, unchanged) on the grammar task
   with the paper's base model (d_model=512, h=8, N=6, d_ff=2048, dropout 0.1),
   batches of about --max-tokens padded positions, in each precision: fp32
   (TF32 matrix products off, PyTorch's default), bf16 autocast, fp16 autocast
   with a GradScaler. Counted: the real (unpadded) source and target tokens of
   the timed updates, after --warm-up updates that are not timed.
2. Time to the target: the chapter's CPU configuration (TASK_CONFIGS["grammar"])
   and the base model, each in the GPU's automatic precision, trained with an
   exact-match check on 500 test sentences every 100 updates until it reaches
   95 %; the time counts training and checks. The base model twice: with the
   small model's schedule (warmup 200, factor 0.5: a peak of 1.6e-3, which
   post-LN does not survive) and with the paper's peak of about 7e-4 reached
   after 400 steps (factor 0.3).
3. A checkpoint round trip on the GPU: save, resume in a new Run, equal outputs.

Needs a CUDA GPU. Writes one JSON file with the device, the versions and the date.
`speed` runs on any device (benchmarks/gpu_run.py uses it for the fp16 path,
and on the CPU for its dry run).
"""

import argparse
import dataclasses
import datetime
import json
import platform
import time
from pathlib import Path

import torch

from transformer_course.batching import BatchStream
from transformer_course.trained_models import TASK_CONFIGS
from transformer_course.training import (
    Run,
    TrainConfig,
    exact_match,
    fit,
    make_task,
    resume,
    save_run,
)

BASE = dict(d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1)


def tokens_of(run: Run, updates: int) -> int:
    """Real source + target tokens of the next `updates` updates of a run."""
    copy = BatchStream(
        run.stream.lengths, run.stream.max_tokens, run.stream.seed
    )
    copy.load_state_dict(run.stream.state_dict())
    total = 0
    for _ in range(updates * run.config.accumulate):
        for i in next(copy):
            source, target = run.examples[i]
            total += len(source) + len(target) + 1
    return total


def speed(
    task,
    precision: str,
    max_tokens: int,
    warm_up: int,
    timed: int,
    device: str = "cuda",
    model: dict = BASE,
) -> dict:
    """Tokens per second of `fit` over `timed` updates after `warm_up`; on a
    CPU too (peak memory is then not measured: None)."""
    config = TrainConfig(
        **model,
        max_tokens=max_tokens,
        precision=precision,
        eval_every=10**6,
        updates=warm_up + timed,
        device=device,
    )
    run = Run(config, task=task)

    def sync():
        if run.device.type == "cuda":
            torch.cuda.synchronize()

    fit(run, warm_up, progress=False)
    tokens = tokens_of(run, timed)
    sync()
    start = time.perf_counter()
    fit(run, warm_up + timed, progress=False)
    sync()
    seconds = time.perf_counter() - start
    memory = None
    if run.device.type == "cuda":
        memory = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return {
        "precision": precision,
        "tokens_per_second": round(tokens / seconds),
        "updates_per_second": round(timed / seconds, 2),
        "peak_memory_GiB": memory,
        "final_loss": round(run.history[-1]["loss"], 3),
        "losses": [round(h["loss"], 4) for h in run.history if "loss" in h],
        "grad_scale": run.scaler.get_scale()
        if run.scaler.is_enabled()
        else None,
    }


def time_to_target(
    task,
    config: TrainConfig,
    target: float = 0.95,
    every: int = 100,
    limit: int = 3000,
) -> dict:
    run = Run(config, task=task)
    torch.cuda.synchronize()
    start = time.perf_counter()
    accuracy = 0.0
    while run.step < limit:
        fit(run, run.step + every, progress=False)
        accuracy = exact_match(run.model, task, "test", limit=500)
        if accuracy >= target:
            break
    torch.cuda.synchronize()
    return {
        "precision": run.precision,
        "updates": run.step,
        "seconds": round(time.perf_counter() - start, 1),
        "exact_match_500": round(accuracy, 4),
        "full_test_exact_match": round(exact_match(run.model, task, "test"), 4),
    }


def checkpoint_round_trip(task, folder: Path) -> bool:
    config = dataclasses.replace(
        TASK_CONFIGS["grammar"], updates=20, eval_every=10
    )
    run = fit(
        Run(config, task=task), 10, checkpoint=folder / "gpu.pt", progress=False
    )
    straight = fit(run, 20, progress=False)
    again = fit(
        resume(Run(config, task=task), folder / "gpu.pt"), 20, progress=False
    )
    save_run(again, folder / "gpu2.pt")
    src = torch.tensor([task.examples("test")[0][0]], device=again.device)
    tgt = torch.tensor([[1]], device=again.device)
    straight.model.eval()
    again.model.eval()
    with torch.no_grad():
        a, b = straight.model(src, tgt), again.model(src, tgt)
    return bool(torch.allclose(a, b, atol=1e-3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output",
        type=Path,
        default=Path("benchmarks/results/training_gpu.json"),
    )
    parser.add_argument("--max-tokens", type=int, default=16384)
    parser.add_argument("--warm-up", type=int, default=10)
    parser.add_argument("--timed", type=int, default=40)
    args = parser.parse_args()
    assert torch.cuda.is_available(), "this benchmark needs a CUDA GPU"
    task = make_task("grammar")
    results = {
        "device": torch.cuda.get_device_name(),
        "compute_capability": ".".join(
            map(str, torch.cuda.get_device_capability())
        ),
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "model": BASE,
        "max_tokens": args.max_tokens,
        "speed": [],
    }
    for precision in ("fp32", "bf16", "fp16"):
        torch.cuda.reset_peak_memory_stats()
        results["speed"].append(
            speed(task, precision, args.max_tokens, args.warm_up, args.timed)
        )
        print(results["speed"][-1], flush=True)
    results["to_target_small"] = time_to_target(task, TASK_CONFIGS["grammar"])
    print(results["to_target_small"], flush=True)
    base = dataclasses.replace(TASK_CONFIGS["grammar"], **BASE, max_tokens=8192)
    results["to_target_base_high_peak"] = {
        "peak_lr": round(base.peak_lr, 6),
        **time_to_target(task, base, limit=600),
    }
    print(results["to_target_base_high_peak"], flush=True)
    base = dataclasses.replace(base, warmup=400, lr_factor=0.3)
    results["to_target_base"] = {
        "peak_lr": round(base.peak_lr, 6),
        **time_to_target(task, base, limit=2000),
    }
    print(results["to_target_base"], flush=True)
    folder = args.output.parent
    folder.mkdir(parents=True, exist_ok=True)
    results["checkpoint_round_trip_equal"] = checkpoint_round_trip(task, folder)
    (folder / "gpu.pt").unlink(missing_ok=True)
    (folder / "gpu2.pt").unlink(missing_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
