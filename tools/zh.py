"""The Chinese edition (中文版): zh/ is a second book whose notebooks are the
English ones with their prose translated.

    python tools/zh.py sync            # regenerate zh/ from the English book
    python tools/zh.py status          # what is translated, untranslated, out of date
    python tools/zh.py mark NOTEBOOK [CELL_ID ...]
    python tools/zh.py redraw [NOTEBOOK ...]  # the diagrams, drawn in Chinese
    python tools/zh.py publish         # zh/_build/html -> _build/html/zh
    python tools/zh.py messages        # the checkers' Chinese message catalog

Each Chinese notebook is made from the English notebook of the same name:

- its code cells, with their outputs, are the English notebook's, byte for byte
  (so nbval need not run the Chinese notebooks: they are the English ones),
  except a figure's caption (metadata mystnb.figure.caption), which is prose,
  and what makes the exercise checkers answer in Chinese:
  - the set-up cell (the first code cell, "# Set-up for Google Colab") also
    imports os and sets TRANSFORMER_COURSE_LANG=zh (`chinese_setup`), which
    transformer_course/language.py reads (for the checkers and the diagrams);
  - a check cell's printed output (any cell that calls `check_...(`) has each
    verdict ("Correct: ...", "Not done yet: ...") and each message of a wrong
    answer made Chinese through the checkers' gettext catalog
    (tools/zh_outputs.py: the English template recognised, the Chinese
    one filled with the same values), as the checker prints it in Chinese;
    whatever else the cell printed stays as it is. An English message that
    no template fits stays English, and tests/test_zh.py names the cell;
- each markdown cell, and each caption, is the translation kept from the last
  sync, matched by cell id, or, where there is none yet, the English text
  itself (untranslated);
- a translated cell records in its metadata ("zh": {"source_sha256": ...}) the
  hash of the English text it was translated from. When that English text
  changes, the translation is out of date, and tests/test_zh.py names it
  ("out of date: chapter 6, cell 4f2a...");
- a chapter with untranslated cells opens with a generated note saying so;
- a diagram is drawn again in Chinese: a figure cell tagged `zh-redraw` (cell
  metadata tags, in the English notebook) calls a drawing function that
  writes its labels in the reader's language (transformer_course.language).
  `redraw` runs the Chinese notebook, from its set-up cell (which sets
  TRANSFORMER_COURSE_LANG=zh) to its last such cell, in a fresh kernel in the
  English notebook's folder, and keeps these cells' outputs, recording in the
  cell's metadata ("zh": {"redrawn": ...}) the hash of the English cell's
  source and outputs it was drawn from (`figure_hash`: a change to the cell
  shows in its source, a change to its drawing function in its English
  figure) and the texts the figure drew. `sync` keeps those outputs while
  the hash holds; once the English cell changes, the Chinese notebook shows
  the English figure until the next `redraw`, and `status` (and
  tests/test_zh.py) names the cell ("to redraw: chapter 3, cell ...").

`sync` also writes zh/_config.yml (the English _config.yml with the Chinese
edition's title, language, notebook folder and address) and zh/book/glossary.md:
the English glossary's term lines (the targets of every {term} link; its bold
Chinese terms are the one source of the Chinese terms), with its head and each
definition translated where zh/glossary.yml has a translation, and recorded
like a cell's (the hash of the English text). To translate an entry, add its
Chinese text under its first term in zh/glossary.yml, then run
`mark zh/glossary.yml` (or `mark zh/glossary.yml TERM ...` after the English
changed), then `sync`. Each entry's term lines are followed by its Chinese
terms (the bold ones, split at （）and 、), so that the Chinese glossary and
search find an entry by its Chinese name; an entry's `d2l` list names the terms
zh.d2l.ai uses instead ("zh.d2l.ai 作“层规范化”"), as term lines too.
zh/_toc.yml and zh/book/intro.md are written by hand.

The site: `jupyter-book build zh` builds the Chinese book into zh/_build/html,
and `publish` puts it under _build/html/zh, beside the English book, where each
page's language link (_ext/language_switch.py) finds it (the README's command 1).

The checkers' messages: `messages` extracts every message template of
transformer_course/exercises/ into the gettext catalog
transformer_course/locale/zh_CN/LC_MESSAGES/exercises.po (tools/
checker_messages.py says which literals are templates), keeps the translations
of the templates that stayed, and compiles the .mo the package ships. To
translate a new message, fill in its msgstr in the .po (the same {fields}),
then run `messages` and `sync`.

To translate a cell: edit its text in the Chinese notebook (Jupyter, or any
editor), then run `mark` on the notebook. (`mark` also joins lines that break
inside Chinese text: a browser shows such a break as a space.) Without cell ids, `mark` records the
hash for every markdown cell whose text differs from the English and that has
no record yet (a new translation), and for every figure caption likewise; with
ids, it records the hash for those cells only (a translation brought up to date
after the English changed). Then `sync`.
"""

