"""The built website, opened in a real browser (headless Chromium driven by Playwright).

Every page of `_build/html` is served over HTTP on 127.0.0.1 and loaded at two window
widths: 1200 px (the narrowest desktop layout, where the "Contents" column appears and
code boxes are tightest) and 800 px (a tablet). A page fails when

- a code cell, an output or a code block is wider than its box (a reader would have to
  scroll sideways: keep code and printed lines at most 80 characters), or the page
  itself scrolls sideways;
- an image does not load;
- a figure has no caption, or a cell shows an image that is not a numbered figure
  (give the cell `mystnb.figure` metadata with a caption and a name), or a PNG
  figure is not drawn at twice the resolution it is shown at ("retina"), or is
  shown out of proportion (narrowed without its height following);
- a chapter page has no "open in Colab" launch button for its own notebook.

A failure names the page, the code cell (counted from 0 among the notebook's code
cells, as nbval's "Cell N" and tests/test_book.py count them) and its first line.

Needs the site (command 1 of the README) and a Chromium: Debian/Ubuntu
`apt-get install chromium` (.ci/run does this), or any Chromium/Chrome named by the
environment variable CHROMIUM. Without them the test is skipped, except under CI=true,
where it fails.
"""

import functools
import http.server
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from conftest import ROOT, toc_notebooks

HTML = ROOT / "_build" / "html"
IN_CI = os.environ.get("CI", "").lower() == "true"
WIDTHS = [1200, 800]
BROWSER_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
HOW_TO_BUILD = "build the site first: jupyter-book build . -W -n --keep-going (README, command 1)"
HOW_TO_GET_CHROMIUM = (
    "install Chromium (Debian/Ubuntu: sudo apt-get install chromium) or point the "
    "environment variable CHROMIUM at a Chromium or Chrome executable; "
    "Playwright for Python comes with requirements.txt"
)


def not_ready(reason: str):
    """Fail under CI (the site and the browser must be there), skip elsewhere."""
    if IN_CI:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def built_pages() -> list[str]:
    if not HTML.is_dir():
        return ["(site not built)"]
    return sorted(
        path.relative_to(HTML).as_posix()
        for path in HTML.rglob("*.html")
        if not path.relative_to(HTML).parts[0].startswith("_")
    )


CHAPTERS = {
    f"book/{path.stem}.html": f"book/{path.name}" for path in toc_notebooks()
}


