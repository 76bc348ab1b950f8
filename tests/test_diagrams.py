"""The book's diagrams in both languages (transformer_course.language): each
drawing function writes every label of its table, in English or in Chinese,
as `lang` or the reader's language asks; a Chinese diagram has no English
left but the symbols and code names it keeps, and draws every glyph."""

import io
import json
import logging
import re
import warnings
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from transformer_course import attention_diagrams as head  # noqa: E402
from transformer_course import beyond_diagrams as sharing  # noqa: E402
from transformer_course import decoding_diagrams as beam  # noqa: E402
from transformer_course import getting_started as map_  # noqa: E402
from transformer_course import kv_cache_diagrams as cache  # noqa: E402
from transformer_course import multi_head_diagrams as split  # noqa: E402
from transformer_course import transformer_diagrams as classes  # noqa: E402
from transformer_course.language import (  # noqa: E402
    ENVIRONMENT_VARIABLE,
    figure_labels,
    set_language,
)

ROOT = Path(__file__).resolve().parent.parent
CJK = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
MATH = re.compile(r"\$[^$]*\$")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _figure(drawn):
    """The Figure a drawing function returned (it returns an Axes or one)."""
    return drawn if isinstance(drawn, plt.Figure) else drawn.figure


def _tree():
    """A beam search of width 2 over two steps, as beam_tree records it:
    each step's candidates, best first, (log P, parent, token, fate, prefix),
    the parent the row of a live hypothesis of the step before."""
    first = [
        (-0.5, 0, 3, "live", (3,)),
        (-0.9, 0, 4, "live", (4,)),
        (-1.2, 0, 2, "pruned", (2,)),
    ]
    second = [
        (-1.0, 1, 2, "finished", (4, 2)),
        (-1.1, 0, 5, "live", (3, 5)),
        (-1.3, 0, 4, "live", (3, 4)),
        (-2.0, 1, 3, "pruned", (4, 3)),
    ]
    return [first, second]


def _written_out(tokens):
    """The tree's tokens 3 to 6 written A to D (2 is <eos>)."""
    return " ".join("?-?ABCD"[token] for token in tokens)


# section 9.2's measurements of the cache, which its chart draws
KV_RUNS = json.loads(
    (ROOT / "benchmarks" / "results" / "kv_cache_cpu.json").read_text()
)
# each diagram: its drawing function (taking lang=), its table of labels, and
# the words a Chinese label keeps: symbols, terms the glossary keeps in
# English (Softmax, logits), the code's names; a formula ($...$) is kept whole
DIAGRAMS = {
    "architecture": (
        lambda lang: map_.draw_architecture(highlight=6, lang=lang),
        map_._MAP_LABELS,
        {"N", "Softmax"},
    ),
    "attention-head": (
        lambda lang: head.draw_attention_head(lang=lang),
        head._HEAD_LABELS,
        {"softmax", "V"},
    ),
    "transformer-classes": (
        lambda lang: classes.draw_transformer_classes(lang=lang),
        classes._CLASS_LABELS,
        {"id", "B", "T_src", "T_tgt", "d_model", "sqrt", "N", "logits"}
        | {"self_attn", "cross_attn", "output_proj", "FeedForward"}
        | {"residual1", "residual2", "residual3"}
        | {"EncoderLayer", "DecoderLayer"},
    ),
    "head-sharing": (
        lambda lang: sharing.draw_head_sharing(lang=lang),
        sharing._SHARING_LABELS,
        {"MHA", "GQA", "MQA", "h", "h_kv"},
    ),
    "head-split": (
        lambda lang: split.draw_head_split(lang=lang),
        split._SPLIT_LABELS,
        {"T", "d_model"} | {f"t{i}" for i in range(5)},
    ),
    "kv-cache": (
        lambda lang: cache.draw_kv_cache(lang=lang),
        cache._CACHE_LABELS,
        {"t", "max_len"},
    ),
    "kv-timings": (
        lambda lang: cache.draw_kv_timings(KV_RUNS, lang=lang),
        cache._TIMING_LABELS,
        {"T", "B", "ms"},
    ),
    "beam-tree": (
        lambda lang: beam.draw_beam_tree(
            _tree(), [4, 2], 2, _written_out, k=2, lang=lang
        ),
        beam._TREE_LABELS,
        {"log", "P", "bos", "eos", "A", "B", "C", "D"},
    ),
}


def drawn_texts(figure) -> list[str]:
    """Every text the figure draws (its axes' texts and titles), not empty."""
    texts = figure.findobj(Text)
    return [t.get_text() for t in texts if t.get_text() and t.get_visible()]


