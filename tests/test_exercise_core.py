"""The shared checker machinery (transformer_course/exercises/_core.py).

What every checker inherits: short messages whose first line says what is
wrong, the learner's function named by its own name, their error shown without
the checker's frames, tolerances that accept float32 answers, and the learner's
random state left alone.
"""

import importlib
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from exercise_helpers import assert_random_state_untouched, assert_short_message

from transformer_course.exercises import ExerciseError
from transformer_course.exercises._core import (
    _Label,
    _tolerance,
    call,
    describe,
    expect_close,
    expect_equal,
    verdict,
)


def check_double(double):
    """A toy checker in the house pattern: `double(x)` returns 2 * x."""
    name = "double"
    x = np.arange(256.0).reshape(16, 16)  # too big to print in full

    def run_cases():
        got = call(double, name, x.copy())
        mistakes = [(x + 2, "you added 2 instead of multiplying by 2.")]
        expect_close(name, [x], got, 2 * x, mistakes)

    verdict(name, "doubles every entry.", run_cases)


def check_pairs(pairs):
    """A toy checker for exact answers: `pairs(n)` lists (i, i + 1)."""
    name = "pairs"

    def run_cases():
        got = call(pairs, name, 4)
        expected = [(0, 1), (1, 2), (2, 3)]
        mistakes = [([(0, 1), (1, 2)], "range(n - 2) stops one pair early.")]
        expect_equal(name, [4], got, expected, mistakes)

    verdict(name, "lists the pairs.", run_cases)


def _message(check, answer) -> str:
    with pytest.raises(ExerciseError) as failure:
        check(answer)
    message = str(failure.value)
    assert_short_message(message)
    return message


def _flat(message: str) -> str:
    """The message with its wrapped lines joined, for `in` tests."""
    return " ".join(message.split())


def test_not_done_yet_names_the_learners_function(capsys):
    def my_double(x):
        raise NotImplementedError

    check_double(my_double)
    out = capsys.readouterr().out
    assert out.startswith("Not done yet: my_double still raises")


def test_correct_answer_and_float32_answer_accepted(capsys):
    check_double(lambda x: 2 * x)
    check_double(lambda x: (2 * x).astype(np.float32) + 3e-6)
    check_double(lambda x: torch.from_numpy(2 * x).float())
    out = capsys.readouterr().out.splitlines()
    assert out == ["Correct: double doubles every entry."] * 3


def test_float64_answer_off_by_more_than_round_off_rejected():
    message = _message(check_double, lambda x: 2 * x + 1e-4)
    assert "wrong value at [0, 0]" in message


def test_tolerance_follows_the_learners_dtype():
    assert _tolerance(np.zeros(2)) == (1e-5, 1e-6)
    assert _tolerance(np.zeros(2, dtype=np.float32)) == (1e-4, 1e-4)
    assert _tolerance(torch.zeros(2)) == (1e-4, 1e-4)
    assert _tolerance(torch.zeros(2, dtype=torch.float16)) == (1e-2, 1e-2)
    assert _tolerance(np.zeros(2), atol=1e-3) == (1e-5, 1e-3)


def test_wrong_value_names_first_index_and_both_values_not_the_matrices():
    def my_double(x):
        y = 2 * x
        y[3, 5] = -1.0
        return y

    message = _message(check_double, my_double)
    first = message.splitlines()[0]
    assert first.startswith("my_double returned a wrong value at [3, 5]")
    assert "expected 106.0, got -1.0" in message
    assert "array of shape (16, 16)" in message
    assert "1 of 256 values differ" in message
    assert "[[" not in message  # no full 16 x 16 matrix


def test_known_mistake_gives_its_hint():
    message = _message(check_double, lambda x: x + 2)
    assert "Hint: you added 2 instead of multiplying by 2." in message


def test_wrong_shape_named_on_the_first_line():
    def my_double(x):
        return 2 * x.ravel()

    first = _message(check_double, my_double).splitlines()[0]
    assert first == (
        "my_double returned shape (256,), expected shape (16, 16)."
    )


def test_none_generator_and_tuple_are_named():
    def forgets_return(x):
        2 * x

    assert "forget `return`" in _message(check_double, forgets_return)

    def lazy(x):
        return (2 * row for row in x)

    assert "returned a generator" in _message(check_double, lazy)

    def with_weights(x):
        return 2 * x, np.ones((16, 16))

    message = _message(check_double, with_weights)
    assert "returned a tuple of 2 items" in message
    assert "(output, weights)" in _flat(message)


def test_learners_error_named_with_input_shapes_not_values():
    def my_double(x):
        return x @ np.ones(3)  # (16, 16) @ (3,): a shape error

    with pytest.raises(ExerciseError) as failure:
        check_double(my_double)
    message = str(failure.value)
    assert_short_message(message)
    lines = message.splitlines()
    assert lines[0].startswith("my_double raised ValueError: matmul")
    assert "on input array (16, 16) float64" in message
    assert "return x @ np.ones(3)" in message  # the learner's line
    assert isinstance(failure.value.__cause__, ValueError)


