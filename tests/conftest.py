"""Shared helpers for the book's tests."""

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


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
