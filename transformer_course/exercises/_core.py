"""Shared machinery of the exercise checkers: the tables' engine, the
comparisons and the messages.

The checkers live in one module per chapter (`ch00`, `ch01`, ...), each a
declaration: an `Exercise` holds the cases, the reference answer, the known
mistakes (`Mistake`: the wrong answer a mistake gives, and its hint) and the
answers refused before any comparison (`Refusal`); `check_thing =
THING.checker()` is the public function. Every message is a format string
of a table, filled in by `message` (`fail` calls it): the one place where
its translation is looked up (`_i18n`: in Chinese, the template from the
gettext catalog of transformer_course/locale/, filled with the same fields).
A message is one whole template, never glued from pieces, so that the
catalog can translate it whole (tools/checker_messages.py extracts them).

What the machinery promises the learner (each function's docstring says
how): a short message whose first line says what is wrong (`fail`), the
learner's function named by its own name (`call`), their own error and line
of code when their function raises, with this package's frames hidden in
Jupyter (`ExerciseError._render_traceback_`), tolerances that accept a
float32 answer (`_tolerance`), inputs changed in place named as such
(`expect_unchanged`), and their random state untouched (`verdict`).
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from transformer_course.exercises._i18n import WIDTH, display_width, wrap
from transformer_course.exercises._i18n import translate

MAX_LINES = 15
"""The longest message a checker prints, in lines."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class ExerciseError(AssertionError):
    """The answer to an exercise is wrong; the message says where and why.

    In IPython and Jupyter, `_render_traceback_` replaces the usual traceback:
    the learner sees the message and, when their own function raised, their
    own error and the lines of their code it passed through, not the frames of
    the checker.
    """

    def _render_traceback_(self) -> list[str]:
        lines = [f"ExerciseError: {self}"]
        cause = self.__cause__
        if cause is not None and not isinstance(cause, ExerciseError):
            lines += ["", message("Your function's error:")]
            lines += _learner_traceback(cause)
        return "\n".join(lines).splitlines()


class _NotDone(Exception):
    """The learner's function (named by the argument) still raises
    NotImplementedError."""


# The learner's own function names, by the checker's name for them: `call`
# records `my_softmax` for "softmax", and messages use it.
_learner_names: dict[str, str] = {}


def _display_name(name: str) -> str:
    """The learner's name for the function the checker calls `name`."""
    return _learner_names.get(name, name)


# ---------------------------------------------------------------- describing


def is_tensor(value) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def not_a_tensor(got) -> bool:
    """A list, a NumPy array or a number where a tensor is expected; a tuple
    or None is left to the comparison, which names it."""
    return not (got is None or isinstance(got, tuple) or is_tensor(got))


def is_array(value) -> bool:
    """Whether `value` is a tensor or a NumPy array."""
    return is_tensor(value) or isinstance(value, np.ndarray)


class _Label(str):
    """An input described in words, shown in messages without quotes:
    `_Label("x of shape (2, 5, 16)")` for an input too big to print."""


def describe(value, max_lines: int = 4) -> str:
    """A short, readable rendering of an input or output for a message.

    Small arrays are printed in full (at most `max_lines` lines), larger ones
    by shape and dtype; tensors and modules by shape or class name, never by
    their full repr.
    """
    if isinstance(value, _Label):
        return str(value)
    if is_tensor(value):
        text = "tensor of shape {shape}, {dtype}"
        return message(text, shape=shape_of(value), dtype=value.dtype)
    if isinstance(value, np.ndarray):
        head = message("array of shape {shape}", shape=shape_of(value))
        if value.dtype != np.float64:
            head += f", {value.dtype}"
        if value.size == 0:
            return head
        with np.printoptions(
            precision=4, suppress=True, threshold=64, linewidth=WIDTH
        ):
            text = np.array2string(value, separator=", ")
        small = value.ndim <= 2 and value.size <= 40
        if small and len(text.splitlines()) <= min(max_lines, 4):
            return message("{head}:\n{values}", head=head, values=text)
        return head
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.nn.Module):
        return message("a {kind} module", kind=type(value).__name__)
    if isinstance(value, (list, tuple)):
        text = repr(value)
        if value and all(isinstance(v, (float, np.floating)) for v in value):
            # floats with six significant digits, not repr's seventeen
            text = ", ".join(_number(v) for v in value)
            text = "[" + text + "]" if isinstance(value, list) else f"({text})"
        if len(text) > WIDTH - 10:
            text = message(
                "{kind} of {n} items: {start}...",
                kind=type(value).__name__,
                n=len(value),
                start=text[: WIDTH - 30],
            )
        return text
    if isinstance(value, dict):
        text = repr(value)
        if len(text) > WIDTH - 10:
            text = message("dict of {n} items", n=len(value))
        return text
    if isinstance(value, (float, np.floating)):
        return _number(value)
    return _shortened(repr(value), WIDTH - 10)


