"""Forward + backward time of causal self-attention, as ratios to the fastest peer.

    python benchmarks/multi_head_attention.py [--lengths 128 512 1024]
        [--min-run-time 1] [--rounds 5] [--threads 2] [--no-explicit] [--cpu-time]

Compares the book's MultiHeadAttention (is_causal=True and an explicit causal
mask) with a module in the style of LLMs-from-scratch (one fused QKV projection,
F.scaled_dot_product_attention(..., is_causal=True)), with nn.MultiheadAttention
(need_weights=False, is_causal hint) and with the explicit softmax
(return_weights=True). B=16, d_model=256, h=8. Runs on the CPU, and on the GPU
too when PyTorch finds one. Times come from one run and are reported as ratios
to the peer measured in the same run (these machines are noisy); a ratio below
1 means faster than the peer. On a busy machine, --threads 1 --cpu-time
measures CPU time, which other work does not inflate.
"""

import argparse

import torch

from transformer_course.multi_head_attention import (
    benchmark_attention,
    format_benchmark,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[128, 512, 1024]
    )
    parser.add_argument(
        "--min-run-time",
        type=float,
        default=1.0,
        help="seconds per measurement",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="alternating rounds per implementation",
    )
    parser.add_argument(
        "--threads", type=int, default=2, help="CPU threads for PyTorch"
    )
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="measure CPU time, not wall time (with --threads 1, on a busy machine)",
    )
    parser.add_argument(
        "--no-explicit",
        action="store_true",
        help="skip the explicit softmax (slow at long T)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}")
    for device in devices:
        name = (
            torch.cuda.get_device_name()
            if device == "cuda"
            else f"CPU, {torch.get_num_threads()} thread(s)"
            + (", CPU time" if args.cpu_time else ", wall time")
        )
        for length in args.lengths:
            print(
                f"\nB=16, T={length}, d_model=256, h=8, causal, "
                f"forward + backward, float32, on {name}"
            )
            times = benchmark_attention(
                length=length,
                device=device,
                rounds=args.rounds,
                min_run_time=args.min_run_time,
                explicit=not args.no_explicit,
                cpu_time=args.cpu_time and device == "cpu",
            )
            print(format_benchmark(times))


if __name__ == "__main__":
    main()
