"""Greedy decoding with and without the KV cache, against the output length.

    python benchmarks/kv_cache.py [--lengths 16 32 64 128 256] [--threads 1]
        [--write benchmarks/results]

The model of chapter 9 (3 layers, d_model=256, h=8, d_ff=1024, vocabulary
500, random weights), one source sentence of 12 tokens that the model does
not end within 256 tokens (checked), so exactly n new tokens, float32. Times from one run, the faster of two calls.
Runs on the CPU, and on the GPU too when PyTorch finds one. --write DIR writes
a Markdown table to DIR/kv_cache_<device>.md.
"""

import argparse
import datetime
import platform
import time
from pathlib import Path

import torch

from transformer_course import (
    DecoderCache,
    NoCache,
    Transformer,
    TransformerConfig,
    greedy_decode,
)


def cpu_name() -> str:
    """The CPU's model name (Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def seconds(model, src, n, cache, device):
    best = float("inf")
    for _ in range(2):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = greedy_decode(model, src, n, cache=cache)
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    if out.size(1) != n:  # the timing is for exactly n new tokens
        raise SystemExit(
            f"the sentence ended at <eos> after {out.size(1)} of {n} tokens: "
            "choose another source sentence"
        )
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256]
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write", type=Path, default=None)
    parser.add_argument("--no-cpu", action="store_true", help="GPU only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    devices = [] if args.no_cpu else ["cpu"]
    devices += ["cuda"] if torch.cuda.is_available() else []
    for device in devices:
        torch.manual_seed(0)
        config = TransformerConfig(
            vocab_size=500, d_model=256, n_heads=8, n_layers=3, d_ff=1024
        )
        model = Transformer(config).to(device).eval()
        src = torch.randint(3, 500, (1, 12)).to(device)  # the same on GPU
        if device == "cuda":
            label = torch.cuda.get_device_name()
        else:
            label = f"{cpu_name()} CPU"
            label += f", {args.threads} thread(s)"
        lines = [
            f"# KV cache: greedy decoding on {label}, {datetime.date.today()}",
            "",
            "3 layers, d_model=256, h=8, d_ff=1024, vocabulary 500, B=1, "
            f"float32; torch {torch.__version__}.",
            "",
            "| new tokens | no cache s | cache s | speed-up |",
            "|---:|---:|---:|---:|",
        ]
        print("\n".join(lines), flush=True)
        seconds(model, src, 8, DecoderCache, device)  # warm-up
        for n in args.lengths:
            slow = seconds(model, src, n, NoCache, device)
            fast = seconds(model, src, n, DecoderCache, device)
            lines.append(
                f"| {n} | {slow:.3f} | {fast:.3f} | {slow / fast:.1f} |"
            )
            print(lines[-1], flush=True)
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            kind = "cuda" if device == "cuda" else "cpu"
            path = args.write / f"kv_cache_{kind}.md"
            path.write_text("\n".join(lines) + "\n")
            print(f"written to {path}")


if __name__ == "__main__":
    main()
