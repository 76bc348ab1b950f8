"""The Chinese edition (zh/, tools/zh.py): the same notebooks with Chinese prose.

- Every Chinese notebook's code cells and outputs are the English notebook's,
  byte for byte but for a figure's caption, the set-up cell's language line
  (the checkers answer in Chinese) and the verdicts and messages that the
  check cells print (made Chinese from the checkers' catalog), and its cells
  come in the English order: nbval need not run it.
- The Chinese notebooks' check cells print Chinese: no English verdict, hint
  or message of a checker is left in their outputs.
- The figures of the cells tagged zh-redraw are drawn again in Chinese
  (`tools/zh.py redraw`) from the English cell as it is now, and a sync keeps
  them until the English cell changes.
- `tools/zh.py sync` leaves the committed zh/ as it is (a fixed point): the
  configuration, the glossary and the notebooks were synced after the last change
  to the English book.
- No translation is out of date: each translated cell records the hash of the
  English text it was made from, and that text has not changed since. A test edits
  an English cell in a copy of the repository and proves that the check names it.
- zh/_toc.yml lists the English chapters, in the English order.
"""

import json
import os
import re
import shutil
import sys

import pytest
import yaml
from conftest import ROOT, toc_files

sys.path.insert(0, str(ROOT / "tools"))
import zh  # noqa: E402  (tools/zh.py)

ENGLISH = zh.chapters()


def test_every_chapter_has_a_chinese_notebook():
    assert ENGLISH, "no chapters found"
    missing = [p.name for p in ENGLISH if not zh.zh_path(p).exists()]
    assert not missing, f"run: python tools/zh.py sync ({missing})"


def test_a_chinese_notebook_reads_the_files_the_english_one_reads():
    """The same code runs in zh/book/ as in book/: each path a chapter's code
    names from its folder ("../benchmarks/results/...") must lead to the same
    file from both, or a reader running the Chinese notebook in Jupyter gets
    another branch (a 7.1 cell translated 2,429 messages for minutes instead
    of reading the committed translations). zh/benchmarks links to
    ../benchmarks for that."""
    literal = re.compile(r"""["'](\.\./[^"'{}]+)["']""")
    named = {
        match
        for path in ENGLISH
        for cell in zh.read_notebook(path)["cells"]
        if cell["cell_type"] == "code"
        for match in literal.findall(zh.cell_text(cell))
    }
    assert named, "no relative path found: the pattern is stale"
    differ = [
        name
        for name in sorted(named)
        if (ROOT / "book" / name).exists()
        and (ROOT / "zh" / "book" / name).resolve()
        != (ROOT / "book" / name).resolve()
    ]
    assert not differ, differ


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_code_and_outputs_are_the_english_ones(path):
    english = zh.read_notebook(path)
    chinese = zh.read_notebook(zh.zh_path(path))

    def code(notebook, chinese=False):
        """Every code cell whole, but its caption and translation record;
        the English one as the Chinese edition has it: its set-up cell sets
        the language, its check cells print Chinese."""
        cells = []
        for cell in notebook["cells"]:
            if cell["cell_type"] == "markdown":
                continue
            cell = json.loads(json.dumps(cell))
            if not chinese and zh.is_setup(cell):
                text = zh.chinese_setup(zh.cell_text(cell))
                cell["source"] = text.splitlines(keepends=True)
            if not chinese and zh.is_check_cell(cell):
                zh.chinese_outputs(cell)
            cell["metadata"].pop("zh", None)
            if zh.caption(cell) is not None:
                cell["metadata"]["mystnb"]["figure"]["caption"] = "..."
            if zh.is_redraw(cell):  # drawn in Chinese: the test below
                cell["outputs"] = "..."
            cells.append(json.dumps(cell, ensure_ascii=False))
        return cells

    assert code(chinese, chinese=True) == code(english), (
        f"{path.name}: a code cell or an output differs from the English "
        "notebook; edit the English one, then run python tools/zh.py sync"
    )
    ids = [c["id"] for c in chinese["cells"] if c["id"] != zh.STATUS_ID]
    assert ids == [c["id"] for c in english["cells"]]
    assert {k: v for k, v in chinese.items() if k != "cells"} == {
        k: v for k, v in english.items() if k != "cells"
    }


