"""The PDF of each edition (tools/pdf.py): one chapter of each, as CI affords.

The Pages workflow prints both whole books; here chapter 2 of each is built
(Jupyter Book's singlehtml builder) and printed by Chromium, and pypdf reads the
text back. Chromium runs with a font configuration that holds only matplotlib's
DejaVu fonts, a machine without any Chinese font: the Chinese can only come
from the font that _static/pdf.css declares and tools/pdf.py copies into the
build. A character drawn without a font that has it prints as a box, which
pypdf extracts as "\\x00"; a control page shows that this happens when the
font is missing, so the check can fail.

Needs Chromium (CHROMIUM, or chromium on PATH; Debian/Ubuntu: apt-get install
chromium) and requirements.txt (Playwright, pypdf, django-static-mathjax).
Without them the test is skipped, except under CI=true, where it fails.
"""

import os
import re
import sys
from types import SimpleNamespace

import matplotlib
import pytest
import yaml
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import pdf  # noqa: E402  (tools/pdf.py)

IN_CI = os.environ.get("CI", "").lower() == "true"
CHAPTER = "02"
PAGES = 6  # the chapter's first pages: the ones printed and read
TITLES = {"en": "Positional encoding", "zh": "位置编码"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def not_ready(reason: str):
    """Fail under CI (the browser and the packages must be there), skip
    elsewhere."""
    if IN_CI:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def no_chinese_fonts(tmp_path_factory) -> dict:
    """The environment of a Chromium that sees only matplotlib's DejaVu
    fonts."""
    folder = tmp_path_factory.mktemp("fontconfig")
    fonts = os.path.join(matplotlib.get_data_path(), "fonts", "ttf")
    (folder / "fonts.conf").write_text(
        '<?xml version="1.0"?>\n'
        '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
        f"<fontconfig><dir>{fonts}</dir>"
        f"<cachedir>{folder / 'cache'}</cachedir></fontconfig>\n",
        encoding="utf-8",
    )
    return dict(os.environ, FONTCONFIG_FILE=str(folder / "fonts.conf"))


@pytest.fixture(scope="module")
def browser(no_chinese_fonts):
    """One Chromium for every print of the module, without Chinese fonts."""
    try:
        pdf.mathjax_script()
        import pypdf  # noqa: F401

        with pdf.chromium(no_chinese_fonts) as browser:
            yield browser
    except (pdf.PdfError, ImportError) as error:
        not_ready(f"cannot print a PDF here: {error}")


def text_and_fonts(path) -> tuple[str, set[str]]:
    """The text of a PDF (pypdf reads about two pages a second of the
    chapter's) and the names of the fonts it embeds."""
    from pypdf import PdfReader

    reader = PdfReader(path)
    fonts = set()
    for page in reader.pages:
        for font in page.get("/Resources", {}).get("/Font", {}).values():
            name = font.get_object().get("/BaseFont")  # Type 3 fonts: none
            if name:
                fonts.add(str(name).split("+")[-1])
    text = "\n".join(page.extract_text() for page in reader.pages)
    return text, fonts


@pytest.fixture(scope="module")
def built(browser, tmp_path_factory) -> dict:
    """Chapter 2 of each edition as a PDF, its first PAGES pages, the ones
    the tests read (the rest of the English chapter's 23 pages cost Chromium
    about a second more): {"en": path, "zh": path}."""
    from pypdf import PdfReader

    out = tmp_path_factory.mktemp("pdf")
    built = {}
    for name in ("en", "zh"):
        path = out / f"{name}.pdf"
        pdf.make_pdf(pdf.EDITIONS[name], path, browser, [CHAPTER], f"1-{PAGES}")
        assert len(PdfReader(path).pages) == PAGES, name
        built[name] = path
    return built


def test_the_english_pdf_holds_the_chapter(built):
    text, fonts = text_and_fonts(built["en"])
    assert TITLES["en"] in text
    assert "sinusoidal" in text
    assert "\x00" not in text and "\ufffd" not in text


def test_the_chinese_pdf_holds_chinese_text_not_boxes(built):
    text, fonts = text_and_fonts(built["zh"])
    assert TITLES["zh"] in text
    assert "正弦位置编码" in text
    assert len(CJK.findall(text)) > 500, "too little Chinese text"
    boxes = text.count("\x00") + text.count("\ufffd")
    assert boxes == 0, f"{boxes} characters printed as boxes"
    assert "NotoSansCJKsc-Regular" in fonts, sorted(fonts)


def test_without_the_font_chinese_prints_as_boxes(browser, tmp_path):
    """The control: a page with the book's style sheet and Chinese text, printed
    with and without the font tools/pdf.py copies; without it, boxes."""
    static = tmp_path / "_static"
    (static / "fonts").mkdir(parents=True)
    (static / "pdf.css").write_bytes((ROOT / "_static/pdf.css").read_bytes())
    page = tmp_path / "print.html"
    page.write_text(
        '<html lang="zh-CN"><head><meta charset="utf-8">'
        '<link rel="stylesheet" href="_static/pdf.css"></head>'
        "<body style=\"font-family: sans-serif, 'Noto Sans CJK SC'\">"
        f"<p>{TITLES['zh']}</p></body></html>",
        encoding="utf-8",
    )
    pdf.print_pdf(page, tmp_path / "without.pdf", browser)
    text, _ = text_and_fonts(tmp_path / "without.pdf")
    assert TITLES["zh"] not in text and "\x00" in text
    font = pdf.FONT / pdf.FONT_FILE
    (static / "fonts" / pdf.FONT_FILE).write_bytes(font.read_bytes())
    pdf.print_pdf(page, tmp_path / "with.pdf", browser)
    text, fonts = text_and_fonts(tmp_path / "with.pdf")
    assert TITLES["zh"] in text and "\x00" not in text
    assert "NotoSansCJKsc-Regular" in fonts


def test_an_unknown_chapter_is_refused_by_name():
    with pytest.raises(pdf.PdfError, match="no chapter 42 .* 00, 01"):
        pdf.chapter_toc(pdf.EDITIONS["en"], ["42"])


def test_every_page_links_to_where_the_workflow_puts_the_pdf():
    """_ext/pdf_link.py's link on a page of each edition, at the address in
    its _config.yml, is the file tools/pdf.py writes under _build/html (the
    site the Pages workflow publishes at the English book's address)."""
    import pdf_link  # _ext/, on the path through tools/pdf.py

    site = ROOT / "_build" / "html"
    english = yaml.safe_load((ROOT / "_config.yml").read_text())
    published = english["html"]["baseurl"]
    for edition in pdf.EDITIONS.values():
        config = yaml.safe_load((edition.source / "_config.yml").read_text())
        app = SimpleNamespace(
            builder=SimpleNamespace(name="html"),
            env=SimpleNamespace(found_docs={"book/02_positional_encoding"}),
            config=SimpleNamespace(
                language=config["sphinx"]["config"].get("language", "en"),
                html_baseurl=config["html"]["baseurl"],
            ),
        )
        context = {"body": "<p>text</p>"}
        pdf_link._add_link(
            app, "book/02_positional_encoding", "page.html", context, object()
        )
        href = re.search(r'class="pdf-link"><a href="([^"]+)"', context["body"])
        assert href and href.group(1).startswith(published), context["body"]
        written = pdf.default_pdf(edition, site, None)
        assert href.group(1).removeprefix(published) == (
            written.relative_to(site).as_posix()
        )
