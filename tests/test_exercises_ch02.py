"""Chapter 2's exercise checkers accept the reference and reject the known wrong answers."""

import numpy as np
import pytest
from exercise_helpers import assert_accepts, assert_every_checker_accepted, assert_rejected

from transformer_course.exercises import ch02
from transformer_course.exercises.ch02 import (
    check_positional_encoding,
    check_shift_matrix,
    check_wavelengths,
)


def _pe(seq_len, d_model, factor=1.0, swap=False, sin_only=False):
    angles = np.arange(seq_len)[:, None] / 10000 ** (factor * np.arange(0, d_model, 2) / d_model)
    table = np.zeros((seq_len, d_model))
    table[:, 0::2] = np.cos(angles) if swap else np.sin(angles)
    table[:, 1::2] = np.sin(angles) if (swap or sin_only) else np.cos(angles)
    return table


def notes_loop(seq_len, d_model):
    """The seed notes' loop, vectorised over positions: doubled exponent."""
    return np.stack(
        [
            np.array(
                [
                    f(pos / 10000 ** ((2 * i) / d_model))
                    for i in range(0, d_model, 2)
                    for f in (np.sin, np.cos)
                ]
            )
            for pos in range(seq_len)
        ]
    )


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (notes_loop, "exponent is doubled"),
        (lambda t, d: _pe(t, d, swap=True), "swapped"),
        (lambda t, d: _pe(t, d).T, "rows are positions"),
        (lambda t, d: _pe(t, d, sin_only=True), None),
        (lambda t, d: _pe(t + 1, d)[1:], None),
    ],
    ids=["notes-doubled-exponent", "sin-cos-swapped", "transposed", "sines-only", "from-one"],
)
def test_positional_encoding_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_positional_encoding, wrong_answer, hint)


def _shift(k, d_model, sign=1.0, factor=1.0):
    matrix = np.zeros((d_model, d_model))
    for pair in range(d_model // 2):
        angle = k / 10000 ** (factor * 2 * pair / d_model)
        c, s = np.cos(angle), sign * np.sin(angle)
        matrix[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = [[c, s], [-s, c]]
    return matrix


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda k, d: _shift(k, d, sign=-1.0), "rotates backwards"),
        (lambda k, d: _shift(k, d).T, "transpose"),
        (lambda k, d: _shift(k, d, factor=2.0), None),
        (lambda k, d: np.eye(d), None),
        (lambda k, d: _shift(k + 1, d), None),
    ],
    ids=["backwards", "transposed", "doubled-exponent", "identity", "off-by-one"],
)
def test_shift_matrix_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_shift_matrix, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda d: 10000 ** (np.arange(0, d, 2) / d), "multiply by 2 pi"),
        (lambda d: 10000 ** (-np.arange(0, d, 2) / d), "frequencies"),
        (lambda d: 2 * np.pi * 10000 ** (2 * np.arange(0, d, 2) / d), "doubled"),
        (lambda d: 2 * np.pi * 10000 ** (np.arange(d) / d), None),
    ],
    ids=["no-2pi", "frequency", "doubled", "one-per-dimension"],
)
def test_wavelengths_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_wavelengths, wrong_answer, hint)


ACCEPTED = [
    (check_positional_encoding, _pe),
    (check_shift_matrix, _shift),
    (check_wavelengths, lambda d: 2 * np.pi * 10000 ** (np.arange(0, d, 2) / d)),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch02, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"), ACCEPTED, ids=lambda value: getattr(value, "__name__", "")
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
