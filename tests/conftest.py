"""Shared helpers for the book's tests."""

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

# One thread per test process. CI runs two pytest workers on two cores, and
# the notebooks' kernels each use one thread; with PyTorch's default (a thread
# per core) three or four threads fight for two cores, and OpenMP's threads,
# which wait by spinning, slow each other down many times over: the tests of
# tests/test_decoding.py took 17 s alone and over 200 s beside a notebook.
# NumPy's and SciPy's OpenBLAS spin the same way and read the number when
# they load, here and in the notebooks' kernels, which inherit this
# environment: chapter 1's word analogies (4,391 matrix-vector products) took
# 2 s alone and 17 to 45 s beside another process with two threads, 4 to 7 s
# with one. A number the caller sets (OMP_NUM_THREADS=2 pytest ...) is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402  (it loads NumPy)

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent


def load_benchmark(stem: str):
    """benchmarks/<stem>.py as a module, with benchmarks/ on the path only
    while it loads (its own imports: results_files, evaluate_gettext...)."""
    folder = ROOT / "benchmarks"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(
            stem, folder / f"{stem}.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def toc_files() -> list[str]:
    """Every file _toc.yml lists (without suffix), in reading order, parts flattened."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())

    def walk(entries: list[dict]) -> list[str]:
        files = []
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            files += walk(entry.get("sections", []))
        return files

    chapters = [c for part in toc.get("parts", []) for c in part["chapters"]]
    return walk(chapters + toc.get("chapters", []))


def toc_notebooks() -> list[Path]:
    """The notebooks listed in _toc.yml, in reading order."""
    return [
        ROOT / f"{name}.ipynb"
        for name in toc_files()
        if (ROOT / f"{name}.ipynb").exists()
    ]


def load_notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(notebook: dict) -> list[dict]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def source(cell: dict) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


@pytest.fixture(params=toc_notebooks(), ids=lambda path: path.name)
def notebook_path(request) -> Path:
    return request.param


# --- the order in which the workers get the modules ----------------------------


def pytest_configure(config):
    """Under `--dist loadscope`, xdist's own order (the scopes with the most
    tests first) gives way to pytest_collection_modifyitems' below."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def module_costs() -> dict[str, float]:
    """Seconds per test module, from tests/scope_costs.json (made by
    tools/scope_costs.py from a timed run)."""
    return json.loads((ROOT / "tests" / "scope_costs.json").read_text())


def longest_first(nodeids: list[str], costs: dict[str, float]) -> list[str]:
    """nodeids with their modules in the order of their cost, longest first
    (a module costs.json lacks counts as the median of the others), each
    module's tests together and in their order: the longest work is handed
    out first, and what is left at the end is short."""
    known = sorted(costs.values())
    default = known[len(known) // 2] if known else 0.0
    first = {}
    for index, nodeid in enumerate(nodeids):
        first.setdefault(nodeid.split("::", 1)[0], index)

    def key(nodeid):
        module = nodeid.split("::", 1)[0]
        return (-costs.get(module, default), first[module])

    return sorted(nodeids, key=key)  # stable: each module keeps its order


def pytest_collection_modifyitems(config, items):
    order = {
        nodeid: i
        for i, nodeid in enumerate(
            longest_first([item.nodeid for item in items], module_costs())
        )
    }
    items.sort(key=lambda item: order[item.nodeid])