import argparse
import copy
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import checker_messages
import yaml
from notebooks import cell_text, notebook_text, read_notebook, write_notebook
from zh_outputs import translate_output

ROOT = Path(__file__).resolve().parent.parent
ZH = ROOT / "zh"
STATUS_ID = "zh-status"  # the generated note of a chapter not yet translated
SETUP_FIRST_LINE = "# Set-up for Google Colab"
# what the set-up cell of a Chinese notebook adds: the checkers answer in
# Chinese and the diagrams are drawn in Chinese (transformer_course.language
# reads the variable)
LANGUAGE_LINES = (
    "\n\n# 中文版：练习的检查器和示意图都用中文\n"
    'os.environ["TRANSFORMER_COURSE_LANG"] = "zh"\n'
)
CHECK_CALL = re.compile(r"\bcheck_\w+\(")
REDRAW_TAG = "zh-redraw"  # a figure cell that the Chinese edition draws again


class TranslationError(ValueError):
    pass


def caption(cell: dict) -> str | None:
    """A code cell's figure caption (metadata mystnb.figure.caption)."""
    figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
    return figure.get("caption")


def prose(cell: dict) -> str | None:
    """A cell's text to translate: a markdown cell's, a figure's caption, or
    None (a code cell without a figure)."""
    if cell["cell_type"] == "markdown":
        return cell_text(cell)
    return caption(cell)


def set_prose(cell: dict, text: str) -> None:
    if cell["cell_type"] == "markdown":
        cell["source"] = text.splitlines(keepends=True)
    else:
        cell["metadata"]["mystnb"]["figure"]["caption"] = text


def english_hash(cell: dict) -> str:
    """The hash of a cell's English prose (its markdown, or its caption)."""
    return hashlib.sha256(prose(cell).encode("utf-8")).hexdigest()


def translated_from(cell: dict) -> str | None:
    """The hash of the English text a translated cell was made from."""
    return cell.get("metadata", {}).get("zh", {}).get("source_sha256")


CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"  # characters, punctuation
WIDE_PUNCTUATION = re.compile("[\u3000-\u303f\uff00-\uffef]")
# a line that starts a block of its own: never joined to the line above
BLOCK = re.compile(r"[ \t]*(?:[-*] |\d+\. |#|\$\$|<|\||```|:::|$)")


def broken_lines(text: str) -> list[str]:
    """Lines of a paragraph that a line break splits inside Chinese text (a
    browser shows such a break as a space)."""
    lines = text.split("\n")
    return [
        f"{a[-12:]}⏎{b.lstrip()[:12]}"
        for a, b in zip(lines, lines[1:], strict=False)
        if a
        and not BLOCK.match(b)
        and not a.startswith(("$$", "```"))
        and (re.search(f"[{CJK}]$", a) or re.match(f"[ \t]*[{CJK}]", b))
    ]


def unwrap(text: str) -> str:
    """Join the lines that broken_lines finds: no space between two Chinese
    characters or next to Chinese punctuation, one space elsewhere."""
    out = []
    for line in text.split("\n"):
        if out and broken_lines(f"{out[-1]}\n{line}"):
            rest = line.lstrip()
            a, b = out[-1][-1], rest[0]
            tight = re.match(f"[{CJK}]", a) and re.match(f"[{CJK}]", b)
            tight = (
                tight or WIDE_PUNCTUATION.match(a) or WIDE_PUNCTUATION.match(b)
            )
            out[-1] += ("" if tight else " ") + rest
        else:
            out.append(line)
    return "\n".join(out)


