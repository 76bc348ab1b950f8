"""The language of the checkers' messages: English, or Chinese (中文) from a
gettext catalog.

Every message of a checker is an English format string (a template) that
`_core.message` fills in; in Chinese, `translate` first looks the template up
in the catalog `locale/zh_CN/LC_MESSAGES/exercises.mo` (compiled from the
`.po` beside it, which `python tools/zh.py messages` extracts from the
checkers and compiles), and the Chinese template is filled in with the same
fields. A template missing from the catalog stays English.

The language is the reader's, which chapter 0's module
`transformer_course.language` keeps for the whole book (the diagrams' labels
too): English unless chosen by `set_language("zh")` or by the environment
variable `TRANSFORMER_COURSE_LANG=zh`, which the set-up cell of every Chinese
notebook sets (`tools/zh.py sync` writes it there). This module imports that
one only when a message is translated without a language named, so that
tools/zh.py can load it alone, without the package (tools/zh_outputs.py
makes the Chinese notebooks' printed messages from this catalog).
"""

from __future__ import annotations

import functools
import gettext
import os
import re
import textwrap
import unicodedata

DOMAIN = "exercises"
LOCALE_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "locale"
)
# a language the templates are translated to -> its gettext locale
# (English, the templates' own, has none: `translate` returns them)
LOCALES = {"zh": "zh_CN"}


@functools.cache
def catalog(language: str) -> gettext.GNUTranslations:
    """The compiled catalog of `language` ("zh")."""
    locale = LOCALES[language]
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[locale])


def translate(text: str, language_: str | None = None) -> str:
    """`text`, a checker's template, in the language of the checkers (or
    `language_`): the catalog's translation, or `text` itself when the
    catalog has none (English, or text that is no template)."""
    if language_ is None:
        from transformer_course.language import language

        language_ = language()
    if language_ == "en" or not text:
        return text
    return catalog(language_).gettext(text)


# ------------------------------------------------------------ display width


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def display_width(text: str) -> int:
    """Columns `text` takes in a monospaced font: a Chinese character two."""
    return sum(2 if _wide(char) else 1 for char in text)


# Chinese closing punctuation never starts a line, opening never ends one
_NO_START = set("，。；：！？、）》」』】”’")
_NO_END = set("（《「『【“‘")


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` columns, broken at spaces and between
    Chinese characters (which take two columns each); a word longer than a
    line is left whole, as textwrap does with long words. Text without
    Chinese is wrapped by textwrap, as it always was."""
    if not any(_wide(char) for char in text):
        return textwrap.wrap(text, width=width)
    units = re.findall(
        r"\s+|[^\s\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]+|.", text
    )
    lines: list[str] = []
    line = ""
    for unit in units:
        if unit.isspace():
            if line:
                line += " "
            continue
        candidate = line + unit
        if display_width(candidate.rstrip()) <= width or not line.strip():
            line = candidate
            continue
        # move trailing opening punctuation, or keep closing punctuation
        head, carry = line.rstrip(), ""
        if unit[0] in _NO_START and head and not line.endswith(" "):
            carry, head = head[-1], head[:-1]
        while head and head[-1] in _NO_END:
            carry, head = head[-1] + carry, head[:-1]
        if not head.strip():  # nothing to break: overflow rather than loop
            line = candidate
            continue
        lines.append(head.rstrip())
        line = carry + unit
    if line.strip():
        lines.append(line.rstrip())
    return lines


WIDTH = 80
"""The width of a message line, in columns."""
