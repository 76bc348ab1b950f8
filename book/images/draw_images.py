"""Draw the images of book/intro.md: `python book/images/draw_images.py [FOLDER]`.

architecture.svg is chapter 0's map of the book, drawn by the library's
`draw_architecture`; tests/test_getting_started.py fails when the committed
image differs from what this script draws. The SVG carries no date and a fixed
hash salt, so drawing it twice gives the same file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from transformer_course import draw_architecture  # noqa: E402


def main(folder: Path) -> None:
    plt.rcParams["svg.hashsalt"] = "transformer-book"
    ax = draw_architecture()
    ax.figure.savefig(
        folder / "architecture.svg",
        bbox_inches="tight",
        metadata={"Date": None},
    )
    plt.close(ax.figure)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
