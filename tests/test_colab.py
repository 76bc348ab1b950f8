"""Colab, simulated (tools/colab.py): its runtime description, the pieces that
rewrite and read the chapters, the fast form on every chapter, and the "On
Colab" note of each chapter against the full form's measured times."""

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import colab  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))


def read(path):
    return nbformat.read(path, as_version=4)


# --- the runtime description ---------------------------------------------------


def test_runtime_description_is_pinned_and_sourced():
    runtime = colab.load_runtime()
    assert "googlecolab/backend-info" in runtime["source"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", runtime["commit_date"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", runtime["taken"])
    assert runtime["python"].startswith("3.13.")
    torch = runtime["torch"]
    assert torch["simulated"] == torch["cpu_runtime"].split("+")[0]
    assert torch["gpu_runtime"].split("+")[0] == torch["simulated"]
    # the packages the book touches are there, at exact versions
    for name in ("numpy", "matplotlib", "nltk", "tokenizers", "tqdm", "scipy"):
        assert re.fullmatch(r"\d[\w.+]*", runtime["preinstalled"][name])
    assert {"gensim", "sacrebleu", "polib", "num2words"} <= set(
        runtime["not_preinstalled"]
    )


@pytest.mark.parametrize(
    "change, complaint",
    [
        (lambda r: r.pop("commit"), "missing"),
        (lambda r: r.update(python="3.13"), "3.13.15"),
        (lambda r: r["preinstalled"].update(numpy=">=2"), "numpy"),
        (lambda r: r["preinstalled"].update(torch="2.11.0"), "torch block"),
    ],
)
def test_load_runtime_refuses_a_loose_description(tmp_path, change, complaint):
    runtime = json.loads(colab.RUNTIME.read_text())
    change(runtime)
    path = tmp_path / "runtime.json"
    path.write_text(json.dumps(runtime))
    with pytest.raises(colab.SimulationError, match=complaint):
        colab.load_runtime(path)


def test_changed_packages_finds_every_departure_from_colab():
    runtime = {
        "preinstalled": {"numpy": "2.1.3", "scipy": "1.16.3", "tqdm": "4.67.3"},
        "torch": {"simulated": "2.11.0"},
    }
    same = {"numpy": "2.1.3", "scipy": "1.16.3", "tqdm": "4.67.3"}
    assert colab.changed_packages(dict(same, torch="2.11.0"), runtime) == {}
    installed = dict(same, numpy="2.4.6", scipy="1.13.1", torch="2.11.0")
    del installed["tqdm"]
    assert colab.changed_packages(installed, runtime) == {
        "numpy": ("2.1.3", "2.4.6"),  # an upgrade: a restart on Colab
        "scipy": ("1.16.3", "1.13.1"),  # a downgrade
        "tqdm": ("4.67.3", None),  # gone
    }


def test_read_freeze_takes_versions_from_direct_references():
    text = (
        "# generated\n"
        "numpy==2.1.3\n"
        "torch @ https://example.org/whl/cpu/torch-2.11.0%2Bcpu-cp313-cp313-"
        "manylinux_2_28_x86_64.whl\n"
        "Jinja2==3.1.6\n"
    )
    assert colab.read_freeze(text) == {
        "numpy": "2.1.3",
        "torch": "2.11.0+cpu",
        "jinja2": "3.1.6",
    }


# --- rewriting and reading the chapters ------------------------------------------


def setup_source(path=CHAPTERS[0]):
    notebook = read(path)
    return notebook.cells[colab.setup_cell_index(notebook)].source


def test_setup_cell_is_pointed_at_the_snapshot_and_scratch_folder():
    pointed = colab.point_setup_cell(
        setup_source(), "file:///tmp/origin.git", "/tmp/x/transformer-book"
    )
    assert '    repo = "file:///tmp/origin.git"\n' in pointed
    assert '    book = "/tmp/x/transformer-book"\n' in pointed
    assert "github.com" not in pointed and "/content" not in pointed
    # the rest of the cell is the chapter's own
    assert pointed.count("\n") == setup_source().count("\n")


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.replace('book = "', 'folder = "'),  # no book
        lambda s: s + '\n    repo = "again"',  # two repos
    ],
)
def test_point_setup_cell_refuses_a_cell_it_cannot_point(edit):
    with pytest.raises(colab.SimulationError, match="once"):
        colab.point_setup_cell(edit(setup_source()), "file:///o", "/b")


