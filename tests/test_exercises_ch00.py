"""Chapter 0's exercise checkers accept the reference and reject the known
wrong answers, each with the hint it must name."""

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
)

from transformer_course.exercises import ExerciseError, ch00
from transformer_course.exercises.ch00 import (
    check_logsumexp,
    check_masked_mean,
    check_row_normalise,
)


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
        (lambda m: m / m.sum(axis=0, keepdims=True), "every column sums to 1"),
        (lambda m: m / m.sum(axis=1), "broadcasts such an array"),
        (lambda m: m / m.sum(), "sum of the whole matrix"),
        (lambda m: m / m.max(axis=1, keepdims=True), None),
        (lambda m: None, "forget `return`"),
        (_in_place, "changed its input in place"),
        (lambda m: (row / row.sum() for row in m), "returned a generator"),
    ],
    ids=[
        "columns",
        "broadcast-wrong-way",
        "whole-matrix",
        "divide-by-max",
        "no-return",
        "in-place",
        "generator",
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


def _naive(x):
    return np.log(np.exp(x).sum(axis=1))


def _no_keepdims(x):
    m = x.max(axis=1)
    return m + np.log(np.exp(x - m).sum(axis=1))


def _global_max(x):
    m = x.max()
    return m + np.log(np.exp(x - m).sum(axis=1))


def _not_added_back(x):
    m = x.max(axis=1, keepdims=True)
    return np.log(np.exp(x - m).sum(axis=1))


def _kept_axis(x):
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _columns(x):
    m = x.max(axis=0, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=0, keepdims=True)))[0]


def _shifts_in_place(x):
    x -= x.max(axis=1, keepdims=True)
    return x[:, 0] * 0 + np.log(np.exp(x).sum(axis=1))


def _mean_shift(x):
    m = x.mean(axis=1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_naive, "exp overflows"),
        (_no_keepdims, "row maxima have shape (n,)"),
        (_global_max, "maximum of the whole matrix"),
        (_not_added_back, "did not add it back"),
        (_kept_axis, "one number per row, shape (n,)"),
        (_columns, "reduced the columns"),
        (_shifts_in_place, "changed its input in place"),
        (_mean_shift, "shifting by the row mean"),
        (lambda x: x.max(axis=1), None),  # the max alone, a rough value
    ],
    ids=[
        "naive-overflow",
        "max-without-keepdims",
        "global-max",
        "max-not-added-back",
        "keepdims-kept",
        "columns",
        "in-place",
        "mean-shift",
        "max-only",
    ],
)
def test_logsumexp_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_logsumexp, wrong_answer, hint)


def _no_feature_axis(values, mask):
    counts = mask.sum(axis=1, keepdims=True)
    return (values * mask).sum(axis=1) / counts


def _nan_for_empty(values, mask):
    total = (values * mask[:, :, None]).sum(axis=1)
    return total / mask.sum(axis=1, keepdims=True)


def _counts_without_keepdims(values, mask):
    total = (values * mask[:, :, None]).sum(axis=1)
    return total / np.maximum(mask.sum(axis=1), 1)


def _zeroes_in_place(values, mask):
    values[~mask] = 0.0
    counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return values.sum(axis=1) / counts


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda v, m: v.mean(axis=1), "padding was averaged in"),
        (
            lambda v, m: (v * m[:, :, None]).mean(axis=1),
            "divided by T",
        ),
        (
            lambda v, m: (v * m[:, :, None]).sum(axis=1) / m.sum(),
            "whole batch",
        ),
        (lambda v, m: _masked_mean(v, ~m), "True marks what is kept"),
        (_nan_for_empty, "gave NaN (0 / 0)"),
        (_no_feature_axis, "give it a feature axis"),
        (lambda v, m: v[m].mean(axis=0), "mixes the sequences"),
        (_counts_without_keepdims, "the counts have shape (B,)"),
        (_zeroes_in_place, "changed its input in place"),
    ],
    ids=[
        "padding-included",
        "divided-by-T",
        "divided-by-batch-count",
        "mask-inverted",
        "nan-for-empty",
        "mask-broadcast-wrong",
        "boolean-index-flattens",
        "counts-without-keepdims",
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


def test_logsumexp_names_a_maximum_added_with_its_kept_axis():
    def adds_kept_axis(x):
        top = x.max(axis=1, keepdims=True)
        return np.log(np.exp(x - top).sum(axis=1)) + top  # (n, n)

    assert_rejected(check_logsumexp, adds_kept_axis, "broadcasts to (n, n)")
