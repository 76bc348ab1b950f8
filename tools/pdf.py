"""A PDF of each edition of the book, offline, printed by the system's Chromium.

    python tools/pdf.py                        # both editions, whole
    python tools/pdf.py --edition zh           # the Chinese edition only
    python tools/pdf.py --chapters 02 --out-dir /tmp/pdf   # one chapter (CI)

For each edition:

1. Jupyter Book 1 builds it with the `singlehtml` builder (every page of the
   table of contents, or only the chapters asked for, in one HTML page) into a
   temporary folder. The notebooks are committed executed and the build never
   runs them (`execute_notebooks: off`).
2. The page is made printable offline: it moves to the root of the build (the
   singlehtml builder writes its links relative to the root but the page under
   book/), MathJax comes from the pinned `django-static-mathjax` package instead
   of a CDN (its SVG output: formulas drawn as vector paths, no font needed),
   and the library's Chinese font (transformer_course/data/fonts/) is copied to
   _static/fonts/, where _static/pdf.css declares it for print.
3. Chromium (CHROMIUM, or chromium on PATH), driven by Playwright as in
   tests/test_site.py (nothing downloaded), opens the page, waits for MathJax
   and the fonts, and prints it to A4 with page numbers, embedding the fonts.

The whole English book goes to _build/html/transformer-book.pdf and the Chinese
edition to _build/html/zh/transformer-book-zh.pdf (names from _ext/pdf_link.py,
which links every page of each site to its PDF): after `jupyter-book build` and
`tools/zh.py publish`, as the Pages workflow runs it, they are published with
the site. --out-dir puts them elsewhere (zh/ under it for the Chinese one).
Jupyter Book's own `pdfhtml` builder is not used: its pyppeteer downloads a
Chromium of its own.
"""

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from pdf_link import pdf_file  # noqa: E402  (the link and the file agree)

