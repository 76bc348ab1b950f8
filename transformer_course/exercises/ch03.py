"""Checkers for chapter 3: attention in NumPy."""

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
    "check_softmax",
    "check_attention",
    "check_multi_head",
]


def _softmax(x: np.ndarray, axis=-1) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def check_softmax(softmax: Callable[..., np.ndarray]) -> None:
    """Check `softmax(x, axis=-1)`: normalises along `axis` only, finite for large inputs."""
    name = "softmax"
    matrix = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.0, -2.0, 5.0]])
    cube = np.arange(24, dtype=float).reshape(2, 3, 4) / 5

    def run_cases() -> None:
        got = _call(softmax, name, matrix.copy())
        mistakes = [
            (
                _softmax(matrix, axis=None),
                "you normalised the whole matrix (softmax without an axis): each row must sum to 1.",
            ),
            (
                _softmax(matrix, axis=0),
                "each column sums to 1: normalise along the last axis (the keys).",
            ),
        ]
        _expect_close(name, [matrix], got, _softmax(matrix), mistakes)
        for axis in (0, 1):
            got = _call(softmax, name, cube.copy(), axis)
            _expect_close(f"{name} with axis={axis}", [cube], got, _softmax(cube, axis=axis))
        big = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1000.5]])
        with np.errstate(all="ignore"):
            got = _call(softmax, name, big.copy())
        if got is not None and not np.isfinite(np.asarray(got, dtype=float)).all():
            raise ExerciseError(
                f"{name} on input {_describe(big)}\nreturned {_describe(np.asarray(got, dtype=float))}\n"
                "Hint: exp(1000) overflows to inf (and exp(-1000) underflows to 0). Subtract "
                "the largest entry of each slice before exponentiating; softmax does not change."
            )
        _expect_close(name, [big], got, _softmax(big))

    _verdict(name, "is stable and normalises along the given axis.", run_cases)


def _attention(q, k, v, scale=None, axis=-1, transpose_scores=False, k_untransposed=False):
    d_k = q.shape[-1]
    scores = q @ k if k_untransposed else q @ k.T
    if transpose_scores:
        scores = scores.T
    scores = scores / (np.sqrt(d_k) if scale is None else scale)
    return _softmax(scores, axis=axis) @ v


def check_attention(attention: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> None:
    """Check `attention(q, k, v)` = softmax(q k^T / sqrt(d_k)) v on 2-D inputs."""
    name = "attention"
    rng = np.random.default_rng(3)
    cases = [
        (rng.normal(size=(4, 4)) * 2, rng.normal(size=(4, 4)) * 2, rng.normal(size=(4, 3))),
        (rng.normal(size=(3, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 2))),
    ]

    def run_cases() -> None:
        for q, k, v in cases:
            got = _call(attention, name, q.copy(), k.copy(), v.copy())
            d_k = q.shape[-1]
            mistakes = [
                (
                    _attention(q, k, v, scale=1.0),
                    "the scores are not scaled: divide q k^T by sqrt(d_k).",
                ),
                (_attention(q, k, v, scale=d_k), "divide by sqrt(d_k), not by d_k."),
                (_attention(q, k, v, scale=d_k**2), "divide by sqrt(d_k), not by d_k ** 2."),
                (
                    _attention(q, k, v, axis=0),
                    "softmax over the wrong axis: each query's row of weights (over the keys) "
                    "must sum to 1, so use axis=-1.",
                ),
            ]
            if q.shape[0] == k.shape[0]:
                mistakes += [
                    (
                        _attention(q, k, v, k_untransposed=True),
                        "K is not transposed: the scores are q @ k.T, one row per query, one column per key.",
                    ),
                    (
                        _attention(q, k, v, transpose_scores=True),
                        "the scores are transposed (k @ q.T): rows must be queries, columns keys.",
                    ),
                ]
            shown = [q, k, v]
            _expect_close(name, shown, got, _attention(q, k, v), mistakes)

    _verdict(name, "computes softmax(q k^T / sqrt(d_k)) v.", run_cases)


def check_multi_head(multi_head: Callable[..., np.ndarray]) -> None:
    """Check `multi_head(X, W_Q, W_K, W_V, W_O)` with stacked (h, d_model, d_k) weights."""
    name = "multi_head"
    rng = np.random.default_rng(4)
    h, d_model, length = 2, 6, 4
    d_k = d_model // h
    X = rng.normal(size=(length, d_model))
    W_Q, W_K, W_V = rng.normal(size=(3, h, d_model, d_k))
    W_O = rng.normal(size=(d_model, d_model))

    def heads(scale=None):
        return [_attention(X @ W_Q[i], X @ W_K[i], X @ W_V[i], scale=scale) for i in range(h)]

    def run_cases() -> None:
        got = _call(multi_head, name, X.copy(), W_Q.copy(), W_K.copy(), W_V.copy(), W_O.copy())
        mistakes = [
            (np.concatenate(heads(), axis=-1), "the output projection W_O is missing (step 8)."),
            (
                np.concatenate(heads()[::-1], axis=-1) @ W_O,
                "the heads are concatenated in reverse order.",
            ),
            (
                np.concatenate(heads(scale=1.0), axis=-1) @ W_O,
                "the scores are not divided by sqrt(d_k).",
            ),
        ]
        shown = [X, "W_Q, W_K, W_V of shape (2, 6, 3)", "W_O of shape (6, 6)"]
        _expect_close(name, shown, got, np.concatenate(heads(), axis=-1) @ W_O, mistakes)

    _verdict(name, "computes multi-head attention.", run_cases)
