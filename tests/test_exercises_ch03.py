"""Chapter 3's exercise checkers accept the reference and reject the known wrong answers."""

import numpy as np
import pytest
from exercise_helpers import assert_accepts, assert_every_checker_accepted, assert_rejected

from transformer_course.exercises import ch03
from transformer_course.exercises.ch03 import (
    check_attention,
    check_multi_head,
    check_softmax,
)


def _sm(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, axis=-1: _sm(x, axis=None), "whole matrix"),
        (lambda x, axis=-1: _sm(x, axis=0), "each column sums to 1"),
        (lambda x, axis=-1: np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True), "overflows"),
        (lambda x, axis=-1: _sm(x), None),  # ignores the axis argument
        (lambda x, axis=-1: np.exp(x - x.max()) / np.exp(x - x.max()).sum(), None),
    ],
    ids=["no-axis", "axis-0", "naive-overflow", "ignores-axis", "global-max-and-sum"],
)
def test_softmax_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_softmax, wrong_answer, hint)


def _att(q, k, v, scale=None, axis=-1, k_plain=False, transpose=False):
    scores = q @ k if k_plain else q @ k.T
    scores = scores.T if transpose else scores
    return _sm(scores / (np.sqrt(q.shape[-1]) if scale is None else scale), axis=axis) @ v


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda q, k, v: _att(q, k, v, scale=1.0), "not scaled"),
        (lambda q, k, v: _att(q, k, v, scale=q.shape[-1]), "not by d_k."),
        (lambda q, k, v: _att(q, k, v, scale=q.shape[-1] ** 2), "d_k ** 2"),
        (lambda q, k, v: _att(q, k, v, axis=0), "wrong axis"),
        (lambda q, k, v: _att(q, k, v, k_plain=True), "K is not transposed"),
        (lambda q, k, v: _att(q, k, v, transpose=True), "scores are transposed"),
        (lambda q, k, v: _sm(q @ k.T / np.sqrt(q.shape[-1])), None),  # forgets v
    ],
    ids=["no-scale", "d_k", "d_k-squared", "axis-0", "k-not-transposed", "k-q-order", "no-v"],
)
def test_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_attention, wrong_answer, hint)


def _multi_head(X, W_Q, W_K, W_V, W_O, scale=True, reverse=False, project=True):
    heads = [
        _att(X @ wq, X @ wk, X @ wv, scale=None if scale else 1.0)
        for wq, wk, wv in zip(W_Q, W_K, W_V, strict=True)
    ]
    Z = np.concatenate(heads[::-1] if reverse else heads, axis=-1)
    return Z @ W_O if project else Z


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda *a: _multi_head(*a, project=False), "W_O is missing"),
        (lambda *a: _multi_head(*a, reverse=True), "reverse order"),
        (lambda *a: _multi_head(*a, scale=False), "sqrt(d_k)"),
        (lambda X, W_Q, W_K, W_V, W_O: _multi_head(X, W_Q, W_K, W_V, W_O.T), None),
    ],
    ids=["no-output-projection", "reversed-heads", "unscaled", "W_O-transposed"],
)
def test_multi_head_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_multi_head, wrong_answer, hint)


ACCEPTED = [
    (check_softmax, _sm),
    (check_attention, _att),
    (check_multi_head, _multi_head),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch03, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"), ACCEPTED, ids=lambda value: getattr(value, "__name__", "")
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
