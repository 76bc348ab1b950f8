"""Three ways to give every query head its key/value head, measured on a CPU.

    python benchmarks/gqa_repeat.py [--threads 2] [--repeats 7]
        [--write benchmarks/results]

Grouped-query attention shares each of h_kv key/value heads among
n_rep = h / h_kv query heads. Before F.scaled_dot_product_attention the keys
and values can be repeated to h heads with `repeat_interleave` (a copy, even
at n_rep = 1), with `x[:, :, None].expand(...)` followed by `reshape` (the
expand is a view; the reshape copies unless h_kv = 1 or n_rep = 1, where one
stride still steps through both head axes), or not at all, with
`enable_gqa=True`, which lets the kernel read each shared head in place.

For one decoding step (one query per sentence against T_k cached keys) and
for a prefill (T_q = T_k), at h_kv = h, 2 and 1, with a padding mask: whether
each output equals repeat_interleave's bit for bit, which kernel PyTorch ran
(its profiler's event names), the bytes copied (what the profiler's
aten::clone events allocate: every copy of the keys and values goes through
one), the bytes the call's operations leave allocated (the output among them;
temporaries a kernel frees inside itself are not counted), and the time of
one call, the median of --repeats runs with the fastest and slowest, as a
ratio to repeat_interleave timed in the same run. --write DIR writes
DIR/gqa_repeat_cpu.json and a Markdown table beside it.
"""

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from results_files import write_results
from torch.profiler import ProfilerActivity, profile

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


def profiled(method, q, k, v, mask):
    """(kernel names, bytes copied, bytes kept) of one call, by PyTorch's
    profiler."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        out = call(method, q, k, v, mask)
    events = p.events()
    kernels = sorted(
        {
            e.name
            for e in events
            if "scaled_dot_product" in e.name
            and e.name != "aten::scaled_dot_product_attention"
        }
    )
    copied = sum(e.cpu_memory_usage for e in events if e.name == "aten::clone")
    kept = sum(  # by the outermost operations ("[memory]": outside any)
        e.cpu_memory_usage
        for e in events
        if e.cpu_parent is None and e.name != "[memory]"
    )
    del out
    return kernels, copied, kept


def timed(method, q, k, v, mask, calls):
    start = time.perf_counter()
    for _ in range(calls):
        call(method, q, k, v, mask)
    return (time.perf_counter() - start) / calls


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    rows = []
    with torch.no_grad():
        for shape, (t_q, t_k) in SHAPES.items():
            lengths = torch.randint(
                t_k // 2, t_k + 1, (B,), generator=generator
            )
            mask = (torch.arange(t_k) < lengths[:, None])[:, None, None, :]
            for h_kv in (H, 2, 1):
                q = torch.randn(B, H, t_q, D_K, generator=generator)
                k = torch.randn(B, h_kv, t_k, D_K, generator=generator)
                v = torch.randn(B, h_kv, t_k, D_K, generator=generator)
                reference = call("repeat_interleave", q, k, v, mask)
                one = timed("repeat_interleave", q, k, v, mask, 1)
                calls = max(1, int(0.05 / one))
                seconds = {m: [] for m in METHODS}
                for _ in range(args.repeats):  # interleaved: drift hits all
                    for method in METHODS:
                        seconds[method].append(
                            timed(method, q, k, v, mask, calls)
                        )
                base = statistics.median(seconds["repeat_interleave"])
                for method in METHODS:
                    kernels, copied, kept = profiled(method, q, k, v, mask)
                    rows.append(
                        {
                            "shape": shape,
                            "T_q": t_q,
                            "T_k": t_k,
                            "h_kv": h_kv,
                            "method": method,
                            "equal": torch.equal(
                                call(method, q, k, v, mask), reference
                            ),
                            "kernels": kernels,
                            "bytes copied": copied,
                            "bytes kept": kept,
                            "seconds": seconds[method],
                            "time / repeat_interleave": statistics.median(
                                seconds[method]
                            )
                            / base,
                            "calls per run": calls,
                        }
                    )
    table = [
        f"B = {B}, h = {H}, d_k = {D_K}, float32, a padding mask; "
        f"time: median of {args.repeats} runs [fastest, slowest], as a ratio "
        "to repeat_interleave; MiB copied (aten::clone) and kept by the call's "
        "operations (PyTorch's profiler).",
        "",
        "| shape | h_kv | method | equal | kernel | MiB copied | MiB kept "
        "| time / repeat_interleave |",
        "|---|---:|---|---|---|---:|---:|---|",
    ]
    for row in rows:
        base = statistics.median(
            next(
                r["seconds"]
                for r in rows
                if (r["shape"], r["h_kv"], r["method"])
                == (row["shape"], row["h_kv"], "repeat_interleave")
            )
        )
        low, high = min(row["seconds"]) / base, max(row["seconds"]) / base
        kernel = ", ".join(k.removeprefix("aten::") for k in row["kernels"])
        table.append(
            f"| {row['shape']} (T_q {row['T_q']}, T_k {row['T_k']}) "
            f"| {row['h_kv']} | {row['method']} | {row['equal']} | {kernel} "
            f"| {row['bytes copied'] / 2**20:.2f} "
            f"| {row['bytes kept'] / 2**20:.2f} "
            f"| {row['time / repeat_interleave']:.2f} [{low:.2f}, {high:.2f}] |"
        )
    print("\n".join(table))
    if args.write:
        write_results(
            args.write,
            "gqa_repeat_cpu",
            "benchmarks/gqa_repeat.py",
            {"device": "cpu", "repeats": args.repeats, "rows": rows},
            table,
        )


if __name__ == "__main__":
    main()