def test_a_chapter_without_the_setup_cell_is_refused():
    notebook = read(CHAPTERS[0])
    notebook.cells = [
        c for c in notebook.cells if colab.SETUP_MARKER not in c.source
    ]
    with pytest.raises(colab.SimulationError, match="set-up cell"):
        colab.setup_cell_index(notebook)


def test_import_statements_include_lazy_ones_and_skip_guarded_ones():
    code = (
        "import numpy as np\n"
        "from . import sibling\n"
        "from __future__ import annotations\n"
        "def f():\n"
        "    from num2words import num2words\n"
        "try:\n"
        "    import optional_thing\n"
        "except ImportError:\n"
        "    optional_thing = None\n"
        "import numpy as np\n"
    )
    assert colab.import_statements(code) == [
        "import numpy as np",
        "from num2words import num2words",
    ]


def test_magics_are_python_before_imports_are_read():
    code = colab.python_of_cell(
        "%config InlineBackend.figure_format = 'retina'\n!ls\nimport torch\n"
    )
    assert colab.import_statements(code) == ["import torch"]
    # a cell magic whose body runs as Python: its imports count
    for magic in ("%%time", "%%capture", "%%timeit -n 1"):
        code = colab.python_of_cell(f"{magic}\nimport pandas\n")
        assert colab.import_statements(code) == ["import pandas"], magic


def test_type_checking_imports_are_not_run():
    code = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from gensim.models import Word2Vec\n"
        "try:\n"
        "    import yaml\n"
        "except:\n"
        "    yaml = None\n"
    )
    assert colab.import_statements(code) == ["from typing import TYPE_CHECKING"]


def test_setup_check_fails_outside_the_clones_book_folder(tmp_path):
    (tmp_path / "clone" / "book").mkdir(parents=True)
    here = os.getcwd()
    try:
        os.chdir(tmp_path / "clone" / "book")
        exec(colab.SETUP_CHECK, {"book": str(tmp_path / "clone")})
        os.chdir(tmp_path)  # %cd failed: it only printed
        with pytest.raises(AssertionError):
            exec(colab.SETUP_CHECK, {"book": str(tmp_path / "clone")})
    finally:
        os.chdir(here)


RUNTIME = {
    "preinstalled": {"numpy": "2.1.3", "tqdm": "4.67.3"},
    "not_preinstalled": ["gensim", "num2words"],
    "torch": {"simulated": "2.11.0"},
}
PASSED = {"passed": True, "error": None, "seconds": 1.0}
COLAB = {"numpy": "2.1.3", "tqdm": "4.67.3", "torch": "2.11.0"}


def test_verdict_passes_a_setup_that_installs_only_what_colab_lacks():
    own = {"gensim", "num2words", "transformer-course"}
    assert colab.verdict(PASSED, COLAB, own, RUNTIME)["passed"]


def test_verdict_fails_a_setup_that_changes_a_preinstalled_package():
    installed = dict(COLAB, numpy="2.4.6")
    record = colab.verdict(PASSED, installed, {"numpy"}, RUNTIME)
    assert not record["passed"]
    assert record["changed"] == {"numpy": ["2.1.3", "2.4.6"]}
    assert "restart" in colab.describe_failure("07", record)


def test_verdict_fails_a_package_the_runtime_file_does_not_know():
    """A new dependency that Colab may preinstall at another version: the
    runtime file is stale, not the chapter wrong."""
    record = colab.verdict(PASSED, COLAB, {"pandas", "gensim"}, RUNTIME)
    assert not record["passed"] and record["unknown"] == ["pandas"]
    assert "describe" in colab.describe_failure("07", record)