CJK = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
ENGLISH_VERDICT = re.compile(
    r"^(Correct: |Not done yet: |Hint: |on input |called with no input)|"
    r"values differ|returned (a|an|the|None|True|False|dtype|shape) ",
    re.MULTILINE,
)


def _check_outputs(path):
    """(cell id, printed text) of every check cell of a notebook."""
    for cell in zh.read_notebook(path)["cells"]:
        if zh.is_check_cell(cell):
            for output in cell.get("outputs", []):
                if output.get("name") == "stdout":
                    yield cell["id"], zh.cell_text({"source": output["text"]})


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_the_check_cells_print_chinese(path):
    english = dict(_check_outputs(path))
    checked = 0
    for cell_id, text in _check_outputs(zh.zh_path(path)):
        assert not ENGLISH_VERDICT.search(text), (
            f"{path.name}, cell {cell_id} prints English: {text[:300]}"
        )
        # what the cell printed itself is left as it was, line by line
        kept = [line for line in text.splitlines() if not CJK.search(line)]
        assert set(kept) <= set(english[cell_id].splitlines()), (
            f"{path.name}, cell {cell_id}: a line changed: {kept}"
        )
        if ENGLISH_VERDICT.search(english[cell_id]):
            assert re.search("[\u4e00-\u9fff]", text), text
            checked += 1
    if "transformer_course.exercises import" in path.read_text(
        encoding="utf-8"
    ):
        assert checked, f"{path.name}: no check cell printed a verdict"


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_the_chinese_set_up_cell_chooses_chinese(path):
    cells = zh.read_notebook(zh.zh_path(path))["cells"]
    setup = next(cell for cell in cells if cell["cell_type"] == "code")
    assert zh.is_setup(setup), path.name
    text = zh.cell_text(setup)
    assert text.endswith(zh.LANGUAGE_LINES.rstrip("\n")), path.name
    assert "import os\n" in text


def test_the_language_line_makes_the_checkers_answer_in_chinese(monkeypatch):
    from transformer_course.exercises import language, set_language
    from transformer_course.language import ENVIRONMENT_VARIABLE

    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    set_language(None)
    assert language() == "en"
    with monkeypatch.context() as patch:
        patch.setattr("os.environ", dict(os.environ))
        exec(zh.LANGUAGE_LINES, {"os": os})
        assert language() == "zh"
    assert language() == "en"


def test_a_check_cell_whose_message_changed_is_translated_again(tmp_path):
    """A message no template fits stays English, and the test above names
    it; a verdict of the catalog is made Chinese."""
    text = (
        "Correct: row_normalise divides every row by its own sum.\n"
        "a message no checker prints\n"
    )
    chinese = zh.translate_output(text)
    assert chinese == (
        "正确：row_normalise 把每一行除以它自己的和。\na message no checker prints\n"
    )
    assert ENGLISH_VERDICT.search("Correct: f works.\n")


