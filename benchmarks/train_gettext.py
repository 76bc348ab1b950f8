"""Train the English->Chinese model that chapter 7 loads, on the gettext corpus.

    python benchmarks/train_gettext.py [--threads 2] [--device auto]
        [--updates 2500] [--average 4] [--runs runs/gettext]
        [--resume] [--out transformer_course/data/gettext_zh.pt]
        [--set FIELD=VALUE ...] [--seconds S]

TASK_CONFIGS["gettext"] is the configuration (chapter 7 explains each choice). The
run writes a resumable checkpoint (optimizer, data position, random states) to
RUNS/last.pt at every evaluation, and the weights alone to RUNS/step-NNNNN.pt, so
that checkpoints can be averaged afterwards and an interrupted run continues with
--resume exactly where it stopped. At the end the weights (the average of the last
--average evaluations' weights) are written in half precision, with the tokenizer,
the training log, the corpus digest, the licences of the sources and the record of
how the model was made (command line, commit, torch version, device, date, wall
time, updates), to --out: the file that ships in the package.

--set changes a field of the configuration (`--set dropout=0.4 --set
n_layers=4`: a dev sweep, benchmarks/gpu_run.py's translator part); --seconds
ends the run at the first evaluation after which another period would not fit
in S seconds (a GPU lent for minutes), and the record says how many updates
were made.

The model that ships was trained on an NVIDIA H200 (--device cuda, 2,500 updates
of about 8,192 tokens in 272 s, beside nine other runs: chapter 7.3's sweep); the
CPU model before it, 2,500 updates of about 4,096 tokens, took 2.6 hours on 2 CPU
cores (3.8 s an update). The catalogs must have been fetched first
(transformer_course.fetch_catalogs(), as the README's set-up does).
"""

import argparse
import dataclasses
import datetime
import json
import sys
import time
from pathlib import Path

import torch
from results_files import commit

from transformer_course.catalogs import CATALOG_SOURCES
from transformer_course.trained_models import TASK_CONFIGS
from transformer_course.training import Run, TrainConfig, fit, resume
from transformer_course.translation import save_translation_model

ROOT = Path(__file__).resolve().parent.parent


def average_weights(paths) -> dict:
    """The element-wise mean of saved state dicts (checkpoint averaging)."""
    states = [
        torch.load(p, map_location="cpu", weights_only=True) for p in paths
    ]
    return {
        name: sum(s[name].float() for s in states) / len(states)
        for name in states[0]
    }


def mean_loss(history, step: int, period: int) -> float:
    """The mean training loss (label-smoothed, per token) of the updates in
    (step - period, step]."""
    losses = [h["loss"] for h in history if step - period < h["step"] <= step]
    return sum(losses) / len(losses)


def changed_config(config: TrainConfig, settings: list[str]) -> TrainConfig:
    """config with each FIELD=VALUE of settings, the value read as the
    field's type; a clear error for an unknown field or a bad value."""
    fields = {field.name: field for field in dataclasses.fields(config)}
    changes = {}
    for setting in settings:
        name, equals, text = setting.partition("=")
        if not equals or name not in fields:
            raise SystemExit(
                f"--set {setting!r}: give FIELD=VALUE, FIELD one of "
                + ", ".join(fields)
            )
        value = getattr(config, name)
        try:
            if isinstance(value, bool):
                if text not in ("True", "False"):
                    raise ValueError("True or False")
                changes[name] = text == "True"
            else:  # a field that may be None holds an int
                changes[name] = (int if value is None else type(value))(text)
        except ValueError as error:
            raise SystemExit(f"--set {setting!r}: {error}") from None
        problem = setting_problem(name, changes[name])
        if problem:
            raise SystemExit(f"--set {setting!r}: {problem}")
    try:  # TrainConfig's own checks (precision, ...)
        return dataclasses.replace(config, **changes)
    except ValueError as error:
        raise SystemExit(f"--set {' '.join(settings)}: {error}") from None


