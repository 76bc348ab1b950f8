"""Chapter 0's exercise checkers accept the reference and reject the known
wrong answers, each with the hint it must name."""

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)

from transformer_course.exercises import ExerciseError, ch00
from transformer_course.exercises.ch00 import (
    LOGSUMEXP,
    MASKED_MEAN,
    ROW_NORMALISE,
    check_logsumexp,
    check_masked_mean,
    check_row_normalise,
)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(ROW_NORMALISE, LOGSUMEXP, MASKED_MEAN),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _row_normalise(m):
    return m / m.sum(axis=1, keepdims=True)


def _logsumexp(x):
    top = x.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]


def _masked_mean(values, mask):
    counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return (values * mask[:, :, None]).sum(axis=1) / counts


def _logsumexp_torch(x):
    return torch.logsumexp(torch.from_numpy(x).float(), dim=1)


ACCEPTED = [
    (check_row_normalise, _row_normalise),
    (check_logsumexp, _logsumexp),
    (check_masked_mean, _masked_mean),
]

FLOAT32 = [
    (check_row_normalise, lambda m: _row_normalise(m.astype(np.float32))),
    (check_logsumexp, _logsumexp_torch),
    (
        check_masked_mean,
        lambda v, m: _masked_mean(v.astype(np.float32), m),
    ),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch00, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED + FLOAT32,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference_and_float32(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def _in_place(m):
    m /= m.sum(axis=1, keepdims=True)
    return m


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda m: m / m.max(axis=1, keepdims=True), None),
        (lambda m: None, "forget `return`"),
        (_in_place, "changed its input in place"),
        (lambda m: (row / row.sum() for row in m), "returned a generator"),
        (lambda m: m / np.abs(m).sum(axis=1, keepdims=True), None),
    ],
    ids=[
        "divide-by-max",
        "no-return",
        "in-place",
        "generator",
        "abs-sum",
    ],
)
def test_row_normalise_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_row_normalise, wrong_answer, hint)


def test_learner_exception_names_the_input_shape_and_their_line():
    def crashes(matrix):
        return np.linalg.inv(matrix[:, :2])  # not square: LinAlgError

    with pytest.raises(ExerciseError) as failure:
        check_row_normalise(crashes)
    message = str(failure.value)
    assert message.startswith("crashes raised LinAlgError")
    assert "on input array (3, 3) float64" in message
    assert "return np.linalg.inv(matrix[:, :2])" in message


def _shifts_in_place(x):
    x -= x.max(axis=1, keepdims=True)
    return x[:, 0] * 0 + np.log(np.exp(x).sum(axis=1))


def _squeezed(x):
    top = x.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True))).squeeze()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_shifts_in_place, "changed its input in place"),
        (lambda x: x.max(axis=1), None),  # the max alone, a rough value
        (_squeezed, None),  # shape () for a single row
    ],
    ids=[
        "in-place",
        "max-only",
        "squeeze",
    ],
)
def test_logsumexp_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_logsumexp, wrong_answer, hint)


def _zeroes_in_place(values, mask):
    values[~mask] = 0.0
    counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return values.sum(axis=1) / counts


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_zeroes_in_place, "changed its input in place"),
    ],
    ids=[
        "in-place",
    ],
)
def test_masked_mean_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_masked_mean, wrong_answer, hint)


def test_masked_mean_rejects_an_answer_written_for_d_3():
    def for_d_3(values, mask):
        total = (values * np.repeat(mask[:, :, None], 3, axis=2)).sum(axis=1)
        return total / np.maximum(mask.sum(axis=1, keepdims=True), 1)

    assert_rejected(check_masked_mean, for_d_3, None)


def test_masked_mean_rejects_an_answer_that_changes_the_mask():
    def clears_mask(values, mask):
        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
        total = (values * mask[:, :, None]).sum(axis=1)
        mask[:] = False
        return total / counts

    assert_rejected(check_masked_mean, clears_mask, "changed its input")
