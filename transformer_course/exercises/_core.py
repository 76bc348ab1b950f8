"""Shared machinery of the exercise checkers: verdicts, comparisons, messages.

The checkers live in one module per chapter (`ch00`, `ch01`, ...); what they share
is here: calling the learner's function, comparing its answer, and the verdict.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

import numpy as np


class ExerciseError(AssertionError):
    """The answer to an exercise is wrong; the message says where and why."""


class _NotDone(Exception):
    """The learner's function still raises NotImplementedError."""


def _describe(value) -> str:
    """A short, readable rendering of an input or output for a message."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, precision=4, suppress_small=True, separator=", ")
        return f"array of shape {value.shape}:\n{text}"
    return repr(value)


def _call(fn: Callable, name: str, *args):
    """Call the learner's `fn`; turn its exceptions into messages about the input."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise _NotDone() from None
    except Exception as error:  # the learner's bug, reported with the input that caused it
        inputs = "\n".join(_describe(a) for a in args)
        raise ExerciseError(
            f"{name} raised {type(error).__name__}: {error}\non input {inputs}"
        ) from error


def _matching_mistake(got: np.ndarray, known_mistakes, atol: float) -> str | None:
    for wrong, message in known_mistakes:
        wrong = np.asarray(wrong, dtype=float)
        if wrong.shape == got.shape and np.allclose(got, wrong, atol=atol):
            return message
    return None


def _expect_close(
    name: str,
    inputs: Sequence,
    got,
    expected: np.ndarray,
    known_mistakes: Sequence[tuple[np.ndarray, str]] = (),
    atol: float = 1e-6,
) -> None:
    """Raise ExerciseError unless `got` equals `expected`, naming a known mistake if it matches one."""
    shown_inputs = "\n".join(_describe(a) for a in inputs)
    if got is None:
        raise ExerciseError(
            f"{name} on input {shown_inputs}\nreturned None: did you forget `return`?"
        )
    try:
        got_array = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise ExerciseError(
            f"{name} on input {shown_inputs}\nshould return numbers, but returned {got!r}"
        ) from None
    expected = np.asarray(expected, dtype=float)
    if got_array.shape == expected.shape and np.allclose(got_array, expected, atol=atol):
        return
    hint = _matching_mistake(got_array, known_mistakes, atol)
    if got_array.shape != expected.shape:
        problem = f"should return shape {expected.shape}, but returned shape {got_array.shape}."
    else:
        problem = f"expected {_describe(expected)}\nbut got {_describe(got_array)}"
    raise ExerciseError(
        f"{name} on input {shown_inputs}\n{problem}"
        + (("\n" + textwrap.fill(f"Hint: {hint}", width=80)) if hint else "")
    )


def _expect_equal(name: str, inputs: Sequence, got, expected, known_mistakes=()) -> None:
    """Raise ExerciseError unless `got == expected` (for lists, tuples and other exact answers)."""
    if got == expected:
        return
    hint = next((message for wrong, message in known_mistakes if got == wrong), None)
    shown_inputs = "\n".join(_describe(a) for a in inputs)
    raise ExerciseError(
        f"{name} on input {shown_inputs}\nexpected {expected!r}\nbut got {got!r}"
        + (("\n" + textwrap.fill(f"Hint: {hint}", width=80)) if hint else "")
    )


def _verdict(name: str, success: str, run_cases: Callable[[], None]) -> None:
    """Run the cases and print the verdict; a wrong answer raises ExerciseError."""
    try:
        run_cases()
    except _NotDone:
        print(
            f"Not done yet: {name} still raises NotImplementedError.\n"
            "Write your answer in its cell, run that cell, then run this one again."
        )
        return
    print(f"Correct: {name} {success}")


