"""Checkers for chapter 0: getting started."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import Exercise, Mistake

__all__ = [
    "check_row_normalise",
    "check_logsumexp",
    "check_masked_mean",
]

_KEEPDIMS_SUMS = (
    "the row sums have shape (n,), and NumPy broadcasts such an array along "
    "the last axis, so element [i, j] was combined with the sum of row j. "
    "Keep the reduced axis: matrix.sum(axis=1, keepdims=True)."
)
_KEEPDIMS_MAXIMA = (
    "the row maxima have shape (n,), and NumPy broadcasts such an array along "
    "the last axis, so element [i, j] was combined with the maximum of row j. "
    "Keep the reduced axis: x.max(axis=1, keepdims=True)."
)


def _square(variant: Callable) -> Callable:
    """A mistake seen only on a square matrix (elsewhere it raises)."""
    return lambda x: variant(x) if x.shape[0] == x.shape[1] else None


ROW_NORMALISE = Exercise(
    name="row_normalise",
    success="divides every row by its own sum.",
    doc="""Check `row_normalise(matrix)`: every row divided by its own sum.""",
    cases=[
        (np.array([[1.0, 3.0, 0.0], [2.0, 2.0, 4.0], [0.0, 1.0, 9.0]]),),
        (np.array([[1.0, 1.0, 2.0, 4.0], [5.0, 0.0, 3.0, 2.0]]),),
        # a negative entry: its own sum, not the sum of absolute values
        (np.array([[2.0, -1.0, 3.0], [-1.0, 4.0, 1.0]]),),
    ],
    reference=lambda matrix: matrix / matrix.sum(axis=1, keepdims=True),
    mistakes=[
        Mistake(
            lambda matrix: matrix / matrix.sum(axis=0, keepdims=True),
            "every column sums to 1, not every row: sum over axis=1 (the "
            "columns of one row), not axis=0.",
        ),
        Mistake(
            lambda matrix: matrix / matrix.sum(),
            "you divided by the sum of the whole matrix: sum each row on its "
            "own, axis=1.",
        ),
        Mistake(
            _square(lambda matrix: matrix / matrix.sum(axis=1)),
            _KEEPDIMS_SUMS,
        ),
    ],
)
check_row_normalise = ROW_NORMALISE.checker()


def _top(x: np.ndarray) -> np.ndarray:
    return x.max(axis=1, keepdims=True)


def _shifted(x: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """log(sum(exp(x - shift))), shift added back: exact on paper."""
    return shift[:, 0] + np.log(np.exp(x - shift).sum(axis=1))


def _logsumexp(x: np.ndarray) -> np.ndarray:
    return _shifted(x, _top(x))


LOGSUMEXP = Exercise(
    name="logsumexp",
    success="is exact and never overflows.",
    doc="""Check `logsumexp(x)`: log(sum(exp(x))) of every row, shape (n,), for
    rows of any size (no overflow, no log(0)).""",
    cases=[
        (np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [-1.0, 0.0, 3.0]]),),
        (np.array([[1000.0, 1000.0, 999.0], [2.0, 1.0, 0.5], [-5, 0, 1.0]]),),
        (np.array([[1.0, 2.0, 0.0, 3.0], [-800.0, -801.0, -800.0, -802.0]]),),
        (np.array([[-1500.0, 0.0], [3.0, 4.0]]),),
        (np.array([[0.5, -1.0, 2.0]]),),  # one row: still shape (1,)
    ],
    reference=_logsumexp,
    quiet=True,
    mistakes=[
        Mistake(
            lambda x: np.log(np.exp(x).sum(axis=1)),
            "exp overflows: np.exp(1000.0) is inf in float64 (the largest "
            "finite result is exp(709.78)). Subtract each row's maximum m "
            "first and add it back: m + log(sum(exp(x - m))).",
        ),
        Mistake(
            lambda x: np.log(np.exp(x - _top(x)).sum(axis=1)),
            "you subtracted each row's maximum but did not add it back: "
            "logsumexp(x) = m + log(sum(exp(x - m))).",
        ),
        Mistake(
            lambda x: x.max() + np.log(np.exp(x - x.max()).sum(axis=1)),
            "you subtracted the maximum of the whole matrix: in a row far "
            "below it every term underflows (exp(-800) is 0.0 in float64) and "
            "log(0) = -inf. Use each row's own maximum, x.max(axis=1, "
            "keepdims=True).",
        ),
        Mistake(
            lambda x: _shifted(x, x.mean(axis=1, keepdims=True)),
            "shifting by the row mean is exact on paper, but exp(max - mean) "
            "can still overflow: shift by the maximum, so that the largest "
            "term is exp(0) = 1.",
        ),
        Mistake(
            lambda x: np.log(np.exp(x - _top(x)).sum(axis=1)) + _top(x),
            "a sum of shape (n,) plus a maximum of shape (n, 1) broadcasts to "
            "(n, n): add top[:, 0], or keep the axis in both (keepdims=True) "
            "and drop it at the end.",
        ),
        Mistake(
            lambda x: _logsumexp(x)[:, None],
            "return one number per row, shape (n,): drop the kept axis at the "
            "end (result[:, 0] or keepdims=False).",
        ),
        Mistake(
            lambda x: _logsumexp(x.T),
            "you reduced the columns (axis=0); reduce each row, axis=1.",
        ),
        Mistake(
            _square(
                lambda x: (
                    x.max(axis=1)
                    + np.log(np.exp(x - x.max(axis=1)).sum(axis=1))
                )
            ),
            _KEEPDIMS_MAXIMA,
        ),
    ],
)
check_logsumexp = LOGSUMEXP.checker()


def _total(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return (values * mask[:, :, None]).sum(axis=1)


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    counts = mask.sum(axis=1, keepdims=True)
    return _total(values, mask) / np.maximum(counts, 1)


def _per_column(floor: int) -> Callable:
    """Sums (B, d) over counts (B,), lined up with d: seen where B == d."""

    def variant(values, mask):
        if values.shape[0] != values.shape[2]:
            return None  # (B, d) / (B,) raises when B != d
        return _total(values, mask) / np.maximum(mask.sum(axis=1), floor)

    return variant


def _mask_on_last_axes(floor: int) -> Callable:
    """The mask (B, T) times values (B, T, d) as (T, d): seen where B = T = d."""

    def variant(values, mask):
        if not values.shape[0] == values.shape[1] == values.shape[2]:
            return None
        counts = np.maximum(mask.sum(axis=1, keepdims=True), floor)
        return (values * mask).sum(axis=1) / counts

    return variant


_COUNTS_PER_COLUMN = (
    "the counts have shape (B,), and NumPy lines them up with the last axis "
    "(d) of the (B, d) sums, so column j was divided by sequence j's count. "
    "Keep the axis: mask.sum(axis=1, keepdims=True)."
)
_MASK_ON_LAST_AXES = (
    "the mask (B, T) was broadcast against the last two axes of values, (T, "
    "d), not (B, T): give it a feature axis, mask[:, :, None]."
)

MASKED_MEAN = Exercise(
    name="masked_mean",
    success="averages the real tokens only.",
    doc="""Check `masked_mean(values, mask)`: for values (B, T, d) and a boolean
    mask (B, T), True = a real token, the mean of each sequence's real
    tokens, shape (B, d); zeros for a sequence with no real token.""",
    cases=[
        # B = T = d = 3, so that a mask broadcast the wrong way raises
        # nothing; the last sequence is all padding
        (
            np.arange(27.0).reshape(3, 3, 3) % 7 - 2.0,
            np.array([[1, 1, 0], [1, 1, 1], [0, 0, 0]], dtype=bool),
        ),
        (
            np.arange(24.0).reshape(2, 4, 3) / 4,
            np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=bool),
        ),
        # d = 2, so that an answer written for d = 3 is caught
        (
            np.arange(12.0).reshape(2, 3, 2) - 3.0,
            np.array([[1, 0, 1], [0, 0, 0]], dtype=bool),
        ),
    ],
    reference=_masked_mean,
    quiet=True,
    mistakes=[
        Mistake(
            lambda values, mask: values[mask].mean(axis=0),
            "values[mask] keeps the real tokens of all sequences in one (n, "
            "d) array, so its mean mixes the sequences: average each sequence "
            "on its own.",
        ),
        Mistake(
            lambda values, mask: values.mean(axis=1),
            "the padding was averaged in: only the positions where the mask "
            "is True count.",
        ),
        Mistake(
            lambda values, mask: _total(values, mask) / values.shape[1],
            "you zeroed the padding but divided by T: divide by each "
            "sequence's number of real tokens, mask.sum(axis=1, "
            "keepdims=True).",
        ),
        Mistake(
            lambda values, mask: _total(values, mask) / mask.sum(),
            "you divided by the real tokens of the whole batch; count each "
            "sequence's own, mask.sum(axis=1, keepdims=True).",
        ),
        Mistake(
            lambda values, mask: _masked_mean(values, ~mask),
            "you averaged the padding: in this book True marks what is kept "
            "(a real token), as in every mask of chapters 4-6.",
        ),
        Mistake(
            lambda values, mask: (
                _total(values, mask) / mask.sum(axis=1, keepdims=True)
            ),
            "a sequence with no real token gave NaN (0 / 0): return zeros for "
            "it, as attention gives zero weights to a query that may look at "
            "nothing (chapter 4). np.maximum(counts, 1) avoids the division "
            "by zero.",
        ),
        Mistake(_per_column(1), _COUNTS_PER_COLUMN),
        Mistake(_per_column(0), _COUNTS_PER_COLUMN),
        Mistake(_mask_on_last_axes(1), _MASK_ON_LAST_AXES),
        Mistake(_mask_on_last_axes(0), _MASK_ON_LAST_AXES),
    ],
)
check_masked_mean = MASKED_MEAN.checker()