def test_runtime_file_knows_every_dependency():
    runtime = colab.load_runtime()
    known = set(runtime["preinstalled"]) | set(runtime["not_preinstalled"])
    for dependency in declared_dependencies():
        assert dependency in known | {"torch"}, (
            f"{dependency}: not in tools/colab_runtime.json; run python "
            "tools/colab.py describe --backend-info DIR"
        )


def test_fast_form_runs_setup_then_every_import_of_the_chapters():
    notebooks = [read(p) for p in CHAPTERS if p.stem[:2] in ("07", "08")]
    fast = colab.colab_notebook(notebooks, "file:///o", "/b", fast=True)
    setup, check, imports = (c["source"] for c in fast["cells"])
    assert 'repo = "file:///o"' in setup
    assert "samefile" in check
    assert "import sacrebleu" in imports  # chapter 8's
    assert "import polib" in imports  # the library's
    assert "from num2words import num2words" in imports  # a lazy import
    ast.parse(imports)


def test_full_form_is_the_chapter_with_the_check_after_its_setup():
    notebook = read(CHAPTERS[3])
    full = colab.colab_notebook([notebook], "file:///o", "/b", fast=False)
    index = colab.setup_cell_index(notebook)
    assert len(full["cells"]) == len(notebook.cells) + 1
    assert full["cells"][index + 1]["source"] == colab.SETUP_CHECK
    assert full["cells"][-1]["source"] == notebook.cells[-1].source


def test_fast_form_groups_only_chapters_with_one_setup_cell(tmp_path):
    notebook = read(CHAPTERS[0])
    index = colab.setup_cell_index(notebook)
    other = read(CHAPTERS[0])
    other.cells[index].source += " extra==1.0"
    paths = [
        tmp_path / "00_a.ipynb",
        tmp_path / "01_b.ipynb",
        tmp_path / "02_c.ipynb",
    ]
    for path, nb in zip(paths, [notebook, other, notebook], strict=True):
        nbformat.write(nb, path)
    assert colab.machines(paths, fast=True) == [
        [paths[0], paths[2]],
        [paths[1]],
    ]
    assert colab.machines(paths, fast=False) == [[p] for p in paths]
    with pytest.raises(colab.SimulationError, match="different set-up"):
        colab.colab_notebook([notebook, other], "file:///o", "/b", fast=True)


def declared_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        colab.normalise(re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0])
        for requirement in project["dependencies"]
    }


def stdlib_names() -> set[str]:
    """The standard library of Colab's Python where it is here (3.13 dropped
    modules that 3.11 has), else this one's."""
    try:
        python = colab.find_python(colab.load_runtime()["python"])
    except colab.SimulationError:
        return set(sys.stdlib_module_names)
    names = subprocess.run(
        [str(python), "-c", "import sys; print(*sys.stdlib_module_names)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(names.stdout.split())


def test_every_package_a_chapter_imports_is_a_dependency():
    """What the set-up cell installs is the package with its dependencies: a
    chapter or library module importing anything else fails on Colab (or works
    there only by luck of what Colab preinstalls)."""
    declared = declared_dependencies()
    stdlib = stdlib_names()
    kernel = {"ipython"}  # the notebook's own kernel
    owners = importlib.metadata.packages_distributions()
    statements = colab.library_imports()
    for path in CHAPTERS:
        for cell in read(path).cells:
            if cell.cell_type == "code":
                code = colab.python_of_cell(cell.source)
                statements += [
                    (s, path.stem) for s in colab.import_statements(code)
                ]
    undeclared = set()
    for item in statements:
        statement, where = (
            item if isinstance(item, tuple) else (item, "library")
        )
        node = ast.parse(statement).body[0]
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
        )
        for name in names:
            top = name.split(".")[0]
            if top in stdlib or top == "transformer_course":
                continue
            dists = {colab.normalise(d) for d in owners.get(top, [top])}
            if not dists & (declared | kernel):
                undeclared.add(f"{where}: {statement}")
    assert not undeclared, sorted(undeclared)


# --- the simulation itself ---------------------------------------------------------


def colab_python_or_skip():
    try:
        return colab.find_python(colab.load_runtime()["python"])
    except colab.SimulationError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{error} (CI must run the Colab simulation)")
        pytest.skip(str(error))


def test_every_chapter_starts_on_simulated_colab():
    """The fast form: on a fresh simulated Colab machine the set-up cell clones
    this commit and installs the library, then every import of every chapter
    and of the library works, and no preinstalled package changed version.
    The first run builds Colab's packages once (about 5 GB, a minute or two)."""
    colab_python_or_skip()
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "colab.py"),
            "simulate",
            "--fast",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert re.search(r"^[1-9]\d* passed, 0 failed$", result.stdout, re.M)


