"""Checkers for chapter 2: positional encoding."""

from __future__ import annotations

import numpy as np

from transformer_course.exercises._core import Exercise, Mistake, Refusal

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
    base: float = 10000.0,
):
    """The sinusoidal encoding, or a known variant of it.

    `exponents` of shape (d_model/2,) replaces 2i/d_model; `first` is the first
    position; `swap` puts cosines in the even dimensions; `layout="halves"`
    puts all sines first, then all cosines, and `layout="sines"` keeps the
    sines only.
    """
    if exponents is None:
        exponents = np.arange(0, d_model, 2) / d_model
    positions = np.arange(first, first + seq_len)[:, None]
    angles = positions / base**exponents  # (T, d_model/2)
    sines, cosines = np.sin(angles), np.cos(angles)
    if swap:
        sines, cosines = cosines, sines
    if layout == "sines":
        return sines
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


def _pairs(d_model: int) -> np.ndarray:
    return np.arange(0, d_model, 2) / d_model  # 2i / d_model


POSITIONAL_ENCODING = Exercise(
    name="positional_encoding",
    success="matches the formula of the paper.",
    doc="""Check `positional_encoding(seq_len, d_model)` against the paper's formula.

    Base 10000; NumPy or PyTorch, float64 or float32.""",
    cases=[(6, 8), (50, 64), (20, 512)],
    reference=_encoding,
    array=True,
    mistakes=[
        Mistake(
            lambda t, d: _encoding(t, d, exponents=2 * _pairs(d)),
            "the exponent is doubled: if your loop index already steps by 2 "
            "(0, 2, 4, ...), it *is* 2i; do not multiply it by 2 again.",
        ),
        Mistake(
            lambda t, d: _encoding(t, d, exponents=_pairs(d) / 2),
            "the exponent is halved: it is 2i / d_model with i the pair (0, "
            "1, 2, ...), so the pair's first dimension over d_model, not i / "
            "d_model.",
        ),
        Mistake(
            _per_dimension_exponent,
            "dimensions 2i and 2i+1 share one frequency: the cosine in "
            "dimension 2i+1 uses the exponent 2i / d_model too, not (2i+1) / "
            "d_model.",
        ),
        Mistake(
            lambda t, d: _encoding(t, d, first=1),
            "positions start at 0: the first row is position 0, whose sines "
            "are all 0 and cosines all 1.",
        ),
        Mistake(
            lambda t, d: _encoding(t, d, layout="halves"),
            "the paper interleaves sines and cosines: sines in the even "
            "dimensions 0, 2, 4, ..., cosines in the odd ones. [sin ... | cos "
            "...] (all sines, then all cosines) holds the same numbers in "
            "another order.",
        ),
        Mistake(
            lambda t, d: _encoding(t, d, swap=True),
            "sine and cosine are swapped: even dimensions 2i get the sine, "
            "odd dimensions 2i+1 the cosine.",
        ),
        Mistake(
            lambda t, d: _encoding(t, d).T,
            "rows are positions and columns are dimensions: shape (seq_len, "
            "d_model).",
        ),
        Mistake(
            lambda t, d: (
                None
                if d == 512
                else _encoding(t, d, exponents=np.arange(0, d, 2) / 512)
            ),
            "the exponent divides by 512, not by d_model: use the d_model "
            "argument everywhere (the notes' second bug).",
        ),
    ],
)
check_positional_encoding = POSITIONAL_ENCODING.checker()


def _least_squares(table: np.ndarray, k: int) -> np.ndarray | None:
    if k < 1:
        return None
    solution, *_ = np.linalg.lstsq(table[:-k], table[k:], rcond=None)
    return solution.T


_SINES_ONLY = _encoding(64, 8, base=100.0, layout="sines")


