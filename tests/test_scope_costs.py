"""The order in which the workers get the test modules (tests/conftest.py,
tools/scope_costs.py)."""

import importlib.util

import pytest
from conftest import ROOT, longest_first, module_costs

spec = importlib.util.spec_from_file_location(
    "scope_costs", ROOT / "tools" / "scope_costs.py"
)
scope_costs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scope_costs)

REPORT = """\
============================== slowest durations ===============================
40.00s call     tests/test_slow.py::TestTwo::test_a
2.50s setup    tests/test_slow.py::TestTwo::test_a
0.50s call     book/01_x.ipynb::Cell 3
0.20s call     book/01_x.ipynb::Cell 1
1.00s call     tests/test_many.py::test_p[a::b]
(12 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_the_report_gives_seconds_per_module_longest_first():
    costs = scope_costs.module_costs(REPORT)
    assert costs == {
        "tests/test_slow.py": 42.5,
        "tests/test_many.py": 1.0,
        "book/01_x.ipynb": 0.7,
    }
    assert list(costs) == [
        "tests/test_slow.py",
        "tests/test_many.py",
        "book/01_x.ipynb",
    ]


def test_longest_first_keeps_each_module_together_and_in_order():
    ids = [
        "tests/test_a.py::test_1",
        "tests/test_b.py::TestC::test_1",
        "tests/test_a.py::test_2",
        "tests/test_b.py::test_2",
        "book/01_x.ipynb::Cell 0",
        "book/01_x.ipynb::Cell 1",
        "tests/test_new.py::test_1",
    ]
    costs = {
        "tests/test_a.py": 1.0,
        "tests/test_b.py": 30.0,
        "book/01_x.ipynb": 5.0,
    }
    assert longest_first(ids, costs) == [
        "tests/test_b.py::TestC::test_1",
        "tests/test_b.py::test_2",
        # unknown: the median of the known costs, 5.0; a tie keeps the
        # order in which the modules came
        "book/01_x.ipynb::Cell 0",
        "book/01_x.ipynb::Cell 1",
        "tests/test_new.py::test_1",
        "tests/test_a.py::test_1",
        "tests/test_a.py::test_2",
    ]


def test_every_module_the_costs_name_exists():
    """A module renamed or removed leaves a stale cost: make the file again
    (tools/scope_costs.py)."""
    missing = [name for name in module_costs() if not (ROOT / name).exists()]
    assert not missing, missing


def test_this_session_hands_out_the_modules_longest_first(request):
    """The hooks are in place: this run's own tests come longest module first,
    and xdist's reordering (most tests first) is off. (pytest --nf and --ff
    reorder after the hook: then the order is theirs.)"""
    option = request.config.option
    if getattr(option, "newfirst", False) or getattr(
        option, "failedfirst", False
    ):
        pytest.skip("--nf or --ff orders the tests after the hook")
    ids = [item.nodeid for item in request.session.items]
    assert ids == longest_first(ids, module_costs())
    assert getattr(request.config.option, "loadscopereorder", False) is False
