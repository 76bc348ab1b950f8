"""The KV cache measured: prefill and decode, the time of one token against
the length, one step against the batch, and whole greedy decodings.

    python benchmarks/kv_cache.py [--threads 1] [--repeats 7]
        [--devices cpu cuda] [--write benchmarks/results]

The model is chapter 9's (3 layers, d_model=256, h=8, d_ff=1024, vocabulary
500; random weights, seed 0), in float32, with one source sentence of 12
tokens (B sentences: the same one B times). Measured, each the median of
--repeats runs with the fastest and the slowest (and one untimed run first):

- per token, for each length T of LENGTHS: a decode step with the cache (one
  call that adds token T to a DecoderCache holding T - 1; their prefill is
  not timed); the same token without the cache (one NoCache call on the T
  tokens: the whole decoder over T positions, what chapter 8's decoders do at
  every step); and the prefill of T tokens (one call of a new cache with all
  T, divided by T);
- one decode step at T = 128 for B = 1 to 64 sentences;
- the operators and kernels that one decode step at T = 128 ran (PyTorch's
  profiler);
- greedy decoding of n new tokens with and without the cache (a source the
  model does not end within 256 tokens, checked, so exactly n);
- in the same run, this machine's float32 matrix product rate (a 1024 x 1024
  product) and copy bandwidth (256 MiB), so that a step's arithmetic and
  bytes can be set against what the machine can do.

Runs on the CPU, and on the GPU too when PyTorch finds one (--devices picks).
--write DIR writes DIR/kv_cache_<cpu|cuda>.json and a Markdown table beside
it. --lengths, --batches and --new-tokens replace the lists above (a quick
check: benchmarks/gpu_run.py --tiny).
"""

import argparse
import statistics
import time
from pathlib import Path

import torch
from results_files import kernels_of, write_results

from transformer_course import (
    DecoderCache,
    NoCache,
    Transformer,
    TransformerConfig,
    greedy_decode,
)

LENGTHS = [16, 32, 64, 128, 256, 512, 1024, 2048]
BATCHES = [1, 4, 16, 64]
NEW_TOKENS = [16, 32, 64, 128, 256]
CONFIG = TransformerConfig(
    vocab_size=500, d_model=256, n_heads=8, n_layers=3, d_ff=1024, max_len=4096
)
T_SRC = 12


def spread(times: list[float]) -> dict:
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "runs": times,
    }


def timed(run, repeats: int, device: str, setup=None) -> dict:
    """Seconds of run(setup()) (setup untimed): one warm-up, then repeats."""
    times = []
    for i in range(repeats + 1):
        state = setup() if setup else None
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        run(state)
        if device == "cuda":
            torch.cuda.synchronize()
        if i:  # the first run warms up
            times.append(time.perf_counter() - start)
    return spread(times)


def step_flops_and_bytes(T: int, batch: int) -> tuple[int, int]:
    """Multiply-adds x 2 of one decode step (batch new tokens at length T),
    and the bytes it must read at least: the weights it multiplies by and
    the keys and values it attends to (float32)."""
    d, d_ff, n = CONFIG.d_model, CONFIG.d_ff, CONFIG.n_layers
    weights = n * (6 * d * d + 2 * d * d_ff) + d * CONFIG.vocab_size
    attention = n * 2 * d * (T + T_SRC)  # scores and weighted sum, 2 blocks
    keys_values = n * 2 * d * (T + T_SRC) * batch
    return 2 * batch * (weights + attention), 4 * (weights + keys_values)


def machine_rates(repeats: int, device: str) -> dict:
    """float32 FLOP/s of a 1024^3 product; bytes/s of a 256 MiB copy (read
    and write counted)."""
    a = torch.randn(1024, 1024, device=device)
    product = timed(lambda _: a @ a, repeats, device)
    big = torch.empty(64 * 2**20, device=device)
    out = torch.empty_like(big)
    copy = timed(lambda _: out.copy_(big), repeats, device)
    return {
        "matmul_flops_per_s": 2 * 1024**3 / product["median"],
        "copy_bytes_per_s": 2 * big.nbytes / copy["median"],
    }