def chapters(root: Path = ROOT) -> list[Path]:
    """The English notebooks, in the order of the English _toc.yml (a
    chapter's sections, one notebook each, after its page)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))

    def walk(entries: list[dict]) -> list[str]:
        files = []
        for entry in entries:
            files += [entry["file"], *walk(entry.get("sections", []))]
        return files

    files = walk([c for part in toc["parts"] for c in part["chapters"]])
    return [
        root / f"{f}.ipynb" for f in files if (root / f"{f}.ipynb").exists()
    ]


def chapter_name(path: Path) -> str:
    """'chapter 6' for 06_transformer.ipynb (chapter 0: getting started),
    'section 9.1' for 09_1_new_attention.ipynb."""
    section = re.match(r"(\d\d)_(\d+)_", path.stem)
    if section:
        return f"section {int(section[1])}.{section[2]}"
    return f"chapter {int(path.stem[:2])}"


def status_cell(untranslated: int, total: int) -> dict:
    text = (
        f"**本章的翻译尚未完成。** 本章 {total} 段说明文字（包括图注）中还有 "
        f"{untranslated} 段是英文原文，翻译完成后会替换。代码、输出和图与英文版完全相同。"
    )
    return {
        "cell_type": "markdown",
        "id": STATUS_ID,
        "metadata": {},
        "source": [text],
    }


def is_setup(cell: dict) -> bool:
    """The Colab set-up cell, the first code cell of every chapter."""
    return cell["cell_type"] == "code" and cell_text(cell).startswith(
        SETUP_FIRST_LINE
    )


def chinese_setup(source: str) -> str:
    """The set-up cell of a Chinese notebook: the English one, which then
    sets TRANSFORMER_COURSE_LANG=zh, so that the checkers answer in Chinese."""
    if source.count("import sys\n") != 1:
        raise TranslationError("the set-up cell has no `import sys` line")
    source = source.replace("import sys\n", "import os\nimport sys\n")
    return source.rstrip("\n") + LANGUAGE_LINES.rstrip("\n")


def is_check_cell(cell: dict) -> bool:
    """A code cell that calls a checker (`check_softmax(my_softmax)`)."""
    return cell["cell_type"] == "code" and bool(
        CHECK_CALL.search(cell_text(cell))
    )


def chinese_outputs(cell: dict) -> None:
    """A check cell's printed verdicts and messages, made Chinese from the
    checkers' catalog (`zh_outputs.translate_output`); what the cell printed
    itself stays as it is."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output["name"] == "stdout":
            text = cell_text({"source": output["text"]})
            output["text"] = translate_output(text).splitlines(keepends=True)


def is_redraw(cell: dict) -> bool:
    """A figure cell tagged zh-redraw: the Chinese edition draws it again."""
    tags = cell.get("metadata", {}).get("tags", [])
    return cell["cell_type"] == "code" and REDRAW_TAG in tags


