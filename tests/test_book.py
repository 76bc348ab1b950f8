"""The book's own consistency: table of contents, committed outputs, Colab set-up, exercises."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import (
    ROOT,
    code_cells,
    load_notebook,
    source,
    toc_files,
    toc_notebooks,
)

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def test_toc_lists_every_chapter_and_only_existing_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    listed = toc_files()
    for name in [toc["root"], *listed]:
        assert any(
            (ROOT / f"{name}{ext}").exists() for ext in (".md", ".ipynb")
        ), name
    chapters = sorted(
        p.relative_to(ROOT).with_suffix("").as_posix()
        for p in ROOT.glob("book/*.ipynb")
        if not p.name.startswith("_")  # _package_docstring.ipynb: not a chapter
    )
    assert [name for name in listed if name in chapters] == chapters, (
        "every notebook in book/ must be listed in _toc.yml, in order"
    )

    assert len(listed) == len(set(listed)), "a file is listed twice in _toc.yml"


def test_chapters_are_numbered_from_one():
    """Chapters 1-9 sit in the one numbered part; chapter 0 and the glossary do not."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = [part for part in toc["parts"] if part.get("numbered")]
    assert len(numbered) == 1, (
        "exactly one numbered part, so numbers run 1, 2, ..."
    )
    files = [entry["file"] for entry in numbered[0]["chapters"]]
    for number, name in enumerate(files, start=1):
        assert Path(name).name.startswith(f"{number:02d}_"), (
            f"{name} would be shown as chapter {number}"
        )


def test_notebook_is_committed_executed_in_order(notebook_path):
    cells = code_cells(load_notebook(notebook_path))
    counts = [cell["execution_count"] for cell in cells]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{notebook_path.name}: execution counts {counts}; re-run it top to bottom with a fresh kernel"
    )
    assert not any("execution" in cell["metadata"] for cell in cells), (
        f"{notebook_path.name} carries execution timestamps; execute with "
        "--ExecutePreprocessor.record_timing=False (see the README)"
    )


def test_notebook_has_no_errors_and_no_stray_stderr(notebook_path):
    """Policy: nbval compares stderr too, so a compared cell must write nothing to it.

    Progress bars and other output that cannot be stable belong in a cell tagged
    `nbval-ignore-output`, followed by an assert on what the prose claims.
    """
    for index, cell in enumerate(code_cells(load_notebook(notebook_path))):
        tags = cell.get("metadata", {}).get("tags", [])
        for output in cell["outputs"]:
            assert output["output_type"] != "error", f"code cell {index} raised"
            if output.get("name") == "stderr":
                assert "nbval-ignore-output" in tags, (
                    f"{notebook_path.name} code cell {index} writes to stderr: {output['text']!r}"
                )


def expected_setup_cell() -> str:
    """The first code cell of every chapter; every line fits the website's 80 columns.

    On Colab it clones the repository (chapters 6-9 read results committed in
    benchmarks/results/, as they do in a local checkout), moves into its book/
    folder and installs the library from the clone: pyproject.toml's
    dependencies are all a chapter needs (tools/colab.py checks it). IPython
    expands `{repo}` and `{book}` in the `!` and `%` lines; a failed command
    there only prints, and sets `_exit_code`, which the last line checks.
    """
    repository = CONFIG["repository"]
    url = repository["url"].rstrip("/")
    folder = url.rsplit("/", 1)[1]
    clone = f"git clone --quiet --depth 1 --branch {repository['branch']}"
    return (
        "# Set-up for Google Colab: fetch the book (chapters read results kept\n"
        "# beside them) and install its library. Elsewhere this does nothing.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    repo = "{url}"\n'
        f'    book = "/content/{folder}"\n'
        f"    !test -d {{book}} || {clone} {{repo}} {{book}}\n"
        "    %cd {book}/book\n"
        "    %pip install --quiet {book}\n"
        '    assert _exit_code == 0, "installing the book failed: see above"'
    )


def test_colab_setup_cell_matches_config(notebook_path):
    first = source(code_cells(load_notebook(notebook_path))[0])
    expected = expected_setup_cell()
    assert first == expected, (
        f"{notebook_path.name}: the first code cell must be the Colab set-up cell "
        f"built from _config.yml's repository block:\n\n{expected}\n\n"
        f"Rewrite it with: python tests/test_book.py --fix-setup-cell "
        f"book/{notebook_path.name}"
    )