# --- what each chapter tells a Colab reader ------------------------------------------

NOTE = colab.NOTE


def colab_note(notebook) -> str:
    index = colab.setup_cell_index(notebook)
    assert index > 0, "the note goes before the set-up cell"
    before = notebook.cells[index - 1]
    assert before.cell_type == "markdown" and before.source.startswith(NOTE), (
        f"the cell before the set-up cell must be the chapter's {NOTE} note"
    )
    return before.source


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_colab_note_quotes_the_simulated_run(path):
    runtime = colab.load_runtime()
    results = json.loads(colab.RESULTS.read_text())
    assert results["runtime_commit"] == runtime["commit"], (
        "the runtime changed since the full form ran: run python tools/colab.py "
        "simulate --write benchmarks/results"
    )
    record = results["chapters"][path.stem]
    assert record["passed"], f"{path.stem} failed on simulated Colab"
    assert record["fingerprint"] == colab.fingerprint(path, runtime), (
        f"{path.stem}'s code or the dependencies changed since its time was "
        f"measured: python tools/colab.py simulate --write benchmarks/results "
        f"{path.stem}"
    )
    note = colab_note(read(path))
    expected = colab.colab_note(path.stem, record["seconds"])
    assert note == expected, (
        f"{path.stem}: the note must be\n{expected}\n(python tools/colab.py "
        "notes writes it)"
    )


def calls_fit(code_cells) -> bool:
    """Whether a chapter's code calls `fit(...)` (a definition is no call)."""
    for source in code_cells:
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a cell with IPython syntax
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = getattr(func, "id", None) or getattr(func, "attr", None)
                if name == "fit":
                    return True
    return False


def test_the_gpu_paragraph_says_what_the_chapter_does_on_a_gpu():
    """A section that trains says it would train on the GPU; one that loads
    the shipped models (train_or_load) and decodes says that instead; one
    that loads them and retrains them with RETRAIN = True says both, and
    one whose small trials stay on the CPU names them."""
    stems = [path.stem for path in CHAPTERS]
    prefixes = (
        *colab.GPU_TRAINS,
        *colab.GPU_DECODES,
        *colab.GPU_LOADS_OR_RETRAINS,
        *colab.GPU_TRANSLATORS,
    )
    for prefix in prefixes:
        assert any(stem.startswith(prefix) for stem in stems), prefix
    for path in CHAPTERS:
        cells = [c.source for c in read(path).cells if c.cell_type == "code"]
        note = colab.colab_note(path.stem, 100)
        if path.stem.startswith(colab.GPU_TRAINS):
            assert calls_fit(cells) and "would train" in note, path.stem
        if path.stem.startswith(colab.GPU_DECODES):
            assert not calls_fit(cells), path.stem
            assert any("train_or_load(" in source for source in cells)
            assert "decode there" in note and "would train" not in note
        if path.stem.startswith(colab.GPU_LOADS_OR_RETRAINS):
            assert any("train_or_load(" in source for source in cells)
            assert any("RETRAIN = False" in source for source in cells)
            assert "evaluate them there" in note and "RETRAIN = True" in note
        if path.stem.startswith(colab.GPU_TRANSLATORS):
            assert any("RETRAIN = False" in source for source in cells)
            flat = " ".join(note.split())  # the note is wrapped at 80
            assert "decode there" in flat and "stay on the CPU" in flat


