"""Chapter 5's exercise checkers accept the reference and reject the known wrong answers."""

import pytest
import torch
from exercise_helpers import assert_accepts, assert_every_checker_accepted, assert_rejected

from transformer_course.exercises import ch05
from transformer_course.exercises.ch05 import (
    check_causal_self_attention,
    check_merge_heads,
    check_split_heads,
)


def _split(x, h):
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, h: x.view(x.size(0), h, x.size(1), -1), "cuts the tokens"),
        (lambda x, h: x.reshape(x.size(0), h, x.size(1), -1), "cuts the tokens"),
        (lambda x, h: x.view(x.size(0), x.size(1), h, -1), "transpose(1, 2)"),
        (lambda x, h: x.view(x.size(0), x.size(1), -1, h).permute(0, 3, 1, 2), "consecutive"),
        (lambda x, h: _split(x, h).transpose(2, 3), None),
    ],
    ids=["view-wrong-order", "reshape-wrong-order", "no-transpose", "strided", "T-and-d_k-swapped"],
)
def test_split_heads_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_split_heads, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x: x.reshape(x.size(0), x.size(2), -1), "transpose(1, 2)"),
        (lambda x: x.permute(0, 2, 3, 1).reshape(x.size(0), x.size(2), -1), "interleaved"),
        (lambda x: x.transpose(1, 2).reshape(x.size(0), -1, x.size(2)), None),
        (lambda x: x.sum(dim=1), None),
    ],
    ids=["no-transpose", "interleaved", "wrong-final-shape", "sum-of-heads"],
)
def test_merge_heads_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_merge_heads, wrong_answer, hint)


def _tril(x):
    return torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda mha, x: mha(x, x, x), "no mask"),
        (lambda mha, x: mha(x, x, x, mask=_tril(x).T.clone()), "upper triangle"),
        (lambda mha, x: mha(x, x, x, mask=~_tril(x)), "convention"),
        (lambda mha, x: mha(x, x, x, mask=_tril(x).tril(-1)), "keep the diagonal"),
        (lambda mha, x: mha(x, x.flip(1), x, mask=_tril(x)), None),
    ],
    ids=["no-mask", "upper", "torch-convention", "no-diagonal", "keys-reversed"],
)
def test_causal_self_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_causal_self_attention, wrong_answer, hint)


ACCEPTED = [
    (check_split_heads, _split),
    (check_merge_heads, lambda x: x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)),
    (check_causal_self_attention, lambda mha, x: mha(x, x, x, mask=_tril(x))),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch05, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"), ACCEPTED, ids=lambda value: getattr(value, "__name__", "")
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
