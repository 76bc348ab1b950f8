"""Draw the images of book/intro.md and zh/book/intro.md:
`python book/images/draw_images.py [FOLDER]`.

architecture.svg is chapter 0's map of the book, drawn by the library's
`draw_architecture`; architecture_zh.svg is the same map with its labels in
Chinese, for the Chinese edition (drawn in the Chinese font the library
registers with matplotlib). tests/test_getting_started.py and
tests/test_fonts.py fail when a committed image differs from what this script
draws. The SVGs carry no date and a fixed hash salt, so drawing them twice
gives the same files.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from transformer_course import draw_architecture  # noqa: E402

# every label of the map in Chinese, with the glossary's terms (zh/book/)
CHINESE = {
    "Add & Norm": "相加与层归一化",
    "Decoder": "解码器",
    "Encoder": "编码器",
    "Feed Forward": "前馈网络",
    "Input Embedding": "输入嵌入",
    "Inputs (tokens)": "输入（词元）",
    "Linear": "线性层",
    "Masked Multi-Head\nAttention": "带掩码的\n多头注意力",
    "Multi-Head\nAttention": "多头注意力",
    "Output Embedding": "输出嵌入",
    "Output Probabilities": "输出概率",
    "Outputs (shifted right)": "输出（右移一位）",
    "Positional\nEncoding": "位置\n编码",
    "keys, values": "键、值",
}
UNCHANGED = {"", "+", "N×", "Softmax"}


def chinese(label: str) -> str:
    """A label of the map in Chinese: "ch. 3, 5" is "第 3、5 章"."""
    if label.startswith("ch. "):
        return f"第 {label.removeprefix('ch. ').replace(', ', '、')} 章"
    if label in UNCHANGED:
        return label
    if label not in CHINESE:
        raise KeyError(f"no Chinese for the label {label!r}: add it to CHINESE")
    return CHINESE[label]


def main(folder: Path) -> None:
    plt.rcParams["svg.hashsalt"] = "transformer-book"
    for name, translate in [
        ("architecture.svg", None),
        ("architecture_zh.svg", chinese),
    ]:
        ax = draw_architecture()
        if translate:
            for text in ax.texts:
                text.set_text(translate(text.get_text()))
        ax.figure.savefig(
            folder / name, bbox_inches="tight", metadata={"Date": None}
        )
        plt.close(ax.figure)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