def setting_problem(name: str, value) -> str | None:
    """Why a value cannot be the field's, or None: a probability outside
    [0, 1), a size or count below 1, a task other than this script's, a
    device torch does not know."""
    if name == "task" and value != "gettext":
        return "this script trains the gettext task only"
    if name in ("dropout", "label_smoothing") and not 0 <= value < 1:
        return "a probability, from 0 up to (not including) 1"
    sizes = ("d_model", "n_heads", "n_layers", "d_ff", "max_tokens", "updates")
    if name in (*sizes, "accumulate", "eval_every") and value < 1:
        return "a positive number"
    if name == "device" and value != "auto":
        try:
            torch.device(value)
        except RuntimeError:
            return "a torch device: cpu, cuda, cuda:1, mps, or auto"
    return None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--updates", type=int, default=TASK_CONFIGS["gettext"].updates
    )
    parser.add_argument(
        "--average",
        type=int,
        default=4,  # chosen on dev (choose_gettext.py)
        help="average the weights of the last N evaluations (1: the last)",
    )
    parser.add_argument("--runs", type=Path, default=Path("runs/gettext"))
    parser.add_argument("--resume", action="store_true")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="change a field of TASK_CONFIGS['gettext'] (repeatable)",
    )
    parser.add_argument(
        "--seconds", type=float, help="stop at the evaluation before S s"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "transformer_course" / "data" / "gettext_zh.pt",
    )
    args = parser.parse_args(argv)
    made_at = commit()  # before the run writes its files
    torch.set_num_threads(args.threads)
    config = changed_config(
        dataclasses.replace(
            TASK_CONFIGS["gettext"], updates=args.updates, device=args.device
        ),
        args.set,
    )
    args.runs.mkdir(parents=True, exist_ok=True)
    last, clock = args.runs / "last.pt", args.runs / "seconds.json"
    run = Run(config)
    seconds, longest = 0.0, 0.0
    if args.resume and last.exists():
        resume(run, last)
        seconds = json.loads(clock.read_text())["seconds"]
    while run.step < config.updates:  # one evaluation period at a time
        if args.seconds is not None and seconds + longest > args.seconds:
            print(f"stopped: another period would end after {args.seconds} s")
            break
        start = time.perf_counter()
        period = config.eval_every
        target = min(config.updates, (run.step // period + 1) * period)
        fit(run, target, checkpoint=last, progress=False)
        longest = max(longest, time.perf_counter() - start)
        seconds += time.perf_counter() - start
        clock.write_text(json.dumps({"seconds": seconds}))
        torch.save(
            run.model.state_dict(), args.runs / f"step-{run.step:05d}.pt"
        )
        evaluation = run.history[-1]
        print(
            f"update {run.step}: loss {evaluation['loss']:.3f}, dev loss "
            f"{evaluation.get('validation_loss', float('nan')):.3f}, "
            f"{seconds / 60:.1f} min",
            flush=True,
        )
    steps = sorted(args.runs.glob("step-*.pt"))[-args.average :]
    run.model.load_state_dict(average_weights(steps))
    evaluations = [  # each with the mean training loss since the last one
        dict(h, mean_loss=mean_loss(run.history, h["step"], config.eval_every))
        for h in run.history
        if "validation_loss" in h
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_translation_model(
        args.out,
        run.model,
        run.task.tokenizer,
        train_config=dataclasses.asdict(config),
        history=evaluations,  # step, loss, mean_loss, validation_loss
        averaged=[p.name for p in steps],
        record={
            "command": " ".join(["python", *sys.argv]),
            "commit": made_at,
            "torch": str(torch.__version__),
            "device": (
                torch.cuda.get_device_name(run.device)
                if run.device.type == "cuda"
                else f"cpu, {args.threads} threads"
            ),
            "date": datetime.datetime.now(datetime.UTC).isoformat(
                timespec="seconds"
            ),
            "seconds": round(seconds),
            "updates": run.step,
        },
        sources=[source._asdict() for source in CATALOG_SOURCES],
    )
    best = min(h["validation_loss"] for h in evaluations)
    print(
        f"{run.step} updates in {seconds / 60:.1f} min, best dev loss {best:.3f}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
