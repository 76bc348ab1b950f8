"""Checkers for chapter 0: getting started."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _copies,
    _expect_close,
    _expect_unchanged,
    _verdict,
)

__all__ = [
    "check_row_normalise",
    "check_logsumexp",
    "check_masked_mean",
]

_KEEPDIMS_HINT = (
    "the {what} have shape (n,), and NumPy broadcasts such an array along the "
    "last axis, so element [i, j] was combined with the {what_one} of row j. "
    "Keep the reduced axis: {fix}."
)


def check_row_normalise(
    row_normalise: Callable[[np.ndarray], np.ndarray],
) -> None:
    """Check `row_normalise(matrix)`: every row divided by its own sum."""
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
                    "every column sums to 1, not every row: sum over axis=1 "
                    "(the columns of one row), not axis=0.",
                ),
                (
                    matrix / matrix.sum(),
                    "you divided by the sum of the whole matrix: sum each row "
                    "on its own, axis=1.",
                ),
            ]
            if matrix.shape[0] == matrix.shape[1]:
                mistakes.append(
                    (
                        matrix / matrix.sum(axis=1),
                        _KEEPDIMS_HINT.format(
                            what="row sums",
                            what_one="sum",
                            fix="matrix.sum(axis=1, keepdims=True)",
                        ),
                    )
                )
            _expect_unchanged(name, None, [given], [matrix])
            _expect_close(name, [matrix], got, expected, mistakes)

    _verdict(name, "divides every row by its own sum.", run_cases)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]


def check_logsumexp(logsumexp: Callable[[np.ndarray], np.ndarray]) -> None:
    """Check `logsumexp(x)`: log(sum(exp(x))) of every row, shape (n,), for
    rows of any size (no overflow, no log(0))."""
    name = "logsumexp"
    small = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [-1.0, 0.0, 3.0]])
    large = np.array(
        [[1000.0, 1000.0, 999.0], [2.0, 1.0, 0.5], [-5.0, 0.0, 1.0]]
    )
    far_apart = np.array(
        [[1.0, 2.0, 0.0, 3.0], [-800.0, -801.0, -800.0, -802.0]]
    )
    spread = np.array([[-1500.0, 0.0], [3.0, 4.0]])

    def run_cases() -> None:
        for x in (small, large, far_apart, spread):
            given = x.copy()
            with np.errstate(all="ignore"):
                got = _call(logsumexp, name, given)
                top = x.max(axis=1, keepdims=True)
                overall = x.max()
                mistakes = [
                    (
                        np.log(np.exp(x).sum(axis=1)),
                        "exp overflows: np.exp(1000.0) is inf in float64 (the "
                        "largest finite result is exp(709.78)). Subtract each "
                        "row's maximum m first and add it back: "
                        "m + log(sum(exp(x - m))).",
                    ),
                    (
                        np.log(np.exp(x - top).sum(axis=1)),
                        "you subtracted each row's maximum but did not add it "
                        "back: logsumexp(x) = m + log(sum(exp(x - m))).",
                    ),
                    (
                        overall + np.log(np.exp(x - overall).sum(axis=1)),
                        "you subtracted the maximum of the whole matrix: in a row "
                        "far below it every term underflows (exp(-800) is 0.0 "
                        "in float64) and log(0) = -inf. Use each row's own "
                        "maximum, x.max(axis=1, keepdims=True).",
                    ),
                    (
                        (mean := x.mean(axis=1, keepdims=True))[:, 0]
                        + np.log(np.exp(x - mean).sum(axis=1)),
                        "shifting by the row mean is exact on paper, but "
                        "exp(max - mean) can still overflow: shift by the "
                        "maximum, so that the largest term is exp(0) = 1.",
                    ),
                    (
                        np.log(np.exp(x - top).sum(axis=1)) + top,
                        "a sum of shape (n,) plus a maximum of shape (n, 1) "
                        "broadcasts to (n, n): add top[:, 0], or keep the "
                        "axis in both (keepdims=True) and drop it at the end.",
                    ),
                    (
                        _logsumexp(x)[:, None],
                        "return one number per row, shape (n,): drop the kept "
                        "axis at the end (result[:, 0] or keepdims=False).",
                    ),
                    (
                        _logsumexp(x.T),
                        "you reduced the columns (axis=0); reduce each row, "
                        "axis=1.",
                    ),
                ]
                if x.shape[0] == x.shape[1]:
                    m = x.max(axis=1)
                    mistakes.append(
                        (
                            m + np.log(np.exp(x - m).sum(axis=1)),
                            _KEEPDIMS_HINT.format(
                                what="row maxima",
                                what_one="maximum",
                                fix="x.max(axis=1, keepdims=True)",
                            ),
                        )
                    )
            _expect_unchanged(name, None, [given], [x])
            _expect_close(name, [x], got, _logsumexp(x), mistakes)

    _verdict(name, "is exact and never overflows.", run_cases)


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    counts = mask.sum(axis=1, keepdims=True)
    total = (values * mask[:, :, None]).sum(axis=1)
    return total / np.maximum(counts, 1)


def check_masked_mean(
    masked_mean: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> None:
    """Check `masked_mean(values, mask)`: for values (B, T, d) and a boolean
    mask (B, T), True = a real token, the mean of each sequence's real
    tokens, shape (B, d); zeros for a sequence with no real token."""
    name = "masked_mean"
    # B = T = d = 3, so that a mask broadcast the wrong way raises nothing;
    # the last sequence is all padding
    cube = np.arange(27.0).reshape(3, 3, 3) % 7 - 2.0
    cube_mask = np.array([[1, 1, 0], [1, 1, 1], [0, 0, 0]], dtype=bool)
    batch = np.arange(24.0).reshape(2, 4, 3) / 4
    batch_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=bool)
    # d = 2, so that an answer written for d = 3 is caught
    pairs = np.arange(12.0).reshape(2, 3, 2) - 3.0
    pairs_mask = np.array([[1, 0, 1], [0, 0, 0]], dtype=bool)
    cases = ((cube, cube_mask), (batch, batch_mask), (pairs, pairs_mask))

    def run_cases() -> None:
        for values, mask in cases:
            given = _copies(values, mask)
            with np.errstate(all="ignore"):
                got = _call(masked_mean, name, *given)
                counts = mask.sum(axis=1, keepdims=True)
                total = (values * mask[:, :, None]).sum(axis=1)
                mistakes = [
                    (
                        values[mask].mean(axis=0),
                        "values[mask] keeps the real tokens of all sequences "
                        "in one (n, d) array, so its mean mixes the "
                        "sequences: average each sequence on its own.",
                    ),
                    (
                        values.mean(axis=1),
                        "the padding was averaged in: only the positions where "
                        "the mask is True count.",
                    ),
                    (
                        total / values.shape[1],
                        "you zeroed the padding but divided by T: divide by "
                        "each sequence's number of real tokens, "
                        "mask.sum(axis=1, keepdims=True).",
                    ),
                    (
                        total / mask.sum(),
                        "you divided by the real tokens of the whole batch; "
                        "count each sequence's own, mask.sum(axis=1, "
                        "keepdims=True).",
                    ),
                    (
                        _masked_mean(values, ~mask),
                        "you averaged the padding: in this book True marks "
                        "what is kept (a real token), as in every mask of "
                        "chapters 4-6.",
                    ),
                    (
                        total / counts,
                        "a sequence with no real token gave NaN (0 / 0): "
                        "return zeros for it, as attention gives zero weights "
                        "to a query that may look at nothing (chapter 4). "
                        "np.maximum(counts, 1) avoids the division by zero.",
                    ),
                ]
                for count in (np.maximum(counts[:, 0], 1), counts[:, 0]):
                    if values.shape[0] != values.shape[2]:
                        break  # (B, d) / (B,) raises when B != d
                    mistakes.append(
                        (
                            total / count,
                            "the counts have shape (B,), and NumPy lines them "
                            "up with the last axis (d) of the (B, d) sums, so "
                            "column j was divided by sequence j's count. Keep "
                            "the axis: mask.sum(axis=1, keepdims=True).",
                        )
                    )
                if values.shape[0] == values.shape[1] == values.shape[2]:
                    wrong_total = (values * mask).sum(axis=1)
                    for count in (np.maximum(counts, 1), counts):
                        mistakes.append(
                            (
                                wrong_total / count,
                                "the mask (B, T) was broadcast against the "
                                "last two axes of values, (T, d), not (B, T): "
                                "give it a feature axis, mask[:, :, None].",
                            )
                        )
            _expect_unchanged(name, None, given, [values, mask])
            shown = [values, mask]
            _expect_close(
                name, shown, got, _masked_mean(values, mask), mistakes
            )

    _verdict(name, "averages the real tokens only.", run_cases)
