"""Writing a benchmark's results: a JSON document and a Markdown table beside it.

The scripts that decode or time on this machine (beam_stopping.py,
search_errors.py, gqa_repeat.py) all write the same pair of files, headed by
the script, the date and the machine, so that a chapter can read the JSON and a
reader the table.
"""

import datetime
import json
import platform
from pathlib import Path

import torch


def machine() -> str:
    """The architecture, PyTorch's threads and version: what a timing needs."""
    return (
        f"{platform.machine()}, {torch.get_num_threads()} thread(s), "
        f"torch {torch.__version__}"
    )


def write_results(directory: Path, stem: str, script: str, fields, table):
    """directory/stem.json (script, date, machine, then fields) and
    directory/stem.md (a heading and the table's lines); the JSON's path."""
    document = {
        "script": script,
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        **fields,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.json"
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n")
    (directory / f"{stem}.md").write_text(
        f"# {Path(script).stem}\n\n`{script}`, {document['date']}, "
        f"{document['machine']}.\n\n" + "\n".join(table) + "\n"
    )
    return path
