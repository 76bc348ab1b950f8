"""Section 7.1's smallest training loop, over five seeds: does it learn every time?

    python benchmarks/first_loop_seeds.py

Section 7.1 trains chapter 6's small model (d_model 64, 2 + 2 layers) for 150 steps,
each on 32 pairs drawn at random from the real corpus's messages of at most 16
tokens on each side, and asserts that the mean loss of the last 10 steps is at
least 1.5 below that of the first 10 and 2 below uniform guessing (the natural log
of the vocabulary's size). This runs the same loop with seeds 0-4 (the seed of
torch.manual_seed and of the batch draw's random.Random; the section's run is seed
0) on one thread, and writes benchmarks/results/seeds_first_loop.{json,md}, which
the section reads. About 65 s of CPU time in all here (the tokenizer, five seeds).
"""

import math
import random
from pathlib import Path

import torch
import torch.nn.functional as F
from results_files import seed_summary, write_results
from torch.nn.utils.rnn import pad_sequence

from transformer_course import Transformer, TransformerConfig
from transformer_course.corpus import BOS_ID, EOS_ID, PAD_ID
from transformer_course.translation import gettext_task

SEEDS = range(5)
STEPS, PAIRS, LONGEST = 150, 32, 16  # as section 7.1


def padded(ids_lists) -> torch.Tensor:
    return pad_sequence(
        [torch.tensor(ids) for ids in ids_lists],
        batch_first=True,
        padding_value=PAD_ID,
    )


def first_loop(examples, vocab_size: int, seed: int) -> list[float]:
    """Section 7.1's loop with this seed: the loss of each step."""
    torch.manual_seed(seed)
    draw = random.Random(seed)
    config = TransformerConfig(
        vocab_size, d_model=64, n_heads=4, n_layers=2, d_ff=256, dropout=0.1
    )
    model = Transformer(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(STEPS):
        batch = draw.sample(examples, PAIRS)
        src = padded([source for source, _ in batch])
        tgt = padded([[BOS_ID, *target, EOS_ID] for _, target in batch])
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(
            logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=PAD_ID
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main() -> None:
    torch.set_num_threads(1)
    task = gettext_task()
    short = [
        (source, target)
        for source, target in task.examples("train")
        if len(source) <= LONGEST and len(target) <= LONGEST
    ]
    uniform = math.log(len(task.vocab))
    first, last = [], []
    for seed in SEEDS:
        losses = first_loop(short, len(task.vocab), seed)
        first.append(sum(losses[:10]) / 10)
        last.append(sum(losses[-10:]) / 10)
        print(f"seed {seed}: first 10 {first[-1]:.2f}, last 10 {last[-1]:.2f}")
    learns = [
        b < a - 1.5 and b < uniform - 2
        for a, b in zip(first, last, strict=True)
    ]
    table = [
        "| seed | mean loss, first 10 steps | last 10 steps | learns |",
        "|---:|---:|---:|:---|",
        *(
            f"| {seed} | {a:.2f} | {b:.2f} | {'yes' if ok else 'no'} |"
            for seed, a, b, ok in zip(SEEDS, first, last, learns, strict=True)
        ),
        "",
        f"Uniform guessing: ln {len(task.vocab):,} = {uniform:.2f}; training "
        f"pairs of at most {LONGEST} tokens each side: {len(short):,}.",
    ]
    path = write_results(
        Path(__file__).parent / "results",
        "seeds_first_loop",
        "benchmarks/first_loop_seeds.py",
        {
            "seeds": list(SEEDS),
            "steps": STEPS,
            "pairs": PAIRS,
            "longest": LONGEST,
            "uniform_loss": uniform,
            "metrics": {
                "first_10_loss": seed_summary(first),
                "last_10_loss": seed_summary(last),
            },
            "every_seed_learns": all(learns),
        },
        table,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
