"""The multi-seed results that chapters 5 and 7-9 read (benchmarks/results/seeds_*.json):
at least five seeds each, every run's figure kept, the summary consistent with the
runs, and the reader and the table printer of chapter 7; and the committed
timings (any result file that records `repeats`): at least five repeats."""

import json
import statistics
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, load_benchmark

from transformer_course.seed_results import read_seeds, seed_table

RESULTS = Path(__file__).parent.parent / "benchmarks" / "results"
FILES = sorted(RESULTS.glob("seeds_*.json"))
# what chapters 7-9 read with read_seeds(...)
READ_BY_THE_CHAPTERS = {
    "tasks",
    "tasks_default",
    "tasks_amx",
    "tasks_epyc",
    "recipe",
    "early_beam",
    "gqa",
    "rope",
    "layernorm",
}


def test_every_experiment_the_chapters_read_is_committed():
    assert {
        p.stem.removeprefix("seeds_") for p in FILES
    } >= READ_BY_THE_CHAPTERS
    for experiment in READ_BY_THE_CHAPTERS:
        assert (RESULTS / f"seeds_{experiment}.md").exists(), experiment


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_results_keep_every_seed_and_a_consistent_summary(path):
    document = json.loads(path.read_text())
    seeds = document["seeds"]
    assert len(seeds) >= 5 and len(set(seeds)) == len(seeds)
    assert document["script"] in {
        "benchmarks/training_seeds.py",
        "benchmarks/first_loop_seeds.py",  # section 7.1's loop, not a Run
        "benchmarks/reverser_seeds.py",  # chapter 5's model, not a Run
    }
    assert document["metrics"]
    for name, metric in document["metrics"].items():
        runs = metric["runs"]
        assert len(runs) == len(seeds), name
        assert metric["min"] == min(runs) and metric["max"] == max(runs), name
        assert metric["mean"] == pytest.approx(statistics.fmean(runs)), name


def test_chapter_5_reads_the_reversal_seeds_it_quotes():
    # chapter 5 comes before seed_results (chapter 7): it reads the file itself
    document = json.loads((RESULTS / "seeds_reverser.json").read_text())
    assert document["seeds"] == [0, 1, 2, 3, 4]
    chapter = (ROOT / "book" / "05_multi_head_attention.ipynb").read_text()
    assert "seeds_reverser.json" in chapter


def test_read_seeds_and_seed_table(tmp_path):
    assert read_seeds("absent", folder=tmp_path) is None
    document = {
        "seeds": [0, 1],
        "metrics": {"a: b": {"runs": [0.5, 0.25], "min": 0.25, "max": 0.5}},
    }
    (tmp_path / "seeds_x.json").write_text(json.dumps(document))
    assert read_seeds("x", folder=tmp_path) == document
    table = seed_table(document, {"label": "a: b"}, scale=100)
    assert table.splitlines() == [
        "          s0     s1    min    max",
        "label   50.0   25.0   25.0   50.0",
    ]


def test_read_seeds_finds_the_results_from_any_working_folder(
    tmp_path, monkeypatch
):
    """A script or test run from the repository's root, or from anywhere,
    reads what a notebook in book/ reads: the package's clone comes first."""
    in_book = json.loads((RESULTS / "seeds_rope.json").read_text())
    for folder in (
        tmp_path,
        RESULTS.parent.parent,
        RESULTS.parent.parent / "book",
    ):
        monkeypatch.chdir(folder)
        assert read_seeds("rope") == in_book, folder
    assert read_seeds("absent") is None


def test_read_seeds_falls_back_to_the_working_folder_s_clone(
    tmp_path, monkeypatch
):
    """Where the package was copied out of its clone (pip install of a
    clone, as on Colab), a notebook in the clone's book/ still reads the
    clone's results."""
    import transformer_course.seed_results as seed_results

    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "book").mkdir()
    document = {"seeds": [0], "metrics": {}}
    (tmp_path / "benchmarks" / "results" / "seeds_x.json").write_text(
        json.dumps(document)
    )
    site_packages = tmp_path / "site-packages" / "transformer_course"
    monkeypatch.setattr(
        seed_results.importlib.resources, "files", lambda name: site_packages
    )
    monkeypatch.chdir(tmp_path)
    assert read_seeds("x") is None  # from the clone's root: not found
    monkeypatch.chdir(tmp_path / "book")
    assert read_seeds("x") == document


def test_a_benchmark_result_records_the_commit_it_was_made_at(tmp_path):
    """write_results heads every result with the script, the date, the commit
    (marked -dirty when the checkout differs from it) and the machine."""
    results_files = load_benchmark("results_files")
    path = results_files.write_results(
        tmp_path, "demo", "benchmarks/demo.py", {"value": 1}, ["| a |"]
    )
    document = json.loads(path.read_text())
    assert list(document) == ["script", "date", "commit", "machine", "value"]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    assert len(head) == 40
    assert document["commit"] in (head, f"{head}-dirty")
    # a long run passes the commit it started at
    path = results_files.write_results(
        tmp_path, "demo", "benchmarks/demo.py", {}, [], made_at="0123abc"
    )
    assert json.loads(path.read_text())["commit"] == "0123abc"


TIMED = sorted(
    p for p in RESULTS.glob("*.json") if "repeats" in json.loads(p.read_text())
)


def test_the_timed_results_are_found():
    # the glob and the key still find the benchmarks that time
    assert len(TIMED) >= 5, TIMED


@pytest.mark.parametrize("path", TIMED, ids=lambda p: p.stem)
def test_timings_ran_at_least_five_repeats(path):
    """A committed JSON result that records `repeats` ran each measurement at
    least 5 times (beam_stopping.json once had 3). Timings committed only as
    Markdown (fused_attention_cuda.md, transformer_*.md) are not covered."""
    assert json.loads(path.read_text())["repeats"] >= 5, path.name


def test_the_attention_timings_keep_every_repeat_and_their_table():
    """Chapter 5's CPU timings (benchmarks/multi_head_attention.py): every
    repeat's times kept, the medians and ranges of the ratios those of the
    times, and the Markdown table that of the JSON."""
    script = load_benchmark("multi_head_attention")
    path = RESULTS / "multi_head_attention_cpu.json"
    document = json.loads(path.read_text())
    for rows in document["lengths"].values():
        runs = {r["implementation"]: [t / 1e3 for t in r["ms"]] for r in rows}
        assert {len(t) for t in runs.values()} == {document["repeats"]}
        for row, again in zip(rows, script.summary(runs), strict=True):
            for key in ("median ms", "ratio", "ratio min", "ratio max"):
                assert again[key] == pytest.approx(row[key]), key
    markdown = path.with_suffix(".md").read_text()
    assert markdown.endswith("\n".join(script.table(document)) + "\n")