def test_launch_buttons_and_repository_are_configured():
    assert (
        CONFIG["launch_buttons"]["colab_url"]
        == "https://colab.research.google.com"
    )
    assert CONFIG["repository"]["url"].startswith("https://github.com/")
    assert CONFIG["repository"]["branch"] == "main"
    assert CONFIG["execute"]["execute_notebooks"] == "off"


# A section a reader finishes in one sitting (issue 41): at most this many cells,
# and words of prose, counted as runs of Latin letters in the markdown cells,
# outside code blocks, display math and HTML comments (numbers are not words)
MAX_CELLS, MAX_PROSE_WORDS = 130, 6000
PROSE_SKIPPED = re.compile(r"```.*?```|\$\$.*?\$\$|<!--.*?-->", re.S)
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def prose_words(markdown: str) -> int:
    return len(WORD.findall(PROSE_SKIPPED.sub(" ", markdown)))


def test_prose_words_leave_out_code_math_and_numbers():
    text = "A *short* note, 2,448 times.\n```python\nx = 1\n```\n$$a + b$$ it's"
    assert prose_words(text) == 5  # A short note times it's


def test_a_section_is_read_in_one_sitting(notebook_path):
    cells = load_notebook(notebook_path)["cells"]
    words = sum(
        prose_words(source(c)) for c in cells if c["cell_type"] == "markdown"
    )
    assert len(cells) <= MAX_CELLS, f"{len(cells)} cells: split the section"
    assert words <= MAX_PROSE_WORDS, (
        f"{words:,} words of prose: split or tighten"
    )


