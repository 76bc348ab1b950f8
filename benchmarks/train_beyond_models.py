"""Train the runs of section 9.2 that the library ships (chapter 9).

    python benchmarks/train_beyond_models.py

Section 9.2 loads its runs that take minutes instead of training them at
every execution: chapter 7's grammar model trained on short sentences, with
the added encoding and with RoPE; chapter 7's shipped grammar run pooled to 2
and to 1 key/value heads, then 100 updates, and an MQA model trained from
scratch for 100 updates; the four runs of the LayerNorm trial. This script
trains each, on one thread, through the section's own functions with
retrain=True (fit_or_load, reversal_or_load), as the section does with
RETRAIN = True, and writes transformer_course/data/beyond_runs.pt: for each
run the settings it was made with (`made_with`, which the section's loaders
compare with theirs), its weights in float16 (the grammar runs, and the
pre-LN reversal run with a warm-up, which the section decodes; None for the
other three) and, for the reversal runs, its losses. Then it loads every run
back through the same functions, which must not train, and scores what they
load.

The record of how they were made (command, commit, torch, processor, date,
CPU seconds, updates, the training history, the SHA-256 of the file and of
the chapter 7 run that the pooled runs start from, and the scores with the
trained float32 weights and with the shipped ones) goes to
data/beyond_runs.json, which tests/test_beyond_runs.py checks the file
against. Another processor trains other models (its kernels round
differently). About five minutes of CPU time here.

--out DIR writes elsewhere; --updates, --steps and --sentences shorten the
runs and the scoring, for a dry run (tests/test_beyond_runs.py makes one).
"""

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from results_files import commit, provenance

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "transformer_course" / "data"
DECODED = "pre-LN, warm-up 50"  # the reversal run whose weights ship


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def half_weights(model) -> dict:
    """The model's state dict in float16 on the CPU, a tied tensor (the
    embedding and the output projection) saved once."""
    halves, weights = {}, {}
    for name, tensor in model.state_dict().items():
        key = tensor.data_ptr()
        if key not in halves:
            halves[key] = tensor.detach().to("cpu", torch.float16).clone()
        weights[name] = halves[key]
    return weights


def grammar_specs(updates=None):
    """(name, config, start) of section 9.2's grammar runs, in its order;
    `updates` shortens them (a dry run)."""
    from transformer_course.beyond import grouped_query_transformer
    from transformer_course.beyond_experiments import BeyondTrainConfig
    from transformer_course.trained_models import TASK_CONFIGS, train_or_load

    grammar = TASK_CONFIGS["grammar"]
    specs = []
    for name in ("sinusoidal", "RoPE"):
        config = BeyondTrainConfig.extend(
            grammar, rope=name == "RoPE", max_source_length=7
        )
        specs.append((f"grammar on short sentences, {name}", config, None))
    translator = train_or_load("grammar", progress=False).model.eval()
    for n_kv in (2, 1):
        config = BeyondTrainConfig.extend(grammar, n_kv_heads=n_kv, updates=100)
        pooled = grouped_query_transformer(translator, n_kv)
        name = f"grammar, h_kv = {n_kv}, from the pooled run"
        specs.append((name, config, pooled))
    config = BeyondTrainConfig.extend(grammar, n_kv_heads=1, updates=100)
    specs.append(("grammar, h_kv = 1, from scratch", config, None))
    if updates is not None:
        specs = [
            (name, dataclasses.replace(config, updates=updates), start)
            for name, config, start in specs
        ]
    return specs


def curve(history) -> list[dict]:
    """At each evaluation: the step, the mean training loss since the last
    one (per target token, label-smoothed) and the validation loss."""
    points, since = [], []
    for record in history:
        since.append(record["loss"])
        if "validation_loss" in record:
            points.append(
                {
                    "step": record["step"],
                    "training loss": round(sum(since) / len(since), 4),
                    "validation loss": round(record["validation_loss"], 4),
                }
            )
            since = []
    return points


def reversal_specs(steps=200):
    """(norm_first, warmup, steps) of section 9.2's four reversal runs."""
    return [(nf, warmup, steps) for nf in (False, True) for warmup in (0, 50)]


def reversed_exactly(model) -> float:
    """Section 9.2's test of the reversal model: 200 new sequences."""
    from transformer_course.beyond_experiments import reversal_batch
    from transformer_course.decoding import greedy_decode

    src, tgt = reversal_batch(torch.Generator().manual_seed(7), B=200)
    out = greedy_decode(model, src, 10)
    return (out == tgt[:, 1:]).all(dim=1).float().mean().item()