def as_pattern(label: str) -> re.Pattern:
    """A label of a table, its {fields} any text."""
    parts = re.split(r"\{\w*\}", label)
    return re.compile(".+?".join(re.escape(part) for part in parts))


def latin_left(text: str, kept: set[str]) -> list[str]:
    """The English words of a Chinese label, but its formulas and `kept`."""
    return [w for w in WORD.findall(MATH.sub("", text)) if w not in kept]


def draw(name: str, lang: str):
    """The diagram drawn and rendered, and the warnings and matplotlib's
    font log while it was drawn (a missing glyph is either)."""
    function = DIAGRAMS[name][0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handler = logging.Handler(logging.WARNING)
        records = []
        handler.emit = records.append
        logger = logging.getLogger("matplotlib")
        logger.addHandler(handler)
        try:
            figure = _figure(function(lang))
            figure.savefig(io.BytesIO(), format="png")
        finally:
            logger.removeHandler(handler)
    messages = [str(w.message) for w in caught]
    messages += [r.getMessage() for r in records]
    return figure, messages


@pytest.fixture(autouse=True)
def reader_language(monkeypatch):
    """Each test starts with no language chosen, and closes its figures."""
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    set_language(None)
    yield
    set_language(None)
    plt.close("all")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", list(DIAGRAMS))
def test_every_label_is_drawn_in_the_language_asked_for(name, lang):
    _, table, kept = DIAGRAMS[name]
    figure, messages = draw(name, lang)
    texts = drawn_texts(figure)
    labels = table if lang == "en" else table.values()
    missing = [
        label
        for label in labels
        if not any(as_pattern(label).search(text) for text in texts)
    ]
    assert not missing, f"{name} ({lang}) does not draw {missing}"
    assert not [m for m in messages if "Glyph" in m or "findfont" in m], (
        messages
    )
    if lang == "en":
        assert not [t for t in texts if CJK.search(t)], texts
    else:
        left = {t: latin_left(t, kept) for t in texts if latin_left(t, kept)}
        assert not left, f"{name}: English left in Chinese labels: {left}"
        assert any(CJK.search(t) for t in texts), texts


def test_a_chinese_diagram_differs_from_the_english_one_only_in_its_labels():
    for name in DIAGRAMS:
        english, _ = draw(name, "en")
        chinese, _ = draw(name, "zh")
        assert len(drawn_texts(english)) == len(drawn_texts(chinese)), name
        assert drawn_texts(english) != drawn_texts(chinese), name
        places = [placed(figure) for figure in (english, chinese)]
        assert places[0] == places[1], name


def placed(figure) -> list:
    """Where the figure's texts are, but those that matplotlib places by the
    size of the texts around them (an axis's label, by its ticks' labels;
    a legend's entries, by the longest)."""
    moved = set()
    for ax in figure.axes:
        moved |= {ax.xaxis.label, ax.yaxis.label}
        if ax.get_legend() is not None:
            moved |= set(ax.get_legend().get_texts())
    texts = figure.findobj(Text)
    return [t.get_position() for t in texts if t.get_text() and t not in moved]


@pytest.mark.parametrize("name", list(DIAGRAMS))
def test_the_reader_s_language_is_the_default(name, monkeypatch):
    function = DIAGRAMS[name][0]
    english = drawn_texts(_figure(function(None)))
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "zh")
    chinese = drawn_texts(_figure(function(None)))
    assert chinese == drawn_texts(_figure(function("zh"))) != english
    set_language("en")  # the program's choice wins over the variable
    assert drawn_texts(_figure(function(None))) == english
    with pytest.raises(ValueError, match="lang 'fr' is not a language"):
        function("fr")


def test_a_label_missing_from_the_table_is_named_in_either_language():
    for lang in ["en", "zh"]:
        labels = figure_labels(head._HEAD_LABELS, lang)
        with pytest.raises(KeyError, match="no Chinese for the label 'key'"):
            labels["key"]


def test_the_diagram_functions_check_their_axes():
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        head.draw_attention_head(ax="left")
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        classes.draw_transformer_classes(ax=3)
    figure, (left, right) = plt.subplots(1, 2)
    assert head.draw_attention_head(ax=right, lang="zh") is right
    assert not left.texts


def test_the_split_into_heads_refuses_a_width_that_the_heads_do_not_divide():
    with pytest.raises(ValueError, match="d_model = 10 is not a multiple"):
        split.draw_head_split(d_model=10, h=4, lang="en")
