"""The checkers answer in Chinese (中文) when asked: every message template has
a Chinese translation in the gettext catalog (transformer_course/locale/),
with the same replacement fields; the compiled .mo is the .po; the catalog
holds exactly the templates of the code (`python tools/zh.py messages`); and
real wrong answers get Chinese messages, the language chosen by
`set_language` or $TRANSFORMER_COURSE_LANG."""

import gettext
import re
import sys

import numpy as np
import polib
import pytest
from conftest import ROOT
from exercise_helpers import _wrong_answer

from transformer_course.exercises import (
    ExerciseError,
    _i18n,
    ch00,
    ch01,
    ch02,
    ch03,
    ch04,
    ch05,
    ch06,
    ch07,
    ch08,
    ch09,
    check_causal_mask,
    check_row_normalise,
    check_softmax,
    language,
    set_language,
)
from transformer_course.exercises._core import MAX_LINES, Exercise
from transformer_course.language import ENVIRONMENT_VARIABLE

sys.path.insert(0, str(ROOT / "tools"))
import checker_messages  # noqa: E402  (tools/checker_messages.py)
import zh_outputs  # noqa: E402  (tools/zh_outputs.py)

CJK = re.compile("[\u4e00-\u9fff]")
CHAPTERS = (ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09)
EXERCISES = [
    exercise
    for module in CHAPTERS
    for exercise in vars(module).values()
    if isinstance(exercise, Exercise)
]


@pytest.fixture(autouse=True)
def english_again(monkeypatch):
    """Every test starts in the default language and leaves it so."""
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    set_language(None)
    yield
    set_language(None)


def _catalog() -> polib.POFile:
    return polib.pofile(str(checker_messages.PO))


# ------------------------------------------------------------ the catalog


def test_the_catalog_holds_every_template_of_the_code():
    in_code = set(checker_messages.extract())
    in_catalog = {entry.msgid for entry in _catalog()}
    assert len(in_code) > 400
    assert in_code == in_catalog, (
        "run: python tools/zh.py messages (new templates: "
        f"{sorted(in_code - in_catalog)[:5]}, gone: "
        f"{sorted(in_catalog - in_code)[:5]})"
    )


def test_every_template_has_a_chinese_translation_with_the_same_fields():
    untranslated, fields, english = [], [], []
    for entry in _catalog():
        if not entry.msgstr:
            untranslated.append(entry.msgid)
            continue
        if zh_outputs.fields_of(entry.msgstr) != zh_outputs.fields_of(
            entry.msgid
        ):
            fields.append(f"{entry.msgid!r} -> {entry.msgstr!r}")
        words = re.sub(r"\{[^}]*\}|`[^`]*`", "", entry.msgid)
        if re.search(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}", words) and (
            not CJK.search(entry.msgstr)
        ):
            english.append(entry.msgid)
    assert not untranslated, f"untranslated: {untranslated[:5]}"
    assert not fields, "fields differ:\n" + "\n".join(fields)
    assert not english, f"left in English: {english[:5]}"


def test_the_compiled_catalog_is_the_po():
    with open(checker_messages.MO, "rb") as file:
        compiled = gettext.GNUTranslations(file)._catalog
    compiled = {k: v for k, v in compiled.items() if k}  # "" is the header
    po = {entry.msgid: entry.msgstr for entry in _catalog()}
    assert compiled == po, "run: python tools/zh.py messages"


def test_a_template_left_out_of_the_catalog_is_found(tmp_path):
    """The extraction sees a new message, and leaves docstrings out."""
    (tmp_path / "chXX.py").write_text(
        '"""Checkers of a chapter to come."""\n'
        'HINT = "a brand new hint: {n} heads."\n'
        'SEP = ", "\n'
        "def f():\n"
        '    """Not a message."""\n'
        '    return message("tensor")\n'
    )
    found = checker_messages.extract(tmp_path)
    assert set(found) == {"a brand new hint: {n} heads.", "tensor"}


# ------------------------------------------------------------ the switch


