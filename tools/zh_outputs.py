"""The Chinese edition's printed messages: what a check cell of an English
notebook printed, made Chinese from the checkers' gettext catalog
(`transformer_course/exercises/_i18n.py`), as the checker prints it in
Chinese. `tools/zh.py sync` writes the Chinese notebooks' check cells'
outputs with `translate_output`; only the tools use this module, so it is
no part of the package.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import re
import string
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load_i18n():
    """transformer_course/exercises/_i18n.py, the checkers' catalog, loaded
    on its own (it imports nothing of the package: no torch to start)."""
    path = ROOT / "transformer_course" / "exercises" / "_i18n.py"
    spec = importlib.util.spec_from_file_location("_zh_i18n", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


i18n = _load_i18n()
translate, catalog, wrap, WIDTH = (
    i18n.translate,
    i18n.catalog,
    i18n.wrap,
    i18n.WIDTH,
)


def fields_of(template: str) -> list[tuple[str, str, str]]:
    """The replacement fields of a format string: (name, conversion, spec)."""
    return sorted(
        (name, conversion or "", spec or "")
        for _, name, spec, conversion in string.Formatter().parse(template)
        if name is not None
    )


# what a field can hold where its name says (a shape is a tuple of ints):
# the other fields hold any text
_FIELD_PATTERNS = {
    "shape": r"\((?:\d+(?:, \d+)*,?)?\)",
    "n": r"-?\d+",
    "count": r"\d+",
    "size": r"\d+",
    "position": r"\d+",
    "dtype": r"[\w.]+",
    "type": r"[\w.]+",
    "a_type": r"[\w.]+",
    "b_type": r"[\w.]+",
    "error": r"[\w.]+",
    "name": r"[\w.<>]+",
    "kind": r"(?:an? )?[\w.]+(?: [\w.]+)?",
    **{
        name: r"-?\d+"
        for name in (
            "d_model n_layers T_q T_k i k wrong_k length window n_new "
            "c r first last index row"
        ).split()
    },
}
# fields that always hold a message: a reading is right only where they
# are recognised as one
_MESSAGE_FIELDS = {
    "subject",
    "problem",
    "hint",
    "differences",
    "where",
    "success",
    "wrong",
    "description",
    "task",
    "use",
}


@functools.cache
def _patterns(language: str) -> list[tuple]:
    """Every English template of the catalog: (its parts, its translation);
    the most specific (the most literal text) first."""
    patterns = []
    for english, chinese in _entries(language).items():
        if any(not name.isidentifier() for name, *_ in fields_of(english)):
            continue  # "{}" fields: labels that read the same in Chinese
        parts = [
            (literal, name)
            for literal, name, _, _ in string.Formatter().parse(english)
        ]
        literal_size = sum(len(literal) for literal, _ in parts)
        if literal_size < 2:  # "{name} {problem}": no text to recognise
            continue
        patterns.append((literal_size, parts, _plain(chinese)))
    patterns.sort(key=lambda item: -item[0])
    return [item[1:] for item in patterns]


def _readings(parts: list, text: str):
    """Every way `text` fills the fields of a template's `parts`, the
    shortest values first, each value of the kind its name asks for."""

    def walk(i: int, at: int, values: dict):
        if i == len(parts):
            if at == len(text):
                yield values
            return
        literal, name = parts[i]
        if not text.startswith(literal, at):
            return
        at += len(literal)
        if name is None:
            yield from walk(i + 1, at, values)
            return
        following = parts[i + 1][0] if i + 1 < len(parts) else None
        if following is None:
            ends = [len(text)]
        elif following == "":
            ends = range(at, len(text) + 1)
        else:
            ends = [m.start() for m in re.finditer(re.escape(following), text)]
            ends = [end for end in ends if end >= at]
        field = re.compile(_FIELD_PATTERNS.get(name, ".*"), re.DOTALL)
        for end in ends:
            value = text[at:end]
            if values.get(name, value) != value or not field.fullmatch(value):
                continue
            yield from walk(i + 1, end, {**values, name: value})

    yield from walk(0, 0, {})


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _inputs(text: str, language_: str) -> str:
    """`on input`'s inputs, described one by one and joined by ", ": each
    the longest run of parts that reads as a message, or a plain value."""
    parts, out, i = _top_level_parts(text), [], 0
    while i < len(parts):
        for j in range(len(parts), i, -1):
            done = translate_printed(", ".join(parts[i:j]), language_)
            if done is not None:
                out.append(done)
                i = j
                break
        else:
            out.append(parts[i])
            i += 1
    return ", ".join(out)


def _plain(template: str) -> str:
    """`template` with its fields' conversions and format specs left out:
    the values recognised in a printed message are already converted."""
    out = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if name is not None:
            out.append("{" + name + "}")
    return "".join(out)


@functools.cache
def _entries(language: str) -> dict[str, str]:
    translations = catalog(language)
    return {
        english: chinese
        for english, chinese in getattr(translations, "_catalog", {}).items()
        if english and isinstance(english, str)
    }


def _top_level_parts(text: str) -> list[str]:
    """`text` split at the ", " that are outside brackets and quotes."""
    parts, depth, start, quote = [], 0, 0, ""
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0 and text[i + 1 : i + 2] == " ":
            parts.append(text[start:i])
            start = i + 2
    return [*parts, text[start:]]


@functools.lru_cache(maxsize=4096)
def translate_printed(text: str, language_: str = "zh") -> str | None:
    """A message as the checkers print it in English, in `language_`: the
    template it was made from recognised, and each field translated the
    same way where it is a message itself; None if no template fits. Of
    the readings of a template, the first whose message fields are messages
    and whose values keep their brackets balanced wins."""
    entries = _entries(language_)
    if text in entries:
        return entries[text]
    for parts, chinese in _patterns(language_):
        fallback = None
        for values in itertools.islice(_readings(parts, text), 200):
            fields, balanced = {}, True
            for name, value in values.items():
                if name == "inputs":
                    fields[name] = _inputs(value, language_)
                    continue
                inner = translate_printed(value, language_) if value else None
                if inner is None and name in _MESSAGE_FIELDS:
                    break
                fields[name] = value if inner is None else inner
                balanced = balanced and _balanced(value)
            else:
                if balanced:
                    return chinese.format(**fields)
                fallback = fallback or chinese.format(**fields)
        if fallback is not None:
            return fallback
    return None


_AFTER_FIRST_LINE = ("Hint: ", "on input ", "called with no input")
_VERDICTS = ("Correct: ", "Not done yet: ")


def _printed_line(line: str, language_: str) -> str | None:
    """One line of a message after its first line and hint: a whole
    template, or the head of an input printed over several lines ("on input
    array of shape (3, 3):", its values on the lines below)."""
    if line.startswith("  and "):  # the next input ("\n  and " joins them)
        rest = line[len("  and ") :]
        rest = _printed_line(rest, language_) or rest
        return translate("\n  and ", language_)[1:] + rest
    if line.endswith(":"):
        head = translate_printed(line[:-1], language_)
        if head is not None:
            colon = translate("{head}:\n{values}", language_).split("\n")[0]
            return colon.format(head=head)
    return translate_printed(line, language_)


def _unwrapped(lines: list[str]) -> list[str]:
    """The text that textwrap broke into `lines`: joined by spaces, or, as
    textwrap also breaks after a hyphen ("self-" | "attention"), without
    one after a line that ends with a hyphen."""
    spaced = " ".join(lines)
    hyphens = "".join(
        line + ("" if line.endswith("-") else " ") for line in lines[:-1]
    )
    return (
        [spaced]
        if hyphens + lines[-1] == spaced
        else [spaced, hyphens + lines[-1]]
    )


def _failure(lines: list[str], i: int, language_: str):
    """The message of a wrong answer that starts at line `i` (the layout of
    `_core.fail`: its first line, the hint, the inputs, the details), in
    `language_`, and the index of the line after it; None if it is none."""
    for j in range(i, min(i + 4, len(lines))):
        # the first line of a message is followed by its hint or its inputs
        after = lines[j + 1] if j + 1 < len(lines) else ""
        if not after.startswith(_AFTER_FIRST_LINE):
            continue
        for joined in _unwrapped(lines[i : j + 1]):
            name, _, problem = joined.partition(" ")
            problem = translate_printed(problem, language_) if problem else None
            if problem is not None:
                break
        if problem is not None:
            break
    else:
        return None
    first = translate("{name} {problem}", language_)
    out = wrap(first.format(name=name, problem=problem), WIDTH)
    k = j + 1
    if k < len(lines) and lines[k].startswith("Hint: "):
        end = k + 1
        while (
            end < len(lines)
            and lines[end]
            and not lines[end].startswith(_AFTER_FIRST_LINE[1:])
        ):
            end += 1
        hint = next(
            (
                done
                for joined in _unwrapped(lines[k:end])
                if (done := translate_printed(joined, language_)) is not None
            ),
            None,
        )
        if hint is None:
            return None
        out += wrap(hint, WIDTH)
        k = end
    while k < len(lines) and lines[k] and not lines[k].startswith(_VERDICTS):
        done = _printed_line(lines[k], language_)
        out.append(lines[k] if done is None else done)
        k += 1
    return out, k


def translate_output(text: str, language_: str = "zh") -> str:
    """What a check cell printed in English, in `language_`: each verdict
    ("Correct: ...", "Not done yet: ...") and each message of a wrong answer
    made again from the catalog's templates; every other line (what the
    cell printed itself) as it was. `tools/zh.py sync` writes the Chinese
    notebooks' check cells' outputs with it."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Not done yet: ") and i + 1 < len(lines):
            done = translate_printed(f"{line}\n{lines[i + 1]}", language_)
            if done is not None:
                out += done.split("\n")
                i += 2
                continue
        if line.startswith("Correct: "):
            done = translate_printed(line, language_)
            if done is not None:
                out.append(done)
                i += 1
                continue
        failure = _failure(lines, i, language_) if line else None
        if failure is not None:
            block, i = failure
            out += block
            continue
        out.append(line)
        i += 1
    return "\n".join(out)