def test_sync_changes_nothing(tmp_path):
    planned = zh.planned_files()
    stale = [
        str(path.relative_to(ROOT))
        for path, text in planned.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert not stale, f"run: python tools/zh.py sync ({stale})"


def test_no_translation_is_out_of_date():
    found = zh.report()["out of date"]
    assert not found, (
        "the English text of these translated cells changed since they were "
        "translated: update each translation, then python tools/zh.py mark "
        "NOTEBOOK CELL_ID ...\n" + "\n".join(found)
    )


def test_no_figure_is_to_redraw():
    found = zh.report()["to redraw"]
    assert not found, (
        "these figures changed in English since they were drawn in Chinese: "
        "python tools/zh.py redraw\n" + "\n".join(found)
    )


def _png(cell):
    images = [o["data"]["image/png"] for o in cell["outputs"] if "data" in o]
    assert len(images) == 1, cell["id"]
    return images[0]


def test_the_redrawn_figures_are_chinese():
    """Each zh-redraw cell shows its own figure, not the English one, and
    the texts that figure drew (recorded by `redraw`) are Chinese."""
    drawn = 0
    for path in ENGLISH:
        english = {c["id"]: c for c in zh.read_notebook(path)["cells"]}
        for cell in zh.read_notebook(zh.zh_path(path))["cells"]:
            if not zh.is_redraw(cell):
                continue
            drawn += 1
            name = f"{path.stem}, cell {cell['id']}"
            record = zh.redrawn(cell)
            assert record and zh.is_current(record, english[cell["id"]]), name
            assert _png(cell) != _png(english[cell["id"]]), name
            assert any(CJK.search(text) for text in record["texts"]), name
    assert drawn >= 40  # every figure but those of ENGLISH_FIGURES


# the figures that the Chinese edition shows as the English book draws them:
# they have no label to translate (the font's sample, "She loves you. 她爱你。",
# and an English sentence aligned with its Chinese words)
ENGLISH_FIGURES = {"fig-chinese-text", "fig-alignment"}


def test_every_figure_is_drawn_in_chinese_or_has_no_label_to_translate():
    untagged = [
        f"{path.stem}: {figure['name']}"
        for path in ENGLISH
        for cell in zh.read_notebook(path)["cells"]
        if (figure := cell["metadata"].get("mystnb", {}).get("figure"))
        and not zh.is_redraw(cell)
        and figure["name"] not in ENGLISH_FIGURES
    ]
    assert not untagged, (
        "a figure with labels: draw them from a figure_labels table, tag "
        f"its cell zh-redraw and run python tools/zh.py redraw: {untagged}"
    )


def test_a_figure_without_chinese_is_refused():
    path = ROOT / "book" / "03_attention_numpy.ipynb"
    english = first_cell(path, zh.is_redraw)
    outputs = english["outputs"]
    with pytest.raises(zh.TranslationError, match="drew no Chinese"):
        zh._checked_figure("cell", english, outputs, ["分数"])
    with pytest.raises(zh.TranslationError, match="drew no Chinese"):
        zh._checked_figure("cell", english, outputs[::-1], ["scores"])
    with pytest.raises(zh.TranslationError, match="drew no figure"):
        zh._checked_figure("cell", english, [], ["分数"])
    warning = {
        "name": "stderr",
        "output_type": "stream",
        "text": "Font 'default' does not have a glyph for '\\u76ee' [U+76ee]\n",
    }
    drawn = {"output_type": "display_data", "data": {"image/png": "iVBO"}}
    chinese = [drawn, warning]
    zh._checked_figure("cell", english, chinese[:-1], ["分数"])
    with pytest.raises(zh.TranslationError, match="a character that its font"):
        zh._checked_figure("cell", english, chinese, ["分数"])


def test_a_changed_figure_cell_shows_english_until_it_is_redrawn(tmp_path):
    root = copy_of_repository(tmp_path, ("03_attention_numpy", "04_masking"))
    english = root / "book" / "03_attention_numpy.ipynb"
    chinese = root / "zh" / "book" / "03_attention_numpy.ipynb"
    figure = first_cell(english, zh.is_redraw)

    def shown():
        cell = next(
            c
            for c in zh.read_notebook(chinese)["cells"]
            if c["id"] == figure["id"]
        )
        return cell["outputs"], zh.redrawn(cell)

    # a sync keeps the Chinese figure
    assert zh.sync(root) == []
    outputs, record = shown()
    assert outputs != figure["outputs"] and record is not None
    # the English cell changes: its figure is shown until redrawn, and named
    edit_cell(english, figure["id"], lambda text: "# one head\n" + text)
    zh.sync(root)
    assert shown() == (figure["outputs"], None)
    name = f"to redraw: chapter 3, cell {figure['id']}"
    assert zh.report(root)["to redraw"] == [name]
    # redraw draws it in Chinese again (with the chapter's other figures:
    # it runs the chapter's notebook), and the next sync keeps it
    drawn = zh.redraw(None, root)
    assert name.removeprefix("to redraw: ") in drawn
    assert all(cell.startswith("chapter 3, cell ") for cell in drawn)
    outputs, record = shown()
    assert _png({"id": "zh", "outputs": outputs}) != _png(figure)
    assert "分数\n$QK^\\top / \\sqrt{d_k}$\n$(T_q, T_k)$" in record["texts"]
    assert "scores" not in "".join(record["texts"])
    assert zh.report(root)["to redraw"] == []
    assert zh.sync(root) == []


def copy_of_repository(tmp_path, notebooks=None):
    """The files tools/zh.py reads and writes, in a scratch folder; of the
    chapters' notebooks (both editions) only those named in `notebooks`
    (stems), when given. zh.py's sync, report and redraw take the chapters
    of _toc.yml that are there: a sync of the whole book takes 0.7 s of CPU,
    of two chapters 0.08 s. A test that says only its chapter is named or
    changed keeps another chapter beside it, which must stay out of it."""

    def left_out(folder, names):
        return [
            name
            for name in names
            if name == "_build"
            or notebooks is not None
            and name.endswith(".ipynb")
            and name.removesuffix(".ipynb") not in notebooks
        ]

    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "book", tmp_path / "book", ignore=left_out)
    shutil.copytree(ROOT / "zh", tmp_path / "zh", ignore=left_out)
    return tmp_path


