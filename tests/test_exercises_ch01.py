"""Chapter 1's exercise checkers accept the reference and reject the known wrong answers."""

import numpy as np
import pytest
from exercise_helpers import assert_accepts, assert_every_checker_accepted, assert_rejected

from transformer_course.exercises import ch01
from transformer_course.exercises.ch01 import (
    check_cosine_similarity,
    check_embedding_matrix,
    check_skipgram_pairs,
)


def _pairs(tokens, window, lo_offset=-1, include_centre=False):
    pairs = []
    for i, centre in enumerate(tokens):
        start = i if lo_offset == 0 else max(0, i - window)
        for j in range(start, min(len(tokens), i + window + 1)):
            if j != i or include_centre:
                pairs.append((centre, tokens[j]))
    return pairs


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda t, w: _pairs(t, w, include_centre=True), "not its own context"),
        (lambda t, w: _pairs(t, w, lo_offset=0), "both sides"),
        (lambda t, w: _pairs(t, w - 1), "too narrow"),
        (lambda t, w: _pairs(t, w + 1), "too wide"),
        (lambda t, w: [(b, a) for a, b in _pairs(t, w)], None),
        (lambda t, w: sorted(_pairs(t, w)), None),
    ],
    ids=["centre-included", "right-only", "narrow", "wide", "swapped", "unordered"],
)
def test_skipgram_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_skipgram_pairs, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda u, v: u @ v, "plain dot product"),
        (lambda u, v: u @ v / np.linalg.norm(u), "length of v"),
        (lambda u, v: u @ v / (u @ u * (v @ v)), "not their squares"),
        (lambda u, v: abs(u @ v) / np.linalg.norm(u) / np.linalg.norm(v), None),
        (lambda u, v: np.linalg.norm(u - v), None),
    ],
    ids=["dot", "one-norm", "squared-norms", "absolute", "distance"],
)
def test_cosine_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_cosine_similarity, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda tokens, vectors: np.stack([vectors[t] for t in tokens]).T, "not (d, T)"),
        (
            lambda tokens, vectors: np.stack([vectors[t] for t in dict.fromkeys(tokens)]),
            "repeated word",
        ),
        (lambda tokens, vectors: np.stack([vectors[t] for t in sorted(tokens)]), None),
        (lambda tokens, vectors: np.stack(list(vectors.values())), None),
    ],
    ids=["transposed", "unique", "sorted", "vocabulary"],
)
def test_embedding_matrix_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_embedding_matrix, wrong_answer, hint)


ACCEPTED = [
    (check_skipgram_pairs, _pairs),
    (check_cosine_similarity, lambda u, v: u @ v / np.linalg.norm(u) / np.linalg.norm(v)),
    (check_embedding_matrix, lambda tokens, vectors: np.stack([vectors[t] for t in tokens])),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch01, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"), ACCEPTED, ids=lambda value: getattr(value, "__name__", "")
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
