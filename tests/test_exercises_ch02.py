"""Chapter 2's exercise checkers accept the reference (float64 and float32)
and reject the wrong answers learners really give, with the hint they need."""

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)

from transformer_course.exercises import ch02
from transformer_course.exercises.ch02 import (
    FIT_SHIFT_MATRIX,
    POSITIONAL_ENCODING,
    ROTATE_PAIR,
    check_fit_shift_matrix,
    check_positional_encoding,
    check_rotate_pair,
)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(POSITIONAL_ENCODING, FIT_SHIFT_MATRIX, ROTATE_PAIR),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


# ---------------------------------------------------------------- exercise 2.1


def _pe(seq_len, d_model, exponents=None, first=0, swap=False):
    if exponents is None:
        exponents = np.arange(0, d_model, 2) / d_model
    angles = np.arange(first, first + seq_len)[:, None] / 10000**exponents
    table = np.zeros((seq_len, d_model))
    table[:, 0::2] = np.cos(angles) if swap else np.sin(angles)
    table[:, 1::2] = np.sin(angles) if swap else np.cos(angles)
    return table


def notes_loop(seq_len, d_model):
    """The seed notes' loop, over every position: the doubled exponent."""
    table = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            table[pos, i] = np.sin(pos / 10000 ** ((2 * i) / d_model))
            table[pos, i + 1] = np.cos(pos / 10000 ** ((2 * i) / d_model))
    return table


def torch_float32(seq_len, d_model):
    """The Annotated Transformer's way, in float32: off by about 1e-6."""
    position = torch.arange(seq_len).unsqueeze(1)
    div_term = torch.exp(
        torch.arange(0, d_model, 2) * (-np.log(10000.0) / d_model)
    )
    table = torch.zeros(seq_len, d_model)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (notes_loop, "exponent is doubled"),
        (lambda t, d: np.sin(_pe(t, d)), None),
        (lambda t, d: None, "forget `return`"),
        (lambda t, d: _pe(t, d).tolist(), "not an array"),
        (lambda t, d: _pe(t, d - 2), None),
        (lambda t, d: _pe(t, d).astype(int), None),
    ],
    ids=[
        "notes-doubled-exponent",
        "nonsense",
        "no-return",
        "list",
        "d_model-off-by-two",
        "int-dtype",
    ],
)
def test_positional_encoding_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_positional_encoding, wrong_answer, hint)


def test_positional_encoding_accepts_float32_torch(capsys):
    error = np.abs(torch_float32(20, 512).double().numpy() - _pe(20, 512))
    assert 1e-7 < error.max() < 1e-5  # a real float32 error, not zero
    assert_accepts(check_positional_encoding, torch_float32, capsys)


def test_not_done_names_the_learners_function(capsys):
    def my_positional_encoding(seq_len, d_model):
        raise NotImplementedError

    check_positional_encoding(my_positional_encoding)
    out = capsys.readouterr().out
    assert out.startswith("Not done yet: my_positional_encoding"), out


def test_error_in_learners_code_is_reported_with_the_input():
    def my_positional_encoding(seq_len, d_model):
        return np.zeros((seq_len, d_model))[:, :: d_model // 0]

    assert_rejected(check_positional_encoding, my_positional_encoding, None)


# ---------------------------------------------------------------- exercise 2.2


def fit_by_lstsq(encoding, k):
    solution, *_ = np.linalg.lstsq(encoding[:-k], encoding[k:], rcond=None)
    return solution.T


def fit_by_normal_equations(encoding, k):
    before, after = encoding[:-k], encoding[k:]
    return np.linalg.solve(before.T @ before, before.T @ after).T


def fit_in_float32_torch(encoding, k):
    table = torch.tensor(encoding, dtype=torch.float32)
    return torch.linalg.pinv(table[:-k]).matmul(table[k:]).T


def fit_and_overwrite(encoding, k):
    encoding -= encoding.mean(axis=0)  # "centring" the caller's table
    return fit_by_lstsq(encoding, k)


def exact_rotation_with_base_10000(encoding, k):
    """The chapter's shift matrix, not a fit: the checker's tables differ."""
    d_model = encoding.shape[1]
    matrix = np.zeros((d_model, d_model))
    for pair in range(d_model // 2):
        angle = k / 10000 ** (2 * pair / d_model)
        c, s = np.cos(angle), np.sin(angle)
        matrix[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = [
            [c, s],
            [-s, c],
        ]
    return matrix


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda e, k: fit_by_lstsq(e[::-1], k), "transpose of M"),
        (exact_rotation_with_base_10000, None),
        (lambda e, k: np.eye(e.shape[1]), None),
        (fit_and_overwrite, "changed its input"),
        (lambda e, k: fit_by_lstsq(e, k).tolist(), "not an array"),
    ],
    ids=[
        "fitted-backwards",
        "formula-not-fit",
        "identity",
        "overwrites-input",
        "list",
    ],
)
def test_fit_shift_matrix_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_fit_shift_matrix, wrong_answer, hint)


@pytest.mark.parametrize(
    "reference", [fit_by_normal_equations, fit_in_float32_torch]
)
def test_fit_shift_matrix_accepts_other_correct_ways(reference, capsys):
    assert_accepts(check_fit_shift_matrix, reference, capsys)


# ---------------------------------------------------------------- exercise 2.3


def rotate(x, pos, theta, sign=1.0):
    c, s = np.cos(pos * theta), sign * np.sin(pos * theta)
    return np.array([c * x[0] - s * x[1], s * x[0] + c * x[1]])


def rotate_in_place(x, pos, theta):
    x[:] = rotate(x, pos, theta)
    return x


def rotate_float32_torch(x, pos, theta):
    x = torch.tensor(x, dtype=torch.float32)
    angle = torch.tensor(pos * theta, dtype=torch.float32)
    c, s = torch.cos(angle), torch.sin(angle)
    return torch.stack([c * x[0] - s * x[1], s * x[0] + c * x[1]])


def rotate_with_complex_numbers(x, pos, theta):
    z = complex(x[0], x[1]) * np.exp(1j * pos * theta)
    return np.array([z.real, z.imag])


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda x, p, t: complex(x[0], x[1]) * np.exp(1j * p * t),
            "complex",
        ),
        (rotate_in_place, "changed its input"),
        (lambda x, p, t: rotate(x, p, t).tolist(), "not an array"),
        (lambda x, p, t: tuple(rotate(x, p, t)), "not an array"),
        (lambda x, p, t: rotate(x, p + 1, t), None),
        (lambda x, p, t: rotate(x, p, t)[:, None], None),
    ],
    ids=[
        "complex-result",
        "in-place",
        "list",
        "tuple-of-floats",
        "position-plus-one",
        "column-vector",
    ],
)
def test_rotate_pair_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_rotate_pair, wrong_answer, hint)


@pytest.mark.parametrize(
    "reference", [rotate_float32_torch, rotate_with_complex_numbers]
)
def test_rotate_pair_accepts_other_correct_ways(reference, capsys):
    assert_accepts(check_rotate_pair, reference, capsys)


# ---------------------------------------------------------------- every checker

ACCEPTED = [
    (check_positional_encoding, _pe),
    (check_fit_shift_matrix, fit_by_lstsq),
    (check_rotate_pair, rotate),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch02, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
