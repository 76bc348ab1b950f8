"""Checkers for chapter 4: masking."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from transformer_course.exercises._core import (
    ExerciseError,
    _call,
    _describe,
    _expect_close,
    _verdict,
)

__all__ = [
    "check_causal_mask",
    "check_additive_mask",
    "check_padding_mask",
]


def _expect_mask(name: str, inputs: Sequence, got, expected: np.ndarray, mistakes) -> None:
    """Like _expect_close, for boolean masks: the answer must be a boolean array."""
    if got is not None and np.asarray(got).dtype != bool:
        raise ExerciseError(
            f"{name} on input {_describe(inputs[0])}\nreturned dtype {np.asarray(got).dtype}; "
            "a mask is boolean: True where the query may attend to the key."
        )
    _expect_close(
        name, inputs, got, expected.astype(float), [(w.astype(float), m) for w, m in mistakes]
    )


def check_causal_mask(causal_mask: Callable[[int], np.ndarray]) -> None:
    """Check `causal_mask(size)`: boolean, True on and below the diagonal."""
    name = "causal_mask"

    def run_cases() -> None:
        for size in (4, 1, 6):
            got = _call(causal_mask, name, size)
            ones = np.ones((size, size), dtype=bool)
            mistakes = [
                (
                    np.triu(ones),
                    "that is the upper triangle: query i would see keys j >= i, the future. "
                    "Keep the lower triangle (np.tril).",
                ),
                (np.tril(ones, k=-1), "the diagonal must be True: a token may attend to itself."),
                (
                    np.triu(ones, k=1),
                    "True must mean 'may attend'; your mask marks the forbidden keys.",
                ),
            ]
            _expect_mask(name, [size], got, np.tril(ones), mistakes)

    _verdict(name, "lets each query see itself and the past only.", run_cases)


def check_additive_mask(additive_mask: Callable[[np.ndarray], np.ndarray]) -> None:
    """Check `additive_mask(mask)`: 0.0 where True, -inf where False."""
    name = "additive_mask"
    masks = [
        np.tril(np.ones((4, 4), dtype=bool)),
        np.array([[[True, True, True, False, False]], [[True, False, False, False, False]]]),
    ]

    def run_cases() -> None:
        for mask in masks:
            got = _call(additive_mask, name, mask.copy())
            mistakes = [
                (
                    np.where(mask, 0.0, np.inf),
                    "the sign is flipped: forbidden keys get +inf, so they win the softmax. "
                    "Use -inf.",
                ),
                (
                    np.where(mask, 0.0, 10000.0),
                    "forbidden keys get +10000, the notes' bug (inf = -10000.0, then -inf): "
                    "adding a large positive number makes them irresistible. Use -inf.",
                ),
                (np.where(mask, -np.inf, 0.0), "inverted: the allowed keys (True) must get 0."),
                (
                    np.where(mask, 0.0, -1e9),
                    "use -inf rather than a large finite number: -1e9 overflows to -inf in "
                    "float16 anyway, and -inf gives weights of exactly 0.",
                ),
            ]
            _expect_close(name, [mask], got, np.where(mask, 0.0, -np.inf), mistakes)

    _verdict(name, "gives 0 to allowed keys and -inf to the others.", run_cases)


def check_padding_mask(padding_mask: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """Check `padding_mask(tokens, pad_id)`: (B, 1, T) boolean, True for real keys."""
    name = "padding_mask"
    cases = [
        (np.array([[5, 7, 2, 9, 0, 0], [3, 0, 0, 0, 0, 0], [4, 4, 8, 6, 2, 1]]), 0),
        (np.array([[2, 3, 1, 1], [1, 1, 1, 1]]), 1),
    ]

    def run_cases() -> None:
        for tokens, pad_id in cases:
            got = _call(padding_mask, name, tokens.copy(), pad_id)
            real = tokens != pad_id
            mistakes = [
                (
                    real[:, :, None],
                    "this masks queries, shape (B, T, 1): the padding mask hides pad *keys* "
                    "from every query, shape (B, 1, T).",
                ),
                (~real[:, None, :], "inverted: True must mark the real tokens."),
                (
                    real,
                    "add the query axis: (B, T) -> (B, 1, T), so the mask broadcasts over queries.",
                ),
                ((tokens != 0)[:, None, :], "use pad_id, not a hard-coded 0."),
            ]
            _expect_mask(name, [tokens, pad_id], got, real[:, None, :], mistakes)

    _verdict(name, "hides the padding keys from every query.", run_cases)
