"""Forward + backward time of MultiHeadAttention against nn.MultiheadAttention, as ratios.

    python benchmarks/multi_head_attention.py [--min-run-time 2] [--rounds 5]

Runs on the CPU, and on the GPU too when PyTorch finds one. Times come from one run
and are reported as ratios to nn.MultiheadAttention measured in the same run (these
machines are noisy); a ratio below 1 means faster than PyTorch's module.
"""

import argparse

import torch

from transformer_course.multi_head_attention import benchmark_attention, format_benchmark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-run-time", type=float, default=2.0, help="seconds per measurement")
    parser.add_argument(
        "--rounds", type=int, default=5, help="alternating rounds per implementation"
    )
    args = parser.parse_args()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        name = (
            torch.cuda.get_device_name()
            if device == "cuda"
            else f"{torch.get_num_threads()} CPU threads"
        )
        print(f"\nB=16, T=128, d_model=256, h=8, causal, forward + backward, on {name}")
        times = benchmark_attention(
            device=device, rounds=args.rounds, min_run_time=args.min_run_time
        )
        print(format_benchmark(times))


if __name__ == "__main__":
    main()
