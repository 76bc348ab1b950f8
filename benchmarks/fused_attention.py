"""Fused attention (F.scaled_dot_product_attention) against the explicit softmax.

    python benchmarks/fused_attention.py [--lengths 128 256 512 1024 2048]
        [--repeats 7] [--threads 1] [--devices cpu cuda]
        [--write benchmarks/results]

Causal self-attention on (B, h, T, d_k) = (4, 8, T, 32), one forward and one
backward pass: the median of --repeats calls after one untimed call, with the
fastest and the slowest (times from one run; compare the ratios, not the
milliseconds). Memory: on the CPU, the bytes autograd keeps
for the backward pass (deterministic); on a CUDA GPU, the peak of allocated
memory during the call above what the inputs take. Runs on the CPU, and on the
GPU too when PyTorch finds one, in float32 and there also float16 and
bfloat16, with the kernels each dtype can use (torch.nn.attention.sdpa_kernel)
and the one the fused call ran (PyTorch's profiler, at T = 256), and under
each table the fastest and slowest calls. --write DIR writes a Markdown
table of the medians to DIR/fused_attention_<device>.md and every timing to
fused_attention_<device>.json.
"""

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from results_files import kernels_of, processor

from transformer_course.beyond import explicit_attention, saved_tensor_bytes

B, H, D_K = 4, 8, 32


def fused(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def explicit(q, k, v):
    return explicit_attention(q, k, v, is_causal=True)


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def measure(fn, T, device, dtype, repeats):
    """(seconds of each call, memory in bytes) of fn(q, k, v).sum().backward()."""
    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (
        torch.randn(
            B, H, T, D_K, generator=g, device=device, dtype=dtype
        ).requires_grad_()
        for _ in range(3)
    )
    fn(q, k, v).sum().backward()  # warm-up
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn(q, k, v).sum().backward()
        _sync(device)
        times.append(time.perf_counter() - start)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn(q, k, v).sum().backward()
        _sync(device)
        memory = torch.cuda.max_memory_allocated() - base
    else:
        memory = saved_tensor_bytes(fn, q, k, v)
    return times, memory


def kernels(device, dtype):
    """The SDPA backends that accept causal (4, 8, 256, 32) inputs of dtype."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(B, H, 256, D_K, device=device, dtype=dtype)
    found = []
    for backend in (
        SDPBackend.FLASH_ATTENTION,
        SDPBackend.EFFICIENT_ATTENTION,
        SDPBackend.CUDNN_ATTENTION,
        SDPBackend.MATH,
    ):
        try:
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, q, q, is_causal=True)
            found.append(backend.name)
        except RuntimeError:
            pass
    return found


def kernel_ran(device, dtype) -> dict:
    """The operators and kernels of one fused causal call, forward and
    backward, at T = 256 (PyTorch's profiler)."""
    q = torch.randn(B, H, 256, D_K, device=device, dtype=dtype)
    q.requires_grad_()
    fused(q, q, q).sum().backward()  # warm-up: first-call work
    return kernels_of(lambda: fused(q, q, q).sum().backward(), device)


def run(device, dtypes, lengths, repeats):
    lines, rows, ran = [], [], {}
    for dtype in dtypes:
        name = str(dtype).removeprefix("torch.")
        ran[name] = kernel_ran(device, dtype)
        backends = ", ".join(ran[name]["sdpa_backends"]) or "none"
        accepted = ", ".join(kernels(device, dtype))
        lines.append(
            f"\n### {name}; kernels that run: {accepted}"
            f"; ran (profiler, T = 256): {backends}\n"
        )
        lines.append(
            "| T | explicit ms | fused ms | time ratio | explicit MiB "
            "| fused MiB | memory ratio |"
        )
        lines.append("|---:|---:|---:|---:|---:|---:|---:|")
        for T in lengths:
            times_e, m_e = measure(explicit, T, device, dtype, repeats)
            times_f, m_f = measure(fused, T, device, dtype, repeats)
            t_e, t_f = statistics.median(times_e), statistics.median(times_f)
            rows.append(
                {
                    "dtype": name,
                    "T": T,
                    "explicit_s": times_e,
                    "fused_s": times_f,
                    "explicit_bytes": m_e,
                    "fused_bytes": m_f,
                }
            )
            lines.append(
                f"| {T} | {t_e * 1e3:.2f} | {t_f * 1e3:.2f} | {t_e / t_f:.1f} "
                f"| {m_e / 2**20:.1f} | {m_f / 2**20:.2f} | {m_e / m_f:.1f} |"
            )
            print(lines[-1], flush=True)
        lines += ["", "| fastest-slowest | T | explicit ms | fused ms |"]
        lines.append("|---|---:|---:|---:|")
        for row in rows[-len(lengths) :]:
            e, f = row["explicit_s"], row["fused_s"]
            lines.append(
                f"| ms | {row['T']} | {min(e) * 1e3:.2f}-{max(e) * 1e3:.2f} "
                f"| {min(f) * 1e3:.2f}-{max(f) * 1e3:.2f} |"
            )
    return lines, rows, ran


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[128, 256, 512, 1024, 2048]
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write", type=Path, default=None)
    parser.add_argument("--no-cpu", action="store_true", help="GPU only")
    parser.add_argument(
        "--devices",
        nargs="+",
        choices=["cpu", "cuda"],
        help="default: the CPU, and the GPU when PyTorch finds one",
    )
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5 (a median and a spread)")
    if "cuda" in (args.devices or []) and not torch.cuda.is_available():
        parser.error("--devices cuda: PyTorch finds no CUDA GPU")
    torch.set_num_threads(args.threads)
    devices = [] if args.no_cpu else ["cpu"]
    devices += ["cuda"] if torch.cuda.is_available() else []
    devices = args.devices or devices
    for device in devices:
        if device == "cuda":
            label = torch.cuda.get_device_name()
            dtypes = [torch.float32, torch.float16, torch.bfloat16]
            memory = "peak allocated memory during the call"
        else:
            label = f"{processor()[0]} CPU"
            label += f", {args.threads} thread(s)"
            dtypes = [torch.float32]
            memory = "bytes kept for the backward pass"
        header = [
            f"# Fused vs explicit attention on {label}, "
            f"{datetime.date.today()}",
            "",
            f"Causal, (B, h, T, d_k) = ({B}, {H}, T, {D_K}), forward + backward,"
            f" median of {args.repeats} (every call in the .json); memory: "
            f"{memory}; "
            f"torch {torch.__version__}. Ratios: explicit / fused.",
        ]
        print("\n".join(header), flush=True)
        table, rows, ran = run(device, dtypes, args.lengths, args.repeats)
        lines = header + table
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            kind = "cuda" if device == "cuda" else "cpu"
            path = args.write / f"fused_attention_{kind}.md"
            path.write_text("\n".join(lines) + "\n")
            document = {
                "script": "benchmarks/fused_attention.py",
                "date": datetime.date.today().isoformat(),
                "device": label,
                "torch": torch.__version__,
                "repeats": args.repeats,
                "rows": rows,
                "kernels_ran": ran,
            }
            path.with_suffix(".json").write_text(json.dumps(document, indent=1))
            print(f"written to {path} and its .json")


if __name__ == "__main__":
    main()
