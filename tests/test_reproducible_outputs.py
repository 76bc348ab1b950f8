"""Compared outputs print nothing that depends on the machine's round-off.

nbval compares every output of a cell not tagged `nbval-ignore-output` with
the committed one, character for character. A float64 residual such as
`2.3e-14` is round-off noise: another CPU (AVX2 or AVX-512, one thread or two)
sums in another order and prints `2.2e-14`, and the test suite fails there.
A float64 printed in full (`0.9999999999999998`) is the same noise. Print the
claim instead (`error < 1e-12: True`, or `< 1e-12`) and assert it.
"""

import re

import pytest
from conftest import code_cells, load_notebook, source

# A float below 1e-9 written in scientific notation: 1e-09, 2.3e-14, 5e-123.
ROUND_OFF = re.compile(r"\d(?:\.\d+)?e-(?:09|[1-9]\d)", re.IGNORECASE)
# A float64 printed in full whose last digits are round-off: 0.9999999999999998,
# 1.0000000000000002, 2.0000000000000004 (a run of 8 nines or zeros, then 1-3
# digits).
FULL_REPR = re.compile(r"\d\.\d*?(?:9{8,}|0{8,})[1-9]\d{0,2}(?![\d.])")
# A bound is a claim, not a residual: "< 1e-12", "<= 1e-10", "≤ 1e-9".
BOUND = re.compile(r"(?:<=?|≤)\s*$")


def compared_text(cell: dict) -> str:
    """The text nbval compares for one cell: streams and text/* data."""
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append(source({"source": output["text"]}))
        for mime, value in output.get("data", {}).items():
            if mime.startswith("text/"):
                parts.append(source({"source": value}))
    return "\n".join(parts)


def round_off_numbers(text: str) -> list[str]:
    """The numbers in `text` that look like round-off noise, with context."""
    found = []
    matches = [*ROUND_OFF.finditer(text), *FULL_REPR.finditer(text)]
    for match in sorted(matches, key=lambda m: m.start()):
        before = text[max(0, match.start() - 40) : match.start()]
        if BOUND.search(before):
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        line = text[line_start : line_end if line_end != -1 else len(text)]
        found.append(f"{match.group()!r} in {line.strip()[:70]!r}")
    return found


@pytest.mark.parametrize(
    ("text", "noisy"),
    [
        ("max error 2.3e-14", True),
        ("[ 1.2e-16 -3.0e-17]", True),
        ("difference: 1e-09", True),
        ("tensor(4.4409e-16)", True),
        ("error < 1e-12: True", False),
        ("below <= 1e-10", False),
        ("learning rate 3e-4", False),
        ("eps 1e-5, 1.5e-08", False),
        ("0.000001", False),
        ("row sums total: 0.9999999999999998", True),
        ("1.0000000000000002", True),
        ("[0.99999999 1.0]", False),
        ("3.1415926535", False),
        ("pi = 3.141592653589793", False),
    ],
)
def test_round_off_pattern(text, noisy):
    assert bool(round_off_numbers(text)) == noisy


def test_compared_outputs_print_no_round_off_noise(notebook_path):
    problems = []
    for index, cell in enumerate(code_cells(load_notebook(notebook_path))):
        if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            continue
        problems += [
            f"code cell {index}: {found}"
            for found in round_off_numbers(compared_text(cell))
        ]
    assert not problems, (
        f"{notebook_path.name} prints round-off noise in compared outputs; "
        "print the claim (`< 1e-12`) and assert it, or tag the cell "
        "nbval-ignore-output and assert after it:\n" + "\n".join(problems)
    )
