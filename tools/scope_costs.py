"""What each test module costs: tests/scope_costs.json, from a timed run.

CI runs the tests with `-n auto --dist loadscope` (pytest-xdist): a worker takes
a whole module, test class or notebook at a time, and the next one when it has
nearly finished (two tests or fewer left). By default xdist hands them out with the most tests first, but the
number of tests says little of the time: the training CLI's few tests run for
most of a minute, the hundreds of tests of the Chinese checkers' messages for
seconds. Handed out last, a
long module keeps one worker busy while the other has nothing left to do.
tests/conftest.py hands the modules out longest first instead, by the seconds
this file records for them (a module it does not know counts as the median).

Make the file again after the tests changed much, from a full run on a quiet
machine, from the repository's root (--durations-min=0: pytest hides what took
under 5 ms, and a module this file lacks would count as the median):

    python -m pytest -n auto --dist loadscope --durations=0 --durations-min=0 -q > /tmp/run.log
    python tools/scope_costs.py /tmp/run.log
"""

import argparse
import collections
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COSTS = ROOT / "tests" / "scope_costs.json"
# a line of pytest's --durations report: "12.34s call     tests/test_x.py::test_y"
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S+)")


def module_of(nodeid: str) -> str:
    """The file a test id belongs to: tests/test_x.py, book/07_1_...ipynb."""
    return nodeid.split("::", 1)[0]


def module_costs(report: str) -> dict[str, float]:
    """Seconds per module (setup, call and teardown of all its tests) from a
    --durations=0 report, longest first, to a tenth of a second."""
    costs: collections.Counter = collections.Counter()
    for line in report.splitlines():
        match = DURATION.match(line)
        if match:
            costs[module_of(match.group(2))] += float(match.group(1))
    if not costs:
        raise SystemExit(
            "no durations in the report: run pytest with --durations=0"
        )
    return {name: round(s, 1) for name, s in costs.most_common()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="pytest's output")
    args = parser.parse_args()
    costs = module_costs(args.report.read_text(encoding="utf-8"))
    COSTS.write_text(json.dumps(costs, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {COSTS.relative_to(ROOT)}: {len(costs)} modules")


if __name__ == "__main__":
    main()