def test_traceback_hides_the_checkers_frames():
    def my_double(x):
        return x.no_such_method()

    with pytest.raises(ExerciseError) as failure:
        check_double(my_double)
    rendered = "\n".join(failure.value._render_traceback_())
    assert rendered.startswith("ExerciseError: my_double raised AttributeError")
    assert "x.no_such_method()" in rendered  # the learner's frame is shown
    assert "exercises/_core.py" not in rendered and "run_cases" not in rendered


def test_lists_name_the_first_position_that_differs():
    message = _message(check_pairs, lambda n: [(0, 1), (1, 3), (2, 3)])
    # a lambda has no name of its own: the checker's name stands in
    assert message.splitlines()[0] == (
        "pairs returned a wrong item at position 1: expected (1, 2), got (1, 3)."
    )


def test_lists_name_missing_extra_and_wrongly_typed_items():
    def my_pairs(n):
        return [(i, i + 1) for i in range(n - 2)]

    message = _flat(_message(check_pairs, my_pairs))
    assert "the first missing one is (2, 3)" in message
    assert "range(n - 2) stops one pair early." in message
    message = _flat(
        _message(check_pairs, lambda n: [(i, i + 1) for i in range(n)])
    )
    assert "the first extra one is (3, 4)" in message
    message = _message(
        check_pairs, lambda n: [[i, i + 1] for i in range(n - 1)]
    )
    assert "item 0 as a list [0, 1]; expected a tuple (0, 1)" in message
    message = _message(
        check_pairs, lambda n: ((i, i + 1) for i in range(n - 1))
    )
    assert "returned a generator, not a list" in message


def test_checker_leaves_the_random_state_alone():
    def draws(x):  # the learner's function, or a module's init, draws
        np.random.rand()  # noqa: NPY002
        random.random()
        torch.rand(1)
        return 2 * x

    assert_random_state_untouched(check_double, draws)
    assert_random_state_untouched(check_double, lambda x: x + 2)

    def reseeds(n):
        torch.manual_seed(0)
        np.random.seed(0)  # noqa: NPY002
        return [(0, 1), (1, 2), (2, 3)]

    assert_random_state_untouched(check_pairs, reseeds)


def _every_accepted_answer():
    """(checker, reference) of every chapter, from tests/test_exercises_chNN.py."""
    pairs = []
    for path in sorted(Path(__file__).parent.glob("test_exercises_ch*.py")):
        module = importlib.import_module(path.stem)
        pairs += list(getattr(module, "ACCEPTED", []))
    return pairs


EVERY_ACCEPTED = _every_accepted_answer()


@pytest.mark.parametrize(
    ("check", "reference"),
    EVERY_ACCEPTED,
    ids=[c.__name__ for c, _ in EVERY_ACCEPTED],
)
def test_every_checker_leaves_the_random_state_alone(check, reference):
    assert_random_state_untouched(check, reference)  # accepting
    assert_random_state_untouched(
        check, lambda *args, **kwargs: None
    )  # rejecting


@pytest.mark.parametrize(
    "check",
    [c for c, _ in EVERY_ACCEPTED],
    ids=[c.__name__ for c, _ in EVERY_ACCEPTED],
)
def test_every_checker_names_the_learners_stub(check, capsys):
    def my_answer(*args, **kwargs):
        raise NotImplementedError

    check(my_answer)
    out = capsys.readouterr().out
    assert out.startswith("Not done yet: my_answer still raises"), out


def test_inputs_are_described_briefly():
    assert describe(_Label("x of shape (2, 5, 16)")) == "x of shape (2, 5, 16)"
    assert describe(torch.zeros(2, 5, 16)) == (
        "tensor of shape (2, 5, 16), torch.float32"
    )
    assert describe(torch.nn.Linear(2, 3)) == "a Linear module"
    assert describe(np.zeros((16, 16))) == "array of shape (16, 16)"
    assert describe(np.eye(2)).splitlines()[1:] == ["[[1., 0.],", " [0., 1.]]"]
    assert len(describe(list(range(100)))) < 80


def _close_message(got, expected, inputs=(1.0,)) -> str:
    with pytest.raises(ExerciseError) as failure:
        expect_close("my_f", list(inputs), got, np.asarray(expected))
    return str(failure.value)


def test_scalar_answer_reports_its_real_difference():
    # np.argwhere on a 0-d array has size 0: the difference was shown as 0.0
    message = _close_message(3.0, 2.5)
    assert message.splitlines()[0] == (
        "my_f returned a wrong value: expected 2.5, got 3.0."
    )
    assert "largest difference 0.5" in message


def test_round_off_is_shown_as_zero_and_inputs_with_six_digits():
    # an expected value that is round-off next to the others reads 0.0, and
    # a float input is not printed with all of repr's seventeen digits
    message = _close_message(
        [1.0, 0.5], [3.95517e-16, 0.5], inputs=(np.pi / 2, [0.1 + 0.2, 1.0])
    )
    assert "expected 0.0, got 1.0" in message
    assert "e-16" not in message
    assert "on input 1.5708, [0.3, 1.0]" in message
    assert "1.5707963267948966" not in message
    assert "0.30000000000000004" not in message


def test_scalar_answer_in_an_array_of_one_gets_a_hint():
    message = _close_message(np.array([0.5]), 0.5)
    assert message.splitlines()[0].endswith("expected shape ().")
    assert "return one number" in message