def test_english_by_default_and_chinese_when_asked(monkeypatch, capsys):
    assert language() == "en"
    check_row_normalise(lambda m: m / m.sum(axis=1, keepdims=True))
    assert capsys.readouterr().out.startswith("Correct: row_normalise")
    set_language("zh")
    check_row_normalise(lambda m: m / m.sum(axis=1, keepdims=True))
    assert (
        capsys.readouterr().out
        == "正确：row_normalise 把每一行除以它自己的和。\n"
    )
    set_language(None)
    monkeypatch.setenv("TRANSFORMER_COURSE_LANG", "zh")
    assert language() == "zh"
    set_language("en")  # the function wins over the variable
    check_row_normalise(lambda m: m / m.sum(axis=1, keepdims=True))
    assert capsys.readouterr().out.startswith("Correct: ")


@pytest.mark.parametrize("wrong", ["fr", "chinese", ""])
def test_an_unknown_language_is_refused_by_name(monkeypatch, wrong):
    if wrong:
        with pytest.raises(ValueError, match=f"'{wrong}' is not a language"):
            set_language(wrong)
    monkeypatch.setenv("TRANSFORMER_COURSE_LANG", wrong or "xx")
    with pytest.raises(
        ValueError, match="TRANSFORMER_COURSE_LANG '(fr|chinese|xx)'"
    ):
        check_row_normalise(lambda m: m)


# ------------------------------------------------- real wrong answers, zh


def test_a_wrong_answer_gets_its_message_in_chinese():
    set_language("zh")

    def row_normalise_by_columns(matrix):
        return matrix / matrix.sum(axis=0, keepdims=True)

    with pytest.raises(ExerciseError) as failure:
        check_row_normalise(row_normalise_by_columns)
    assert str(failure.value) == (
        "row_normalise_by_columns 返回的值在 [0, 0] 处有误：应为 0.25，实为 "
        "0.333333。\n"
        "提示：这样每一列的和为 1，而不是每一行：请沿 axis=1（同一行的各列）求和，"
        "而不是\n"
        "axis=0。\n"
        "输入：形状为 (3, 3) 的数组：\n"
        "[[1., 3., 0.],\n"
        " [2., 2., 4.],\n"
        " [0., 1., 9.]]\n"
        "9 个值中有 7 个不同（最大差值 0.416667）；形状是对的。"
    )


def test_more_wrong_answers_in_chinese(capsys):
    set_language("zh")
    with pytest.raises(ExerciseError, match="提示：这是上三角"):
        check_causal_mask(lambda n: np.triu(np.ones((n, n), dtype=bool)))
    with pytest.raises(
        ExerciseError, match="返回的 dtype 是 float64；掩码是布尔型的"
    ):
        check_causal_mask(lambda n: np.tril(np.ones((n, n))))

    def naive_softmax(x, axis=-1):
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)

    with pytest.raises(
        ExerciseError, match="naive_softmax 对大的输入返回了 inf"
    ):
        check_softmax(naive_softmax)

    def stub(x, axis=-1):
        raise NotImplementedError

    check_softmax(stub)
    assert capsys.readouterr().out.startswith(
        "还没做完：stub 仍然抛出 NotImplementedError。\n"
    )


def _messages(exercise, wrong):
    """The message of `wrong` in English and in Chinese (None: accepted)."""
    found = []
    for lang in ("en", "zh"):
        set_language(lang)
        try:
            exercise(wrong)
            found.append(None)
        except ExerciseError as error:
            found.append(str(error))
    set_language(None)
    return found


