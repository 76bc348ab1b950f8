"""Chapter 4's exercise checkers accept the reference and reject the known wrong answers."""

import numpy as np
import pytest
from exercise_helpers import assert_accepts, assert_every_checker_accepted, assert_rejected

from transformer_course.exercises import ch04
from transformer_course.exercises.ch04 import (
    check_additive_mask,
    check_causal_mask,
    check_padding_mask,
)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda n: np.triu(np.ones((n, n), dtype=bool)), "upper triangle"),
        (lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1), "diagonal must be True"),
        (lambda n: np.triu(np.ones((n, n), dtype=bool), k=1), "forbidden"),
        (lambda n: np.tril(np.ones((n, n))), "boolean"),
        (lambda n: np.triu(np.full((n, n), -np.inf), k=1), "boolean"),
        (lambda n: np.ones((n, n), dtype=bool), None),
    ],
    ids=["upper", "no-diagonal", "inverted", "float-ones", "additive", "all-true"],
)
def test_causal_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_causal_mask, wrong_answer, hint)


NOTES_INF = -10000.0  # the notes' "inf", negated once more when the mask is built


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda mask: np.where(mask, 0.0, np.inf), "sign is flipped"),
        (lambda mask: np.where(mask, 0.0, -NOTES_INF), "notes' bug"),
        (lambda mask: np.where(mask, -np.inf, 0.0), "inverted"),
        (lambda mask: np.where(mask, 0.0, -1e9), "large finite number"),
        (lambda mask: mask.astype(float), None),
    ],
    ids=["plus-inf", "notes-plus-10000", "inverted", "minus-1e9", "ones-and-zeros"],
)
def test_additive_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_additive_mask, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda tokens, pad: (tokens != pad)[:, :, None], "masks queries"),
        (lambda tokens, pad: (tokens == pad)[:, None, :], "inverted"),
        (lambda tokens, pad: tokens != pad, "add the query axis"),
        (lambda tokens, pad: (tokens != 0)[:, None, :], "hard-coded 0"),
        (lambda tokens, pad: (tokens != pad)[:, None, :].astype(int), "boolean"),
    ],
    ids=["over-queries", "inverted", "no-query-axis", "pad-is-zero", "integers"],
)
def test_padding_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_padding_mask, wrong_answer, hint)


ACCEPTED = [
    (check_causal_mask, lambda n: np.tril(np.ones((n, n), dtype=bool))),
    (check_additive_mask, lambda mask: np.where(mask, 0.0, -np.inf)),
    (check_padding_mask, lambda tokens, pad: (tokens != pad)[:, None, :]),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch04, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"), ACCEPTED, ids=lambda value: getattr(value, "__name__", "")
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
