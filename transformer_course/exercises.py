"""Checkers for the book's exercises.

Each `check_*` function takes the learner's function, calls it on a few inputs and
compares the results with the expected ones:

- correct: prints "Correct: ...";
- still the stub (it raises `NotImplementedError`): prints "Not done yet: ..." and
  returns, so "run all" carries on to the reference solution;
- wrong: raises `ExerciseError`, whose message names the input, what was expected
  and what came back, with a hint when the answer matches a known mistake.

This is the one hand-written module of the package (the rest is exported from the
chapters); `tests/test_exercises.py` proves that every checker rejects the known
wrong answers.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["ExerciseError", "check_row_normalise"]


class ExerciseError(AssertionError):
    """The answer to an exercise is wrong; the message says where and why."""


class _NotDone(Exception):
    """The learner's function still raises NotImplementedError."""


def _describe(value) -> str:
    """A short, readable rendering of an input or output for a message."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, precision=4, suppress_small=True, separator=", ")
        return f"array of shape {value.shape}:\n{text}"
    return repr(value)


def _call(fn: Callable, name: str, *args):
    """Call the learner's `fn`; turn its exceptions into messages about the input."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise _NotDone() from None
    except Exception as error:  # the learner's bug, reported with the input that caused it
        inputs = "\n".join(_describe(a) for a in args)
        raise ExerciseError(
            f"{name} raised {type(error).__name__}: {error}\non input {inputs}"
        ) from error


def _expect_close(
    name: str,
    inputs: Sequence,
    got,
    expected: np.ndarray,
    known_mistakes: Sequence[tuple[np.ndarray, str]] = (),
    atol: float = 1e-6,
) -> None:
    """Raise ExerciseError unless `got` equals `expected`, naming a known mistake if it matches one."""
    got_array = np.asarray(got, dtype=float) if got is not None else None
    shown_inputs = "\n".join(_describe(a) for a in inputs)
    if got_array is None or got_array.shape != expected.shape:
        shape = None if got_array is None else got_array.shape
        raise ExerciseError(
            f"{name} on input {shown_inputs}\n"
            f"should return shape {expected.shape}, but returned "
            f"{'None (did you forget `return`?)' if got is None else f'shape {shape}'}."
        )
    if np.allclose(got_array, expected, atol=atol):
        return
    hint = next(
        (message for wrong, message in known_mistakes if np.allclose(got_array, wrong, atol=atol)),
        None,
    )
    raise ExerciseError(
        f"{name} on input {shown_inputs}\n"
        f"expected {_describe(expected)}\n"
        f"but got {_describe(got_array)}"
        + (("\n" + textwrap.fill(f"Hint: {hint}", width=80)) if hint else "")
    )


def _verdict(name: str, success: str, run_cases: Callable[[], None]) -> None:
    """Run the cases and print the verdict; a wrong answer raises ExerciseError."""
    try:
        run_cases()
    except _NotDone:
        print(
            f"Not done yet: {name} still raises NotImplementedError.\n"
            "Write your answer in its cell, run that cell, then run this one again."
        )
        return
    print(f"Correct: {name} {success}")


# ---------------------------------------------------------------------------
# Chapter 0: getting started


def check_row_normalise(row_normalise: Callable[[np.ndarray], np.ndarray]) -> None:
    """Check `row_normalise(matrix)`: every row divided by its own sum, input left unchanged."""
    name = "row_normalise"
    square = np.array([[1.0, 3.0, 0.0], [2.0, 2.0, 4.0], [0.0, 1.0, 9.0]])
    wide = np.array([[1.0, 1.0, 2.0, 4.0], [5.0, 0.0, 3.0, 2.0]])

    def run_cases() -> None:
        for matrix in (square, wide):
            given = matrix.copy()
            got = _call(row_normalise, name, given)
            expected = matrix / matrix.sum(axis=1, keepdims=True)
            mistakes = [
                (
                    matrix / matrix.sum(axis=0, keepdims=True),
                    "every column sums to 1, not every row: sum over axis=1 (the columns "
                    "of one row), not axis=0.",
                ),
            ]
            if matrix.shape[0] == matrix.shape[1]:
                mistakes.append(
                    (
                        matrix / matrix.sum(axis=1),
                        "the row sums have shape (n,), and NumPy broadcasts such an array "
                        "along the last axis, so element [i, j] was divided by the sum of "
                        "row j. Keep the summed axis: matrix.sum(axis=1, keepdims=True).",
                    )
                )
            _expect_close(name, [matrix], got, expected, mistakes)
            if not np.array_equal(given, matrix):
                raise ExerciseError(
                    f"{name} changed its input in place; return a new array and leave "
                    f"the input as it was:\n{_describe(matrix)}"
                )

    _verdict(name, "divides every row by its own sum.", run_cases)