def test_exercise_solutions_are_folded_and_checked(notebook_path):
    cells = code_cells(load_notebook(notebook_path))
    for index, cell in enumerate(cells):
        text = source(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        if text.startswith("# @title Solution"):
            assert "hide-input" in tags, (
                f"solution in code cell {index} must be tagged hide-input"
            )
            assert re.search(r"^check_\w+\(", text, re.MULTILINE), (
                f"solution in code cell {index} must end by calling its checker"
            )
            outputs = "".join(
                source({"source": o.get("text", "")}) for o in cell["outputs"]
            )
            assert outputs.startswith("Correct:"), (
                f"solution in code cell {index} did not pass"
            )
        elif "hide-input" in tags:
            raise AssertionError(
                f"code cell {index} is folded but is not a '# @title Solution' cell"
            )


def test_figures_have_caption_and_name(notebook_path):
    for index, cell in enumerate(code_cells(load_notebook(notebook_path))):
        if any(
            "image/png" in output.get("data", {}) for output in cell["outputs"]
        ):
            figure = (
                cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            )
            assert figure.get("caption") and figure.get("name"), (
                f"{notebook_path.name} code cell {index} shows a figure without caption and name"
            )


def test_every_toc_notebook_is_collected_by_the_test_command():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:xdist",
            "book",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    collected = result.stdout
    for path in toc_notebooks():
        assert f"{path.relative_to(ROOT).as_posix()}::" in collected, (
            f"{path.name} is in _toc.yml but the test command does not collect it:\n{collected}"
        )


HAND_WRITTEN = [
    "__init__.py"
]  # and the exercises/ subpackage, which nbdev never writes


def test_package_is_in_sync_with_notebooks(tmp_path):
    """Export the notebooks into a scratch copy: the package must come out exactly as committed."""
    scratch = tmp_path / "book"
    shutil.copytree(ROOT / "book", scratch / "book")
    shutil.copy(ROOT / "pyproject.toml", scratch)
    (scratch / "transformer_course").mkdir()
    for name in HAND_WRITTEN:
        shutil.copy(
            ROOT / "transformer_course" / name, scratch / "transformer_course"
        )
    shutil.copytree(ROOT / "tools", scratch / "tools")
    for _ in range(2):  # twice: a second export must not repeat any cell
        subprocess.run(
            [sys.executable, "tools/export.py"],
            cwd=scratch,
            check=True,
            capture_output=True,
        )

    def modules(folder: Path) -> dict[str, str]:
        return {p.name: p.read_text() for p in sorted(folder.glob("*.py"))}

    exported, committed = (
        modules(scratch / "transformer_course"),
        modules(ROOT / "transformer_course"),
    )
    assert sorted(exported) == sorted(committed), (
        "run python tools/export.py and commit its output"
    )
    for name, text in exported.items():
        assert text == committed[name], (
            f"transformer_course/{name} differs from the notebooks: run python tools/export.py"
        )


def test_code_is_ruff_clean():
    # nbdev writes its modules in its own style, so pyproject.toml leaves them out of
    # `ruff format`; the hand-written ones are named here to be formatted all the same.
    # Named file by file: ruff's exclude pattern transformer_course/*.py also
    # matches transformer_course/exercises/*.py when a folder is given.
    hand_written = [f"transformer_course/{name}" for name in HAND_WRITTEN]
    hand_written += sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "transformer_course" / "exercises").glob("*.py")
    )
    for command in (
        ["ruff", "check", "."],
        ["ruff", "format", "--check", ".", *hand_written],
    ):
        result = subprocess.run(
            [sys.executable, "-m", *command],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_package_has_the_public_names():
    import transformer_course

    for name in ["get_device", *transformer_course.__all__]:
        assert hasattr(transformer_course, name), name
    assert (
        Path(transformer_course.__file__).parent == ROOT / "transformer_course"
    )


def test_package_docstring_lists_the_public_names_by_chapter():
    """help(transformer_course) starts with one line per chapter naming its names."""
    import transformer_course

    lines = re.findall(
        r"^- chapter (\d+) \(.+?\): (.+)$",
        transformer_course.__doc__,
        re.MULTILINE,
    )
    chapters = [int(number) for number, _ in lines]
    listed = [name.strip() for _, names in lines for name in names.split(",")]
    how = "run python tests/test_book.py --fix-package-docstring, then python tools/export.py"
    assert chapters == sorted(set(chapters)), (
        f"one line per chapter, in order: {how}"
    )
    assert sorted(listed) == sorted(transformer_course.__all__), (
        f"the docstring lists {sorted(set(listed) - set(transformer_course.__all__))}"
        f" not in __all__ and misses "
        f"{sorted(set(transformer_course.__all__) - set(listed))}: {how}"
    )


def test_import_writes_nothing_to_stderr_and_loads_no_benchmark_code():
    """Importing the package is silent and light (issue 11, item 2).

    nbval compares stderr, so a warning at import time (a CUDA build of torch warns
    from torch.utils.benchmark on a machine without a GPU) fails every chapter there.
    """
    code = (
        "import sys, transformer_course, transformer_course.exercises\n"
        "print(sorted(m for m in sys.modules if m.startswith('torch.utils.bench')))"
    )
    result = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", f"import wrote to stderr:\n{result.stderr}"
    assert result.stdout.strip() == "[]", (
        f"import transformer_course loads {result.stdout.strip()}: "
        "benchmark code must not be imported by the package's import"
    )


def fix_setup_cell(path: Path) -> None:
    """Rewrite a notebook's first code cell as the expected set-up cell."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    cell = next(c for c in notebook.cells if c.cell_type == "code")
    cell.source = expected_setup_cell()
    nbformat.write(notebook, path)


README = (ROOT / "README.md").read_text(encoding="utf-8")


def readme_commands() -> list[str]:
    """The command lines of the README's "Two commands" block."""
    section = README.split("## Two commands", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [
        line
        for line in block.splitlines()
        if line.strip() and not line.startswith("#")
    ]


def test_ci_runs_exactly_the_readme_commands():
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert commands[0].startswith(
        "python3 -m venv .venv && . .venv/bin/activate"
    )
    assert commands[1].startswith(". .venv/bin/activate && ")
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    found = [line for line in ci_lines if line in commands]
    assert found == commands, (
        ".ci/run must run the README's two commands verbatim"
    )


def test_readme_marks_unwritten_chapters_as_planned():
    section = README.split("## Chapters", 1)[1].split("\n## ", 1)[0]
    entries = re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", section, re.M | re.S)
    assert entries, "the README lists the chapters"
    written = {int(path.name[:2]) for path in toc_notebooks()}
    for number, entry in entries:
        if int(number) not in written:
            assert "(planned)" in entry, f"chapter {number} is not written yet"


PACKAGE_DOC = ROOT / "book" / "_package_docstring.ipynb"


def module_chapters() -> dict[str, tuple[int, str, tuple[int, int]]]:
    """{module: (chapter number, chapter title, (section, index of its first
    cell))} for every module exported from a chapter, read from the header
    nbdev writes ("File to edit: ../book/07_training.ipynb") and its first
    cell marker; section 0 for a chapter that is one notebook."""
    chapters = {}
    for path in sorted((ROOT / "transformer_course").glob("*.py")):
        text = path.read_text()
        notebook = re.search(
            r"File to edit: \.\./book/((\d\d)_\w+\.ipynb)", text
        )
        if not notebook:
            continue  # hand-written: __init__.py, _modidx.py
        cells = load_notebook(ROOT / "book" / notebook.group(1))["cells"]
        title = next(
            m.group(1).strip()
            for cell in cells
            if (m := re.search(r"^# (.+)$", source(cell), re.MULTILINE))
            and cell["cell_type"] == "markdown"
        )
        # a section of a chapter (09_1_new_attention.ipynb): the chapter's
        # title from its page (09_beyond_the_paper.md), the sections in order
        section = re.match(r"\d\d_(\d+)_", notebook.group(1))
        if section:
            page = next((ROOT / "book").glob(f"{notebook.group(2)}_*.md"))
            title = re.search(r"^# (.+)$", page.read_text(), re.M)[1].strip()
        marker = r"^# %% \.\./book/\S+ #(\S+)$"  # a cell; not "# %% auto"
        first_id = re.search(marker, text, re.MULTILINE)[1]
        ids = [cell.get("id") for cell in cells]
        chapters[path.stem] = (
            int(notebook.group(2)),
            title,
            (int(section[1]) if section else 0, ids.index(first_id)),
        )
    return chapters


def package_docstring_lines() -> list[str]:
    """One line per chapter naming its public names, from `__all__` and the chapters.

    A name belongs to the chapter whose notebook exports the module defining it;
    a chapter's names follow its modules' order in the notebook, then each
    module's `__all__`.
    """
    import importlib

    import transformer_course

    chapters = module_chapters()
    names: dict[int, list[tuple]] = {}
    titles = {}
    for name in transformer_course.__all__:
        module_name = getattr(transformer_course, name).__module__.split(".")[
            -1
        ]
        number, title, first_cell = chapters[module_name]
        module = importlib.import_module(f"transformer_course.{module_name}")
        order = list(getattr(module, "__all__", []))
        rank = order.index(name) if name in order else len(order)
        names.setdefault(number, []).append((first_cell, rank, name))
        titles[number] = title
    return [
        f"- chapter {n} ({titles[n]}): "
        + ", ".join(name for *_, name in sorted(names[n]))
        for n in sorted(names)
    ]


def fix_package_docstring() -> None:
    """Rewrite the chapter lines of book/_package_docstring.ipynb from `__all__`."""
    import nbformat

    notebook = nbformat.read(PACKAGE_DOC, as_version=4)
    cell = next(c for c in notebook.cells if c.source.startswith("#| export"))
    lines = cell.source.splitlines()
    chapter_lines = [
        i for i, line in enumerate(lines) if line.startswith("- chapter ")
    ]
    first, last = chapter_lines[0], chapter_lines[-1]
    lines[first : last + 1] = package_docstring_lines()
    cell.source = "\n".join(lines)
    nbformat.write(notebook, PACKAGE_DOC)


USAGE = """usage:
  python tests/test_book.py --fix-setup-cell NOTEBOOK...
      rewrite each notebook's first code cell as the Colab set-up cell
  python tests/test_book.py --fix-package-docstring
      rewrite the chapter lines of book/_package_docstring.ipynb from __all__;
      then run python tools/export.py to write them into transformer_course/__init__.py"""


if __name__ == "__main__":
    if sys.argv[1:2] == ["--fix-setup-cell"] and len(sys.argv) > 2:
        for name in sys.argv[2:]:
            fix_setup_cell(Path(name))
            print(f"{name}: set-up cell rewritten")
    elif sys.argv[1:] == ["--fix-package-docstring"]:
        fix_package_docstring()
        print(
            f"{PACKAGE_DOC.relative_to(ROOT)} rewritten; now run python tools/export.py"
        )
    else:
        sys.exit(USAGE)
