"""benchmarks/decoding_speed.py, which section 8.2 reads: its decoders are
timed in turn after a warm-up round, it refuses too few repeats for a median
and a spread, and its committed results agree with themselves."""

import json
import statistics

import pytest
from conftest import ROOT, load_benchmark

decoding_speed = load_benchmark("decoding_speed")


def test_the_decoders_run_in_turn_after_a_warm_up_round():
    order = []
    calls = {name: (lambda name=name: order.append(name)) for name in "abc"}
    seconds = decoding_speed.timed_in_turn(calls, repeats=5)
    assert order == list("abc") * 6  # one warm-up round, then five
    assert {
        name: len(times) for name, times in seconds.items()
    } == dict.fromkeys("abc", 5)


def test_fewer_than_five_repeats_are_refused(capsys):
    with pytest.raises(SystemExit):
        decoding_speed.main(["--repeats", "4"])
    assert "at least 5" in capsys.readouterr().err


def test_the_committed_results_agree_with_themselves():
    document = json.loads(
        (ROOT / "benchmarks" / "results" / "decoding_speed.json").read_text()
    )
    rows = document["rows"]
    assert list(rows) == ["greedy", "beam 4", "beam 8"]
    greedy = rows["greedy"]["median"]
    for row in rows.values():
        assert len(row["seconds"]) == document["repeats"] >= 5
        assert row["median"] == statistics.median(row["seconds"])
        assert row["fastest"] == min(row["seconds"])
        assert row["slowest"] == max(row["seconds"])
        assert row["median / greedy"] == pytest.approx(row["median"] / greedy)
