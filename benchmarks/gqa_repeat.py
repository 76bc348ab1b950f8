"""Three ways to give every query head its key/value head, measured.

    python benchmarks/gqa_repeat.py [--threads 2] [--repeats 7]
        [--device cpu] [--dtypes float32] [--write benchmarks/results]

Grouped-query attention shares each of h_kv key/value heads among
n_rep = h / h_kv query heads. Before F.scaled_dot_product_attention the keys
and values can be repeated to h heads with `repeat_interleave` (a copy, even
at n_rep = 1), with `x[:, :, None].expand(...)` followed by `reshape` (the
expand is a view; the reshape copies unless h_kv = 1 or n_rep = 1, where one
stride still steps through both head axes), or not at all, with
`enable_gqa=True`, which lets the kernel read each shared head in place.

For one decoding step (one query per sentence against T_k cached keys) and
for a prefill (T_q = T_k), at h_kv = h, 2 and 1, with a padding mask (or,
with --masks, none too, as a decode step of unpadded sentences): whether
each output equals repeat_interleave's bit for bit, which kernel PyTorch ran
(its profiler's event names), the bytes copied (what the profiler's
aten::clone events allocate: every copy of the keys and values goes through
one), the bytes the call's operations leave allocated (the output among them;
temporaries a kernel frees inside itself are not counted), and the time of
one call, the median of --repeats runs with the fastest and slowest, as a
ratio to repeat_interleave timed in the same run. A method that the kernels
refuse is recorded with its error. --write DIR writes
DIR/gqa_repeat_<device>.json and a Markdown table beside it.

On a GPU (--device cuda) the same, timed with a synchronisation around each
run, the bytes from the GPU's allocator, and the GPU kernels that ran too.
--batch, --decode-length, --prefill-length and --min-time shrink the work
(a quick check: benchmarks/gpu_run.py --tiny).
"""

import argparse
import itertools
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from results_files import kernels_of, profiler, write_results

B, H, D_K = 8, 8, 64
SHAPES = {"decode step": (1, 2048), "prefill": (512, 512)}  # (T_q, T_k)


def repeated(x, n_rep):
    return x.repeat_interleave(n_rep, dim=1)


def expanded(x, n_rep):
    b, h_kv, t, d = x.shape
    return (
        x[:, :, None]
        .expand(b, h_kv, n_rep, t, d)
        .reshape(b, h_kv * n_rep, t, d)
    )


def call(method, q, k, v, mask):
    n_rep = q.size(1) // k.size(1)
    if method == "enable_gqa":
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, enable_gqa=True
        )
    repeat = repeated if method == "repeat_interleave" else expanded
    return F.scaled_dot_product_attention(
        q, repeat(k, n_rep), repeat(v, n_rep), attn_mask=mask
    )


METHODS = ("repeat_interleave", "expand + reshape", "enable_gqa")
SAME = ("shape", "dtype", "mask", "h_kv")  # a row's repeat_interleave row


def profiled(method, q, k, v, mask):
    """(kernel names, bytes copied, bytes kept) of one call, by PyTorch's
    profiler: the CPU's bytes, or the GPU's when the inputs are there."""
    on_gpu = q.device.type == "cuda"
    with profiler(q.device.type, profile_memory=True) as p:
        out = call(method, q, k, v, mask)
    events = p.function_events

    def memory(event):
        return event.device_memory_usage if on_gpu else event.cpu_memory_usage

    kernels = sorted(
        {
            e.name
            for e in events
            if "scaled_dot_product" in e.name
            and e.name != "aten::scaled_dot_product_attention"
        }
    )
    copied = sum(memory(e) for e in events if e.name == "aten::clone")
    kept = sum(  # by the outermost operations ("[memory]": outside any)
        memory(e)
        for e in events
        if e.cpu_parent is None and e.name != "[memory]"
    )
    del out
    return kernels, copied, kept


def timed(method, q, k, v, mask, calls):
    sync = torch.cuda.synchronize if q.device.type == "cuda" else lambda: None
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        call(method, q, k, v, mask)
    sync()
    return (time.perf_counter() - start) / calls


def measure(q, k, v, mask, repeats: int, min_time: float) -> list[dict]:
    """One row per method: equality, kernels, bytes and times, or the error
    of a method the kernels refuse."""
    reference = call("repeat_interleave", q, k, v, mask)
    errors = {}
    for method in METHODS:
        try:
            call(method, q, k, v, mask)
        except RuntimeError as error:  # no kernel takes these inputs
            errors[method] = str(error).strip().splitlines()[0][:200]
    working = [m for m in METHODS if m not in errors]
    one = timed("repeat_interleave", q, k, v, mask, 1)
    calls = max(1, int(min_time / one))
    seconds = {m: [] for m in working}
    for _ in range(repeats):  # interleaved: drift hits all
        for method in working:
            seconds[method].append(timed(method, q, k, v, mask, calls))
    base = statistics.median(seconds["repeat_interleave"])
    rows = []
    for method in METHODS:
        if method in errors:
            rows.append({"method": method, "error": errors[method]})
            continue
        kernels, copied, kept = profiled(method, q, k, v, mask)
        out = call(method, q, k, v, mask)
        row = {
            "method": method,
            "equal": torch.equal(out, reference),
            "max_abs_difference": (out - reference).abs().max().item(),
            "kernels": kernels,
            "bytes copied": copied,
            "bytes kept": kept,
            "seconds": seconds[method],
            "time / repeat_interleave": statistics.median(seconds[method])
            / base,
            "calls per run": calls,
        }
        if q.device.type == "cuda":  # the GPU kernels, by the profiler
            row["device_kernels"] = kernels_of(
                lambda method=method: call(method, q, k, v, mask), "cuda"
            )["device_kernels"]
        rows.append(row)
    return rows