def _rotation(table: np.ndarray, k: int) -> np.ndarray:
    """The rotation of base 100 that shifts the sin/cos tables by k: right
    for them, not for the sines-only one."""
    matrix = np.zeros((table.shape[1],) * 2)
    for pair in range(table.shape[1] // 2):
        angle = k / 100 ** (2 * pair / table.shape[1])
        c, s = np.cos(angle), np.sin(angle)
        block = slice(2 * pair, 2 * pair + 2)
        matrix[block, block] = [[c, s], [-s, c]]
    return matrix


_WRONG_SHIFT = (
    "this shifts by {wrong_k} positions, not k = {k}: pair the rows "
    "encoding[:-k] with encoding[k:]."
)

FIT_SHIFT_MATRIX = Exercise(
    name="fit_shift_matrix",
    success="finds the least-squares shift matrix.",
    doc="""Check `fit_shift_matrix(encoding, k)`: the least-squares M with
    encoding[pos + k] ~ M @ encoding[pos], on sinusoidal and sines-only tables.""",
    cases=[
        (_encoding(64, 8, base=100.0), 3),
        (_encoding(80, 12, base=100.0), 1),
        (_SINES_ONLY, 3),
    ],
    reference=_least_squares,
    array=True,
    mistakes=[
        Mistake(
            lambda table, k: _least_squares(table, k).T,
            "this is the transpose of M. np.linalg.lstsq(X, Y) solves X @ A ~ "
            "Y with one position per row of X, so A = M.T: return A.T. "
            "(Fitting backwards, from encoding[pos + k] to encoding[pos], "
            "gives the same matrix for a rotation.)",
        ),
        Mistake(
            lambda table, k: _least_squares(table, k - 1),
            _WRONG_SHIFT,
            fields=lambda table, k: {"wrong_k": k - 1, "k": k},
        ),
        Mistake(
            lambda table, k: _least_squares(table, k + 1),
            _WRONG_SHIFT,
            fields=lambda table, k: {"wrong_k": k + 1, "k": k},
        ),
        Mistake(
            None,
            "your M shifts the sin/cos tables but not this one, which holds "
            "sines only: fit M to the rows of the table you are given, by "
            "least squares, rather than building the rotation from the "
            "formula.",
            when=lambda got, table, k: table is _SINES_ONLY,
            example=_rotation,
        ),
    ],
)
check_fit_shift_matrix = FIT_SHIFT_MATRIX.checker()


def _rotate(x, angle: float, sign: float = 1.0) -> np.ndarray:
    c, s = np.cos(angle), sign * np.sin(angle)
    return np.array([c * x[0] - s * x[1], s * x[0] + c * x[1]])


ROTATE_PAIR = Exercise(
    name="rotate_pair",
    success="rotates by pos * theta, as RoPE does.",
    doc="""Check `rotate_pair(x, pos, theta)`: x = (x0, x1) rotated
    counterclockwise by pos * theta (RoPE on one pair of dimensions).""",
    cases=[
        (np.array([1.0, 0.0]), 1, np.pi / 2),
        (np.array([0.3, -1.2]), 3, 0.1),
        (np.array([0.8, 0.5]), 7, 0.01),
        (np.array([-0.4, 0.9]), 0, 0.5),
        (np.array([2.0, 1.0]), 12, 1e-3),
    ],
    reference=lambda x, pos, theta: _rotate(x, pos * theta),
    array=True,
    refusals=[
        Refusal(
            lambda got: np.iscomplexobj(got) or isinstance(got, complex),
            "returned a complex number; return the two real coordinates, "
            "e.g. np.array([z.real, z.imag]).",
        )
    ],
    mistakes=[
        Mistake(
            lambda x, pos, theta: _rotate(x, pos * theta, sign=-1.0),
            "this rotates clockwise, by -pos * theta. (Dot products would "
            "still depend only on the offset, but RoPE's convention is "
            "counterclockwise: x0 cos - x1 sin first.)",
        ),
        Mistake(
            lambda x, pos, theta: _rotate(x, theta),
            "the angle is pos * theta: the rotation must grow with the "
            "position.",
        ),
        Mistake(
            lambda x, pos, theta: _rotate(x, float(pos)),
            "the angle is pos * theta, not pos radians.",
        ),
        Mistake(
            lambda x, pos, theta: np.array(
                [np.cos(pos * theta) * x[0], np.sin(pos * theta) * x[1]]
            ),
            "each output mixes both inputs: x0 cos - x1 sin, then x0 sin + x1 "
            "cos.",
        ),
    ],
)
check_rotate_pair = ROTATE_PAIR.checker()
