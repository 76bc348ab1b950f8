"""Checkers for chapter 1: from words to vectors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _expect_close,
    _expect_equal,
    _verdict,
)

__all__ = [
    "check_skipgram_pairs",
    "check_cosine_similarity",
    "check_embedding_matrix",
]


def _skipgram_reference(tokens, window, include_centre=False, right_only=False):
    pairs = []
    for position, centre in enumerate(tokens):
        start = position if right_only else max(0, position - window)
        for other in range(start, min(len(tokens), position + window + 1)):
            if other != position or include_centre:
                pairs.append((centre, tokens[other]))
    return pairs


def check_skipgram_pairs(skipgram_pairs: Callable[[list[str], int], list]) -> None:
    """Check `skipgram_pairs(tokens, window)`: (centre, context) pairs, in order, never (w, w) by position."""
    name = "skipgram_pairs"
    cases = [
        (["the", "black", "cat", "sat", "on", "the", "couch"], 2),
        (["a", "b", "c", "d"], 1),
        (["only"], 3),
    ]

    def run_cases() -> None:
        for tokens, window in cases:
            got = _call(skipgram_pairs, name, list(tokens), window)
            got = [tuple(pair) for pair in got] if isinstance(got, list | tuple) else got
            mistakes = [
                (
                    _skipgram_reference(tokens, window, include_centre=True),
                    "a word is not its own context: skip the centre position.",
                ),
                (
                    _skipgram_reference(tokens, window, right_only=True),
                    "the context lies on both sides of the centre, not only after it.",
                ),
                (
                    _skipgram_reference(tokens, window - 1),
                    "the window is one word too narrow: include positions up to "
                    "`window` away (range's end is exclusive).",
                ),
                (
                    _skipgram_reference(tokens, window + 1),
                    "the window is one word too wide.",
                ),
            ]
            _expect_equal(
                name, [tokens, window], got, _skipgram_reference(tokens, window), mistakes
            )

    _verdict(name, "produces the skip-gram pairs.", run_cases)


def check_cosine_similarity(cosine_similarity: Callable[[np.ndarray, np.ndarray], float]) -> None:
    """Check `cosine_similarity(u, v)`: the dot product divided by both lengths."""
    name = "cosine_similarity"
    rng = np.random.default_rng(1)
    cases = [
        (np.array([3.0, 4.0, 0.0]), np.array([2.0, 0.0, 0.0])),
        (np.array([1.0, 2.0]), np.array([-2.0, -4.0])),
        (rng.normal(size=512) * 3, rng.normal(size=512) + 0.5),
    ]

    def run_cases() -> None:
        for u, v in cases:
            got = _call(cosine_similarity, name, u.copy(), v.copy())
            dot = float(u @ v)
            norm_u, norm_v = np.linalg.norm(u), np.linalg.norm(v)
            mistakes = [
                (dot, "that is the plain dot product; divide by the lengths of both vectors."),
                (dot / norm_u, "divide by the length of v too."),
                (dot / norm_v, "divide by the length of u too."),
                (dot / (norm_u**2 * norm_v**2), "divide by the lengths, not their squares."),
            ]
            _expect_close(name, [u, v], got, np.array(dot / (norm_u * norm_v)), mistakes)

    _verdict(name, "is the cosine of the angle between u and v.", run_cases)


def check_embedding_matrix(embedding_matrix: Callable[[list[str], dict], np.ndarray]) -> None:
    """Check `embedding_matrix(tokens, vectors)`: row t is the vector of tokens[t]."""
    name = "embedding_matrix"
    rng = np.random.default_rng(2)
    words = ["the", "black", "cat", "sat", "on", "couch"]
    vectors = {word: rng.normal(size=5).round(2) for word in words}
    tokens = ["the", "black", "cat", "sat", "on", "the", "couch"]

    def run_cases() -> None:
        got = _call(embedding_matrix, name, list(tokens), dict(vectors))
        expected = np.stack([vectors[token] for token in tokens])
        unique = list(dict.fromkeys(tokens))
        mistakes = [
            (expected.T, "rows are tokens and columns are dimensions: shape (T, d), not (d, T)."),
            (
                np.stack([vectors[token] for token in unique]),
                "a repeated word needs its row each time it occurs (T rows, not one per "
                "distinct word).",
            ),
            (
                np.stack([vectors[token] for token in sorted(set(tokens))]),
                "keep the tokens in sentence order, with repeats.",
            ),
        ]
        _expect_close(name, [tokens, "a dict of 5-dimensional vectors"], got, expected, mistakes)

    _verdict(name, "stacks one row per token.", run_cases)