def table_lines(rows, args) -> list[str]:
    table = [
        f"B = {args.batch}, h = {H}, d_k = {D_K}, "
        f"{', '.join(args.dtypes)}, on {args.device}; mask: "
        f"{' or '.join(args.masks)} (padding: each sentence's own length); "
        f"time: median of {args.repeats} runs [fastest, slowest], as a ratio "
        "to repeat_interleave; MiB copied (aten::clone) and kept by the call's "
        "operations (PyTorch's profiler).",
        "",
        "| shape | dtype | mask | h_kv | method | equal | kernel | MiB copied "
        "| MiB kept | time / repeat_interleave |",
        "|---|---|---|---:|---|---|---|---:|---:|---|",
    ]
    for row in rows:
        head = (
            f"| {row['shape']} (T_q {row['T_q']}, T_k {row['T_k']}) "
            f"| {row['dtype']} | {row['mask']} | {row['h_kv']} "
            f"| {row['method']} "
        )
        if "error" in row:
            table.append(head + f"| refused: {row['error']} | | | | |")
            continue
        base = statistics.median(
            next(
                r["seconds"]
                for r in rows
                if r["method"] == "repeat_interleave"
                and all(r[key] == row[key] for key in SAME)
            )
        )
        low, high = min(row["seconds"]) / base, max(row["seconds"]) / base
        kernel = ", ".join(k.removeprefix("aten::") for k in row["kernels"])
        table.append(
            head + f"| {row['equal']} | {kernel} "
            f"| {row['bytes copied'] / 2**20:.2f} "
            f"| {row['bytes kept'] / 2**20:.2f} "
            f"| {row['time / repeat_interleave']:.2f} [{low:.2f}, {high:.2f}] |"
        )
    return table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", type=Path)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument(
        "--dtypes",
        nargs="+",
        choices=["float32", "float16", "bfloat16"],
        default=["float32"],
    )
    parser.add_argument(
        "--masks",
        nargs="+",
        choices=["padding", "none"],
        default=["padding"],
        help="none: what a decode step without padding passes",
    )
    parser.add_argument("--batch", type=int, default=B)
    parser.add_argument(
        "--decode-length", type=int, default=SHAPES["decode step"][1]
    )
    parser.add_argument(
        "--prefill-length", type=int, default=SHAPES["prefill"][0]
    )
    parser.add_argument(
        "--min-time", type=float, default=0.05, help="seconds of one run"
    )
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5 (a median and a spread)")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: PyTorch finds no CUDA GPU")
    torch.set_num_threads(args.threads)
    shapes = {
        "decode step": (1, args.decode_length),
        "prefill": (args.prefill_length, args.prefill_length),
    }
    generator = torch.Generator().manual_seed(0)
    rows = []
    with torch.no_grad():
        for shape, (t_q, t_k) in shapes.items():
            lengths = torch.randint(
                t_k // 2, t_k + 1, (args.batch,), generator=generator
            )
            padding = (torch.arange(t_k) < lengths[:, None])[:, None, None, :]
            masks = {"padding": padding.to(args.device), "none": None}
            for dtype, mask_name, h_kv in itertools.product(
                args.dtypes, args.masks, (H, 2, 1)
            ):
                mask = masks[mask_name]
                q, k, v = (
                    torch.randn(args.batch, h, t, D_K, generator=generator).to(
                        args.device, getattr(torch, dtype)
                    )
                    for h, t in ((H, t_q), (h_kv, t_k), (h_kv, t_k))
                )
                for row in measure(q, k, v, mask, args.repeats, args.min_time):
                    rows.append(
                        {
                            "shape": shape,
                            "T_q": t_q,
                            "T_k": t_k,
                            "dtype": dtype,
                            "mask": mask_name,
                            "h_kv": h_kv,
                            **row,
                        }
                    )
    table = table_lines(rows, args)
    print("\n".join(table))
    if args.write:
        write_results(
            args.write,
            f"gqa_repeat_{args.device}",
            "benchmarks/gqa_repeat.py",
            {
                "device": device_name(args.device),
                "repeats": args.repeats,
                "rows": rows,
            },
            table,
        )


def device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else "cpu"


if __name__ == "__main__":
    main()
