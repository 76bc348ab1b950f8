"""The runs of section 9.2 that the library ships (data/beyond_runs.pt): the
file that benchmarks/train_beyond_models.py wrote and recorded, holding the
runs the script trains with their settings, loaded by the section's loaders
without training, and scoring what the record says; a changed setting trains."""

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import pytest
import torch
from conftest import load_benchmark

from transformer_course import beyond_experiments
from transformer_course.beyond_experiments import (
    EncodedOnce,
    fit_or_load,
    reversal_or_load,
    reversal_settings,
    shipped_run,
    shipped_runs_path,
    task_encoded_once,
    training_settings,
)
from transformer_course.toy_tasks import TranslationTask
from transformer_course.training import exact_match, make_task

script = load_benchmark("train_beyond_models")
RECORD = json.loads(shipped_runs_path().with_suffix(".json").read_text())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module", autouse=True)
def examples_encoded_once():
    """Each Run encodes its task's training split anew (the grammar task's
    30,000 pairs: TranslationTask.examples), and this module makes about 20
    Runs of the one task that make_task keeps, for the same split: encoded
    here once a task and split, each call given a list of its own."""
    encoded = {}
    examples = TranslationTask.examples

    def once(task, split):
        key = (id(task), split)
        if key not in encoded:  # the task kept too: its id stays its own
            encoded[key] = (task, examples(task, split))
        return list(encoded[key][1])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TranslationTask, "examples", once)
        yield


@pytest.fixture(scope="module")
def specs():
    """The script's grammar runs (name, config, start) and reversal runs."""
    return script.grammar_specs(), script.reversal_specs()


class Trained(Exception):
    pass


def refuse(*args, **kwargs):
    raise Trained


def test_the_file_is_the_recorded_one_and_small():
    path = shipped_runs_path()
    assert sha256(path) == RECORD["sha256"]
    assert path.stat().st_size < 4 * 2**20
    assert RECORD["command"] == "python benchmarks/train_beyond_models.py"
    assert not RECORD["commit"].endswith("-dirty")
    # the pooled runs started from chapter 7's shipped run as it is now:
    # retraining that run (train_toy_models.py) means rerunning the script
    toy = path.parent / "toy_grammar.pt"
    assert RECORD["pooled from"]["sha256"] == sha256(toy)
    runs = torch.load(path, map_location="cpu", weights_only=True)
    assert list(runs) == list(RECORD["runs"])
    for name, run in runs.items():
        assert run["made_with"] == RECORD["runs"][name]["made_with"], name
        for tensor in (run["weights"] or {}).values():
            assert tensor.dtype == torch.float16, name  # weights, halved


def test_the_file_holds_the_scripts_runs_with_their_settings(specs):
    grammar, reversal = specs
    runs = torch.load(shipped_runs_path(), weights_only=True)
    names = [name for name, _, _ in grammar]
    for name, config, _ in grammar:
        assert runs[name]["made_with"] == training_settings(config), name
        assert runs[name]["weights"] is not None
    for settings in reversal:
        name, made_with = reversal_settings(*settings)
        assert runs[name]["made_with"] == made_with, name
        assert len(runs[name]["losses"]) == made_with["steps"]
        names.append(name)
    assert list(runs) == names
    with_weights = [n for n in runs if runs[n]["weights"] is not None]
    assert with_weights == names[:5] + ["reversal, pre-LN, warm-up 50"]


def test_the_loaders_load_the_shipped_runs_and_their_scores(specs, monkeypatch):
    for name in ("fit", "train_or_load", "train_reversal"):
        monkeypatch.setattr(beyond_experiments, name, refuse)
    grammar, reversal = specs
    for name, config, start in grammar:
        run = fit_or_load(name, config, start=start)
        assert run.step == config.updates
        made = RECORD["runs"][name]
        first = exact_match(run.model, run.task, "test", limit=200)
        # another CPU may round a close call the other way
        expected = made["test exact match, first 200, as shipped"]
        assert first == pytest.approx(expected, abs=0.02), name
    for norm_first, warmup, steps in reversal:
        model, losses = reversal_or_load(norm_first, warmup, steps)
        name = reversal_settings(norm_first, warmup, steps)[0]
        made = RECORD["runs"][name]
        assert sum(losses[-40:]) / 40 == made["mean of the last 40 losses"]
        assert (model is None) == (name != "reversal, pre-LN, warm-up 50")
        if model is not None:
            right = script.reversed_exactly(model)
            expected = made["reversed exactly, as shipped"]
            assert right == pytest.approx(expected, abs=0.02)


