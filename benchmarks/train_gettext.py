"""Train the English->Chinese model that chapter 7 loads, on the gettext corpus.

    python benchmarks/train_gettext.py [--threads 2] [--updates 3000]
        [--checkpoint runs/gettext.pt] [--out transformer_course/data/gettext_zh.pt]

TASK_CONFIGS["gettext"] is the configuration: chapter 6's model with d_model 256,
4 heads, 3 + 3 layers, d_ff 1024, dropout 0.2, batches of about 4,096 padded tokens,
the warm-up schedule (800 updates, factor 1) and label smoothing 0.1. The run
checkpoints (with the optimizer, the data position and the random states) at every
evaluation, so an interrupted run continues with --resume exactly where it stopped.
At the end the weights are written in half precision, with the tokenizer, the
training log, the corpus digest and the licences of the sources, to --out: the file
that ships in the package and that chapters 7 and 8 load.

On 2 CPU cores an update takes about 1.5 s (3,000 updates: about 80 minutes); on a
GPU a few minutes. The catalogs must have been fetched first (transformer_course.
fetch_catalogs(), as the README's set-up does).
"""

import argparse
import dataclasses
import time
from pathlib import Path

import torch

from transformer_course.catalogs import CATALOG_SOURCES
from transformer_course.trained_models import TASK_CONFIGS
from transformer_course.training import Run, fit, resume
from transformer_course.translation import save_translation_model

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--updates", type=int, default=TASK_CONFIGS["gettext"].updates
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--checkpoint", type=Path, default=Path("runs/gettext.pt")
    )
    parser.add_argument("--resume", action="store_true")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "transformer_course" / "data" / "gettext_zh.pt",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = dataclasses.replace(
        TASK_CONFIGS["gettext"], updates=args.updates, device=args.device
    )
    run = Run(config)
    if args.resume and args.checkpoint.exists():
        resume(run, args.checkpoint)
    start = time.perf_counter()
    fit(run, config.updates, checkpoint=args.checkpoint)
    seconds = time.perf_counter() - start
    evaluations = [h for h in run.history if "validation_loss" in h]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_translation_model(
        args.out,
        run.model,
        run.task.tokenizer,
        train_config=dataclasses.asdict(config),
        history=evaluations,  # the training loss, and the dev loss, at each
        seconds=seconds,  # this process's share (a resumed run: the rest)
        threads=args.threads,
        device=str(run.device),
        sources=[source._asdict() for source in CATALOG_SOURCES],
    )
    best = min(h["validation_loss"] for h in evaluations)
    print(
        f"{config.updates} updates in {seconds / 60:.1f} min, best dev loss {best:.3f}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
