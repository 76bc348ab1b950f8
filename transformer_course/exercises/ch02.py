"""Checkers for chapter 2: positional encoding."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _expect_array,
    _expect_close,
    _expect_unchanged,
    _fail,
    _verdict,
)

__all__ = [
    "check_positional_encoding",
    "check_fit_shift_matrix",
    "check_rotate_pair",
]


def _encoding(
    seq_len: int,
    d_model: int,
    exponents: np.ndarray | None = None,
    first: int = 0,
    swap: bool = False,
    layout: str = "interleaved",
):
    """The sinusoidal encoding (base 10000), or a known variant of it.

    `exponents` of shape (d_model/2,) replaces 2i/d_model; `first` is the first
    position; `swap` puts cosines in the even dimensions; `layout="halves"`
    puts all sines first, then all cosines.
    """
    if exponents is None:
        exponents = np.arange(0, d_model, 2) / d_model
    positions = np.arange(first, first + seq_len)[:, None]
    angles = positions / 10000.0**exponents  # (T, d_model/2)
    sines, cosines = np.sin(angles), np.cos(angles)
    if swap:
        sines, cosines = cosines, sines
    if layout == "halves":
        return np.concatenate([sines, cosines], axis=1)
    encoding = np.zeros((seq_len, d_model))
    encoding[:, 0::2] = sines
    encoding[:, 1::2] = cosines
    return encoding


def _per_dimension_exponent(seq_len: int, d_model: int) -> np.ndarray:
    """PE[pos, k] = sin or cos of pos / 10000**(k / d_model), k the dimension."""
    angles = np.arange(seq_len)[:, None] / 10000.0 ** (
        np.arange(d_model) / d_model
    )
    encoding = np.cos(angles)
    encoding[:, 0::2] = np.sin(angles[:, 0::2])
    return encoding


def check_positional_encoding(
    positional_encoding: Callable[[int, int], np.ndarray],
) -> None:
    """Check `positional_encoding(seq_len, d_model)` against the paper's formula.

    Base 10000; NumPy or PyTorch, float64 or float32.
    """
    name = "positional_encoding"

    def run_cases() -> None:
        for seq_len, d_model in [(6, 8), (50, 64), (20, 512)]:
            got = _call(positional_encoding, name, seq_len, d_model)
            pairs = np.arange(0, d_model, 2) / d_model  # 2i / d_model
            mistakes = [
                (
                    _encoding(seq_len, d_model, exponents=2 * pairs),
                    "the exponent is doubled: if your loop index already "
                    "steps by 2 (0, 2, 4, ...), it *is* 2i; do not multiply "
                    "it by 2 again.",
                ),
                (
                    _encoding(seq_len, d_model, exponents=pairs / 2),
                    "the exponent is halved: it is 2i / d_model with i the "
                    "pair (0, 1, 2, ...), so the pair's first dimension over "
                    "d_model, not i / d_model.",
                ),
                (
                    _per_dimension_exponent(seq_len, d_model),
                    "dimensions 2i and 2i+1 share one frequency: the cosine "
                    "in dimension 2i+1 uses the exponent 2i / d_model too, "
                    "not (2i+1) / d_model.",
                ),
                (
                    _encoding(seq_len, d_model, first=1),
                    "positions start at 0: the first row is position 0, "
                    "whose sines are all 0 and cosines all 1.",
                ),
                (
                    _encoding(seq_len, d_model, layout="halves"),
                    "the paper interleaves sines and cosines: sines in the "
                    "even dimensions 0, 2, 4, ..., cosines in the odd ones. "
                    "[sin ... | cos ...] (all sines, then all cosines) holds "
                    "the same numbers in another order.",
                ),
                (
                    _encoding(seq_len, d_model, swap=True),
                    "sine and cosine are swapped: even dimensions 2i get the "
                    "sine, odd dimensions 2i+1 the cosine.",
                ),
                (
                    _encoding(seq_len, d_model).T,
                    "rows are positions and columns are dimensions: shape "
                    "(seq_len, d_model).",
                ),
            ]
            if d_model != 512:
                mistakes.append(
                    (
                        _encoding(
                            seq_len,
                            d_model,
                            exponents=np.arange(0, d_model, 2) / 512,
                        ),
                        "the exponent divides by 512, not by d_model: "
                        "use the d_model argument everywhere (the notes' "
                        "second bug).",
                    )
                )
            expected = _encoding(seq_len, d_model)
            _expect_array(name, [seq_len, d_model], got)
            _expect_close(name, [seq_len, d_model], got, expected, mistakes)

    _verdict(name, "matches the formula of the paper.", run_cases)


def _table(seq_len: int, d_model: int, base: float, sines_only: bool):
    """An encoding table with the checker's base; sines only if asked."""
    frequencies = base ** (-np.arange(0, d_model, 2) / d_model)
    angles = np.arange(seq_len)[:, None] * frequencies
    if sines_only:
        return np.sin(angles)
    table = np.zeros((seq_len, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def _close(got, expected: np.ndarray) -> bool:
    """True if `got` is an array-like of `expected`'s shape and values."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    return got.shape == expected.shape and np.allclose(
        got, expected, rtol=1e-4, atol=1e-4
    )


def _least_squares(table: np.ndarray, k: int) -> np.ndarray:
    solution, *_ = np.linalg.lstsq(table[:-k], table[k:], rcond=None)
    return solution.T


def check_fit_shift_matrix(
    fit_shift_matrix: Callable[[np.ndarray, int], np.ndarray],
) -> None:
    """Check `fit_shift_matrix(encoding, k)`: the least-squares M with
    encoding[pos + k] ~ M @ encoding[pos], on sinusoidal and sines-only tables.
    """
    name = "fit_shift_matrix"

    def run_cases() -> None:
        cases = [(64, 8, 3, False), (80, 12, 1, False), (64, 8, 3, True)]
        for seq_len, d_model, k, sines_only in cases:
            table = _table(seq_len, d_model, 100.0, sines_only)
            given = table.copy()
            got = _call(fit_shift_matrix, name, given, k)
            _expect_unchanged(name, None, [given], [table])
            expected = _least_squares(table, k)
            mistakes = [
                (
                    expected.T,
                    "this is the transpose of M. np.linalg.lstsq(X, Y) "
                    "solves X @ A ~ Y with one position per row of X, so "
                    "A = M.T: return A.T. (Fitting backwards, from "
                    "encoding[pos + k] to encoding[pos], gives the same "
                    "matrix for a rotation.)",
                ),
            ]
            for wrong_k in (k - 1, k + 1):
                if wrong_k >= 1:
                    mistakes.append(
                        (
                            _least_squares(table, wrong_k),
                            f"this shifts by {wrong_k} positions, not k = "
                            f"{k}: pair the rows encoding[:-k] with "
                            "encoding[k:].",
                        )
                    )
            _expect_array(name, [table, k], got)
            if (
                sines_only
                and np.shape(got) == expected.shape
                and not _close(got, expected)
            ):
                mistakes.append(
                    (
                        got,
                        "your M shifts the sin/cos tables but not this one, "
                        "which holds sines only: fit M to the rows of the "
                        "table you are given, by least squares, rather than "
                        "building the rotation from the formula.",
                    )
                )
            _expect_close(name, [table, k], got, expected, mistakes)

    _verdict(
        name,
        "finds the least-squares shift matrix.",
        run_cases,
    )


def _rotate(x, angle: float, sign: float = 1.0) -> np.ndarray:
    c, s = np.cos(angle), sign * np.sin(angle)
    return np.array([c * x[0] - s * x[1], s * x[0] + c * x[1]])


def check_rotate_pair(
    rotate_pair: Callable[[np.ndarray, int, float], np.ndarray],
) -> None:
    """Check `rotate_pair(x, pos, theta)`: x = (x0, x1) rotated
    counterclockwise by pos * theta (RoPE on one pair of dimensions)."""
    name = "rotate_pair"
    cases = [
        ([1.0, 0.0], 1, np.pi / 2),
        ([0.3, -1.2], 3, 0.1),
        ([0.8, 0.5], 7, 0.01),
        ([-0.4, 0.9], 0, 0.5),
        ([2.0, 1.0], 12, 1e-3),
    ]

    def run_cases() -> None:
        for x, pos, theta in cases:
            x = np.array(x)
            given = x.copy()
            got = _call(rotate_pair, name, given, pos, theta)
            _expect_unchanged(name, None, [given], [x])
            if np.iscomplexobj(got) or isinstance(got, complex):
                _fail(
                    name,
                    "returned a complex number; return the two real "
                    "coordinates, e.g. np.array([z.real, z.imag]).",
                    [x, pos, theta],
                )
            _expect_array(name, [x, pos, theta], got)
            angle = pos * theta
            mistakes = [
                (
                    _rotate(x, angle, sign=-1.0),
                    "this rotates clockwise, by -pos * theta. (Dot products "
                    "would still depend only on the offset, but RoPE's "
                    "convention is counterclockwise: x0 cos - x1 sin first.)",
                ),
                (
                    _rotate(x, theta),
                    "the angle is pos * theta: the rotation must grow with "
                    "the position.",
                ),
                (
                    _rotate(x, float(pos)),
                    "the angle is pos * theta, not pos radians.",
                ),
                (
                    np.array([np.cos(angle) * x[0], np.sin(angle) * x[1]]),
                    "each output mixes both inputs: x0 cos - x1 sin, then "
                    "x0 sin + x1 cos.",
                ),
            ]
            _expect_close(
                name, [x, pos, theta], got, _rotate(x, angle), mistakes
            )

    _verdict(name, "rotates by pos * theta, as RoPE does.", run_cases)
