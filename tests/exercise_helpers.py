"""Shared helpers for the exercise-checker tests (tests/test_exercises_chNN.py)."""

import pytest

from transformer_course.exercises import ExerciseError


def assert_rejected(check, wrong_answer, hint: str | None) -> None:
    """`check` must raise ExerciseError for `wrong_answer`, naming the input and, if given, the hint."""
    with pytest.raises(ExerciseError) as failure:
        check(wrong_answer)
    assert "on input" in str(failure.value) or "changed" in str(failure.value)
    if hint:
        assert hint in str(failure.value)


def assert_every_checker_accepted(module, accepted) -> None:
    """Every checker of a chapter's module has a reference answer in `accepted`."""
    checkers = {name for name in module.__all__ if name.startswith("check_")}
    assert checkers == {check.__name__ for check, _ in accepted}


def assert_accepts(check, reference, capsys) -> None:
    check(reference)
    assert capsys.readouterr().out.startswith(f"Correct: {check.__name__.removeprefix('check_')}")