def measure(
    device: str,
    repeats: int,
    lengths=LENGTHS,
    batches=BATCHES,
    new_tokens=NEW_TOKENS,
) -> dict:
    torch.manual_seed(0)
    model = Transformer(CONFIG).to(device).eval()
    src = torch.randint(3, CONFIG.vocab_size, (1, T_SRC)).to(device)
    prefix = torch.randint(3, CONFIG.vocab_size, (1, max(lengths)))
    prefix[0, 0] = CONFIG.bos_id
    prefix = prefix.to(device)

    def cache_with(tokens, batch=1):
        """A DecoderCache for `batch` copies of src, holding `tokens`."""
        memory, src_mask = model.encode(src.expand(batch, -1))
        cache = DecoderCache(model, memory, src_mask, max_len=max(lengths))
        cache.next_token_log_probs(tokens.expand(batch, -1))
        return cache

    per_token = []
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        stepper = NoCache(model, memory, src_mask)  # re-reads the prefix
        for T in lengths:
            tokens = prefix[:, :T]
            decode = timed(
                lambda cache, tokens=tokens: cache.next_token_log_probs(tokens),
                repeats,
                device,
                setup=lambda T=T: cache_with(prefix[:, : T - 1]),
            )
            no_cache = timed(
                lambda _, tokens=tokens: stepper.next_token_log_probs(tokens),
                repeats,
                device,
            )
            prefill = timed(
                lambda _, tokens=tokens: cache_with(tokens), repeats, device
            )
            per_token.append(
                {
                    "length": T,
                    "decode_step_s": decode,
                    "no_cache_step_s": no_cache,
                    "prefill_s": prefill,
                    "decode_step_flops_bytes": step_flops_and_bytes(T, 1),
                }
            )
            print(
                f"T={T:>5}: decode {1e3 * decode['median']:7.2f} ms, no cache "
                f"{1e3 * no_cache['median']:7.2f} ms, prefill "
                f"{1e6 * prefill['median'] / T:7.1f} us/token",
                flush=True,
            )
        at = min(128, max(lengths))  # the length of the batch rows
        batch_rows = []
        for batch in batches:
            tokens = prefix[:, :at].expand(batch, -1)
            step = timed(
                lambda cache, tokens=tokens: cache.next_token_log_probs(tokens),
                repeats,
                device,
                setup=lambda batch=batch: cache_with(
                    prefix[:, : at - 1], batch
                ),
            )
            batch_rows.append(
                {
                    "batch": batch,
                    "decode_step_s": step,
                    "decode_step_flops_bytes": step_flops_and_bytes(at, batch),
                }
            )
            print(
                f"B={batch:>3}: one step {1e3 * step['median']:.2f} ms",
                flush=True,
            )
        cache = cache_with(prefix[:, : at - 1])
        kernels = kernels_of(
            lambda: cache.next_token_log_probs(prefix[:, :at]), device
        )
    one, most = src[:1], max(new_tokens)
    if greedy_decode(model, one, most, cache=DecoderCache).size(1) != most:
        raise SystemExit(
            f"the sentence ends before {most} tokens: change seeds"
        )
    whole = []
    for n in new_tokens:
        plain, cached = (
            timed(
                lambda _, n=n, cache=cache: greedy_decode(
                    model, one, n, cache=cache
                ),
                repeats,
                device,
            )
            for cache in (NoCache, DecoderCache)
        )
        whole.append({"new_tokens": n, "no_cache_s": plain, "cache_s": cached})
        print(
            f"n={n:>4}: greedy {plain['median']:.3f} s without the cache, "
            f"{cached['median']:.3f} s with it",
            flush=True,
        )
    return {
        "per_token": per_token,
        "batch_length": at,
        "batch": batch_rows,
        "decode_step_kernels": kernels,
        "greedy": whole,
        "machine_rates": machine_rates(repeats, device),
    }


