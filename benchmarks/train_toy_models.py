"""Train the two small tasks' models that the library ships (chapter 7, section 7.3).

    python benchmarks/train_toy_models.py

Trains TASK_CONFIGS["grammar"] and TASK_CONFIGS["numbers"] on one thread, exactly
as `train_or_load(task, retrain=True)` does in section 7.3, each in a cache folder
of its own, and copies each finished checkpoint (model, optimizer, scheduler, random
states, data position and history: a run that resumes exactly) to
transformer_course/data/toy_<task>.pt; then the same configurations with
EARLY_UPDATES' updates (the grammar's first 100: chapter 8's early checkpoint;
the learning-rate schedule does not depend on the number of updates, so these are
the first 100 updates of the full run) to toy_<task>_<updates>.pt. The record of how they were made (command,
commit, torch version, processor, date, CPU seconds, updates, each file's SHA-256
and its test exact match) goes to transformer_course/data/toy_models.json, which
tests/test_training.py checks the shipped files against.

Another processor trains another model (its kernels round differently): section
7.3's twenty runs show how far apart. About two minutes of CPU time here.
"""

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
from results_files import commit, provenance

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "transformer_course" / "data"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def train(config, name: str) -> dict:
    """Train `config` as train_or_load(config, retrain=True) does, in a cache
    folder of its own; copy the checkpoint to DATA / name; its record."""
    from transformer_course.trained_models import train_or_load
    from transformer_course.training import exact_match

    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRANSFORMER_COURSE_CACHE"] = cache
        start = time.process_time()
        run = train_or_load(config, retrain=True, progress=False)
        seconds = time.process_time() - start
        (checkpoint,) = Path(cache).glob("*.pt")
        shutil.copyfile(checkpoint, DATA / name)
    made = {
        "config": dataclasses.asdict(config),
        "updates": run.step,
        "cpu_seconds": round(seconds, 1),
        "test_exact_match": exact_match(run.model, run.task, "test"),
        "sha256": sha256(DATA / name),
    }
    print(f"{name}: {seconds:.0f} s, {made['test_exact_match']:.1%}")
    return made


def main() -> None:
    torch.set_num_threads(1)  # as the chapter trains: the same model
    made_at = commit()  # before training rewrites the files: not "-dirty"
    from transformer_course.trained_models import (
        EARLY_UPDATES,
        SHIPPED_TASKS,
        TASK_CONFIGS,
    )

    runs = {}
    for task in SHIPPED_TASKS:
        runs[task] = train(TASK_CONFIGS[task], f"toy_{task}.pt")
    for task, updates in EARLY_UPDATES.items():
        config = dataclasses.replace(TASK_CONFIGS[task], updates=updates)
        runs[f"{task}_{updates}"] = train(config, f"toy_{task}_{updates}.pt")
    command = " ".join(["python", *sys.argv])
    record = {**provenance(command, made_at, threads=1), "runs": runs}
    path = DATA / "toy_models.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
