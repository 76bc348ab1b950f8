"""Chapter 0's exercise checkers accept the reference and reject the known wrong answers."""

import numpy as np
import pytest
from exercise_helpers import assert_accepts, assert_every_checker_accepted

from transformer_course.exercises import ExerciseError, ch00
from transformer_course.exercises.ch00 import (
    check_row_normalise,
)


def _stub(*args):
    raise NotImplementedError


def test_stub_is_told_not_done_yet(capsys):
    check_row_normalise(_stub)
    assert "Not done yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda m: m / m.sum(axis=0, keepdims=True), "every column sums to 1"),
        (lambda m: m / m.sum(axis=1), "broadcasts such an array"),
        (lambda m: m / m.sum(), None),
        (lambda m: m / m.max(axis=1, keepdims=True), None),
    ],
    ids=["columns", "broadcast-wrong-way", "whole-matrix", "divide-by-max"],
)
def test_row_normalise_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_row_normalise(wrong_answer)
    message = str(failure.value)
    assert "on input" in message and "expected" in message
    if hint:
        assert hint in message


def test_row_normalise_rejects_forgotten_return():
    def forgets_return(matrix):
        matrix / matrix.sum(axis=1, keepdims=True)

    with pytest.raises(ExerciseError, match="forget `return`"):
        check_row_normalise(forgets_return)


def test_row_normalise_rejects_in_place_change():
    def in_place(matrix):
        matrix /= matrix.sum(axis=1, keepdims=True)
        return matrix

    with pytest.raises(ExerciseError, match="changed its input in place"):
        check_row_normalise(in_place)


def test_learner_exception_names_the_input():
    def crashes(matrix):
        return np.linalg.inv(matrix[:, :2])  # a 3x2 slice is not square: LinAlgError

    with pytest.raises(ExerciseError, match=r"raised LinAlgError(.|\n)*on input"):
        check_row_normalise(crashes)


ACCEPTED = [
    (check_row_normalise, lambda m: m / m.sum(axis=1, keepdims=True)),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch00, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"), ACCEPTED, ids=lambda value: getattr(value, "__name__", "")
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