def first_cell(path, test):
    """The first cell of a notebook that passes `test`."""
    return next(c for c in zh.read_notebook(path)["cells"] if test(c))


def edit_cell(path, cell_id, change):
    notebook = zh.read_notebook(path)
    cell = next(c for c in notebook["cells"] if c["id"] == cell_id)
    cell["source"] = change(zh.cell_text(cell))
    path.write_text(zh.notebook_text(notebook), encoding="utf-8")


def test_an_edited_english_cell_makes_its_translation_out_of_date(tmp_path):
    root = copy_of_repository(tmp_path, ("00_getting_started", "04_masking"))
    english = root / "book" / "00_getting_started.ipynb"
    chinese = root / "zh" / "book" / "00_getting_started.ipynb"
    first = first_cell(english, lambda c: c["cell_type"] == "markdown")
    # translate the first markdown cell, record it: nothing is out of date
    edit_cell(chinese, first["id"], lambda text: "# 开始之前\n")
    assert zh.mark(chinese, [first["id"]], root) == [first["id"]]
    zh.sync(root)
    assert zh.report(root)["out of date"] == []
    # the English cell changes: the check names the chapter and the cell
    edit_cell(
        english, first["id"], lambda text: text + "\nOne more sentence.\n"
    )
    zh.sync(root)
    assert zh.report(root)["out of date"] == [
        f"out of date: chapter 0, cell {first['id']}"
    ]
    # the translation is kept (not replaced by the English) until it is updated
    cells = {c["id"]: c for c in zh.read_notebook(chinese)["cells"]}
    assert zh.cell_text(cells[first["id"]]) == "# 开始之前\n"
    assert zh.mark(chinese, [first["id"]], root) == [first["id"]]
    assert zh.report(root)["out of date"] == []


def test_a_translated_caption_is_kept_and_checked(tmp_path):
    root = copy_of_repository(
        tmp_path, ("02_positional_encoding", "04_masking")
    )
    english = root / "book" / "02_positional_encoding.ipynb"
    chinese = root / "zh" / "book" / "02_positional_encoding.ipynb"
    figure = first_cell(english, lambda c: zh.caption(c) is not None)
    notebook = zh.read_notebook(chinese)
    cell = next(c for c in notebook["cells"] if c["id"] == figure["id"])
    zh.set_prose(cell, "位置编码。")
    cell["metadata"].pop("zh", None)
    chinese.write_text(zh.notebook_text(notebook), encoding="utf-8")
    assert figure["id"] in zh.mark(chinese, [], root)
    zh.sync(root)
    cells = {c["id"]: c for c in zh.read_notebook(chinese)["cells"]}
    assert zh.caption(cells[figure["id"]]) == "位置编码。"
    assert zh.cell_text(cells[figure["id"]]) == zh.cell_text(figure)  # the code
    assert zh.report(root)["out of date"] == []
    notebook = zh.read_notebook(english)
    cell = next(c for c in notebook["cells"] if c["id"] == figure["id"])
    zh.set_prose(cell, zh.caption(cell) + " More.")
    english.write_text(zh.notebook_text(notebook), encoding="utf-8")
    zh.sync(root)
    assert zh.report(root)["out of date"] == [
        f"out of date: chapter 2, cell {figure['id']}"
    ]