def train(updates=None, steps=200, sentences=None, grammar=None):
    """Every run, trained: ({name: what ships}, {name: its record});
    `grammar`: grammar_specs(updates), if made already."""
    from transformer_course.beyond_experiments import (
        fit_or_load,
        reversal_or_load,
        reversal_settings,
        training_settings,
    )
    from transformer_course.training import exact_match

    runs, records = {}, {}
    for name, config, start in grammar or grammar_specs(updates):
        began = time.process_time()
        run = fit_or_load(name, config, start=start, retrain=True)
        seconds = time.process_time() - began
        runs[name] = {
            "made_with": training_settings(config),
            "weights": half_weights(run.model),
        }
        records[name] = {
            "made_with": training_settings(config),
            "start": "random" if start is None else "chapter 7's run, pooled",
            "updates": run.step,
            "cpu_seconds": round(seconds, 1),
            "curve": curve(run.history),
            "test exact match, float32": exact_match(
                run.model, run.task, "test", limit=sentences
            ),
        }
    for norm_first, warmup, n_steps in reversal_specs(steps):
        name, settings = reversal_settings(norm_first, warmup, n_steps)
        began = time.process_time()
        model, losses = reversal_or_load(
            norm_first, warmup, n_steps, retrain=True
        )
        seconds = time.process_time() - began
        decoded = name.endswith(DECODED)
        runs[name] = {
            "made_with": settings,
            "weights": half_weights(model) if decoded else None,
            "losses": losses,
        }
        records[name] = {
            "made_with": settings,
            "updates": n_steps,
            "cpu_seconds": round(seconds, 1),
            "mean of the last 40 losses": sum(losses[-40:]) / 40,
        }
        if decoded:
            records[name]["reversed exactly, float32"] = reversed_exactly(model)
    return runs, records


@contextlib.contextmanager
def no_training():
    """Within: any training by section 9.2's loaders is an error."""
    from transformer_course import beyond_experiments

    def refuse(*args, **kwargs):
        raise AssertionError("a shipped run was trained, not loaded")

    names = ("fit", "train_or_load", "train_reversal")
    kept = {name: getattr(beyond_experiments, name) for name in names}
    for name in names:
        setattr(beyond_experiments, name, refuse)
    try:
        yield
    finally:
        for name, function in kept.items():
            setattr(beyond_experiments, name, function)


def score_shipped(
    records, updates=None, steps=200, sentences=None, grammar=None
) -> None:
    """Load every run as section 9.2 does (none may train) and add to its
    record what the shipped weights score; `grammar` as in train()."""
    from transformer_course.beyond_experiments import (
        fit_or_load,
        reversal_or_load,
        reversal_settings,
    )
    from transformer_course.training import exact_match

    with no_training():
        for name, config, start in grammar or grammar_specs(updates):
            run = fit_or_load(name, config, start=start)
            records[name]["test exact match, as shipped"] = exact_match(
                run.model, run.task, "test", limit=sentences
            )
            first = 200 if sentences is None else min(200, sentences)
            records[name][f"test exact match, first {first}, as shipped"] = (
                exact_match(run.model, run.task, "test", limit=first)
            )
        for norm_first, warmup, n_steps in reversal_specs(steps):
            name, _ = reversal_settings(norm_first, warmup, n_steps)
            model, _ = reversal_or_load(norm_first, warmup, n_steps)
            if model is not None:
                records[name]["reversed exactly, as shipped"] = (
                    reversed_exactly(model)
                )


def train_and_score(out: Path, shortened: tuple) -> tuple[Path, dict]:
    """Train every run, write out/beyond_runs.pt, load it back through the
    section's loaders and score it: (the file, the records)."""
    from transformer_course import beyond_experiments

    grammar = grammar_specs(shortened[0])  # once, for training and loading
    runs, records = train(*shortened, grammar=grammar)
    path = out / "beyond_runs.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(runs, path)
    shipped_path = beyond_experiments.shipped_runs_path
    beyond_experiments.shipped_runs_path = lambda: path
    try:
        score_shipped(records, *shortened, grammar=grammar)
    finally:
        beyond_experiments.shipped_runs_path = shipped_path
    return path, records


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--updates", type=int, help="dry run: fewer updates")
    parser.add_argument("--steps", type=int, default=200, help="dry run")
    parser.add_argument("--sentences", type=int, help="dry run: fewer scored")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the section trains: the same models
    made_at = commit()  # before this script writes its files
    shortened = (args.updates, args.steps, args.sentences)
    cached = os.environ.get("TRANSFORMER_COURSE_CACHE")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRANSFORMER_COURSE_CACHE"] = cache  # nothing cached
        try:
            path, records = train_and_score(args.out, shortened)
        finally:  # as it was, for a caller in this process (the tests)
            if cached is None:
                del os.environ["TRANSFORMER_COURSE_CACHE"]
            else:
                os.environ["TRANSFORMER_COURSE_CACHE"] = cached
    command = " ".join(
        ["python", "benchmarks/train_beyond_models.py"]
        + (argv if argv is not None else sys.argv[1:])
    )
    record = {
        **provenance(command, made_at, threads=1),
        "sha256": sha256(path),
        "pooled from": {
            "file": "transformer_course/data/toy_grammar.pt",
            "sha256": sha256(DATA / "toy_grammar.pt"),
        },
        "runs": records,
    }
    path.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    for name, made in records.items():
        print(f"{made['cpu_seconds']:>6.1f} s  {name}")
    print(f"wrote {path} ({path.stat().st_size:,} bytes) and its record")


if __name__ == "__main__":
    main()