def figure_hash(cell: dict) -> str:
    """The hash of what an English figure cell draws: its source and its
    outputs (a change to its drawing function shows in its figure)."""
    drawn = {"source": cell_text(cell), "outputs": cell.get("outputs", [])}
    text = json.dumps(drawn, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def redrawn(cell: dict) -> dict | None:
    """The record of a Chinese cell's own figure: {"from_sha256": the
    figure_hash of the English cell it was drawn from, "texts": the texts
    the figure drew, each once}; None if it shows the English figure."""
    return cell.get("metadata", {}).get("zh", {}).get("redrawn")


def is_current(drawing: dict, english: dict) -> bool:
    return drawing.get("from_sha256") == figure_hash(english)


def sync_notebook(english: dict, chinese: dict | None) -> dict:
    """The Chinese notebook made from `english`, keeping the translations of
    `chinese` (the previous Chinese notebook, or None)."""
    previous = {cell["id"]: cell for cell in (chinese or {}).get("cells", [])}
    kept = {id_: c for id_, c in previous.items() if translated_from(c)}
    ids = [cell.get("id") for cell in english["cells"]]
    if None in ids or len(set(ids)) != len(ids):
        raise TranslationError("every English cell needs an id, once")
    cells, untranslated, texts = [], 0, 0
    for cell in english["cells"]:
        cell = copy.deepcopy(cell)
        if is_setup(cell):
            cell["source"] = chinese_setup(cell_text(cell)).splitlines(
                keepends=True
            )
        if is_check_cell(cell):
            chinese_outputs(cell)
        record = {}  # the cell's metadata "zh"
        if prose(cell) is not None:
            texts += 1
            old = kept.get(cell["id"])
            # a translation is kept for a cell of the same kind that still
            # has prose (a caption whose figure went is dropped)
            if old and old["cell_type"] == cell["cell_type"] and prose(old):
                set_prose(cell, prose(old))
                record["source_sha256"] = translated_from(old)
            else:
                untranslated += 1
        drawing = redrawn(previous.get(cell["id"], {}))
        if is_redraw(cell) and drawing and is_current(drawing, cell):
            cell["outputs"] = copy.deepcopy(previous[cell["id"]]["outputs"])
            record["redrawn"] = drawing
        if record:
            cell["metadata"]["zh"] = record
        cells.append(cell)
    if untranslated:
        cells.insert(1, status_cell(untranslated, texts))
    out = {key: copy.deepcopy(value) for key, value in english.items()}
    out["cells"] = cells
    return out


def zh_path(english_path: Path, root: Path = ROOT) -> Path:
    return root / "zh" / english_path.relative_to(root)


def zh_config(root: Path = ROOT) -> str:
    """zh/_config.yml: the English configuration, for the Chinese edition."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = "一步一步搭建 Transformer"
    config["exclude_patterns"] = ["_build", "_static", "**.ipynb_checkpoints"]
    config["repository"]["path_to_book"] = "zh"
    config["html"]["baseurl"] += "zh/"
    config["bibtex_bibfiles"] = ["../book/references.bib"]
    sphinx = config["sphinx"]
    sphinx["local_extensions"] = {
        name: "../_ext" for name in sphinx["local_extensions"]
    }
    # the search index splits Chinese into words (jieba), the glossary's
    # Chinese terms among them
    sphinx["local_extensions"]["chinese_search"] = "../_ext"
    sphinx["config"]["language"] = "zh_CN"
    # the English book's style sheet, then the Chinese fonts
    sphinx["config"]["html_static_path"] = ["../_static", "_static"]
    sphinx["config"]["language_switch"] = {"root": "../", "label": "English"}
    header = (
        "# Written by tools/zh.py sync from ../_config.yml: edit that file (or\n"
        "# zh_config() in tools/zh.py for what differs here), then sync.\n"
    )
    return header + yaml.safe_dump(config, allow_unicode=True, sort_keys=False)


GLOSSARY = ZH / "glossary.yml"  # the Chinese glossary's translations
# a line of the English glossary outside its head and its glossary blocks
GLOSSARY_LINES = {"## Terms": "## 术语"}


def glossary_parts(text: str) -> tuple[str, list]:
    """The English glossary split into its head (everything before the first
    glossary block) and its body: lines, and entries (term lines, definition
    without its indent) where a glossary block defines one."""
    head, fence, rest = text.partition("```{glossary}")
    if not (fence and head.startswith("# Glossary")):
        raise TranslationError(
            "book/glossary.md no longer starts as zh.py expects: a head, "
            "then ```{glossary} blocks"
        )
    lines = (fence + rest).split("\n")
    body, inside, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            inside = line.startswith("```{glossary}")
        elif inside and line and not line.startswith((" ", ":")):
            terms = []
            while i < len(lines) and lines[i] and not lines[i][0] == " ":
                terms.append(lines[i])
                i += 1
            definition = []
            while i < len(lines) and lines[i].startswith("  "):
                definition.append(lines[i][2:])
                i += 1
            body.append((terms, "\n".join(definition)))
            continue
        body.append(line)
        i += 1
    return head, body


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


INTRODUCTION = ":introduction"  # the glossary's text above its entries (a
# term line never starts with ":": inside a glossary block that is an option)


def glossary_translations(root: Path = ROOT) -> dict:
    """zh/glossary.yml: {":introduction": {...}, first term: {...}, ...}, each
    {"text": Chinese, "source_sha256": hash of the English it translates}."""
    path = root / "zh" / "glossary.yml"
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def english_glossary(root: Path = ROOT) -> tuple[dict, list]:
    """The English texts to translate ({":introduction": head, first term:
    definition, ...}) and the glossary's body (see glossary_parts)."""
    head, body = glossary_parts(
        (root / "book" / "glossary.md").read_text(encoding="utf-8")
    )
    texts = {INTRODUCTION: head}
    texts.update({p[0][0]: p[1] for p in body if not isinstance(p, str)})
    return texts, body


CJK_CHARACTER = re.compile("[\u4e00-\u9fff]")


def chinese_terms(terms: list[str], definition: str) -> list[str]:
    """An entry's Chinese terms: its English definition's bold term, split at
    full-width parentheses and 、, the parts with Chinese characters that are
    not already term lines ("BLEU（双语评估替补）" -> ["双语评估替补"])."""
    bold = re.match(r"\*\*(.+?)\*\*", definition)
    if bold is None:
        raise TranslationError(
            f"book/glossary.md, entry {terms[0]!r}: its definition does not "
            "start with the bold Chinese term"
        )
    parts = [p.strip() for p in re.split("[（）、]", bold.group(1))]
    english = {t.lower() for t in terms}
    return [
        p for p in parts if CJK_CHARACTER.search(p) and p.lower() not in english
    ]


def d2l_terms(term: str, entry: dict) -> list[str]:
    """The terms zh.d2l.ai uses instead of ours (an entry's `d2l` list)."""
    names = entry.get("d2l", [])
    if not (
        isinstance(names, list)
        and all(isinstance(n, str) and CJK_CHARACTER.search(n) for n in names)
    ):
        raise TranslationError(
            f"zh/glossary.yml, entry {term!r}: d2l must be a list of Chinese "
            f"terms, got {names!r}"
        )
    return names


def with_d2l(text: str, names: list[str]) -> str:
    """A definition naming zh.d2l.ai's terms after its bold term:
    "**层归一化**（zh.d2l.ai 作“层规范化”）。..."."""
    if not names:
        return text
    note = "、".join(f"“{n}”" for n in names)
    bold = re.match(r"\*\*(.+?)\*\*", text)
    if bold is None:
        raise TranslationError(
            f"a definition that names zh.d2l.ai's terms must start with the "
            f"bold Chinese term: {text[:40]!r}"
        )
    return f"{bold.group(0)}（zh.d2l.ai 作{note}）{text[bold.end() :]}"


def glossary_status(untranslated: int, total: int) -> str:
    return (
        f"**本页的翻译尚未完成。** {total} 条释义中还有 {untranslated} 条是"
        "英文原文，翻译完成后会替换。\n"
    )


def zh_glossary(root: Path = ROOT) -> str:
    """The Chinese glossary: the English one's term lines (the targets of
    every {term} link), with its head and definitions translated where
    zh/glossary.yml has them, in English where not (a note says how many)."""
    english, body = english_glossary(root)
    found = glossary_translations(root)
    out, untranslated, total = [], 0, 0
    seen: dict[str, str] = {}  # every term line (lower case) -> its entry
    for part in body:
        if not isinstance(part, str):
            for term in part[0]:
                seen[term.lower()] = part[0][0]
        if isinstance(part, str):
            if part.strip() and not part.startswith(("```", ":")):
                if part not in GLOSSARY_LINES:
                    raise TranslationError(
                        f"book/glossary.md: no translation for {part!r} "
                        "(add it to GLOSSARY_LINES in tools/zh.py)"
                    )
                part = GLOSSARY_LINES[part]
            out.append(part)
            continue
        terms, definition = part
        total += 1
        entry = found.get(terms[0])
        names = chinese_terms(terms, definition)
        if entry is None:
            untranslated += 1
        else:
            d2l = d2l_terms(terms[0], entry)
            names += [n for n in d2l if n not in names]
            definition = with_d2l(entry["text"].rstrip("\n"), d2l)
        for name in names:
            if seen.setdefault(name.lower(), terms[0]) != terms[0]:
                raise TranslationError(
                    f"glossary: {name!r}, a Chinese term of {terms[0]!r}, is "
                    f"already a term of {seen[name.lower()]!r}"
                )
        out += (
            terms
            + names
            + ["  " + line if line else "" for line in definition.split("\n")]
        )
    head = found.get(INTRODUCTION, {"text": english[INTRODUCTION]})["text"]
    if untranslated:
        head = (
            head.rstrip("\n")
            + "\n\n"
            + glossary_status(untranslated, total)
            + "\n"
        )
    return head + "\n".join(out)


def glossary_report(root: Path = ROOT) -> tuple[list[str], int]:
    """The glossary's translations out of date, and its untranslated count."""
    english, _ = english_glossary(root)
    found = glossary_translations(root)
    out_of_date, untranslated = [], 0
    for term, text in english.items():
        entry = found.get(term)
        if entry is None:
            untranslated += 1
        elif entry.get("source_sha256") != text_hash(text):
            out_of_date.append(f"out of date: glossary, entry {term!r}")
    out_of_date += [
        f"out of date: glossary, entry {term!r} is no longer in book/glossary.md"
        for term in found
        if term not in english
    ]
    return out_of_date, untranslated


def mark_glossary(terms: list[str], root: Path = ROOT) -> list[str]:
    """Record the English hash in zh/glossary.yml: for the entries named (by
    their first term, or ":introduction"), or else for every translation
    without a record yet."""
    english, _ = english_glossary(root)
    found = glossary_translations(root)
    unknown = set(terms) - set(english)
    if unknown:
        raise TranslationError(
            f"book/glossary.md has no entry {sorted(unknown)}"
        )
    recorded = []
    for term, entry in found.items():
        if term not in english:
            continue
        if term in terms if terms else "source_sha256" not in entry:
            entry["text"] = unwrap(entry["text"])
            entry["source_sha256"] = text_hash(english[term])
            recorded.append(term)
    write_glossary_translations(found, root)
    return recorded


class LiteralDumper(yaml.SafeDumper):
    """Writes a text of several lines as a YAML literal block, as it reads."""


LiteralDumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def write_glossary_translations(found: dict, root: Path = ROOT) -> None:
    text = (
        "# The Chinese glossary (zh/book/glossary.md is written from this file\n"
        "# and book/glossary.md by tools/zh.py sync): for the introduction and each\n"
        "# entry, by its first term, the Chinese text and the sha256 of the\n"
        "# English text it translates (tools/zh.py mark zh/glossary.yml).\n"
        '# ":introduction" is the text above the entries.\n'
    )
    text += yaml.dump(
        found,
        Dumper=LiteralDumper,
        allow_unicode=True,
        sort_keys=False,
        width=10**6,
    )
    (root / "zh" / "glossary.yml").write_text(text, encoding="utf-8")


def planned_files(root: Path = ROOT) -> dict[Path, str]:
    """Every file `sync` writes, with its text."""
    files = {root / "zh" / "_config.yml": zh_config(root)}
    glossary = root / "book" / "glossary.md"
    files[zh_path(glossary, root)] = zh_glossary(root)
    for path in chapters(root):
        target = zh_path(path, root)
        previous = read_notebook(target) if target.exists() else None
        chinese = sync_notebook(read_notebook(path), previous)
        files[target] = notebook_text(chinese)
    return files


def sync(root: Path = ROOT) -> list[Path]:
    """Write zh/ from the English book; the files that changed."""
    changed = []
    for path, text in planned_files(root).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def report(root: Path = ROOT) -> dict[str, list[str]]:
    """Per chapter: the cells out of date ("out of date: chapter 6, cell
    4f2a..."), the figures to draw again in Chinese ("to redraw: chapter 3,
    cell 0438..."), and the count of untranslated cells."""
    out_of_date, untranslated, to_redraw = [], [], []
    for path in chapters(root):
        target = zh_path(path, root)
        if not target.exists():
            untranslated.append(f"{chapter_name(path)}: no Chinese notebook")
            continue
        english = {c["id"]: c for c in read_notebook(path)["cells"]}
        to_redraw += [
            f"to redraw: {chapter_name(path)}, cell {cell_id}"
            for cell_id in figures_to_redraw(path, root)
        ]
        missing = 0
        for cell in read_notebook(target)["cells"]:
            if prose(cell) is None or cell["id"] == STATUS_ID:
                continue
            recorded = translated_from(cell)
            if recorded is None:
                missing += 1
            elif recorded != english_hash(english[cell["id"]]):
                out_of_date.append(
                    f"out of date: {chapter_name(path)}, cell {cell['id']}"
                )
        if missing:
            untranslated.append(f"{chapter_name(path)}: {missing} cells")
    stale, missing = glossary_report(root)
    out_of_date += stale
    if missing:
        untranslated.append(f"glossary: {missing} of its head and entries")
    return {
        "out of date": out_of_date,
        "to redraw": to_redraw,
        "untranslated": untranslated,
    }


def mark(path: Path, ids: list[str], root: Path = ROOT) -> list[str]:
    """Record the English hash in the translated cells of a Chinese notebook
    (see the module's docstring); the ids recorded."""
    path = path.resolve()
    english_path = root / path.relative_to(root / "zh")
    english = {c["id"]: c for c in read_notebook(english_path)["cells"]}
    notebook = read_notebook(path)
    unknown = set(ids) - {c["id"] for c in notebook["cells"]}
    if unknown:
        raise TranslationError(f"{path.name} has no cell {sorted(unknown)}")
    recorded = []
    for cell in notebook["cells"]:
        if prose(cell) is None or cell["id"] == STATUS_ID:
            continue
        source = english[cell["id"]]
        new = (
            cell["id"] in ids
            if ids
            else translated_from(cell) is None and prose(cell) != prose(source)
        )
        if new:
            set_prose(cell, unwrap(prose(cell)))
            record = cell.setdefault("metadata", {}).setdefault("zh", {})
            record["source_sha256"] = english_hash(source)
            recorded.append(cell["id"])
    write_notebook(path, notebook)
    return recorded


def figures_to_redraw(path: Path, root: Path = ROOT) -> list[str]:
    """The ids of the zh-redraw cells of the English notebook `path` whose
    Chinese figure is missing or was drawn from another English cell."""
    target = zh_path(path, root)
    chinese = (
        {c["id"]: c for c in read_notebook(target)["cells"]}
        if target.exists()
        else {}
    )
    return [
        cell["id"]
        for cell in read_notebook(path)["cells"]
        if is_redraw(cell)
        and not is_current(redrawn(chinese.get(cell["id"], {})) or {}, cell)
    ]


# run in the kernel around each zh-redraw cell: every text a figure draws is
# recorded (matplotlib's Text.draw), then printed as JSON
RECORD_TEXTS = """\
import matplotlib.text as _zh_text
if not hasattr(_zh_text.Text, "_zh_draw"):
    _zh_text.Text._zh_draw = _zh_text.Text.draw
    def _zh_record(self, renderer, *args, **kwargs):
        if self.get_visible() and self.get_text():
            _zh_text.Text._zh_drawn.append(self.get_text())
        return _zh_text.Text._zh_draw(self, renderer, *args, **kwargs)
    _zh_text.Text.draw = _zh_record
_zh_text.Text._zh_drawn = []
"""
PRINT_TEXTS = (
    "import json as _zh_json, matplotlib.text as _zh_text\n"
    "print(_zh_json.dumps(_zh_text.Text._zh_drawn))"
)


def execute_figures(notebook: dict, ids: list[str], folder: Path) -> dict:
    """Run `notebook`'s code cells, from the first to the last of `ids`, in
    a fresh kernel in `folder` with TRANSFORMER_COURSE_LANG=zh; {id: (the
    cell's outputs, the texts its figures drew)} for each of `ids`."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.reads(notebook_text(notebook), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    last = max(i for i, c in enumerate(code) if c.id in ids)
    env = {**os.environ, "TRANSFORMER_COURSE_LANG": "zh"}
    env.setdefault("OMP_NUM_THREADS", "1")
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=False
    )
    found = {}
    with client.setup_kernel(env=env, cwd=str(folder)):
        for index, cell in enumerate(code[: last + 1]):
            if cell.id not in ids:
                client.execute_cell(cell, index)
                continue
            probe = nbformat.v4.new_code_cell(RECORD_TEXTS)
            client.execute_cell(probe, index, store_history=False)
            client.execute_cell(cell, index)
            probe = nbformat.v4.new_code_cell(PRINT_TEXTS)
            client.execute_cell(probe, index, store_history=False)
            # once each (a figure saved to fit its texts is drawn twice)
            texts = list(dict.fromkeys(json.loads(probe.outputs[0]["text"])))
            # as nbformat writes a notebook: plain JSON, keys sorted
            outputs = json.loads(json.dumps(cell.outputs, sort_keys=True))
            found[cell.id] = (outputs, texts)
    return found


def _checked_figure(name: str, english: dict, outputs: list, texts: list):
    """Refuse a Chinese figure that is no figure, the English one, has no
    Chinese text (its drawing function ignores the reader's language) or
    warned of a missing glyph (drawn as a box)."""
    if not any("image/png" in o.get("data", {}) for o in outputs):
        raise TranslationError(
            f"{name} is tagged {REDRAW_TAG} but drew no figure"
        )
    if outputs == english.get("outputs") or not any(
        CJK_CHARACTER.search(text) for text in texts
    ):
        raise TranslationError(
            f"{name} drew no Chinese: does its drawing function take the "
            "language from transformer_course.language?"
        )
    glyphs = [
        line
        for output in outputs
        if output.get("name") == "stderr"
        for line in "".join(output.get("text", "")).splitlines()
        if "does not have a glyph" in line
    ]
    if glyphs:
        raise TranslationError(
            f"{name} drew a character that its font lacks (mathtext, $...$, "
            f"has no Chinese glyphs): {glyphs[0]}"
        )


def redraw(paths: list[Path] | None = None, root: Path = ROOT) -> list[str]:
    """Draw again in Chinese the figures of the zh-redraw cells (of the
    English notebooks `paths`, or else of every notebook with a figure to
    redraw), after a sync, and keep them in the Chinese notebooks; the
    cells drawn ("chapter 3, cell 0438...")."""
    sync(root)
    if paths is None:
        paths = [p for p in chapters(root) if figures_to_redraw(p, root)]
    done = []
    for path in paths:
        path = path.resolve()
        english = {c["id"]: c for c in read_notebook(path)["cells"]}
        ids = [i for i, c in english.items() if is_redraw(c)]
        if not ids:
            raise TranslationError(
                f"{path.name} has no cell tagged {REDRAW_TAG}"
            )
        target = zh_path(path, root)
        chinese = read_notebook(target)
        drawn = execute_figures(chinese, ids, path.parent)
        for cell in chinese["cells"]:
            if cell["id"] not in drawn:
                continue
            outputs, texts = drawn[cell["id"]]
            name = f"{chapter_name(path)}, cell {cell['id']}"
            _checked_figure(name, english[cell["id"]], outputs, texts)
            cell["outputs"] = outputs
            cell["metadata"].setdefault("zh", {})["redrawn"] = {
                "from_sha256": figure_hash(english[cell["id"]]),
                "texts": texts,
            }
            done.append(name)
        write_notebook(target, chinese)
    return done


def publish(root: Path = ROOT) -> Path:
    """Replace _build/html/zh with the Chinese book's build."""
    built, target = root / "zh" / "_build" / "html", root / "_build" / "html"
    for folder, command in (
        (built, "jupyter-book build zh"),
        (target, "jupyter-book build ."),
    ):
        if not (folder / "index.html").exists():
            raise TranslationError(f"{folder} is not built: run {command}")
    shutil.rmtree(target / "zh", ignore_errors=True)
    shutil.copytree(built, target / "zh")
    return target / "zh"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("sync", help="regenerate zh/ from the English book")
    commands.add_parser("status", help="translated, untranslated, out of date")
    marking = commands.add_parser("mark", help="record translated cells")
    marking.add_argument("notebook", type=Path, help="or zh/glossary.yml")
    marking.add_argument("ids", nargs="*", help="cell ids (glossary: terms)")
    drawing = commands.add_parser(
        "redraw", help="draw the zh-redraw cells' figures again, in Chinese"
    )
    drawing.add_argument(
        "notebooks", nargs="*", type=Path, help="English notebooks"
    )
    commands.add_parser("publish", help="zh/_build/html -> _build/html/zh")
    commands.add_parser(
        "messages", help="the checkers' message catalog: extract, compile"
    )
    args = parser.parse_args(argv)
    if args.command == "messages":
        total, untranslated = checker_messages.write()
        print(f"{total} templates, {untranslated} untranslated")
        print(f"wrote {checker_messages.PO.relative_to(ROOT)} and its .mo")
        return 1 if untranslated else 0
    if args.command == "publish":
        print(f"published {publish().relative_to(ROOT)}")
    elif args.command == "redraw":
        cells = redraw(args.notebooks or None)
        print("drawn in Chinese:", ", ".join(cells) or "nothing to redraw")
    elif args.command == "sync":
        for path in sync():
            print(f"wrote {path.relative_to(ROOT)}")
    elif args.command == "mark" and args.notebook.resolve() == GLOSSARY:
        print("recorded:", ", ".join(mark_glossary(args.ids)) or "none")
    elif args.command == "mark":
        print("recorded:", " ".join(mark(args.notebook, args.ids)) or "none")
    else:
        found = report()
        for kind, lines in found.items():
            print(f"{kind}: {len(lines) or 'none'}")
            for line in lines:
                print("   ", line)
        return 1 if found["out of date"] or found["to redraw"] else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