FONT = ROOT / "transformer_course" / "data" / "fonts"
FONT_FILE = "NotoSansCJKsc-Regular-subset.ttf"  # _static/pdf.css names it
MATHJAX_CDN = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"
HOW_TO_GET_CHROMIUM = (
    "install Chromium (Debian/Ubuntu: sudo apt-get install chromium) or point "
    "the environment variable CHROMIUM at a Chromium or Chrome executable"
)
BROWSER_FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run"]
# A4, page numbers at the foot; Chromium fills in the two classes.
FOOTER = (
    '<div style="width: 100%; font-size: 8px; text-align: center;">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)


class PdfError(RuntimeError):
    """The PDF cannot be made; the message says why and what to do."""


@dataclass(frozen=True)
class Edition:
    name: str  # "en" or "zh"
    source: Path  # the book's folder: its _config.yml and _toc.yml
    language: str  # Sphinx's `language`, which names the PDF (pdf_link.py)

    @property
    def pdf_name(self) -> str:
        return pdf_file(self.language)


EDITIONS = {
    "en": Edition("en", ROOT, "en"),
    "zh": Edition("zh", ROOT / "zh", "zh_CN"),
}


def chromium_path() -> str:
    """The Chromium to print with, as tests/test_site.py finds it."""
    named = os.environ.get("CHROMIUM")
    if named:
        if not Path(named).exists():
            raise PdfError(f"CHROMIUM={named} does not exist")
        return named
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise PdfError(f"no Chromium found: {HOW_TO_GET_CHROMIUM}")


def mathjax_script() -> Path:
    """MathJax 3's all-in-one SVG component, from the pinned package."""
    try:
        import mathjax  # django-static-mathjax (requirements.txt)
    except ImportError as error:
        raise PdfError(
            "MathJax is not installed: pip install -r requirements.txt "
            "(django-static-mathjax ships MathJax 3 for offline use)"
        ) from error
    script = (
        Path(mathjax.__file__).parent / "static/mathjax/es5/tex-svg-full.js"
    )
    if not script.is_file():
        raise PdfError(f"{script} is missing: reinstall django-static-mathjax")
    return script


def toc_files(toc: dict) -> list[str]:
    """Every file of a Jupyter Book table of contents, in reading order."""

    def walk(entries: list[dict]) -> list[str]:
        files = []
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            files += walk(entry.get("sections", []))
        return files

    parts = toc.get("parts", [])
    return [toc["root"]] + walk(
        [c for part in parts for c in part["chapters"]]
        + toc.get("chapters", [])
    )


def chapter_toc(edition: Edition, chapters: list[str]) -> dict:
    """A table of contents of only the chapters numbered `chapters` ("02"),
    in the book's order."""
    toc = yaml.safe_load((edition.source / "_toc.yml").read_text("utf-8"))
    files = toc_files(toc)
    numbered = {}  # a chapter's page and its sections (NN_1_topic, ...)
    for file in files:
        number = Path(file).name.split("_", 1)[0]
        if number.isdigit():
            numbered.setdefault(number, []).append(file)
    unknown = [c for c in chapters if c not in numbered]
    if unknown:
        raise PdfError(
            f"no chapter {', '.join(unknown)} in {edition.source / '_toc.yml'}"
            f"; its chapters are {', '.join(sorted(numbered))}"
        )
    picked = {file for c in chapters for file in numbered[c]}
    chosen = [file for file in files if file in picked]
    toc = {"format": "jb-book", "root": chosen[0]}
    if chosen[1:]:
        toc["chapters"] = [{"file": file} for file in chosen[1:]]
    return toc


def build_single_page(
    edition: Edition, build_dir: Path, chapters: list[str] | None = None
) -> Path:
    """Build the edition (or its `chapters`) as one HTML page in build_dir,
    made printable offline; returns the page."""
    command = [
        str(Path(sys.executable).with_name("jupyter-book")),
        "build",
        str(edition.source),
        "--builder",
        "singlehtml",
        "--path-output",
        str(build_dir),
    ]
    toc = yaml.safe_load((edition.source / "_toc.yml").read_text("utf-8"))
    if chapters:
        toc = chapter_toc(edition, chapters)
        toc_path = build_dir / "_toc.yml"
        toc_path.write_text(yaml.safe_dump(toc), encoding="utf-8")
        command += ["--toc", str(toc_path)]
    result = subprocess.run(
        command, capture_output=True, text=True, encoding="utf-8"
    )
    out = build_dir / "_build" / "singlehtml"
    built = out / f"{toc['root']}.html"
    if result.returncode != 0 or not built.is_file():
        raise PdfError(
            f"jupyter-book build {edition.source} --builder singlehtml failed "
            f"(exit {result.returncode}):\n{result.stdout[-3000:]}"
            f"\n{result.stderr[-3000:]}"
        )
    return make_printable(built, out)


def make_printable(built: Path, out: Path) -> Path:
    """The page at the root of the build (where its relative links point),
    with MathJax and the Chinese font from this machine."""
    page = built.read_text(encoding="utf-8")
    if page.count(MATHJAX_CDN) != 1:
        raise PdfError(
            f"{built} does not load MathJax from {MATHJAX_CDN} exactly once: "
            "Jupyter Book's MathJax changed; update MATHJAX_CDN in tools/pdf.py"
        )
    page = page.replace(MATHJAX_CDN, mathjax_script().as_uri())
    printable = out / "print.html"
    printable.write_text(page, encoding="utf-8")
    fonts = out / "_static" / "fonts"
    fonts.mkdir(parents=True, exist_ok=True)
    shutil.copy2(FONT / FONT_FILE, fonts / FONT_FILE)
    return printable


# Runs in the page before printing: the formulas typeset, the fonts loaded.
READY = """
async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await document.fonts.ready;
  return document.querySelectorAll("mjx-container").length;
}
"""


@contextlib.contextmanager
def chromium(env: dict | None = None):
    """A headless Chromium, driven by Playwright, for print_pdf (env: the
    browser's environment, for example FONTCONFIG_FILE; None: this
    process's)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        raise PdfError(
            "Playwright for Python is not installed: pip install -r "
            "requirements.txt"
        ) from error
    executable = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, args=BROWSER_FLAGS, env=env
        )
        try:
            yield browser
        finally:
            browser.close()


def print_pdf(page: Path, pdf: Path, browser, pages: str = "") -> None:
    """Print the HTML page to pdf in browser (see chromium()); pages: only
    these (Chromium's page ranges, "1-6"; "": all)."""
    pdf.parent.mkdir(parents=True, exist_ok=True)
    tab = browser.new_page()
    try:
        tab.goto(page.as_uri(), wait_until="load", timeout=300_000)
        tab.evaluate(READY)
        tab.pdf(
            path=str(pdf),
            format="A4",
            print_background=True,
            margin={
                "top": "15mm",
                "bottom": "15mm",
                "left": "12mm",
                "right": "12mm",
            },
            display_header_footer=True,
            header_template="<span></span>",
            footer_template=FOOTER,
            page_ranges=pages,
        )
    finally:
        tab.close()


def make_pdf(
    edition: Edition,
    pdf: Path,
    browser,
    chapters: list[str] | None = None,
    pages: str = "",
) -> Path:
    """Build and print one edition (or some of its chapters; pages: only
    those pages, see print_pdf) to pdf."""
    with tempfile.TemporaryDirectory(prefix=f"pdf-{edition.name}-") as build:
        page = build_single_page(edition, Path(build), chapters)
        print_pdf(page, pdf, browser, pages)
    return pdf


def default_pdf(edition: Edition, out_dir: Path, chapters) -> Path:
    """out_dir/transformer-book.pdf, out_dir/zh/transformer-book-zh.pdf;
    a selection of chapters adds their numbers to the name."""
    name = edition.pdf_name
    if chapters:
        name = name.replace(".pdf", "-" + "-".join(chapters) + ".pdf")
    return out_dir / ("zh" if edition.name == "zh" else "") / name


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--edition", choices=["en", "zh", "both"], default="both"
    )
    parser.add_argument(
        "--chapters",
        nargs="+",
        metavar="NN",
        help="only these chapters, by number (02 is book/02_*.ipynb)",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=ROOT / "_build" / "html",
        help="where to write the PDFs (default: _build/html, the site)",
    )
    args = parser.parse_args(argv)
    editions = ["en", "zh"] if args.edition == "both" else [args.edition]
    try:
        with chromium() as browser:
            for name in editions:
                edition = EDITIONS[name]
                pdf = default_pdf(edition, args.out_dir, args.chapters)
                start = time.perf_counter()
                make_pdf(edition, pdf, browser, args.chapters)
                seconds = time.perf_counter() - start
                size = pdf.stat().st_size / 1e6
                print(f"{pdf}: {size:.1f} MB in {seconds:.0f} s", flush=True)
    except PdfError as error:
        print(f"tools/pdf.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
