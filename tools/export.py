"""Export the chapters to `transformer_course`: nbdev-export, with one change.

A chapter may write several modules, one concern each: a cell whose first line
is `#| export corpus` goes to `transformer_course/corpus.py`. nbdev 3 writes a
chapter's `#| default_exp` module whole, but it *appends* the cells of any other
module to a file that an earlier notebook must have written (`ModuleMaker` with
`is_new=False`), so exporting twice would repeat them. Here every module is
written whole by the one chapter that names it, and a module named by two
chapters is an error. Run it from the repository's root:

    python tools/export.py
"""

import collections
import functools
import json
import re
from pathlib import Path

from nbdev import doclinks, export
from nbdev.maker import ModuleMaker

EXPORT = re.compile(
    r"^#\|[ \t]*(?:default_exp|export|exporti)[ \t]+(\w+)", re.M
)


class WholeModule(ModuleMaker):
    """A ModuleMaker that always writes its module anew."""

    def __init__(self, *args, is_new=True, **kwargs):
        super().__init__(*args, is_new=True, **kwargs)


def modules_by_notebook(book: Path) -> dict[str, list[str]]:
    """{module: [notebooks that export to it]} from the cells' directives."""
    writers = collections.defaultdict(list)
    for path in sorted(book.glob("[!_.]*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        names = {
            name
            for cell in cells
            if cell["cell_type"] == "code"
            for name in EXPORT.findall("".join(cell["source"]))
        }
        for name in names:
            writers[name].append(path.name)
    return writers


def main() -> None:
    shared = {
        m: nbs
        for m, nbs in modules_by_notebook(Path("book")).items()
        if len(nbs) > 1
    }
    if shared:
        raise SystemExit(f"a module written by several chapters: {shared}")
    doclinks.nb_export = functools.partial(
        export.nb_export, mod_maker=WholeModule
    )
    doclinks.nbdev_export.__wrapped__()


if __name__ == "__main__":
    main()
