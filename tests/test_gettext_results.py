"""The Markdown tables beside the dev choices (benchmarks/choose_gettext.py) and the
test split's scores (benchmarks/evaluate_gettext.py): one row per candidate,
system and difference of the committed JSON, each choice marked once."""

import json

from conftest import ROOT, load_benchmark

RESULTS = ROOT / "benchmarks" / "results"

choose = load_benchmark("choose_gettext")
evaluate = load_benchmark("evaluate_gettext")
sweep = load_benchmark("gettext_sweep")


def rows(lines, start):
    """The data rows of the Markdown table whose header begins with `start`."""
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    table = []
    for line in lines[at + 2 :]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip("|").split("|")])
    return table


def test_the_dev_tables_show_every_candidate_and_mark_each_choice():
    document = json.loads((RESULTS / "gettext_dev_choices.json").read_text())
    lines = choose.table(document)
    for start, key in [
        ("| weights", "candidates"),
        ("| memory from", "memory_thresholds"),
        ("| keep tags", "constraints"),
    ]:
        table = rows(lines, start)
        assert len(table) == len(document[key]), key
        chosen = [i for i, row in enumerate(table) if row[-1] == "yes"]
        assert len(chosen) == 1, key
        shown = document[key][chosen[0]]
        assert table[chosen[0]][-4] == f"{shown['chrF']:.1f}", key
    candidates = rows(lines, "| weights")
    chosen = next(row for row in candidates if row[-1] == "yes")
    assert chosen[0] == document["choice"]["name"]
    assert chosen[1] == str(document["choice"]["beam"])


def test_the_test_tables_show_every_system_and_difference():
    document = json.loads(
        (RESULTS / "gettext_test.json").read_text(encoding="utf-8")
    )
    lines = evaluate.table(document)
    systems = rows(lines, "| system")
    assert [row[0] for row in systems] == list(document["scores"])
    for row, scores in zip(systems, document["scores"].values(), strict=True):
        assert row[1:3] == [f"{scores['BLEU']:.1f}", f"{scores['chrF']:.1f}"]
    differences = rows(lines, "| difference")
    assert [row[0] for row in differences] == list(document["differences"])
    for row, metrics in zip(
        differences, document["differences"].values(), strict=True
    ):
        x, lo, hi = metrics["BLEU"]
        assert row[1] == f"{x:+.1f} ({lo:+.1f} to {hi:+.1f})"


def test_the_gpu_sweep_table_is_its_json():
    """Every run of the GPU sweep, its lowest dev loss, and the models
    decoded on dev with their difference from the reference model."""
    document = json.loads((RESULTS / "gettext_gpu_sweep.json").read_text())
    markdown = (RESULTS / "gettext_gpu_sweep.md").read_text()
    assert "\n".join(sweep.table(document)) in markdown
    table = rows(sweep.table(document), "| run")
    assert [row[0] for row in table] == [r["name"] for r in document["runs"]]
    decoded = [r for r in document["runs"] if "dev" in r]
    # decoded here from a returned file, or on the GPU after training
    assert decoded and all(
        r["file"] or r["dev"].get("decoded_on") == "cuda" for r in decoded
    )
    for run in decoded:  # each interval holds its difference
        for diff, low, high in run["dev"]["minus_reference"].values():
            assert low <= diff <= high