def test_an_edited_code_cell_is_synced_not_kept(tmp_path):
    root = copy_of_repository(
        tmp_path, ("02_positional_encoding", "04_masking")
    )
    english = root / "book" / "02_positional_encoding.ipynb"
    chinese = root / "zh" / "book" / "02_positional_encoding.ipynb"
    code = first_cell(
        english, lambda c: c["cell_type"] == "code" and not zh.is_setup(c)
    )
    edit_cell(chinese, code["id"], lambda text: text + "\nprint('only here')\n")
    assert zh.sync(root) == [chinese]
    cells = {c["id"]: c for c in zh.read_notebook(chinese)["cells"]}
    assert zh.cell_text(cells[code["id"]]) == zh.cell_text(code)


def test_mark_records_new_translations_only(tmp_path):
    root = copy_of_repository(tmp_path)
    english = root / "book" / "04_masking.ipynb"
    chinese = root / "zh" / "book" / "04_masking.ipynb"
    source = {c["id"]: c for c in zh.read_notebook(english)["cells"]}
    notebook = zh.read_notebook(chinese)
    prose = [c for c in notebook["cells"] if c["cell_type"] == "markdown"]
    prose = [c for c in prose if c["id"] != zh.STATUS_ID]
    for cell in prose[:2]:  # two cells back to English, untranslated
        cell["source"] = source[cell["id"]]["source"]
        cell["metadata"].pop("zh", None)
    chinese.write_text(zh.notebook_text(notebook), encoding="utf-8")
    edit_cell(chinese, prose[0]["id"], lambda text: "掩码。\n")
    # an English cell left as it is is not a translation, and is not marked;
    # nor is a translation recorded before
    assert zh.mark(chinese, [], root) == [prose[0]["id"]]
    with pytest.raises(zh.TranslationError, match="no cell"):
        zh.mark(chinese, ["no-such-cell"], root)


def status_notes(root):
    """{chapter: (untranslated, texts, its status notes, their positions)}."""
    found = {}
    for path in zh.chapters(root):
        cells = zh.read_notebook(zh.zh_path(path, root))["cells"]
        texts = [
            c
            for c in cells
            if zh.prose(c) is not None and c["id"] != zh.STATUS_ID
        ]
        untranslated = sum(zh.translated_from(c) is None for c in texts)
        notes = [c for c in cells if c["id"] == zh.STATUS_ID]
        found[path.name] = (
            untranslated,
            len(texts),
            [zh.cell_text(c) for c in notes],
            [cells.index(c) for c in notes],
        )
    return found


def check_status_notes(root):
    for name, (untranslated, texts, notes, at) in status_notes(root).items():
        if untranslated:
            assert len(notes) == 1 and at == [1], name
            assert f"还有 {untranslated} 段是英文原文" in notes[0]
            assert f"本章 {texts} 段说明文字" in notes[0]
        else:
            assert not notes, name


def test_a_chapter_not_yet_translated_says_so():
    check_status_notes(ROOT)


def test_a_chapter_whose_translation_is_undone_gets_the_note(tmp_path):
    """Every chapter is translated now: the note is proven on a copy in
    which two cells of chapter 4 are back in English."""
    root = copy_of_repository(
        tmp_path, ("04_masking", "02_positional_encoding")
    )
    english = root / "book" / "04_masking.ipynb"
    chinese = root / "zh" / "book" / "04_masking.ipynb"
    notebook = zh.read_notebook(chinese)
    prose = [c for c in notebook["cells"] if c["cell_type"] == "markdown"]
    for cell in prose[:2]:
        cell["metadata"].pop("zh", None)
    chinese.write_text(zh.notebook_text(notebook), encoding="utf-8")
    zh.sync(root)
    untranslated, texts, notes, at = status_notes(root)["04_masking.ipynb"]
    assert untranslated == 2 and at == [1]
    assert (
        f"本章 {texts} 段说明文字（包括图注）中还有 2 段是英文原文" in notes[0]
    )
    check_status_notes(root)
    # the English text is shown, not the stale translation
    cells = {c["id"]: c for c in zh.read_notebook(chinese)["cells"]}
    source = {c["id"]: c for c in zh.read_notebook(english)["cells"]}
    assert zh.cell_text(cells[prose[0]["id"]]) == zh.cell_text(
        source[prose[0]["id"]]
    )


