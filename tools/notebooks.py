"""Reading and writing the book's notebooks, for the tools that edit them
(tools/colab.py, tools/zh.py).

The book's notebook format is nbformat 4 JSON with an indent of 1, UTF-8 kept
as it is (not escaped), and a final newline: what Jupyter writes, so that a
notebook a tool rewrote and one a person saved differ only where they should.
"""

import json
from pathlib import Path


def read_notebook(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def notebook_text(notebook: dict) -> str:
    """A notebook in the book's format: indent 1, UTF-8 kept, a final newline."""
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def write_notebook(path: Path, notebook: dict) -> None:
    Path(path).write_text(notebook_text(notebook), encoding="utf-8")


def cell_text(cell: dict) -> str:
    """A cell's source as one string (a notebook stores it as a list of lines
    or as one string)."""
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)
