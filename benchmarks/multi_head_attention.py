"""Forward + backward time of causal self-attention, as ratios to the fastest peer.

    python benchmarks/multi_head_attention.py [--lengths 128 512 1024]
        [--min-run-time 0.5] [--repeats 7] [--threads 1] [--cpu-time]
        [--no-explicit] [--devices cpu cuda] [--write benchmarks/results]

Compares the book's MultiHeadAttention (is_causal=True and an explicit causal
mask) with a module in the style of LLMs-from-scratch (one fused QKV projection,
F.scaled_dot_product_attention(..., is_causal=True)), with nn.MultiheadAttention
(need_weights=False, is_causal hint) and with the explicit softmax
(return_weights=True). B=16, d_model=256, h=8. Runs on the CPU, and on the GPU
too when PyTorch finds one (--devices chooses; benchmarks/gpu_run.py runs it on
the GPU alone).

Each repeat is one round of chapter 5's benchmark_attention: every
implementation in turn, each keeping its fastest block of calls of at least
--min-run-time seconds, so that a slow moment of the machine hits them all. A
repeat's times are divided by the peer's of the same repeat (these machines
are noisy: only a ratio measured together means something); the table gives,
per length and implementation, the median time and the median ratio over the
--repeats repeats (at least 5), with the ratios' smallest and largest. A ratio
below 1 means faster than the peer. On a busy machine, --threads 1 --cpu-time
measures CPU time, which other work does not inflate.

--write DIR writes DIR/multi_head_attention_<cpu|cuda>.json (every repeat's
times) and the table beside it (.md), which chapter 5 reads.
"""

import argparse
import statistics
from pathlib import Path

import torch
from results_files import processor, write_results

from transformer_course.multi_head_attention import benchmark_attention

PEER = "peer: fused QKV + is_causal"


def measure(device, length, args) -> dict[str, list[float]]:
    """{implementation: seconds of one step, per repeat}."""
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        times = benchmark_attention(
            length=length,
            device=device,
            rounds=1,
            min_run_time=args.min_run_time,
            explicit=not args.no_explicit,
            cpu_time=args.cpu_time and device == "cpu",
        )
        for name, seconds in times.items():
            runs.setdefault(name, []).append(seconds)
    return runs


def summary(runs: dict[str, list[float]]) -> list[dict]:
    """Per implementation: the median ms, and the ratios to the peer of the
    same repeat (median, min, max)."""
    rows = []
    for name, seconds in runs.items():
        ratios = [s / p for s, p in zip(seconds, runs[PEER], strict=True)]
        rows.append(
            {
                "implementation": name,
                "ms": [s * 1e3 for s in seconds],
                "median ms": statistics.median(seconds) * 1e3,
                "ratio": statistics.median(ratios),
                "ratio min": min(ratios),
                "ratio max": max(ratios),
            }
        )
    return rows


def table(document) -> list[str]:
    """The Markdown table of the document's lengths and implementations."""
    lines = [
        f"Causal self-attention, B=16, d_model=256, h=8, float32, one step = "
        f"forward + backward, on {document['device']}, {document['clock']}; "
        f"median of {document['repeats']} repeats, each of at least "
        f"{document['min_run_time']} s per implementation; ratio: the median "
        "of the ratios to the peer of the same repeat, with their range. "
        f"The peer is the {PEER.removeprefix('peer: ')} module.",
        "",
        "| T | implementation | ms | ratio | ratio min-max |",
        "|---:|---|---:|---:|---:|",
    ]
    for length, rows in document["lengths"].items():
        for row in rows:
            lines.append(
                f"| {length} | {row['implementation']} | "
                f"{row['median ms']:.1f} | {row['ratio']:.2f} | "
                f"{row['ratio min']:.2f}-{row['ratio max']:.2f} |"
            )
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[128, 512, 1024]
    )
    parser.add_argument(
        "--min-run-time",
        type=float,
        default=0.5,
        help="seconds per measurement",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=7,
        help="rounds of every implementation in turn (at least 5)",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads for PyTorch"
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
    parser.add_argument(
        "--devices",
        nargs="+",
        choices=["cpu", "cuda"],
        help="default: the CPU, and the GPU when PyTorch finds one",
    )
    parser.add_argument("--write", type=Path, help="folder for the results")
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5 (a median and a spread)")
    if "cuda" in (args.devices or []) and not torch.cuda.is_available():
        parser.error("--devices cuda: PyTorch finds no CUDA GPU")
    torch.set_num_threads(args.threads)
    found = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    devices = args.devices or found
    for device in devices:
        cpu = device == "cpu"
        document = {
            "device": (
                f"{processor()[0]} CPU, {args.threads} thread(s)"
                if cpu
                else torch.cuda.get_device_name()
            ),
            "clock": "CPU time" if args.cpu_time and cpu else "wall time",
            "repeats": args.repeats,
            "min_run_time": args.min_run_time,
            "peer": PEER,
            "lengths": {},
        }
        for length in args.lengths:
            runs = measure(device, length, args)
            document["lengths"][str(length)] = summary(runs)
            print("\n".join(table(document)[-len(runs) :]), flush=True)
        lines = table(document)
        print("\n".join(lines))
        if args.write:
            path = write_results(
                args.write,
                f"multi_head_attention_{device}",
                "benchmarks/multi_head_attention.py",
                document,
                lines,
            )
            print(f"wrote {path} and its .md")


if __name__ == "__main__":
    main()
