"""Shared helpers for the exercise-checker tests (tests/test_exercises_chNN.py)."""

import random

import numpy as np
import pytest
import torch

from transformer_course.exercises import ExerciseError
from transformer_course.exercises._core import MAX_LINES


def assert_short_message(message: str) -> None:
    """A checker's message: at most MAX_LINES lines, the problem on line 1."""
    lines = message.splitlines()
    assert 0 < len(lines) <= MAX_LINES, f"{len(lines)} lines:\n{message}"
    assert not lines[0].startswith("on input"), message


def assert_rejected(check, wrong_answer, hint: str | None) -> None:
    """`check` must raise ExerciseError for `wrong_answer`: a short message
    that names the input (or the change made to it) and, if given, the hint."""
    with pytest.raises(ExerciseError) as failure:
        check(wrong_answer)
    message = str(failure.value)
    assert "on input" in message or "changed" in message, message
    assert_short_message(message)
    if hint:
        assert hint in message, message


def assert_every_checker_accepted(module, accepted) -> None:
    """Every checker of a chapter's module has a reference answer in `accepted`."""
    checkers = {name for name in module.__all__ if name.startswith("check_")}
    assert checkers == {check.__name__ for check, _ in accepted}


def assert_accepts(check, reference, capsys) -> None:
    check(reference)
    out = capsys.readouterr().out
    assert out.startswith(
        f"Correct: {check.__name__.removeprefix('check_')}"
    ), out


def _random_states():
    return (
        random.getstate(),
        np.random.get_state()[1].tolist(),  # noqa: NPY002
        torch.random.get_rng_state().tolist(),
    )


def assert_random_state_untouched(check, answer) -> None:
    """Running `check(answer)`, right or wrong, leaves the global random
    generators of `random`, NumPy and PyTorch as they were."""
    random.seed(123)
    np.random.seed(123)  # noqa: NPY002
    torch.manual_seed(123)
    before = _random_states()
    try:
        check(answer)
    except ExerciseError:
        pass
    assert _random_states() == before, (
        f"{check.__name__} changed the random state"
    )