@pytest.mark.parametrize(
    ("exercise", "index"),
    [
        pytest.param(exercise, i, id=f"{exercise.name}-{i}")
        for exercise in EXERCISES
        for i in range(len(exercise.mistakes))
    ],
)
def test_every_known_mistake_is_explained_in_chinese(exercise, index):
    mistake = exercise.mistakes[index]
    english, chinese = _messages(exercise, _wrong_answer(exercise, mistake))
    assert (english is None) == (chinese is None)
    if english is None:
        return
    lines = chinese.splitlines()
    assert len(lines) <= MAX_LINES
    assert CJK.search(lines[0]), chinese
    assert ("Hint: " in english) == ("提示：" in chinese), chinese
    assert "Hint: " not in chinese and "on input" not in chinese, chinese
    longest = max(re.split(r"\{[^}]*\}", mistake.hint), key=len)
    if len(longest) > 12 and longest in " ".join(english.split()):
        assert longest not in " ".join(chinese.split()), chinese
    # lines wrap at 80 columns, but for an input line already wider in
    # English (kv_cache_size's seven arguments, printed on one line)
    wide = max(
        (_i18n.display_width(x) for x in english.splitlines() if "=" in x),
        default=0,
    )
    assert all(
        _i18n.display_width(line) <= max(80, wide) or " " not in line
        for line in lines
    )
    # what a notebook printed in English, made Chinese for the Chinese
    # edition (tools/zh.py sync), is the Chinese message; or, where the
    # Chinese hint is shorter and leaves room to print more of the inputs,
    # the Chinese message but for the inputs
    translated = zh_outputs.translate_output(english)
    if translated != chinese:
        assert len(translated.splitlines()) < len(lines), translated
        inputs = ("输入：", "  以及 ")
        rest = [x for x in translated.splitlines() if not x.startswith(inputs)]
        assert set(rest) <= set(lines), translated


def test_printed_messages_are_recognised_by_their_fields():
    """Each field reads as what it holds: a shape, a count, a list."""
    printed = (
        "new token 1 (position 5) may attend to keys [2, 3]; expected [3, 4]."
    )
    assert zh_outputs.translate_printed(printed) == (
        "新词元 1（位置 5）可以关注的键是 [2, 3]；应为 [3, 4]。"
    )
    inputs = "on input array of shape (3, 3, 3), array of shape (3, 3), bool"
    assert zh_outputs.translate_printed(inputs) == (
        "输入：形状为 (3, 3, 3) 的数组, 形状为 (3, 3) 的数组, bool"
    )
    assert zh_outputs.translate_printed("tensor (2, 5, 12) torch.float32") == (
        "张量 (2, 5, 12) torch.float32"
    )
    assert zh_outputs.translate_printed("no message of the checkers") is None


def test_chinese_lines_fit_80_columns():
    text = "提示：" + "这是一个很长的中文句子，" * 12 + "最后是 code_name(x)。"
    lines = _i18n.wrap(text, 80)
    assert len(lines) > 1
    assert all(_i18n.display_width(line) <= 80 for line in lines)
    assert "".join(lines) == text
    assert not any(line.startswith(("，", "。")) for line in lines)
    english = "a hint that is long enough to be wrapped " * 4
    assert _i18n.wrap(english, 80) == __import__("textwrap").wrap(english, 80)


# --------------------------------------------- outputs of the zh notebooks


def test_printed_english_is_made_chinese_as_the_checker_prints_it(capsys):
    """What a check cell printed in English, translated through the catalog,
    is what the checker prints in Chinese."""

    def row_normalise_by_columns(matrix):
        return matrix / matrix.sum(axis=0, keepdims=True)

    def stub(matrix):
        raise NotImplementedError

    def printed():
        for answer in (
            row_normalise_by_columns,
            stub,
            lambda m: m / m.sum(1)[:, None],
        ):
            try:
                check_row_normalise(answer)
            except ExerciseError as error:
                print(error)
        print("a line the cell printed itself: 3")
        return capsys.readouterr().out

    english = printed()
    set_language("zh")
    chinese = printed()
    assert english != chinese
    assert zh_outputs.translate_output(english) == chinese


def test_the_catalog_is_package_data():
    """A wheel (what Colab installs) holds the .mo that `_i18n` reads."""
    import fnmatch
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]
    package = ROOT / "transformer_course"
    for path in (checker_messages.MO, checker_messages.PO):
        inside = str(path.relative_to(package))
        assert any(
            fnmatch.fnmatch(inside, p) for p in patterns["transformer_course"]
        )
    assert _i18n.LOCALE_DIR == str(package / "locale")
