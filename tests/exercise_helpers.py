"""Shared helpers for the exercise-checker tests (tests/test_exercises_chNN.py)."""

import functools
import random
import re

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
        assert _flat(hint) in _flat(message), message


def _flat(text: str) -> str:
    """`text` with line breaks undone (textwrap breaks after hyphens too)."""
    return re.sub(r"-\s+", "-", " ".join(text.split()))


def _makes(exercise, mistake, *args):
    wrong = mistake.variant(*args)
    return exercise.reference(*args) if wrong is None else wrong


def _wrong_answer(exercise, mistake):
    """A learner's function that makes `mistake` on every case it applies to
    and answers the others right (a partial: no code for chapter 3's check
    of ready-made softmaxes to read)."""
    if mistake.example is not None:
        return mistake.example
    return functools.partial(_makes, exercise, mistake)


def known_mistakes(*exercises):
    """pytest params (check, wrong answer, hint) built from the tables of
    known mistakes: the longest literal part of each hint must be shown."""
    params = []
    for exercise in exercises:
        for i, mistake in enumerate(exercise.mistakes):
            hint = max(re.split(r"\{[^}]*\}", mistake.hint), key=len)
            params.append(
                pytest.param(
                    exercise,
                    _wrong_answer(exercise, mistake),
                    hint,
                    id=f"{exercise.name}-{i}",
                )
            )
    return params


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