def table(results: dict) -> list[str]:
    def ms(t):
        return (
            f"{1e3 * t['median']:.2f} ({1e3 * t['min']:.2f}-"
            f"{1e3 * t['max']:.2f})"
        )

    lines = [
        "Per token (ms, median (fastest-slowest)):",
        "",
        "| T | decode step, cache | no cache | prefill per token |",
        "|---:|---:|---:|---:|",
    ]
    for row in results["per_token"]:
        T, pre = row["length"], row["prefill_s"]
        per = {key: pre[key] / T for key in ("median", "min", "max")}
        lines.append(
            f"| {T} | {ms(row['decode_step_s'])} | "
            f"{ms(row['no_cache_step_s'])} | {ms(per)} |"
        )
    at = results.get("batch_length", 128)  # older files: always 128
    lines += ["", f"One decode step at T = {at} (ms):", "", "| B | step |"]
    lines += ["|---:|---:|"]
    lines += [
        f"| {row['batch']} | {ms(row['decode_step_s'])} |"
        for row in results["batch"]
    ]
    lines += ["", "Greedy decoding, one sentence (s, median):", ""]
    lines += [
        "| new tokens | no cache | cache | ratio |",
        "|---:|---:|---:|---:|",
    ]
    for row in results["greedy"]:
        plain, cached = row["no_cache_s"]["median"], row["cache_s"]["median"]
        lines.append(
            f"| {row['new_tokens']} | {plain:.3f} | {cached:.3f} | "
            f"{plain / cached:.1f} |"
        )
    if "decode_step_kernels" in results:
        ran = results["decode_step_kernels"]
        lines += [
            "",
            f"One decode step at T = {at} ran (profiler): "
            + ", ".join(ran["sdpa_operators"] or ["no SDPA operator"]),
        ]
        lines += [
            f"- {k['name'][:70]}: {k['calls']} calls, {k['us']} us"
            for k in ran["device_kernels"]
        ]
    rates = results["machine_rates"]
    lines += [
        "",
        f"This machine: {rates['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s "
        f"(float32 product), {rates['copy_bytes_per_s'] / 1e9:.1f} GB/s "
        "(copy).",
    ]
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", type=Path, default=None)
    parser.add_argument(
        "--devices",
        nargs="+",
        choices=["cpu", "cuda"],
        help="default: the CPU, and the GPU when PyTorch finds one",
    )
    parser.add_argument("--lengths", type=int, nargs="+", default=LENGTHS)
    parser.add_argument("--batches", type=int, nargs="+", default=BATCHES)
    parser.add_argument("--new-tokens", type=int, nargs="+", default=NEW_TOKENS)
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5 (a median and a spread)")
    torch.set_num_threads(args.threads)
    if min(args.lengths) < 2:
        parser.error("--lengths must be at least 2 (a prefix and a token)")
    if max(args.lengths) > CONFIG.max_len:
        parser.error(f"--lengths must be at most {CONFIG.max_len}")
    if "cuda" in (args.devices or []) and not torch.cuda.is_available():
        parser.error("--devices cuda: PyTorch finds no CUDA GPU")
    devices = args.devices or ["cpu"] + (
        ["cuda"] if torch.cuda.is_available() else []
    )
    for device in devices:
        results = measure(
            device, args.repeats, args.lengths, args.batches, args.new_tokens
        )
        label = torch.cuda.get_device_name() if device == "cuda" else "CPU"
        fields = {
            "device": label,
            "repeats": args.repeats,
            "model": "3 layers, d_model=256, h=8, d_ff=1024, vocabulary 500, "
            f"float32, T_src={T_SRC}",
            **results,
        }
        lines = table(results)
        print("\n".join(lines))
        if args.write:
            path = write_results(
                args.write,
                f"kv_cache_{device}",
                "benchmarks/kv_cache.py",
                fields,
                lines,
            )
            print(f"written to {path}")


if __name__ == "__main__":
    main()
