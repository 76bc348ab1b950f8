"""The reader's language, kept in one place for the whole book (chapter 0's
transformer_course.language): the exercise checkers and the diagrams read
it there."""

import subprocess
import sys

import pytest

from transformer_course import exercises
from transformer_course.exercises import _i18n
from transformer_course.language import (
    ENVIRONMENT_VARIABLE,
    figure_labels,
    language,
    set_language,
)


@pytest.fixture(autouse=True)
def no_language_chosen(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    set_language(None)
    yield
    set_language(None)


def test_english_unless_the_variable_says_zh(monkeypatch):
    assert language() == "en"
    for value, expected in [("zh", "zh"), (" ZH ", "zh"), ("zh-Hans", "zh")]:
        monkeypatch.setenv(ENVIRONMENT_VARIABLE, value)
        assert language() == expected
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "en")
    assert language() == "en"
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "")
    assert language() == "en"


@pytest.mark.parametrize("value", ["fr", "chinese", "zh_TW", "1"])
def test_any_other_value_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, value)
    with pytest.raises(
        ValueError,
        match=f"TRANSFORMER_COURSE_LANG '{value}' is not a language of the "
        "book; choose one of 'en' \\(English\\) or 'zh' \\(Chinese\\)",
    ):
        language()
    with pytest.raises(ValueError, match=f"lang '{value}' is not a language"):
        language(value)
    with pytest.raises(ValueError, match=f"language '{value}' is not a"):
        set_language(value)


def test_an_argument_beats_the_program_s_choice_which_beats_the_variable(
    monkeypatch,
):
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "zh")
    assert language() == "zh"
    set_language("en")
    assert language() == "en"
    assert language("zh") == "zh"
    set_language(None)
    assert language() == "zh"


def test_the_checkers_and_the_diagrams_share_the_one_language():
    assert exercises.set_language is set_language
    assert exercises.language is language
    table = {"Decoder": "解码器"}
    set_language("zh")
    assert figure_labels(table)["Decoder"] == "解码器"
    assert (
        _i18n.translate("Correct: {name} {success}") == "正确：{name} {success}"
    )
    set_language("en")
    assert figure_labels(table)["Decoder"] == "Decoder"
    assert (
        _i18n.translate("Correct: {name} {success}")
        == "Correct: {name} {success}"
    )


def test_the_catalog_module_loads_without_the_package():
    """tools/zh.py loads exercises/_i18n.py alone, without importing the
    package (torch): it imports the language only to translate a message
    without a language named."""
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location("
        "'i18n', 'transformer_course/exercises/_i18n.py')\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "print(module.translate('Correct: {name} {success}', 'zh'))\n"
        "print(sorted(m for m in sys.modules if m.startswith("
        "('torch', 'transformer_course'))))\n"
    )
    from conftest import ROOT

    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert result.stdout.split("\n")[:2] == ["正确：{name} {success}", "[]"]