def test_translated_cells_are_chinese():
    """A cell recorded as translated holds Chinese text, unless it has no prose
    (a formula, a heading that is a name)."""
    english_only = []
    for path in ENGLISH:
        for cell in zh.read_notebook(zh.zh_path(path))["cells"]:
            text = zh.prose(cell) or ""
            if zh.translated_from(cell) and len(text.split()) > 8:
                if not any("\u4e00" <= ch <= "\u9fff" for ch in text):
                    english_only.append(f"{path.stem}, cell {cell['id']}")
    assert not english_only, english_only


def test_no_line_break_inside_chinese_text():
    """A browser shows a line break as a space, which Chinese text must not
    have: `mark` joins such lines; hand-written pages must not have them."""
    found = []
    for path in ENGLISH:
        for cell in zh.read_notebook(zh.zh_path(path))["cells"]:
            if zh.translated_from(cell):
                found += [
                    f"{path.stem}: {b}"
                    for b in zh.broken_lines(zh.cell_text(cell))
                ]
    intro = (ROOT / "zh" / "book" / "intro.md").read_text(encoding="utf-8")
    found += [f"intro.md: {b}" for b in zh.broken_lines(intro)]
    for term, entry in zh.glossary_translations().items():
        found += [
            f"glossary, {term}: {b}" for b in zh.broken_lines(entry["text"])
        ]
    assert not found, found


def glossary_terms(text):
    """The term lines of a glossary page's glossary blocks, in order."""
    terms, inside = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            inside = line.startswith("```{glossary}")
        elif inside and line and not line.startswith((" ", ":")):
            terms.append(line)
    return terms


def glossary_entries(text):
    """{first term: all its term lines} of a glossary page."""
    entries, inside, current = {}, False, None
    for line in text.split("\n"):
        if line.startswith("```"):
            inside, current = line.startswith("```{glossary}"), None
        elif not inside or line.startswith(":") or not line:
            current = None
        elif line.startswith(" "):
            current = "definition"
        elif current is None or current == "definition":
            current = line
            entries[line] = [line]
        else:
            entries[current].append(line)
    return entries


def test_the_chinese_glossary_defines_every_english_term():
    english = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    chinese = (ROOT / "zh" / "book" / "glossary.md").read_text(encoding="utf-8")
    english_terms = glossary_terms(english)
    assert len(english_terms) > 50
    # in the same order, each entry's English term lines first (the targets
    # of every {term} link), then its Chinese ones
    assert [t for t in glossary_terms(chinese) if t in english_terms] == (
        english_terms
    )
    entries = glossary_entries(chinese)
    assert list(entries) == list(glossary_entries(english))
    for first, lines in glossary_entries(english).items():
        assert entries[first][: len(lines)] == lines


