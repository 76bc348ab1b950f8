"""Chapter 5's reversal model over five seeds: does one attention layer learn to
look at the mirrored position every time?

    python benchmarks/reverser_seeds.py

Chapter 5 trains a model of one MultiHeadAttention layer (two heads, width 32,
learned position embeddings) to reverse sequences of eight digits: 200 Adam steps
(lr 3e-3) on 64 random sequences each. It asserts that more than 99 % of the
digits of 1,000 new sequences come out right, and shows that both heads put their
weight on the mirrored position (the anti-diagonal). This runs the same model and
loop with seeds 0-4 (seed s: torch.manual_seed(s) for the weights, a
torch.Generator seeded s + 1 for the test and training digits; the chapter's run
is seed 0) on one thread, and writes benchmarks/results/seeds_reverser.{json,md},
which the chapter reads. The weight on the mirrored position is averaged over the
1,000 test sequences and the eight output positions, for each head; the chapter
quotes the smaller head's. A few seconds of CPU time in all.
"""

from pathlib import Path

import torch
import torch.nn.functional as F
from results_files import seed_summary, write_results
from torch import nn

from transformer_course import MultiHeadAttention

SEEDS = range(5)
N_DIGITS, LENGTH, WIDTH = 10, 8, 32  # as chapter 5
STEPS, BATCH, LR = 200, 64, 3e-3


class Reverser(nn.Module):
    """Chapter 5's model: digits -> embeddings + positions -> one attention
    layer (two heads) -> digits."""

    def __init__(self):
        super().__init__()
        self.digit = nn.Embedding(N_DIGITS, WIDTH)
        self.position = nn.Embedding(LENGTH, WIDTH)
        self.attention = MultiHeadAttention(WIDTH, n_heads=2)
        self.readout = nn.Linear(WIDTH, N_DIGITS)

    def forward(self, digits):
        x = self.digit(digits) + self.position(torch.arange(LENGTH))
        out, weights = self.attention(x, x, x, return_weights=True)
        return self.readout(out), weights


def run(seed: int) -> dict:
    """One seed: accuracy before and after training, and the mean weight each
    head puts on the mirrored position after it."""
    torch.manual_seed(seed)
    model = Reverser()
    generator = torch.Generator().manual_seed(seed + 1)
    test = torch.randint(0, N_DIGITS, (1000, LENGTH), generator=generator)

    def accuracy():
        with torch.no_grad():
            logits, _ = model(test)
        return (logits.argmax(-1) == test.flip(1)).float().mean().item()

    before = accuracy()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    for _ in range(STEPS):
        digits = torch.randint(
            0, N_DIGITS, (BATCH, LENGTH), generator=generator
        )
        logits, _ = model(digits)
        loss = F.cross_entropy(
            logits.reshape(-1, N_DIGITS), digits.flip(1).reshape(-1)
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        _, weights = model(test)  # (1000, h, T, T)
    rows = torch.arange(LENGTH)
    mirror = weights[:, :, rows, rows.flip(0)]  # (1000, h, T)
    per_head = mirror.mean(dim=(0, 2))
    return {
        "accuracy before training": before,
        "accuracy after training": accuracy(),
        "mirrored weight, smaller head": per_head.min().item(),
    }


def main() -> None:
    torch.set_num_threads(1)
    runs = [run(seed) for seed in SEEDS]
    for seed, figures in zip(SEEDS, runs, strict=True):
        print(
            f"seed {seed}: "
            + ", ".join(f"{k} {v:.3f}" for k, v in figures.items())
        )
    names = list(runs[0])
    metrics = {name: seed_summary([r[name] for r in runs]) for name in names}
    table = [
        "| seed | " + " | ".join(names) + " |",
        "|---:|" + "---:|" * len(names),
        *(
            f"| {seed} | " + " | ".join(f"{r[n]:.3f}" for n in names) + " |"
            for seed, r in zip(SEEDS, runs, strict=True)
        ),
    ]
    path = write_results(
        Path(__file__).parent / "results",
        "seeds_reverser",
        "benchmarks/reverser_seeds.py",
        {
            "seeds": list(SEEDS),
            "steps": STEPS,
            "batch": BATCH,
            "lr": LR,
            "metrics": metrics,
        },
        table,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
