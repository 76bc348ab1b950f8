"""Draw the images of book/intro.md and zh/book/intro.md:
`python book/images/draw_images.py [FOLDER]`.

architecture.svg is chapter 0's map of the book, drawn by the library's
`draw_architecture`; architecture_zh.svg is the same map with its labels in
Chinese (`lang="zh"`: the map's table of labels gives each its Chinese, in the
Chinese font the library registers with matplotlib), for the Chinese edition.
tests/test_getting_started.py and tests/test_fonts.py fail when a committed
image differs from what this script draws. The SVGs carry no date and a fixed
hash salt, so drawing them twice gives the same files.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from transformer_course import draw_architecture  # noqa: E402


def main(folder: Path) -> None:
    plt.rcParams["svg.hashsalt"] = "transformer-book"
    for name, lang in [
        ("architecture.svg", "en"),
        ("architecture_zh.svg", "zh"),
    ]:
        ax = draw_architecture(lang=lang)
        ax.figure.savefig(
            folder / name, bbox_inches="tight", metadata={"Date": None}
        )
        plt.close(ax.figure)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
