"""The checks that chapters share, from transformer_course/exercises/_core.py:
inputs changed in place (`expect_unchanged`, `_copies`), answers of the
wrong kind (`Refusal`, `_expect_array`), a missing `return`
(`expect_returned`), and the engine of the tables (`Exercise`, `Mistake`,
`message`)."""

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from exercise_helpers import assert_short_message

from transformer_course.exercises import ExerciseError
from transformer_course.exercises._core import (
    Exercise,
    Mistake,
    Refusal,
    _a_kind,
    _copies,
    _expect_array,
    expect_returned,
    expect_unchanged,
    message,
)


def _message(check, *args, **kwargs) -> str:
    with pytest.raises(ExerciseError) as failure:
        check(*args, **kwargs)
    message = str(failure.value)
    assert_short_message(message)
    return message


def _flat(message: str) -> str:
    return " ".join(message.split())


# ---------------------------------------------------------------- _copies


def test_copies_are_independent_and_of_the_same_kind():
    array, tensor = np.arange(3.0), torch.arange(3.0)
    nested = [[1, 2], [3]]
    given = _copies(array, tensor, nested)
    given[0][0] = 9.0
    given[1][0] = 9.0
    given[2][0].append(5)
    assert array[0] == 0.0 and tensor[0] == 0.0 and nested == [[1, 2], [3]]
    assert isinstance(given[0], np.ndarray)
    assert isinstance(given[1], torch.Tensor)
    assert given[2] == [[1, 2, 5], [3]]


# ---------------------------------------------------------------- unchanged


@pytest.mark.parametrize(
    "value",
    [np.arange(6.0).reshape(2, 3), torch.randn(2, 3), [(1, 2), (3, 4)], "s"],
    ids=["array", "tensor", "list", "str"],
)
def test_unchanged_inputs_pass(value):
    expect_unchanged("f", None, _copies(value), [value])
    expect_unchanged("f", [value], _copies(value), {"x": value}, "{what}")


def test_an_unnamed_array_changed_keeps_the_numpy_message():
    x = np.array([1.0, 2.0, 3.0])
    given = x.copy()
    given -= 1.0
    message = _message(expect_unchanged, "f", None, [given], [x])
    lines = message.splitlines()
    assert lines[0].startswith("f changed its input in place; return a new")
    assert "x -= m, x /= s" in _flat(message)
    # the input as it was, not as the learner's function left it
    assert "[1., 2., 3.]" in message


def test_the_first_changed_input_is_named():
    logits, target = torch.randn(2, 3), torch.tensor([1, 2])
    given = _copies(logits, target)
    given[1][0] = 0
    message = _message(
        expect_unchanged,
        "loss",
        [logits, target],
        given,
        {"logits": logits, "target": target},
        "changed {what} in place; leave the inputs as they were.",
        "a hint.",
    )
    assert message.startswith("loss changed target in place; leave the")
    assert "Hint: a hint." in message
    assert "on input tensor of shape (2, 3)" in message


def test_a_changed_shape_is_a_change_not_a_broadcasting_error():
    x = torch.zeros(2, 3)
    given = x.clone()
    given.unsqueeze_(0)  # (1, 2, 3) == (2, 3) would broadcast to True
    message = _message(expect_unchanged, "f", None, [given], [x])
    assert "changed its input in place" in message
    array = np.zeros((2, 3))
    given = array.copy()
    given.shape = (3, 2)
    _message(expect_unchanged, "f", None, [given], [array])


def test_a_changed_list_can_be_shown_as_it_is_now():
    ids = [6, 7, 8]
    given = _copies(ids)
    given[0].append(2)
    message = _message(
        expect_unchanged,
        "frame",
        [ids],
        given,
        {"ids": ids},
        "changed {what} in place: it is now {now!r}; return new lists.",
        None,
    )
    assert message.startswith(
        "frame changed ids in place: it is now [6, 7, 8, 2]; return new lists."
    )
    assert "Hint" not in message


def test_given_and_originals_must_line_up():
    x = np.zeros(2)
    with pytest.raises(ValueError):
        expect_unchanged("f", None, _copies(x, x), [x])


# ---------------------------------------------------------------- kinds


def test_kinds_are_named_for_learners():
    assert _a_kind(torch.zeros(1)) == "a tensor"
    assert _a_kind(np.zeros(1)) == "a NumPy array"
    assert _a_kind([1]) == "a list"
    assert _a_kind(1.5) == "a float"


