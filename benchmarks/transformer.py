"""Forward + backward time of the book's Transformer against nn.Transformer.

    python benchmarks/transformer.py [--threads 2] [--rounds 5]
        [--devices cpu cuda] [--cpu-time] [--output FILE]

Both models have the same configuration (B=32, T=64, d_model=256, h=8, N=3,
d_ff=1024, vocabulary 8,000, dropout 0) and the same weights: nn.Transformer
gets the book's embedding, positional encoding and tied output projection around
it, so the two compute the same function. One step is a forward pass, the
cross-entropy loss and a backward pass. Times come from one run, alternating the
two models in rounds; the ratio is the median over rounds of our time divided
by nn.Transformer's time measured right before or after it (these machines are
noisy); a ratio below 1 means faster than PyTorch. On a busy machine,
--threads 1 --cpu-time measures the CPU time the process spent instead, which
other jobs disturb much less. Runs on the CPU, and on the GPU too when PyTorch
finds one.
"""

import argparse
import datetime
import time

import torch
import torch.nn.functional as F
import torch.utils.benchmark as benchmark
from results_files import processor
from torch import nn

from transformer_course.transformer import (
    Transformer,
    TransformerConfig,
    to_torch_transformer,
)

B, T = 32, 64
CONFIG = TransformerConfig(
    vocab_size=8000, d_model=256, n_heads=8, n_layers=3, d_ff=1024, dropout=0.0
)


class TorchTransformer(nn.Module):
    """nn.Transformer with the book's embeddings and output projection around
    it."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model  # its embedding, positional encoding, output_proj
        self.transformer = to_torch_transformer(model)

    def forward(self, src, tgt):
        pad = self.model.config.pad_id
        causal = torch.ones(
            tgt.size(1), tgt.size(1), dtype=torch.bool, device=tgt.device
        ).triu(1)  # nn.Transformer's convention: True = may NOT attend
        out = self.transformer(
            self.model.embed(src),
            self.model.embed(tgt),
            tgt_mask=causal,
            tgt_is_causal=True,
            src_key_padding_mask=src == pad,
            memory_key_padding_mask=src == pad,
        )
        return self.model.output_proj(out)


def batch(device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded source and target ids, the decoder input and its target."""
    generator = torch.Generator().manual_seed(0)
    src = torch.randint(3, CONFIG.vocab_size, (B, T), generator=generator)
    tgt = torch.randint(3, CONFIG.vocab_size, (B, T + 1), generator=generator)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=generator)
    positions = torch.arange(T + 1)
    src[positions[None, :T] >= lengths[:, None]] = CONFIG.pad_id
    tgt[positions[None] > lengths[:, None]] = CONFIG.pad_id
    tgt[:, 0] = CONFIG.bos_id
    return src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)


def measure(
    device: str, rounds: int, min_run_time: float, cpu_time: bool = False
) -> dict[str, list[float]]:
    """Seconds of one training step (forward, loss, backward), per model and
    round."""
    torch.manual_seed(0)
    ours = Transformer(CONFIG).to(device).train()
    theirs = TorchTransformer(ours).to(device).train()
    src, tgt_in, tgt_out = batch(device)
    with torch.no_grad():  # the same function: check before timing
        difference = (ours(src, tgt_in) - theirs(src, tgt_in)).abs().max()
    assert difference < 1e-3, f"the two models differ by {difference}"

    def step(model):
        logits = model(src, tgt_in)
        loss = F.cross_entropy(
            logits.flatten(0, 1), tgt_out.flatten(), ignore_index=CONFIG.pad_id
        )
        loss.backward()

    steps = {
        "Transformer (this book)": lambda: step(ours),
        "nn.Transformer": lambda: step(theirs),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(rounds):  # alternate, in both orders: a slow moment
        names = list(steps)[:: 1 if round_ % 2 == 0 else -1]  # hits both
        for name in names:
            timer = benchmark.Timer(
                stmt="run()",
                globals={"run": steps[name]},
                **({"timer": time.process_time} if cpu_time else {}),
            )
            measurement = timer.blocked_autorange(min_run_time=min_run_time)
            times[name].append(measurement.median)
    return times


def median(values: list[float]) -> float:
    values = sorted(values)
    middle = len(values) // 2
    return (values[middle] + values[~middle]) / 2


def table(times: dict[str, list[float]], reference="nn.Transformer") -> str:
    """Markdown: median milliseconds, and the median over rounds of the ratio
    to `reference` measured in the same round (back to back), with a note line
    that says so, and the range of the per-round ratios."""
    lines = ["| model | ms per step | ratio |", "|---|---:|---:|"]
    spread = []
    for name, seconds in times.items():
        ratios = [a / b for a, b in zip(seconds, times[reference], strict=True)]
        lines.append(
            f"| {name} | {median(seconds) * 1e3:.1f} | {median(ratios):.2f} |"
        )
        if name != reference:
            spread.append(f"{name} {min(ratios):.2f}-{max(ratios):.2f}")
    rounds = len(times[reference])
    lines += [
        "",
        f"ms: median over {rounds} rounds; ratio: median of the per-round",
        f"ratios (min-max: {', '.join(spread)}),",
        "so the two columns need not agree.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="CPU threads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=2.0)
    parser.add_argument(
        "--devices",
        nargs="+",
        choices=["cpu", "cuda"],
        help="default: the CPU, and the GPU when PyTorch finds one",
    )
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="on the CPU, measure the process's CPU time, not wall time "
        "(with --threads 1, on a busy machine)",
    )
    parser.add_argument("--output", help="also write the report to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    devices = args.devices or ["cpu"] + (
        ["cuda"] if torch.cuda.is_available() else []
    )
    report = [
        f"# Transformer vs nn.Transformer, {datetime.date.today()}",
        "",
        f"B={B}, T={T}, d_model={CONFIG.d_model}, h={CONFIG.n_heads}, "
        f"N={CONFIG.n_layers}, d_ff={CONFIG.d_ff},",
        f"vocabulary {CONFIG.vocab_size:,}, dropout 0, float32;",
        "one step = forward, cross-entropy, backward;",
        f"torch {torch.__version__}.",
    ]
    for device in devices:
        if device == "cuda":
            name = torch.cuda.get_device_name()
        else:
            threads = torch.get_num_threads()
            name = f"{processor()[0]}, {threads} thread{'s' * (threads > 1)}, "
            name += "CPU time" if args.cpu_time else "wall time"
        times = measure(
            device,
            args.rounds,
            args.min_run_time,
            cpu_time=args.cpu_time and device == "cpu",
        )
        report += ["", f"## {name}", "", table(times)]
    text = "\n".join(report) + "\n"
    print(text)
    if args.output:
        with open(args.output, "w") as file:
            file.write(text)


if __name__ == "__main__":
    main()