def _shortened(text: str, width: int) -> str:
    """`text` cut to at most `width` characters, "..." marking the cut."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _describe_inputs(inputs: Sequence, max_lines: int = 6) -> str:
    """`on input ...` for a message: every input, at most `max_lines` lines."""
    inputs = list(inputs)
    if not inputs:
        return message("called with no input")
    # the first input in full when it is small, the others by shape
    described = [describe(inputs[0], max_lines=max_lines - len(inputs))]
    described += [describe(value, max_lines=1) for value in inputs[1:]]
    if sum(text.count("\n") + 1 for text in described) > max_lines:
        described = [describe(value, max_lines=0) for value in inputs]
    one_line = message("on input {inputs}", inputs=", ".join(described))
    if "\n" not in one_line and display_width(one_line) <= WIDTH:
        return one_line
    joined = message("\n  and ").join(described)
    return message("on input {inputs}", inputs=joined)


def _number(value, scale: float = 1.0) -> str:
    """A number for a message: six significant digits at most, and 0.0 for
    what is round-off next to `scale` (the size of the values compared), so
    that a message never shows 3.95517e-16 where the answer is 0."""
    value = float(value)
    if np.isnan(value) or np.isinf(value):
        return str(value)
    if abs(value) < 1e-12 * max(1.0, abs(float(scale))):
        return "0.0"
    if value == int(value) and abs(value) < 1e6:
        return f"{value:.1f}"
    return f"{value:.6g}"


# ---------------------------------------------------------------- messages


def fail(
    name: str,
    problem: str,
    inputs: Sequence | None = None,
    hint: str | None = None,
    details: Sequence[str] = (),
    cause: BaseException | None = None,
    **fields,
) -> None:
    """Raise ExerciseError with the standard layout.

    `problem` is the first line (what is wrong, written after the learner's
    function name), then the hint, then `on input ...`, then `details`; the
    whole message is cut to `MAX_LINES` lines. `problem` and `hint` go
    through `message`, `problem` filled in with `fields`.
    """
    problem = message(problem, **fields)
    first = message(
        "{name} {problem}", name=_display_name(name), problem=problem
    )
    lines = wrap(first, width=WIDTH)
    if hint:
        hint = message("Hint: {hint}", hint=message(hint))
        lines += wrap(hint, width=WIDTH)
    if inputs is not None:
        budget = max(1, MAX_LINES - len(lines) - len(details))
        lines += _describe_inputs(inputs, max_lines=budget).splitlines()
    lines += list(details)
    if len(lines) > MAX_LINES:
        lines = lines[: MAX_LINES - 1] + ["..."]
    error = ExerciseError("\n".join(lines))
    if cause is not None:
        raise error from cause
    raise error


def _learner_traceback(error: BaseException) -> list[str]:
    """The learner's error with the frames of this package left out."""
    tb = error.__traceback__
    while tb is not None and _in_package(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    # a shell runs only where IPython is imported already
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and hasattr(shell, "InteractiveTB"):
        try:
            return shell.InteractiveTB.structured_traceback(
                type(error), error, tb, tb_offset=0
            )
        except Exception:  # pragma: no cover - fall back to plain text
            pass
    text = "".join(traceback.format_exception(type(error), error, tb))
    return text.rstrip("\n").splitlines()


def _in_package(filename: str) -> bool:
    return os.path.dirname(os.path.abspath(filename)) == _PACKAGE_DIR


def _learner_line(error: BaseException, fn: Callable) -> str | None:
    """`line N: code` of the learner's code where `error` was raised, if known."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename == code.co_filename
        and not _in_package(frame.filename)
    ]
    if not frames:
        return None
    frame = frames[-1]
    where = (
        message("in {name}", name=frame.name)
        if frame.name != "<lambda>"
        else message("in your lambda")
    )
    line = _shortened((frame.line or "").strip(), WIDTH - 20)
    text = "{where}, line {n}: {line}" if line else "{where}, line {n}"
    return message(text, where=where, n=frame.lineno, line=line)


def _brief_input(value) -> str:
    """An input by its shape: what a learner needs to understand an error."""
    if is_array(value):
        kind = message("tensor") if is_tensor(value) else message("array")
        return message(
            "{kind} {shape} {dtype}",
            kind=kind,
            shape=shape_of(value),
            dtype=value.dtype,
        )
    return describe(value, max_lines=0)


# ---------------------------------------------------------------- calling


def call(fn: Callable, name: str, *args, hints=()):
    """Call the learner's `fn`; turn its exceptions into messages about the input.

    The stub's NotImplementedError becomes "Not done yet" (see `verdict`);
    any other error becomes an ExerciseError that names the learner's
    function, their error, the line of their code and the shapes of the
    inputs, and chains their error (shown in Jupyter without our frames);
    `hints` gives the hint of the first (text of the error, hint) that fits.
    """
    learner_name = getattr(fn, "__name__", "")  # "<lambda>", none for a partial
    _learner_names[name] = learner_name if learner_name.isidentifier() else name
    try:
        return fn(*args)
    except NotImplementedError:
        raise _NotDone(_display_name(name)) from None
    except Exception as error:  # the learner's bug, reported with its input
        lines = str(error).strip().splitlines()
        first = _shortened(lines[0] if lines else "", 2 * WIDTH)
        shown = [_brief_input(value) for value in args]
        inputs_line = (
            message("on input {inputs}", inputs=", ".join(shown))
            if shown
            else message("called with no input")
        )
        problem = "raised {error}: {first}"
        where = _learner_line(error, fn)  # line N: code, if it is theirs
        details = [inputs_line, where] if where else [inputs_line]
        fields = {"error": type(error).__name__, "first": first}
        hint = next((h for text, h in hints if text in str(error)), None)
        fail(name, problem, None, hint, details, error, **fields)


# ---------------------------------------------------------------- tolerances


def _dtype_of(value) -> str:
    """The dtype of the learner's answer as a NumPy name (`float32`, ...)."""
    if is_tensor(value):
        return str(value.dtype).removeprefix("torch.")
    if isinstance(value, (np.ndarray, np.generic)):
        return str(value.dtype)
    if isinstance(value, (list, tuple)) and value:
        return _dtype_of(value[0])
    return "float64"


def _tolerance(
    got, atol: float | None = None, rtol: float | None = None
) -> tuple[float, float]:
    """(rtol, atol) fit for the dtype the learner returned.

    float64 (and Python floats): the checker's `atol` (1e-6 when not given),
    rtol 1e-5. float32: at least 1e-4 for both, the round-off of a float32
    computation such as sin(pos / 10000**(2i/d)) for positions up to a few
    hundred. float16 / bfloat16: 1e-2.
    """
    dtype = _dtype_of(got)
    rtol = 1e-5 if rtol is None else rtol  # float64: round-off only
    atol = 1e-6 if atol is None else atol
    if dtype in ("float32", "complex64"):
        return max(rtol, 1e-4), max(atol, 1e-4)
    if dtype in ("float16", "bfloat16"):
        return max(rtol, 1e-2), max(atol, 1e-2)
    return rtol, atol


# ---------------------------------------------------------------- comparing


def to_array(value) -> np.ndarray:
    """The learner's answer as a float64 NumPy array (tensors detached)."""
    if is_tensor(value):
        value = value.detach().cpu()
        if value.dtype.is_floating_point or value.dtype.is_complex:
            value = value.double()
        return value.numpy().astype(float)
    return np.asarray(value, dtype=float)


def expect_returned(name: str, inputs: Sequence, got) -> None:
    """Raise ExerciseError if the learner's function returned None."""
    if got is None:
        fail(name, "returned None: did you forget `return`?", inputs)


def _wrong_type(name: str, inputs: Sequence, got, expected) -> None:
    """Name the answers of the wrong kind: None, a generator, a tuple, text."""
    expect_returned(name, inputs, got)
    if isinstance(got, Iterator):  # a generator, map(), iter(...)
        problem = (
            "returned a {type}, not the values: a generator expression (x for "
            "...) or map() is evaluated lazily; build the result with a list "
            "or an array."
        )
        fail(name, problem, inputs, type=type(got).__name__)
    if isinstance(got, tuple) and got and is_array(got[0]):
        shapes = ", ".join(shape_of(x) or type(x).__name__ for x in got)
        hint = None
        if tuple(got[0].shape) == expected.shape:
            hint = (
                "return only the output (did you return `(output, weights)`?)"
            )
        problem = (
            "returned a tuple of {n} items ({shapes}); expected one array of "
            "shape {shape}."
        )
        fields = {"n": len(got), "shapes": shapes, "shape": shape_of(expected)}
        fail(name, problem, inputs, hint, **fields)
    if isinstance(got, (str, bytes, dict, set)) or callable(got):
        problem = "should return numbers, but returned {got}"
        fail(name, problem, inputs, got=describe(got, 0))


def matching_mistake(
    got: np.ndarray, known_mistakes, atol: float, rtol: float = 1e-5
) -> str | None:
    """The message of the first known mistake that `got` equals, if any."""
    for wrong, hint in known_mistakes:
        wrong = to_array(wrong)
        if wrong.shape == got.shape and np.allclose(
            got, wrong, rtol=rtol, atol=atol, equal_nan=True
        ):
            return hint
    return None


def _first_difference(
    got: np.ndarray, expected: np.ndarray, rtol: float, atol: float
):
    """The index, count and largest error of the entries that differ."""
    close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    # np.argwhere of a 0-d array has one row of length 0: count explicitly
    wrong = np.argwhere(~close)
    count = int(np.count_nonzero(~close))
    with np.errstate(invalid="ignore"):
        error = np.where(close | np.isnan(got), 0.0, np.abs(got - expected))
    largest = float(np.nanmax(error)) if count else 0.0
    nans = int(np.count_nonzero(~close & np.isnan(got)))
    index = tuple(wrong[0]) if count else None
    return index, count, largest, nans


def expect_close(
    name: str,
    inputs: Sequence,
    got,
    expected: np.ndarray,
    known_mistakes: Sequence[tuple[np.ndarray, str]] = (),
    atol: float | None = None,
    *,
    rtol: float | None = None,
    what: str = "",
) -> None:
    """Raise ExerciseError unless `got` is close to `expected`.

    The tolerance fits the dtype the learner returned (`_tolerance`; `atol` is
    the float64 one). A known mistake that `got` matches gives its hint. The
    message names the shape or the first differing index with both values.
    `what` names the answer in the first line ("the weights", ...).
    """
    expected = to_array(expected)
    _wrong_type(name, inputs, got, expected)
    rtol, atol = _tolerance(got, atol, rtol)
    try:
        got_array = to_array(got)
    except (TypeError, ValueError) as error:
        detail = message("NumPy could not read it as an array: {e}", e=error)
        problem = "should return numbers, but returned {got}"
        fail(name, problem, inputs, None, [detail], got=describe(got, 0))
    if got_array.shape == expected.shape and np.allclose(
        got_array, expected, rtol=rtol, atol=atol, equal_nan=True
    ):
        return
    hint = matching_mistake(got_array, known_mistakes, atol, rtol)
    subject = _subject(what)
    if got_array.shape != expected.shape:
        _wrong_shape(name, inputs, got_array, expected, hint, subject)
    _wrong_values(name, inputs, got_array, expected, hint, subject, rtol, atol)


def _subject(what: str) -> str:
    """The start of a first line: "returned " or "returned the weights "."""
    if what:
        return message("returned {what} ", what=what)
    return message("returned ")


def _wrong_shape(name, inputs, got, expected, hint, subject) -> None:
    """Fail naming both shapes (and a number returned as an array of one)."""
    details = []
    if expected.ndim == 0 and got.size == 1:
        hint = hint or (
            "return one number, not an array holding it: float(...) or .item()."
        )
    elif got.size == expected.size:
        details.append(
            message("(the same number of values, arranged differently)")
        )
    problem = "{subject}shape {got}, expected shape {expected}."
    shapes = {"got": shape_of(got), "expected": shape_of(expected)}
    fail(name, problem, inputs, hint, details, subject=subject, **shapes)


def _wrong_values(name, inputs, got, expected, hint, subject, rtol, atol):
    """Fail naming the first differing value, and how many differ."""
    index, count, largest, nans = _first_difference(got, expected, rtol, atol)
    finite = expected[np.isfinite(expected)]
    scale = float(np.abs(finite).max()) if finite.size else 1.0
    fields = {"subject": subject, "at": str([int(i) for i in index])}
    fields["expected"] = _number(expected[index], scale)
    fields["got"] = _number(got[index], scale)
    problem = (
        "{subject}a wrong value at {at}: expected {expected}, got {got}."
        if expected.ndim
        else "{subject}a wrong value: expected {expected}, got {got}."
    )
    if count > nans and nans:
        differences = message(
            "largest difference {d}, {n} NaN", d=_number(largest), n=nans
        )
    elif nans:
        differences = message("{n} NaN", n=nans)
    else:
        differences = message("largest difference {d}", d=_number(largest))
    detail = message(
        "{count} of {size} values differ ({differences}); the shape is right.",
        count=count,
        size=expected.size,
        differences=differences,
    )
    fail(name, problem, inputs, hint, [detail], **fields)


def same(a, b) -> bool:
    """`a == b` as one bool; False where the comparison itself fails."""
    try:
        return bool(a == b)
    except Exception:
        return False


def expect_equal(
    name: str,
    inputs: Sequence,
    got,
    expected,
    known_mistakes=(),
    *,
    what: str = "",
) -> None:
    """Raise ExerciseError unless `got == expected` (lists, tuples, exact answers).

    For sequences the message names the first position that differs, or the
    first missing or extra item; a generator, a tuple instead of a list and
    `None` are named as such.
    """
    if same(got, expected):
        return
    subject = _subject(what)
    expect_returned(name, inputs, got)
    kind = type(expected).__name__
    if isinstance(expected, (list, tuple)) and isinstance(got, Iterator):
        problem = (
            "returned a {type}, not a {kind}: a generator expression or map() "
            "is lazy; build the {kind} itself ({kind}(...) around it, or a "
            "loop)."
        )
        fail(name, problem, inputs, type=type(got).__name__, kind=kind)
    hint = next(
        (hint for wrong, hint in known_mistakes if same(got, wrong)),
        None,
    )
    if not all(isinstance(x, (list, tuple)) for x in (got, expected)):
        problem = "{subject}{got}; expected {expected}."
        fields = {"got": describe(got, 1), "expected": describe(expected, 1)}
        fail(name, problem, inputs, hint, subject=subject, **fields)
    if same(list(got), list(expected)):
        problem = "{subject}a {type}; expected a {kind}."
        fields = {"type": type(got).__name__, "kind": kind}
        fail(name, problem, inputs, hint, subject=subject, **fields)
    problem, details = _first_wrong_item(got, expected, subject)
    fail(name, problem, inputs, hint, details)


def _first_wrong_item(got, expected, subject) -> tuple[str, list[str]]:
    """The first line naming the first item that differs, missing or extra,
    and a detail line where the lengths differ too."""
    pairs = enumerate(zip(got, expected, strict=False))
    position = next((i for i, (a, b) in pairs if not same(a, b)), None)
    fields = {"subject": subject, "n": len(got), "expected": len(expected)}
    if position is None:
        more = len(got) > len(expected)
        problem = message(
            "{subject}{n} items, expected {expected}: the first {right} are "
            "right; the first extra one is {item!r}."
            if more
            else "{subject}{n} items, expected {expected}: the first {right} "
            "are right; the first missing one is {item!r}.",
            right=min(len(got), len(expected)),
            item=got[len(expected)] if more else expected[len(got)],
            **fields,
        )
        return problem, []
    a, b = got[position], expected[position]
    item = {"subject": subject, "position": position, "a": a, "b": b}
    problem = (
        "{subject}a wrong item at position {position}: expected {b!r}, got "
        "{a!r}."
    )
    sequences = all(isinstance(x, (list, tuple)) for x in (a, b))
    if sequences and same(list(a), list(b)):
        problem = (
            "{subject}item {position} as a {a_type} {a!r}; expected a "
            "{b_type} {b!r}."
        )
    types = {"a_type": type(a).__name__, "b_type": type(b).__name__}
    problem = message(problem, **item, **types)
    details = []
    if len(got) != len(expected):
        details.append(
            message("{n} items returned, {expected} expected.", **fields)
        )
    return problem, details


# ---------------------------------------------------------------- kinds


def _a_kind(value) -> str:
    """What kind of thing `value` is, for a message: `a tensor`, `a NumPy
    array`, `a list`, ..."""
    if is_tensor(value):
        return message("a tensor")
    if isinstance(value, np.ndarray):
        return message("a NumPy array")
    return message("a {type}", type=type(value).__name__)


def _expect_array(name: str, inputs: Sequence, got) -> None:
    """Fail if the answer is a list or tuple of numbers instead of an array.

    Chapters 2-4 ask for arrays, and the code after each exercise slices,
    broadcasts or multiplies the answer (`rotate_pair(q, m, t) @ ...`), which
    a list does not support. A tuple of arrays is left to `expect_close`,
    which names `(output, weights)`.
    """
    if not isinstance(got, (list, tuple)):
        return
    if isinstance(got, tuple) and got and np.ndim(got[0]) > 0:
        return  # (output, weights)
    hint = (
        "wrap the result in np.array(...) (or return a tensor), so that it "
        "can be sliced, broadcast and multiplied with @ like the library's."
    )
    problem = "returned a {type}, not an array."
    fail(name, problem, inputs, hint, type=type(got).__name__)


# ---------------------------------------------------------------- inputs

_IN_PLACE = (
    "changed its input in place; return a new array and leave the input as "
    "it was."
)
IN_PLACE_NEEDED = (
    "changed {what} in place; leave the inputs as they were (the caller "
    "still needs them)."
)
_IN_PLACE_HINT = (
    "x -= m, x /= s and x[...] = 0 write into the caller's array; "
    "compute a new one instead (x - m, x / s, np.where(...))."
)


def _copies(*values) -> tuple:
    """Copies of the inputs to give the learner's function, which may change
    them: tensors cloned, arrays copied, anything else deep-copied."""
    return tuple(
        value.clone()
        if is_tensor(value)
        else value.copy()
        if isinstance(value, np.ndarray)
        else copy.deepcopy(value)
        for value in values
    )


def unchanged(given, original) -> bool:
    """Whether `given` still holds `original`: the same shape and values for
    tensors and arrays, item by item for tuples, `==` for the rest."""
    if is_tensor(original):  # the same shape and values
        return is_tensor(given) and given.equal(original)
    if isinstance(original, np.ndarray):
        return np.array_equal(np.asarray(given), original)
    if isinstance(original, tuple):
        return len(given) == len(original) and all(
            unchanged(g, o) for g, o in zip(given, original, strict=True)
        )
    return same(given, original)


def expect_unchanged(
    name: str,
    inputs: Sequence | None,
    given: Sequence,
    originals: dict | Sequence,
    problem: str = _IN_PLACE,
    hint: str | None = _IN_PLACE_HINT,
) -> None:
    """Raise ExerciseError if the learner's function changed an input in place.

    `originals` holds the inputs as they were, by their names (a dict) or
    unnamed (a sequence); `given` what the learner's function was given, in
    the same order (`_copies`). The first input that changed fails with
    `problem`, formatted with `what` (its name, "its input" when unnamed) and
    `now` (its value now; other braces doubled), and `hint`. With
    `inputs=None` the message shows the changed input alone.
    """
    if isinstance(originals, dict):
        named = list(originals.items())
    else:
        named = [(message("its input"), original) for original in originals]
    for value, (what, original) in zip(given, named, strict=True):
        if not unchanged(value, original):
            fail(
                name,
                message(problem, what=what, now=value),
                [original] if inputs is None else inputs,
                hint,
            )


# ---------------------------------------------------------------- random state


@contextlib.contextmanager
def _preserve_random_state():
    """Restore the global random generators of `random`, NumPy and PyTorch on exit.

    A checker that must draw random numbers uses a local generator
    (`np.random.default_rng(seed)`, `torch.Generator().manual_seed(seed)`);
    this guard also undoes what the learner's function or a library call (a
    module's initialisation) draws.
    """
    python_state = random.getstate()
    numpy_state = np.random.get_state()  # noqa: NPY002
    torch = sys.modules.get("torch")
    torch_state = torch.random.get_rng_state() if torch is not None else None
    cuda = torch is not None and torch.cuda.is_initialized()  # so available
    cuda_states = torch.cuda.get_rng_state_all() if cuda else None
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)  # noqa: NPY002
        if torch_state is not None:
            torch.random.set_rng_state(torch_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


# ---------------------------------------------------------------- verdict


def verdict(name: str, success: str, run_cases: Callable[[], None]) -> None:
    """Run the cases and print the verdict; a wrong answer raises ExerciseError.

    The learner's random state is saved and restored around the cases.
    """
    try:
        with _preserve_random_state():
            run_cases()
    except _NotDone as not_done:
        function_name = str(not_done) or _display_name(name)
        not_done = (
            "Not done yet: {name} still raises NotImplementedError.\n"
            "Write your answer in its cell, run that cell, then run this one "
            "again."
        )
        print(message(not_done, name=function_name))
        return
    finally:
        _learner_names.pop(name, None)
    print(message("Correct: {name} {success}", name=name, success=success))


# ---------------------------------------------------------------- tables


def message(text: str, **fields) -> str:
    """A message of a checker, its `{fields}` filled in when it has some.

    Every problem, hint and verdict is built here (`fail` calls it), from its
    format string: the one place where a translation is looked up (`_i18n`:
    in Chinese, the catalog's template is filled in with the same fields).
    """
    text = translate(text)
    return text.format(**fields) if fields else text


@dataclass(frozen=True)
class Mistake:
    """A known mistake: what it returns and the hint it earns.

    `variant` takes the learner's arguments and returns the wrong answer
    (None where this case cannot tell it apart). A mistake seen in the
    answer itself has `when(got, *arguments)` instead, and `example`, one
    such answer for the tests. `hint` is a format string, filled from
    `fields(*arguments)`.
    """

    variant: Callable | None
    hint: str
    fields: Callable[..., dict] | None = None
    when: Callable[..., bool] | None = None
    example: Callable | None = None

    def on(self, args: Sequence, got=None):
        """(wrong answer, hint) on `args`, or None where it does not apply."""
        seen = self.when is not None and self.when(got, *args)
        wrong = got if seen else None if self.when else self.variant(*args)
        if wrong is None:
            return None
        fields = self.fields(*args) if self.fields else {}
        return wrong, message(self.hint, **fields)


@dataclass(frozen=True)
class Refusal:
    """An answer refused before it is compared: `test(got)` true fails with
    `problem` and `hint` (or `hint(got, *case)`), formatted with `type`, the
    answer's type, `kind` (`a tensor`, `a NumPy array`, ...) and `shape`,
    the expected answer's shape, and `fields(got)`; only on the cases where
    `on(*case)` holds, if given."""

    test: Callable
    problem: str
    hint: str | Callable | None = None
    on: Callable[..., bool] | None = None
    fields: Callable[..., dict] | None = None


def shape_of(value) -> str:
    """The shape of a tensor or array as a tuple, `(2, 5, 16)`, for messages."""
    shape = getattr(value, "shape", None)
    return "" if shape is None else str(tuple(int(n) for n in shape))


def label(text: str, **fields) -> _Label:
    """An input described in words (a format string of a table), shown in
    messages without quotes: `label("x of shape {shape}", shape=...)`."""
    return _Label(message(text, **fields))


@dataclass(frozen=True)
class Exercise:
    """A checker as data: the cases, the reference and the known mistakes.

    Each case is a tuple of the learner's arguments; the first `shared` (a
    model) are passed as they are, the others as copies, which must come
    back unchanged. A case's answer is refused, read (`convert`) and then
    compared with `reference(*case)`: by `compare`, "close" (arrays,
    numbers), "equal" (exact answers) or a function of its own.
    """

    name: str  # the function's name in messages: "softmax"
    success: str  # "Correct: softmax {success}"
    cases: Sequence[tuple] | Callable[[], Sequence[tuple]]  # or built late
    reference: Callable  # reference(*case): the right answer
    mistakes: Sequence[Mistake] = ()
    refusals: Sequence[Refusal] = ()
    compare: str | Callable = "close"  # or (name, shown, got, expected, *case)
    array: bool = False  # refuse a list where an array is asked for
    quiet: bool = False  # NumPy's warnings silenced around the learner's code
    atol: float | None = None  # the float64 tolerance of "close"
    shown: Callable | None = None  # shown(*case): the inputs a message shows
    shared: int = 0  # the first arguments, given as they are (not copied)
    # a change in place: (problem, hint), formatted with `what` (its name in
    # `names`) and `now`; or a check of its own (name, shown, given, originals)
    in_place: tuple[str, str | None] | Callable | None = None
    names: Sequence[str] | None = None
    convert: Callable | None = None  # (name, shown, got) -> the answer read
    what: str = ""  # "equal" names the answer: "returned {what} ..."
    agree: Callable | None = None  # a hint only for a mistake agreeing on all
    explain: Callable | None = None  # explain(*case): a last line on failure
    inspect: Callable | None = None  # (name, fn, shown), after the first call
    after: Callable | None = None  # (name, fn, shown, got, *case), once passed
    errors: Sequence[tuple[str, str]] = ()  # (text of their error, hint)
    doc: str = ""  # the help of check_<name>

    def _unchanged(self, given: Sequence, args: Sequence, shown) -> None:
        originals = args[self.shared :]
        if self.names is not None:
            originals = dict(zip(self.names, originals, strict=True))
        if callable(self.in_place):  # a check of its own
            self.in_place(self.name, shown, given, originals)
        elif self.in_place is None:
            expect_unchanged(self.name, None, given, originals)
        else:
            expect_unchanged(self.name, shown, given, originals, *self.in_place)

    def _answer(self, fn: Callable, args: tuple, first: bool = False):
        """Call `fn` on one case: (its answer, read; the inputs shown; the
        expected answer). Inputs changed and refused answers fail here."""
        given = _copies(*args[self.shared :])
        quiet = np.errstate(all="ignore") if self.quiet else None
        with quiet or contextlib.nullcontext():
            inputs = [*args[: self.shared], *given]
            got = call(fn, self.name, *inputs, hints=self.errors)
        shown = list(self.shown(*args) if self.shown else args)
        self._unchanged(given, args, shown)
        with np.errstate(all="ignore"):
            expected = self.reference(*args)
        for refusal in self.refusals:
            if (refusal.on is None or refusal.on(*args)) and refusal.test(got):
                hint = refusal.hint
                hint = hint(got, *args) if callable(hint) else hint
                fields = {"type": type(got).__name__, "kind": _a_kind(got)}
                fields["shape"] = shape_of(expected)
                fields.update(refusal.fields(got) if refusal.fields else {})
                fail(self.name, refusal.problem, shown, hint, **fields)
        if self.array:
            _expect_array(self.name, shown, got)
        if first and self.inspect is not None:
            self.inspect(self.name, fn, shown)
        if self.convert is not None:
            got = self.convert(self.name, shown, got)
        return got, shown, expected

    def _mistakes(self, args: tuple, got) -> list:
        with np.errstate(all="ignore"):
            return [mistake.on(args, got) for mistake in self.mistakes]

    def _judge(self, args, got, shown, expected, mistakes) -> None:
        """Compare one answer; `explain(*case)` adds a last line to a failure."""
        name = self.name
        mistakes = [mistake for mistake in mistakes if mistake is not None]
        try:
            if callable(self.compare):  # a checker of properties, not values
                self.compare(name, shown, got, expected, *args)
            elif self.compare == "equal":
                what = message(self.what) if self.what else ""
                expect_equal(name, shown, got, expected, mistakes, what=what)
            else:
                expect_close(name, shown, got, expected, mistakes, self.atol)
        except ExerciseError as error:
            if self.explain is None:
                raise
            lines = str(error).splitlines()[: MAX_LINES - 1]
            lines.append(self.explain(*args))
            raise ExerciseError("\n".join(lines)) from None

    def check_case(self, fn: Callable, args: tuple, first=False) -> None:
        """Call `fn` on one case and raise ExerciseError if it is wrong."""
        got, shown, expected = self._answer(fn, args, first)
        self._judge(args, got, shown, expected, self._mistakes(args, got))
        if self.after is not None:  # a check of its own, calling fn again
            self.after(self.name, fn, shown, got, *args)

    def _check_together(self, fn: Callable, cases) -> None:
        """Every case called first; then only the mistakes that `agree` with
        the answers of all the cases give their hint, never one that agrees
        with an answer by chance on one input."""
        answers = [
            self._answer(fn, args, i == 0) for i, args in enumerate(cases)
        ]
        wrongs = [
            self._mistakes(args, got)
            for args, (got, _, _) in zip(cases, answers, strict=True)
        ]
        known = [
            all(
                mistakes[i] is not None and self.agree(got, mistakes[i][0])
                for (got, _, _), mistakes in zip(answers, wrongs, strict=True)
            )
            for i in range(len(self.mistakes))
        ]
        for args, answer, mistakes in zip(cases, answers, wrongs, strict=True):
            mistakes = [m for m, k in zip(mistakes, known, strict=True) if k]
            self._judge(args, *answer, mistakes)

    def __call__(self, fn: Callable) -> None:
        """Run every case and print the verdict."""

        def run_cases() -> None:
            cases = self.cases() if callable(self.cases) else self.cases
            if self.agree is not None:
                self._check_together(fn, list(cases))
                return
            for i, args in enumerate(cases):
                self.check_case(fn, args, first=i == 0)

        verdict(self.name, message(self.success), run_cases)

    def checker(self) -> Callable[[Callable], None]:
        """The public `check_<name>(fn)` of this exercise, `doc` its help."""

        def check(fn: Callable) -> None:
            self(fn)

        check.__name__ = check.__qualname__ = f"check_{self.name}"
        check.__doc__ = self.doc
        check.__module__ = sys._getframe(1).f_globals["__name__"]
        return check