def test_a_refusal_names_the_kind_and_the_expected_shape():
    check = Exercise(
        "f",
        "works.",
        [(3,)],
        lambda n: torch.zeros(2),
        refusals=[
            Refusal(
                lambda got: not isinstance(got, torch.Tensor),
                "returned {kind}; expected a tensor of shape {shape}.",
                "a hint.",
            )
        ],
    )
    message = _message(check, lambda n: np.zeros(2))
    assert message.startswith(
        "f returned a NumPy array; expected a tensor of shape (2,)."
    )
    assert "Hint: a hint." in message and "on input 3" in message


def test_a_refusal_on_some_cases_with_a_hint_read_from_the_answer(capsys):
    check = Exercise(
        "f",
        "works.",
        [(1,), (2,)],
        float,
        refusals=[
            Refusal(
                lambda got: got < 0,
                "returned {got}.",
                lambda got, n: f"n was {n}.",
                on=lambda n: n == 2,
                fields=lambda got: {"got": got},
            )
        ],
    )
    check(float)
    assert capsys.readouterr().out == "Correct: f works.\n"
    assert "a wrong value" in _message(check, lambda n: -1.0)  # case 1
    message = _message(check, lambda n: -1.0 if n == 2 else float(n))
    assert (
        message.startswith("f returned -1.0.") and "Hint: n was 2." in message
    )


def test_a_hint_only_for_a_mistake_that_explains_every_case():
    check = Exercise(
        "f",
        "works.",
        [(1,), (3,)],
        lambda n: n,
        compare="equal",
        mistakes=[
            Mistake(lambda n: n + 1, "plus one."),  # 2 on case 1, by chance
            Mistake(lambda n: 2 * n, "doubled."),
        ],
        agree=lambda got, wrong: got == wrong,
        explain=lambda n: f"Here n = {n}.",
    )
    message = _message(check, lambda n: 2 * n)
    assert "Hint: doubled." in message and "plus one" not in message
    assert message.endswith("Here n = 1.")


def test_a_mistake_seen_in_the_answer_itself():
    mistake = Mistake(None, "negative.", when=lambda got, n: got < 0)
    check = Exercise("f", "works.", [(1,)], float, mistakes=[mistake])
    assert "Hint: negative." in _message(check, lambda n: -5.0)
    assert "Hint" not in _message(check, lambda n: 5.0)


def test_checker_is_the_public_function_with_its_help(capsys):
    exercise = Exercise("f", "works.", [(1,)], float, doc="Check `f(n)`.")
    check = exercise.checker()
    assert (check.__name__, check.__doc__) == ("check_f", "Check `f(n)`.")
    assert check.__module__ == __name__
    check(float)
    assert capsys.readouterr().out == "Correct: f works.\n"


def test_message_fills_its_fields_only_when_given():
    assert message("{a} and {b!r}", a=1, b="x") == "1 and 'x'"
    assert message("a dict {'k': 1}") == "a dict {'k': 1}"


def test_expect_array_rejects_lists_but_not_output_and_weights():
    _expect_array("f", [1], np.zeros(2))
    _expect_array("f", [1], (np.zeros(2), np.zeros((2, 2))))
    for answer in ([1.0, 2.0], (1.0, 2.0)):
        message = _message(_expect_array, "f", [1], answer)
        kind = type(answer).__name__
        assert message.startswith(f"f returned a {kind}, not an array.")
        assert "np.array(...)" in message


def test_expect_returned():
    expect_returned("f", [1], 0)
    message = _message(expect_returned, "f", [1], None)
    assert message.startswith("f returned None: did you forget `return`?")


# ---------------------------------------------------------------- the package

EXERCISES = (
    Path(__file__).resolve().parents[1] / "transformer_course" / ("exercises")
)


def _functions(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def test_no_function_of_the_checkers_is_over_60_lines():
    long = [
        f"{path.name}:{node.lineno} {node.name} "
        f"({node.end_lineno - node.lineno + 1} lines)"
        for path in sorted(EXERCISES.glob("*.py"))
        for node in _functions(path)
        if node.end_lineno - node.lineno + 1 > 60
    ]
    assert not long, long


def test_the_checker_modules_import_no_private_name_of_another():
    private = [
        f"{path.name}: {alias.name} from {node.module}"
        for path in sorted(EXERCISES.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("transformer_course")
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert not private, private
