"""Checkers for chapter 2: positional encoding."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _expect_close,
    _verdict,
)

__all__ = [
    "check_positional_encoding",
    "check_shift_matrix",
    "check_wavelengths",
]


def _encoding(seq_len: int, d_model: int, exponent_factor: float = 1.0, swap: bool = False):
    """The sinusoidal encoding; exponent_factor=2 is the notes' doubled exponent."""
    angles = np.arange(seq_len)[:, None] / 10000.0 ** (
        exponent_factor * np.arange(0, d_model, 2) / d_model
    )
    encoding = np.zeros((seq_len, d_model))
    encoding[:, 0::2] = np.cos(angles) if swap else np.sin(angles)
    encoding[:, 1::2] = np.sin(angles) if swap else np.cos(angles)
    return encoding


def check_positional_encoding(positional_encoding: Callable[[int, int], np.ndarray]) -> None:
    """Check `positional_encoding(seq_len, d_model)` against the paper's formula (base 10000)."""
    name = "positional_encoding"

    def run_cases() -> None:
        for seq_len, d_model in [(6, 8), (50, 64), (20, 512)]:
            got = _call(positional_encoding, name, seq_len, d_model)
            mistakes = [
                (
                    _encoding(seq_len, d_model, exponent_factor=2.0),
                    "the exponent is doubled: if your loop index already steps by 2 "
                    "(0, 2, 4, ...), it *is* 2i; do not multiply it by 2 again.",
                ),
                (
                    _encoding(seq_len, d_model, swap=True),
                    "sine and cosine are swapped: even dimensions 2i get the sine, odd "
                    "dimensions 2i+1 the cosine.",
                ),
                (
                    _encoding(seq_len, d_model).T,
                    "rows are positions and columns are dimensions: shape (seq_len, d_model).",
                ),
            ]
            expected = _encoding(seq_len, d_model)
            _expect_close(name, [seq_len, d_model], got, expected, mistakes)

    _verdict(name, "matches the formula of the paper.", run_cases)


def _shift(k: int, d_model: int, sign: float = 1.0) -> np.ndarray:
    matrix = np.zeros((d_model, d_model))
    for pair in range(d_model // 2):
        angle = k / 10000.0 ** (2 * pair / d_model)
        c, s = np.cos(angle), sign * np.sin(angle)
        matrix[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = [[c, s], [-s, c]]
    return matrix


def check_shift_matrix(shift_matrix: Callable[[int, int], np.ndarray]) -> None:
    """Check `shift_matrix(k, d_model)`: M @ PE[pos] == PE[pos + k] for every position."""
    name = "shift_matrix"

    def run_cases() -> None:
        for k, d_model in [(1, 4), (5, 16), (12, 64)]:
            got = _call(shift_matrix, name, k, d_model)
            mistakes = [
                (
                    _shift(k, d_model, sign=-1.0),  # also the transpose of the right answer
                    "this rotates backwards, giving PE[pos - k] (it is the transpose of "
                    "the right matrix): in each block the sine goes top right with a plus "
                    "sign, [[cos, sin], [-sin, cos]].",
                ),
            ]
            _expect_close(name, [k, d_model], got, _shift(k, d_model), mistakes)

    _verdict(name, "shifts every encoding by k positions.", run_cases)


def check_wavelengths(wavelengths: Callable[[int], np.ndarray]) -> None:
    """Check `wavelengths(d_model)`: 2 pi * 10000 ** (2i / d_model) for each pair i."""
    name = "wavelengths"

    def run_cases() -> None:
        for d_model in [4, 64, 512]:
            got = _call(wavelengths, name, d_model)
            exponents = np.arange(0, d_model, 2) / d_model
            mistakes = [
                (
                    10000.0**exponents,
                    "a wavelength is 2 pi divided by the frequency: multiply by 2 pi.",
                ),
                (
                    10000.0 ** (-exponents),
                    "those are the frequencies; the wavelength is 2 pi / frequency.",
                ),
                (2 * np.pi * 10000.0 ** (2 * exponents), "the exponent is doubled."),
            ]
            _expect_close(name, [d_model], got, 2 * np.pi * 10000.0**exponents, mistakes, atol=1e-6)

    _verdict(name, "gives the wavelength of every pair.", run_cases)
