"""Chapter 0's library code: get_device and the map of the book."""

import runpy
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

from transformer_course import draw_architecture, get_device  # noqa: E402
from transformer_course.getting_started import CHAPTERS, _pieces  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GREY = "#e6e6e6"  # the fill of a box that is not highlighted


def _box_colours(ax) -> list[str]:
    """The fill colours of the boxes of the map (the frames are drawn first)."""
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    return [to_hex(p.get_facecolor()) for p in boxes[2:]]


def test_get_device():
    assert get_device().type in {"cpu", "cuda"}


def test_map_draws_every_piece_readably():
    ax = draw_architecture()
    texts = [t.get_text() for t in ax.texts]
    for label in ["Input Embedding", "Masked Multi-Head\nAttention", "Softmax"]:
        assert label in texts
    assert "ch. 3, 4, 5" in texts
    assert min(t.get_fontsize() for t in ax.texts) >= 10
    assert GREY not in _box_colours(ax)
    plt.close("all")


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_highlight_colours_exactly_that_chapters_pieces(name):
    chapter = CHAPTERS[name]
    colours = _box_colours(draw_architecture(highlight=name))
    in_chapter = [chapter in piece.chapters for piece in _pieces()]
    assert [colour != GREY for colour in colours] == in_chapter
    by_number = _box_colours(draw_architecture(highlight=chapter))
    assert by_number == colours
    plt.close("all")


def test_every_chapter_of_the_model_has_a_piece():
    chapters = {c for piece in _pieces() for c in piece.chapters}
    assert chapters >= set(CHAPTERS.values()) - {2}  # 2 is the + circles


@pytest.mark.parametrize("bad", ["attenton", 0, 9, 3.0, ["masking"], True])
def test_highlight_refuses_what_is_not_a_chapter(bad):
    with pytest.raises(ValueError, match="highlight must be None"):
        draw_architecture(highlight=bad)


def test_draws_on_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    assert draw_architecture(ax=right) is right
    assert not left.patches
    plt.close(fig)


def test_importing_the_package_imports_no_matplotlib_and_writes_nothing():
    code = "import sys, transformer_course; print('matplotlib' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
    assert result.stderr == ""


def test_intro_image_is_up_to_date(tmp_path):
    """book/images/architecture.svg is what book/images/draw_images.py draws."""
    script = ROOT / "book/images/draw_images.py"
    namespace = runpy.run_path(str(script))  # __name__ is not "__main__"
    namespace["main"](tmp_path)
    drawn = (tmp_path / "architecture.svg").read_text()
    committed = (ROOT / "book/images/architecture.svg").read_text()
    assert drawn == committed, "run python book/images/draw_images.py"


def test_highlight_takes_a_numpy_chapter_number_and_ax_must_be_an_axes():
    by_numpy = _box_colours(draw_architecture(highlight=np.int64(5)))
    assert by_numpy == _box_colours(draw_architecture(highlight=5))
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        draw_architecture(ax="left")
    plt.close("all")
