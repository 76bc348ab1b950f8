"""The library reads in chapter order: no module imports a later chapter's
module (not even inside a function), the imports have no cycle, and no module
is longer than a reader can hold (CONTRIBUTING.md)."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "transformer_course"
MAX_LINES = 500  # outside exercises/, whose checkers are tables of cases


def chapter_of(path: Path) -> int | None:
    """The chapter a module is exported from (nbdev's header), or the chapter
    an exercise module checks (exercises/chNN.py); None: shared machinery."""
    found = re.search(r"File to edit: \.\./book/(\d\d)_", path.read_text())
    if found:
        return int(found[1])
    found = re.fullmatch(r"ch(\d\d)", path.stem)
    return int(found[1]) if found else None


def module_name(path: Path, root: Path = PACKAGE.parent) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path = PACKAGE.parent) -> set[str]:
    """Every transformer_course module `path` imports, at any depth (inside
    functions too), relative imports resolved."""
    package = module_name(path, root)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            # `from package import module` imports the module
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {
            n
            for n in names
            if n.startswith("transformer_course") and n in MODULES
        }
    return found - {module_name(path, root)}


PATHS = sorted(PACKAGE.rglob("*.py"))
MODULES = {module_name(p): p for p in PATHS}
GRAPH = {module_name(p): imported_modules(p) for p in PATHS}


def test_the_graph_is_read_from_the_code(tmp_path):
    # the test is only as good as its parser: known edges must be found
    assert (
        "transformer_course.multi_head_attention"
        in GRAPH["transformer_course.transformer"]
    )
    assert (
        "transformer_course.transformer" in GRAPH["transformer_course.beyond"]
    )
    assert chapter_of(MODULES["transformer_course.training"]) == 7
    # ... and an import hidden in a function, absolute or relative
    fake = tmp_path / "transformer_course" / "decoding.py"
    fake.parent.mkdir()
    fake.write_text(
        "def f():\n    from .beyond import rope\n"
        "    import transformer_course.kv_cache\n"
        "    from transformer_course import DecoderCache\n"
    )
    found = imported_modules(fake, root=tmp_path)
    assert found == {
        "transformer_course",  # the root: refused by the test below
        "transformer_course.beyond",
        "transformer_course.kv_cache",
    }


# the modules of no chapter: they may import any chapter, and no module but
# the package's own __init__ imports them
SHARED = {
    "transformer_course",
    "transformer_course._modidx",
    "transformer_course.exercises",
    "transformer_course.exercises._core",
    "transformer_course.exercises._i18n",
}


def test_every_module_has_a_chapter_or_is_named_shared():
    unknown = {m for m in GRAPH if chapter_of(MODULES[m]) is None} - SHARED
    assert not unknown, (
        f"modules of no chapter: {unknown}; export them from a chapter "
        "(python tools/export.py) or name them in SHARED"
    )


@pytest.mark.parametrize("module", sorted(set(GRAPH) - SHARED))
def test_no_module_imports_the_package_root(module):
    # `from transformer_course import X` would reach every chapter at once
    assert "transformer_course" not in GRAPH[module], (
        f"{module} imports the package root; import from the module that "
        "defines the name"
    )


@pytest.mark.parametrize("module", sorted(set(GRAPH) - SHARED))
def test_no_module_imports_a_later_chapter(module):
    chapter = chapter_of(MODULES[module])
    later = {
        other: chapter_of(MODULES[other])
        for other in GRAPH[module]
        if (chapter_of(MODULES[other]) or 0) > chapter
    }
    assert not later, (
        f"{module} (chapter {chapter}) imports a later chapter: {later}; "
        "extend an earlier chapter through an extension point it defines "
        "(CONTRIBUTING.md)"
    )


def test_the_imports_have_no_cycle():
    done, path = set(), []

    def visit(module):
        if module in path:
            cycle = path[path.index(module) :] + [module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        path.append(module)
        for other in sorted(GRAPH[module]):
            if other != "transformer_course":  # every module's parent
                visit(other)
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        if module != "transformer_course":
            visit(module)


def test_no_library_module_is_too_long():
    long = {
        module_name(p): n
        for p in PATHS
        if "exercises" not in p.parts
        and p.name not in ("_modidx.py",)
        and (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


MAX_FUNCTION_LINES = 60  # issue 41: the checkers too, now tables of cases


def test_no_function_is_over_60_lines():
    long = [
        f"{module_name(p)}.{node.name} ({n} lines)"
        for p in PATHS
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_transformer_class_is_short():
    tree = ast.parse((PACKAGE / "transformer.py").read_text())
    cls = next(
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef) and n.name == "Transformer"
    )
    assert cls.end_lineno - cls.lineno + 1 <= 60


def _export_tool():
    import importlib.util

    path = PACKAGE.parent / "tools" / "export.py"
    spec = importlib.util.spec_from_file_location("export_tool", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook(path: Path, *sources: str) -> None:
    import json

    cells = [
        {"cell_type": "code", "metadata": {}, "source": s, "outputs": []}
        for s in sources
    ]
    path.write_text(json.dumps({"cells": cells, "metadata": {}}))


def test_the_export_refuses_a_module_named_by_two_chapters(
    tmp_path, monkeypatch
):
    tool = _export_tool()
    book = tmp_path / "book"
    book.mkdir()
    _notebook(
        book / "07_a.ipynb",
        "#| default_exp training",
        "#| export corpus\nx = 1",
    )
    _notebook(
        book / "08_b.ipynb", "#| default_exp decoding", "#| export\ny = 2"
    )
    _notebook(
        book / "_hidden.ipynb", "#| export corpus\nz = 3"
    )  # not a chapter
    writers = tool.modules_by_notebook(book)
    assert writers == {
        "training": ["07_a.ipynb"],
        "corpus": ["07_a.ipynb"],
        "decoding": ["08_b.ipynb"],
    }
    _notebook(book / "09_c.ipynb", "#| export corpus\nw = 4")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match="corpus"):
        tool.main()