def test_the_gpu_paragraph_says_where_a_gpu_ran_the_chapter(tmp_path):
    """Only a chapter that the prepared GPU run passed under nbval is said
    to have run on that GPU; the others stay untested."""
    run = {
        "environment": {"device": "NVIDIA H200"},
        "parts": {
            "nbval": {
                "result": {
                    "chapters": [
                        {
                            "notebook": "08_1_decoding.ipynb",
                            "outcome": "passed",
                        },
                        {
                            "notebook": "07_2_the_recipe.ipynb",
                            "outcome": "failed",
                        },
                    ]
                }
            }
        },
    }
    path = tmp_path / "gpu_run.json"
    path.write_text(json.dumps(run))
    assert colab.gpu_checked("08_1_decoding", path) == ("NVIDIA H200", None)
    assert colab.gpu_checked("07_2_the_recipe", path) is None
    assert colab.gpu_checked("08_2_evaluation", path) is None
    assert colab.gpu_checked("08_1_decoding", tmp_path / "none.json") is None


def test_a_gpu_pass_counts_for_the_code_it_ran_only():
    """A notebook whose code cells or outputs changed since the GPU run's
    commit is said to have passed in an earlier version only."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    if not head:
        pytest.skip("no git here")
    path = "book/02_positional_encoding.ipynb"
    clean = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", path])
    assert colab.code_unchanged_since(head, "02_positional_encoding") == (
        clean.returncode == 0
    )
    # 8.2's code changed after the first GPU run (commit 314023a)
    assert not colab.code_unchanged_since("314023a", "08_2_evaluation")
    assert not colab.code_unchanged_since(None, "08_2_evaluation")
    assert not colab.code_unchanged_since("0" * 40, "08_2_evaluation")


def test_colab_cost_wording():
    assert colab.colab_cost(20) == "less than a minute"
    assert colab.colab_cost(80) == "about 1 minute"
    assert colab.colab_cost(100) == "about 2 minutes"
    assert colab.colab_cost(270) == "about 5 minutes"  # 4.5 rounds up


def test_fingerprint_is_blind_to_comments_docstrings_and_layout():
    cell = 'def f(x):\n    """Twice x."""\n    return 2 * x  # doubled\n'
    same = "def f(x):\n    return 2 * x\n"
    assert colab.code_shape(cell) == colab.code_shape(same)
    assert colab.code_shape(cell) != colab.code_shape(same.replace("2", "3"))
    magic = '%config InlineBackend.figure_format = "retina"\n# a note\nx = 1'
    assert colab.code_shape(magic) == colab.code_shape(
        magic.replace("# a note\n", "")
    )
    assert colab.code_shape(magic) != colab.code_shape(magic.replace("1", "2"))


# --- the command line -------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, called",
    [
        (["--fast"], ("simulate", [], True, None, 1200)),
        ([], ("simulate", [], False, None, 1200)),
        (
            ["07_1_real_messages"],
            ("simulate", ["07_1_real_messages"], False, None, 1200),
        ),
        (
            ["simulate", "--write", "out", "--timeout", "9", "08_2"],
            ("simulate", ["08_2"], False, Path("out"), 9),
        ),
        (["notes"], ("notes", colab.RESULTS)),
        (["notes", "--results", "r.json"], ("notes", Path("r.json"))),
        (["describe", "--backend-info", "info"], ("describe", Path("info"))),
    ],
)
def test_each_subcommand_calls_its_function(argv, called, monkeypatch):
    calls = []
    monkeypatch.setattr(
        colab, "simulate", lambda *a: calls.append(("simulate", *a)) or 0
    )
    monkeypatch.setattr(
        colab, "write_notes", lambda *a: calls.append(("notes", *a))
    )
    monkeypatch.setattr(
        colab, "describe", lambda *a: calls.append(("describe", *a))
    )
    assert colab.main(argv) == 0
    assert calls == [called]


@pytest.mark.parametrize(
    "argv", [["describe"], ["notes", "--fast"], ["simulate", "--nope"]]
)
def test_a_subcommand_refuses_what_it_does_not_take(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        colab.main(argv)
    assert stop.value.code == 2
    assert "usage: " in capsys.readouterr().err