def chromium_path() -> str | None:
    named = os.environ.get("CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def site_url():
    if not (HTML / "index.html").exists():
        not_ready(f"{HTML} is missing: {HOW_TO_BUILD}")
    handler = functools.partial(QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        not_ready(
            f"Playwright for Python is not installed: {HOW_TO_GET_CHROMIUM}"
        )
    executable = chromium_path()
    if executable is None or not Path(executable).exists():
        not_ready(f"no Chromium found: {HOW_TO_GET_CHROMIUM}")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=executable, args=BROWSER_FLAGS
        )
        yield chromium
        chromium.close()


# Runs in the page; returns a list of problems, each a short string.
CHECK_PAGE = """
async () => {
  const problems = [];
  const article = document.querySelector("article.bd-article") || document.body;
  // Folded solutions and answers are measured too: open every <details>.
  for (const details of document.querySelectorAll("details")) details.open = true;
  const cells = Array.from(article.querySelectorAll("div.cell"));
  const firstLine = (element) => {
    const line = (element.innerText || "").split("\\n").find((l) => l.trim()) || "";
    return JSON.stringify(line.trim().slice(0, 60));
  };
  const where = (element) => {
    const cell = element.closest("div.cell");
    if (!cell) return "code block " + firstLine(element);
    const index = cells.indexOf(cell);
    const input = cell.querySelector("div.cell_input");
    const part = element.closest("div.cell_output") ? "output of " : "";
    return part + "code cell " + index + " " + firstLine(input || cell);
  };
  for (const pre of article.querySelectorAll("pre")) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const longest = Math.max(...pre.innerText.split("\\n").map((l) => l.length));
      problems.push(
        where(pre) + ": a line of " + longest + " characters overflows its box");
    }
  }
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) {
    problems.push("the page scrolls sideways");
  }
  for (const img of document.querySelectorAll("img")) {
    img.loading = "eager";
    try { await img.decode(); } catch (error) {}
    if (!img.complete || img.naturalWidth === 0) {
      problems.push("image does not load: " + img.getAttribute("src").slice(0, 80));
    }
  }
  for (const figure of article.querySelectorAll("figure")) {
    const caption = figure.querySelector("figcaption");
    if (!caption || !caption.innerText.trim()) {
      problems.push("figure without caption: " + (figure.id || where(figure)));
    }
  }
  for (const img of article.querySelectorAll("div.cell_output img")) {
    if (!img.closest("figure")) {
      problems.push(where(img) + ": an image that is not a captioned figure");
    }
    // A PNG drawn at 2x ("retina") keeps 10-pt labels sharp; at 1x they blur.
    const png = (img.getAttribute("src") || "").endsWith(".png");
    if (png && img.clientWidth > 0 && img.naturalWidth < 1.5 * img.clientWidth) {
      problems.push(where(img) + ": a figure drawn at screen resolution; use "
                    + '%config InlineBackend.figure_format = "retina"');
    }
    // Shown narrower than its width, a figure must shrink in height too.
    if (img.clientWidth > 0 && img.naturalWidth > 0) {
      const shown = img.clientHeight / img.clientWidth;
      const drawn = img.naturalHeight / img.naturalWidth;
      if (Math.abs(shown / drawn - 1) > 0.02) {
        problems.push(where(img) + ": a figure out of proportion (shown "
                      + img.clientWidth + " x " + img.clientHeight + " px)");
      }
    }
  }
  return problems;
}
"""


@pytest.mark.parametrize("page", built_pages())
def test_page_in_browser(page, site_url, browser):
    if not (HTML / page).exists():
        not_ready(f"{HTML} is missing: {HOW_TO_BUILD}")
    if page in CHAPTERS:
        source = ROOT / CHAPTERS[page]
        if source.stat().st_mtime > (HTML / page).stat().st_mtime:
            not_ready(f"{page} is older than {source.name}: {HOW_TO_BUILD}")
    text = (HTML / page).read_text(encoding="utf-8")
    redirect = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', text)
    if redirect:  # the root index.html only forwards to the introduction
        target = (HTML / page).parent / redirect.group(1)
        assert target.exists(), f"{page} forwards to a missing page {target}"
        return
    problems: dict[str, list[int]] = {}  # problem -> the widths it shows at
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        # Nothing but the local server: the CDN's MathJax and fonts are not needed.
        context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if urlparse(route.request.url).hostname == "127.0.0.1"
                else route.abort()
            ),
        )
        tab = context.new_page()
        tab.goto(f"{site_url}/{page}", wait_until="load")
        for problem in tab.evaluate(CHECK_PAGE):
            problems.setdefault(problem, []).append(width)
        if page in CHAPTERS and width == WIDTHS[0]:
            colab = tab.locator(
                'a[href^="https://colab.research.google.com/github/"]'
                f'[href$="/{CHAPTERS[page]}"]'
            )
            if colab.count() == 0:
                problems[f"no Colab launch button for {CHAPTERS[page]}"] = [
                    width
                ]
        context.close()
    assert not problems, f"{page}:\n" + "\n".join(
        f"- {problem} (at {' and '.join(map(str, widths))} px)"
        for problem, widths in problems.items()
    )


def test_every_chapter_page_is_built():
    if not HTML.is_dir():
        not_ready(f"{HTML} is missing: {HOW_TO_BUILD}")
    missing = [page for page in CHAPTERS if not (HTML / page).exists()]
    assert not missing, f"chapters without a page: {missing}; {HOW_TO_BUILD}"