def test_each_glossary_entry_is_found_by_its_chinese_terms():
    chinese = (ROOT / "zh" / "book" / "glossary.md").read_text(encoding="utf-8")
    entries = glossary_entries(chinese)
    english = glossary_entries(
        (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    )
    assert entries["positional encoding"][1:] == ["位置编码"]
    assert entries["BLEU"][1:] == ["双语评估替补"]  # not "BLEU" again
    assert entries["query"][4:] == ["查询", "键", "值"]
    assert entries["FlashAttention"] == ["FlashAttention"]  # no Chinese name
    # where zh.d2l.ai says it otherwise, its term is a term line and named
    for first, ours, theirs in [
        ("layer normalization", "层归一化", "层规范化"),
        ("teacher forcing", "教师强制", "强制教学"),
        ("greedy decoding", "贪心解码", "贪心搜索"),
    ]:
        assert entries[first][-2:] == [ours, theirs]
        assert f"**{ours}**（zh.d2l.ai 作“{theirs}”）。" in chinese
    # every entry with a Chinese name has it as a term line, and no two
    # entries share a term
    without = [
        first
        for first, lines in entries.items()
        if len(lines) == len(english[first])
    ]
    assert without == ["FlashAttention", "word2vec"]
    every = [t.lower() for lines in entries.values() for t in lines]
    assert len(every) == len(set(every))


def test_a_chinese_term_of_two_entries_is_refused(tmp_path):
    root = copy_of_repository(tmp_path)
    found = zh.glossary_translations(root)
    found["attention"]["d2l"] = ["位置编码"]
    zh.write_glossary_translations(found, root)
    with pytest.raises(zh.TranslationError, match="already a term of"):
        zh.zh_glossary(root)
    found["attention"]["d2l"] = "注意力机制"  # not a list
    zh.write_glossary_translations(found, root)
    with pytest.raises(zh.TranslationError, match="d2l must be a list"):
        zh.zh_glossary(root)


def write_glossary_entry(root, term, text):
    found = zh.glossary_translations(root)
    found[term] = {"text": text}
    zh.write_glossary_translations(found, root)


def test_an_edited_english_definition_makes_its_translation_out_of_date(
    tmp_path,
):
    root = copy_of_repository(tmp_path, ("04_masking",))
    english = root / "book" / "glossary.md"
    write_glossary_entry(
        root, "T_q", "**查询长度**。查询的位置数：\n注意力权重矩阵的行数。"
    )
    assert zh.mark_glossary([], root) == ["T_q"]
    zh.sync(root)
    chinese = (root / "zh" / "book" / "glossary.md").read_text(encoding="utf-8")
    # recorded, joined into one line, and in the page under its term lines
    assert (
        "T_q\n查询长度\n  **查询长度**。查询的位置数：注意力权重矩阵的行数。\n"
        in chinese
    )
    assert zh.glossary_report(root)[0] == []
    text = english.read_text(encoding="utf-8")
    english.write_text(
        text.replace("the rows of an attention-weight matrix.", "its rows."),
        encoding="utf-8",
    )
    zh.sync(root)
    assert zh.report(root)["out of date"] == [
        "out of date: glossary, entry 'T_q'"
    ]
    assert zh.mark_glossary(["T_q"], root) == ["T_q"]
    assert zh.report(root)["out of date"] == []
    with pytest.raises(zh.TranslationError, match="no entry"):
        zh.mark_glossary(["no such term"], root)
    # an entry the English glossary no longer has is named too
    english.write_text(
        text.replace("T_q\n  **查询长度**", "T_query\n  **查询长度**"),
        encoding="utf-8",
    )
    assert (
        "out of date: glossary, entry 'T_q' is no longer in book/glossary.md"
        in (zh.report(root)["out of date"])
    )


def test_an_untranslated_glossary_says_so(tmp_path):
    root = copy_of_repository(tmp_path, ("04_masking",))
    english = (root / "book" / "glossary.md").read_text(encoding="utf-8")
    entries = [
        p for p in zh.glossary_parts(english)[1] if not isinstance(p, str)
    ]
    zh.write_glossary_translations({}, root)
    text = zh.zh_glossary(root)
    assert text.startswith("# Glossary\n")  # the English head, untranslated
    assert f"{len(entries)} 条释义中还有 {len(entries)} 条是英文原文" in text
    assert zh.report(root)["untranslated"][-1] == (
        f"glossary: {len(entries) + 1} of its head and entries"
    )


def test_unwrap_joins_chinese_lines_only():
    text = "第一行\n第二行，\n`code` 和\nEnglish\nwords\n\n- 列表\n- 项"
    assert (
        zh.unwrap(text)
        == "第一行第二行，`code` 和 English\nwords\n\n- 列表\n- 项"
    )
    assert zh.broken_lines(zh.unwrap(text)) == []


def test_the_toc_lists_the_english_chapters():
    toc = yaml.safe_load((ROOT / "zh" / "_toc.yml").read_text(encoding="utf-8"))

    def walk(entries):  # a chapter, then its sections (chapter 9)
        return [
            f
            for e in entries
            for f in [e["file"], *walk(e.get("sections", []))]
        ]

    files = walk([c for part in toc["parts"] for c in part["chapters"]])
    assert toc["root"] == "book/intro"
    assert files == [f for f in toc_files()]


def test_the_chinese_site_names_cjk_fonts_and_links_back():
    css = (ROOT / "zh" / "_static" / "zh.css").read_text(encoding="utf-8")
    assert (
        '"Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei",\n    sans-serif'
        in css
    )
    config = yaml.safe_load(
        (ROOT / "zh" / "_config.yml").read_text(encoding="utf-8")
    )
    assert config["sphinx"]["config"]["language"] == "zh_CN"
    assert config["sphinx"]["config"]["language_switch"]["root"] == "../"
    assert config["repository"]["path_to_book"] == "zh"  # the Colab badges
    english = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert english["sphinx"]["config"]["language_switch"]["root"] == "zh/"
    assert "zh" in english["exclude_patterns"]


def load_extension(name):
    """A module of _ext/ (the site's Sphinx extensions)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        name, ROOT / "_ext" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_edition_has_one_language_tag():
    """The hreflang of a link to a book is the <html lang> that Sphinx writes
    from the book's `language`: a book whose tag disagrees is refused."""
    from types import SimpleNamespace

    from sphinx.errors import ExtensionError

    switch = load_extension("language_switch")
    chinese = yaml.safe_load(
        (ROOT / "zh" / "_config.yml").read_text(encoding="utf-8")
    )["sphinx"]["config"]
    english = yaml.safe_load(
        (ROOT / "_config.yml").read_text(encoding="utf-8")
    )["sphinx"]["config"]
    for config in (chinese, english):
        switch._check_language(
            None,
            SimpleNamespace(
                language=config.get("language"),
                language_switch=config["language_switch"],
            ),
        )
    assert switch.LANGUAGES["中文"] == chinese["language"].replace("_", "-")
    with pytest.raises(ExtensionError, match="zh-TW"):
        switch._check_language(
            None,
            SimpleNamespace(
                language="zh_TW", language_switch=chinese["language_switch"]
            ),
        )


def test_the_chinese_build_needs_jieba(monkeypatch):
    """Without jieba, Sphinx's Chinese search index holds no Chinese words:
    the Chinese build stops with a message saying so (the English one does not
    need it)."""
    from types import SimpleNamespace

    from sphinx.errors import ExtensionError

    search = load_extension("chinese_search")
    config = yaml.safe_load((ROOT / "zh" / "_config.yml").read_text("utf-8"))
    assert config["sphinx"]["local_extensions"]["chinese_search"] == "../_ext"
    chinese = SimpleNamespace(language=config["sphinx"]["config"]["language"])
    search._require_jieba(None, chinese)  # installed (requirements.txt)
    monkeypatch.setitem(sys.modules, "jieba", None)  # as if it were not
    with pytest.raises(ExtensionError, match="jieba is not installed"):
        search._require_jieba(None, chinese)
    search._require_jieba(None, SimpleNamespace(language="en"))


def test_the_chinese_indexer_keeps_its_latin_words_in_a_set(monkeypatch):
    """_ext/chinese_search.py swaps Sphinx's list of the Latin words seen (a
    lookup per word indexed: quadratic) for a set; the indexer still reads it
    the same way: a word it has split keeps its short form unstemmed."""
    from types import SimpleNamespace

    from sphinx.search.zh import SearchChinese

    search = load_extension("chinese_search")
    monkeypatch.setattr(SearchChinese, "latin_terms", [])
    search._fast_latin_terms(None, SimpleNamespace(language="en"))
    assert SearchChinese.latin_terms == []  # the English build: untouched
    search._fast_latin_terms(None, SimpleNamespace(language="zh_CN"))
    assert isinstance(SearchChinese.latin_terms, set)
    indexer = SearchChinese({})
    assert indexer.stem("ids") == "id"  # not seen yet: stemmed
    assert "ids" in indexer.split("每个 ids 的向量")
    assert "ids" in SearchChinese.latin_terms
    assert indexer.stem("ids") == "ids"  # seen: kept, as with the list
