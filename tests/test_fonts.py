"""The Chinese font the library ships and registers with matplotlib."""

import fnmatch
import runpy
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from matplotlib.ft2font import FT2Font

from transformer_course.fonts import CJK_FAMILY, cjk_font_path, use_cjk_font
from transformer_course.toy_tasks import grammar_pairs
from transformer_course.training import make_task

ROOT = Path(__file__).resolve().parent.parent
FONTS = resources.files("transformer_course") / "data" / "fonts"
TEXT = "她爱你。万亿，"  # a character of each kind: hanzi, CJK and full-width


def font_characters() -> set[str]:
    return {chr(code) for code in FT2Font(str(cjk_font_path())).get_charmap()}


def test_the_font_its_licence_and_its_recipe_are_package_data():
    names = {"NotoSansCJKsc-Regular-subset.ttf", "OFL.txt", "README.md"}
    assert {p.name for p in FONTS.iterdir()} == names
    assert cjk_font_path().stat().st_size < 4_000_000
    assert (
        "SIL OPEN FONT LICENSE Version 1.1" in (FONTS / "OFL.txt").read_text()
    )
    # a wheel (what Colab installs) holds exactly what package-data names
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    patterns = setuptools["setuptools"]["package-data"]["transformer_course"]
    for name in names:
        path = f"data/fonts/{name}"
        assert any(fnmatch.fnmatch(path, p) for p in patterns), path


def test_the_font_is_the_book_s_font():
    font = FT2Font(str(cjk_font_path()))
    assert (font.family_name, font.style_name) == (CJK_FAMILY, "Regular")
    # TrueType outlines: matplotlib's PDF backend cannot embed CFF ones
    assert cjk_font_path().read_bytes()[:4] == b"\x00\x01\x00\x00"


def gb2312_hanzi() -> set[str]:
    """The 6,763 hanzi of GB2312: rows 0xB0-0xF7 of the standard."""
    hanzi = set()
    for row in range(0xB0, 0xF8):
        for cell in range(0xA1, 0xFF):
            try:
                hanzi.add(bytes([row, cell]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return hanzi


def test_the_font_draws_gb2312_and_every_character_of_the_toy_tasks():
    assert len(gb2312_hanzi()) == 6763
    characters = font_characters()
    assert gb2312_hanzi() <= characters
    assert set(TEXT) <= characters
    for name in ["grammar", "numbers"]:
        tokens = "".join(make_task(name).vocab.tokens)
        chinese = {c for c in tokens if ord(c) > 0x7F}
        assert chinese, name
        assert chinese <= characters, sorted(chinese - characters)
    targets = {c for pair in grammar_pairs() for c in "".join(pair.target)}
    assert targets <= characters


DRAW = """
import warnings
warnings.simplefilter("error")  # "Glyph ... missing from font(s)" fails
{first}
import io
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
{then}
fig, ax = plt.subplots()
ax.set_title({text!r})
ax.text(0.5, 0.5, "She loves you. " + {text!r})
fig.savefig(io.BytesIO(), format="png")
fig.savefig(io.BytesIO(), format="pdf")
print(matplotlib.rcParams["font.family"])
"""


def draw(first: str = "", then: str = "") -> subprocess.CompletedProcess:
    code = DRAW.format(first=first, then=then, text=TEXT)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "first, then",
    [("import transformer_course", ""), ("", "import transformer_course")],
    ids=["package-then-matplotlib", "matplotlib-then-package"],
)
def test_figures_draw_chinese_after_importing_the_package(first, then):
    result = draw(first, then)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(["sans-serif", CJK_FAMILY])
    assert result.stderr == ""


def test_without_the_package_matplotlib_misses_the_glyphs():
    """What the test above would catch: matplotlib's own font has no 她."""
    result = draw()
    assert result.returncode != 0
    assert (
        "Glyph 22905" in result.stderr and "missing from font" in result.stderr
    )


def test_use_cjk_font_is_idempotent_and_keeps_the_latin_font_first():
    import matplotlib
    from matplotlib import font_manager

    with matplotlib.rc_context({"font.family": ["serif"]}):
        assert use_cjk_font() == use_cjk_font() == CJK_FAMILY
        assert matplotlib.rcParams["font.family"] == ["serif", CJK_FAMILY]
    path = str(cjk_font_path())
    entries = [f for f in font_manager.fontManager.ttflist if f.fname == path]
    assert len(entries) == 1 and entries[0].name == CJK_FAMILY


def test_the_import_hook_leaves_matplotlib_s_font_manager_readable():
    code = (
        "import transformer_course, inspect, sys\n"
        "print(any(type(f).__name__ == '_OnFontManager' for f in sys.meta_path))\n"
        "import matplotlib.font_manager as fm\n"
        "print(any(type(f).__name__ == '_OnFontManager' for f in sys.meta_path))\n"
        "print('class FontManager' in inspect.getsource(fm))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["True", "False", "True"]


def test_a_missing_font_file_is_named(monkeypatch):
    import transformer_course.fonts

    monkeypatch.setattr(transformer_course.fonts, "_FONT_FILE", "absent.ttf")
    with pytest.raises(FileNotFoundError, match="absent.ttf is missing"):
        cjk_font_path()


def test_the_chinese_map_is_up_to_date_and_all_in_chinese(tmp_path):
    """book/images/architecture_zh.svg is what draw_images.py draws
    (draw_architecture(lang="zh")), every label translated (matplotlib writes
    each text as a comment)."""
    script = ROOT / "book/images/draw_images.py"
    namespace = runpy.run_path(str(script))  # __name__ is not "__main__"
    namespace["main"](tmp_path)
    drawn = (tmp_path / "architecture_zh.svg").read_text()
    committed = (ROOT / "book/images/architecture_zh.svg").read_text()
    assert drawn == committed, "run python book/images/draw_images.py"
    for label in ["编码器", "解码器", "多头注意力", "第 3、5 章"]:
        assert f"<!-- {label} -->" in drawn, label
    for label in ["Encoder", "Decoder", "Feed Forward", "ch. 6"]:
        assert f"<!-- {label} -->" not in drawn, label
    assert "architecture_zh.svg" in (ROOT / "zh/book/intro.md").read_text()


def test_bold_text_draws_without_a_warning_about_the_one_weight(caplog):
    # the Chinese font has one weight: matplotlib would log "Failed to find
    # font weight bold for Noto Sans CJK SC" on stderr, which nbval compares
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    use_cjk_font()
    figure, axes = plt.subplots()
    axes.text(0.5, 0.5, "Encoder 编码器", fontweight="bold")
    with caplog.at_level("WARNING", logger="matplotlib.font_manager"):
        figure.canvas.draw()
    plt.close(figure)
    assert not [r for r in caplog.records if "font weight" in r.getMessage()]
