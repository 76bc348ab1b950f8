"""Checkers for chapter 0: getting started."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    ExerciseError,
    _call,
    _describe,
    _expect_close,
    _verdict,
)

__all__ = [
    "check_row_normalise",
]


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