def test_retrain_another_setting_or_name_or_no_file_trains(
    specs, monkeypatch, tmp_path
):
    for name in ("fit", "train_or_load", "train_reversal"):
        monkeypatch.setattr(beyond_experiments, name, refuse)
    (short, config, _), _, (pooled, pooled_config, start) = specs[0][:3]
    fit_or_load(pooled, pooled_config, start=start)  # loads: no training
    longer = dataclasses.replace(pooled_config, updates=101)
    calls = [
        lambda: fit_or_load(pooled, longer, start=start),
        lambda: fit_or_load(pooled, pooled_config, start=start, retrain=True),
        lambda: fit_or_load("another name", pooled_config, start=start),
        lambda: fit_or_load(short, config, retrain=True),
        lambda: fit_or_load(short, dataclasses.replace(config, seed=1)),
        lambda: reversal_or_load(True, 50, retrain=True),
        lambda: reversal_or_load(True, 50, steps=199),
        lambda: reversal_or_load(False, 50, lr=1e-3),
    ]
    for call in calls:
        with pytest.raises(Trained):
            call()
    monkeypatch.setattr(
        beyond_experiments, "shipped_runs_path", lambda: tmp_path / "none.pt"
    )
    with pytest.raises(Trained):
        fit_or_load(short, config)


def test_the_scripts_dry_run_writes_what_the_loaders_load(
    tmp_path, monkeypatch, capsys
):
    """The script, shortened, writes a file and a record; before it writes
    the record it loads every run back through the section's loaders, which
    must not train. Its main() runs in this process, which has PyTorch and
    the grammar task already (a process of its own spent 6 of its 16 s of
    CPU on them); the cache folder it sets for itself is put back."""
    monkeypatch.setenv("TRANSFORMER_COURSE_CACHE", str(tmp_path / "cache"))
    script.main(
        [
            *("--out", str(tmp_path), "--updates", "2"),
            *("--steps", "2", "--sentences", "4"),
        ]
    )
    assert os.environ["TRANSFORMER_COURSE_CACHE"] == str(tmp_path / "cache")
    assert "and its record" in capsys.readouterr().out
    record = json.loads((tmp_path / "beyond_runs.json").read_text())
    assert record["sha256"] == sha256(tmp_path / "beyond_runs.pt")
    assert list(record["runs"]) == list(RECORD["runs"])
    for name, made in record["runs"].items():
        assert made["updates"] == 2, name
        if name.startswith("grammar"):
            assert "test exact match, first 4, as shipped" in made, name
    decoded = record["runs"]["reversal, pre-LN, warm-up 50"]
    assert "reversed exactly, as shipped" in decoded


def test_the_shipped_runs_are_read_once_until_the_file_changes(
    monkeypatch, tmp_path
):
    reads = []
    real_load = torch.load

    def counting_load(*args, **kwargs):
        reads.append(args[0])
        return real_load(*args, **kwargs)

    path = tmp_path / "beyond_runs.pt"
    made_with = {"steps": 1}
    torch.save({"a": {"made_with": made_with, "losses": [1.0]}}, path)
    monkeypatch.setattr(beyond_experiments, "shipped_runs_path", lambda: path)
    monkeypatch.setattr(torch, "load", counting_load)
    assert shipped_run("a", made_with)["losses"] == [1.0]
    # a copy of its own: what a caller changes is not the next caller's
    shipped_run("a", made_with)["losses"].append(9.0)
    assert shipped_run("a", made_with)["losses"] == [1.0]
    assert shipped_run("a", {"steps": 2}) is None  # other settings
    assert shipped_run("b", made_with) is None
    assert len(reads) == 1
    torch.save({"a": {"made_with": made_with, "losses": [2.0, 3.0]}}, path)
    assert shipped_run("a", made_with)["losses"] == [2.0, 3.0]  # read again
    assert len(reads) == 2


def test_a_task_encoded_once_encodes_each_split_once(monkeypatch):
    task = make_task("grammar")
    assert type(task_encoded_once("grammar", 30000, 0)) is EncodedOnce
    small = EncodedOnce(
        task.name, task.vocab, {"train": task.splits["train"][:5]}
    )
    calls = []
    encode = TranslationTask.examples

    def counting(self, split):
        calls.append(split)
        return encode(self, split)

    monkeypatch.setattr(TranslationTask, "examples", counting)
    first, second = small.examples("train"), small.examples("train")
    assert calls == ["train"]
    assert first == second == encode(task, "train")[:5]
    assert first is not second  # a list of its own
    first.clear()
    assert len(small.examples("train")) == 5
