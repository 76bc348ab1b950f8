"""The built website, opened in a real browser (headless Chromium driven by Playwright).

Every page of `_build/html` is served over HTTP on 127.0.0.1 under the sub-path
GitHub Pages will serve it from (`/transformer-book/`, from `_config.yml`'s
`html.baseurl`), and checked at two window widths: 1200 px (the narrowest desktop
layout, where the "Contents" column appears and code boxes are tightest) and 800 px
(a tablet). The page is loaded once, at 1200 px, then the window is narrowed to
800 px, as a reader narrows it: the layout follows the window (loading the page
again at each width took as long again, and checked nothing more). One tab
goes from page to page, as a reader's does, so the theme's scripts, styles and
fonts come from the browser's cache after the first page (a fresh browser
context for each page took twice as long and checked nothing more: a file that
fails to come is not cached, so every page that asks for it fails). The English
and the Chinese pages are two classes, so that `pytest -n 2 --dist loadscope`
gives each worker one edition. A page fails when

- a code cell, an output or a code block is wider than its box (a reader would have to
  scroll sideways: keep code and printed lines at most 80 characters), or the page
  itself scrolls sideways;
- an image does not load;
- a figure has no caption, or a cell shows an image that is not a numbered figure
  (give the cell `mystnb.figure` metadata with a caption and a name), or a PNG
  figure is not drawn at twice the resolution it is shown at ("retina"), or is
  shown out of proportion (narrowed without its height following);
- a chapter page has no "open in Colab" launch button for its own notebook;
- a request for a file of the site fails (a script, a style sheet, an image, a font)
  or a link within the site points to a page or file that is not there, as happens
  when a path assumes the site sits at the server's root.

MathJax comes from a CDN and is blocked here, as are fonts from elsewhere: offline,
formulas show as TeX source. The search page works offline (its index is a local
script).

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
import yaml
from conftest import ROOT, toc_notebooks

HTML = ROOT / "_build" / "html"
IN_CI = os.environ.get("CI", "").lower() == "true"
WIDTHS = [1200, 800]
BROWSER_FLAGS = [
    # Every host but the local server is unknown to the browser: the CDN's
    # MathJax and fonts are not needed, and nothing else is reached. (Routing
    # each request through Playwright would do the same, but Playwright turns
    # the browser's cache off while it routes: every page fetched the theme's
    # 1.5 MB of Font Awesome again, and the English pages took about 50 % more
    # CPU time, measured with /usr/bin/time: 15.8 s against 10.6 s.)
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
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
    return sorted(  # not the theme's templates in _static (of either book)
        path.relative_to(HTML).as_posix()
        for path in HTML.rglob("*.html")
        if not any(p.startswith("_") for p in path.relative_to(HTML).parts)
    )


# each chapter page, English and Chinese (zh/, tools/zh.py), and its notebook
CHAPTERS = {
    f"{edition}book/{path.stem}.html": f"{edition}book/{path.name}"
    for path in toc_notebooks()
    for edition in ("", "zh/")
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


SUB_PATH = urlparse(
    yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["html"][
        "baseurl"
    ]
).path.rstrip("/")  # "/transformer-book"


class SubPathHandler(http.server.SimpleHTTPRequestHandler):
    """Serves `_build/html` under SUB_PATH only, as GitHub Pages will: a path
    outside it (one that assumes the site is at the root) is not found."""

    def translate_path(self, path):
        if not path.startswith(SUB_PATH + "/"):
            return str(HTML / "__outside_the_sub_path__")
        return super().translate_path(path[len(SUB_PATH) :])

    def log_message(self, format, *args):
        pass


def missing_link_targets(hrefs: list[str], site_url: str) -> list[str]:
    """The links within the site whose page or file is not in the build, and
    the links to this server outside the sub-path (written as if the site sat
    at the root)."""
    server = urlparse(site_url).netloc
    missing = []
    for href in hrefs:
        url = urlparse(href)
        if url.netloc != server:
            continue  # another site
        if not url.path.startswith(SUB_PATH + "/"):
            missing.append(f"{url.path} (outside {SUB_PATH}/)")
            continue
        target = HTML / url.path[len(SUB_PATH) :].lstrip("/")
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            missing.append(url.path[len(SUB_PATH) :])
    return sorted(set(missing))


def test_missing_link_targets_finds_broken_and_root_links():
    if not (HTML / "book" / "00_getting_started.html").exists():
        not_ready(f"{HTML} is missing: {HOW_TO_BUILD}")
    site = "http://127.0.0.1:8000/transformer-book"
    assert SUB_PATH == "/transformer-book"
    assert missing_link_targets(
        [
            f"{site}/book/00_getting_started.html#set-up",  # there
            f"{site}/book/no_such_chapter.html",
            "http://127.0.0.1:8000/book/00_getting_started.html",  # root
            "https://github.com/transformer-course/transformer-book",
        ],
        site,
    ) == [
        "/book/00_getting_started.html (outside /transformer-book/)",
        "/book/no_such_chapter.html",
    ]


@pytest.fixture(scope="module")
def site_url():
    if not (HTML / "index.html").exists():
        not_ready(f"{HTML} is missing: {HOW_TO_BUILD}")
    handler = functools.partial(SubPathHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}{SUB_PATH}"
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


# Runs in the page after the window is resized: two frames, so that the
# layout and the theme's resize handlers have followed the new width.
NEXT_FRAMES = """
() => new Promise((done) =>
  requestAnimationFrame(() => requestAnimationFrame(() => done())))
"""


def local_context(browser, width: int):
    """A browser context, `width` pixels wide, of the browser that reaches
    nothing but the local server (BROWSER_FLAGS)."""
    return browser.new_context(viewport={"width": width, "height": 900})


@pytest.fixture(scope="module")
def tab(browser):
    """One tab, in a context that reaches only the local server, for every
    page a worker checks."""
    context = local_context(browser, WIDTHS[0])
    yield context.new_page()
    context.close()


def problems_at_each_width(page: str, site_url: str, tab) -> dict:
    """The page's problems, each with the widths it shows at: the page is
    loaded at WIDTHS[0] (where its links and Colab button are checked too),
    then narrowed to each further width and checked again."""
    problems: dict[str, list[int]] = {}  # problem -> the widths it shows at
    failed = []  # the site's own files that did not come, since the last check

    def note_failure(response):
        local = urlparse(response.url).hostname == "127.0.0.1"
        if response.status >= 400 and local:
            failed.append(f"{response.url} ({response.status})")

    tab.set_viewport_size({"width": WIDTHS[0], "height": 900})
    tab.on("response", note_failure)
    try:
        check_widths(page, site_url, tab, problems, failed)
    finally:
        tab.remove_listener("response", note_failure)
    return problems


def check_widths(page, site_url, tab, problems, failed) -> None:
    """Load `page` in `tab` and add its problems at each width."""
    tab.goto(f"{site_url}/{page}", wait_until="load")
    for width in WIDTHS:
        if width != WIDTHS[0]:
            tab.set_viewport_size({"width": width, "height": 900})
            tab.evaluate(NEXT_FRAMES)
        for problem in tab.evaluate(CHECK_PAGE):
            problems.setdefault(problem, []).append(width)
        for request in failed:
            problems.setdefault(f"a request failed: {request}", []).append(
                width
            )
        failed.clear()
        if width == WIDTHS[0]:
            hrefs = tab.eval_on_selector_all(
                "a[href]", "links => links.map((a) => a.href)"
            )
            for target in missing_link_targets(hrefs, site_url):
                problems[f"a link to a missing page: {target}"] = [width]
        if page in CHAPTERS and width == WIDTHS[0]:
            colab = tab.locator(
                'a[href^="https://colab.research.google.com/github/"]'
                f'[href$="/{CHAPTERS[page]}"]'
            )
            if colab.count() == 0:
                problems[f"no Colab launch button for {CHAPTERS[page]}"] = [
                    width
                ]


def check_page_in_browser(page: str, site_url: str, tab) -> None:
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
    problems = problems_at_each_width(page, site_url, tab)
    assert not problems, f"{page}:\n" + "\n".join(
        f"- {problem} (at {' and '.join(map(str, widths))} px)"
        for problem, widths in problems.items()
    )


class TestEnglishPages:
    """Every page of the English book (the site's root) in the browser."""

    @pytest.mark.parametrize(
        "page", [p for p in built_pages() if not p.startswith("zh/")]
    )
    def test_page_in_browser(self, page, site_url, tab):
        check_page_in_browser(page, site_url, tab)


class TestChinesePages:
    """Every page of the Chinese book (zh/) in the browser."""

    @pytest.mark.parametrize(
        "page", [p for p in built_pages() if p.startswith("zh/")]
    )
    def test_page_in_browser(self, page, site_url, tab):
        check_page_in_browser(page, site_url, tab)


def test_every_chapter_page_is_built():
    if not HTML.is_dir():
        not_ready(f"{HTML} is missing: {HOW_TO_BUILD}")
    missing = [page for page in CHAPTERS if not (HTML / page).exists()]
    assert not missing, f"chapters without a page: {missing}; {HOW_TO_BUILD}"


HTML_LANG = re.compile(r'<html lang="([^"]*)"')
ALTERNATE = re.compile(r'<link rel="alternate" hreflang="([^"]*)"')


def tag_of(page: str, pattern: re.Pattern) -> str | None:
    """The language tag `pattern` finds in a built page (None: none)."""
    found = pattern.search((HTML / page).read_text(encoding="utf-8"))
    return found.group(1) if found else None


def test_every_page_links_to_its_counterpart_in_the_other_language():
    """_ext/language_switch.py: each page of either book links to the same page
    of the other (English at the root, Chinese under zh/), and back, and each
    edition has one language tag (zh-CN, from zh/_config.yml's zh_CN, or en):
    in every page's <html lang> and in every hreflang that points to it."""
    if not (HTML / "zh" / "index.html").exists():
        not_ready(f"{HTML / 'zh'} is missing: {HOW_TO_BUILD}")
    link = re.compile(
        r'<p class="language-switch"><a href="([^"]+)" hreflang="([^"]+)"'
    )
    problems = []
    for page in built_pages():
        own_lang = "zh-CN" if page.startswith("zh/") else "en"
        redirect = 'http-equiv="Refresh"' in (HTML / page).read_text(
            encoding="utf-8"
        )
        if not redirect and tag_of(page, HTML_LANG) != own_lang:
            problems.append(f"{page}: <html lang> {tag_of(page, HTML_LANG)}")
        if page.rsplit("/", 1)[-1] in (
            "genindex.html",
            "search.html",
            "index.html",
        ):
            continue  # the index pages, and each root's redirect to its intro
        found = link.findall((HTML / page).read_text(encoding="utf-8"))
        if len(found) != 1:
            problems.append(f"{page}: {len(found)} language links")
            continue
        href, lang = found[0]
        target = (HTML / page).parent.joinpath(href).resolve()
        other = (
            page.removeprefix("zh/") if page.startswith("zh/") else f"zh/{page}"
        )
        if target != (HTML / other).resolve() or not target.exists():
            problems.append(f"{page}: links to {href}, not to {other}")
            continue
        # the link's hreflang, the head's alternate link and the <html lang>
        # of the page linked to say the same
        other_lang = "en" if page.startswith("zh/") else "zh-CN"
        found_tags = {
            "hreflang": lang,
            "alternate hreflang": tag_of(page, ALTERNATE),
            f"<html lang> of {other}": tag_of(other, HTML_LANG),
        }
        wrong = {k: v for k, v in found_tags.items() if v != other_lang}
        if wrong:
            problems.append(f"{page}: {wrong}")
    assert not problems, problems


# (edition, query, a page that must be among the results): the Chinese site's
# search splits Chinese into words (jieba, _ext/chinese_search.py), and the
# English site's still finds English words
SEARCHES = [
    ("zh/", "位置编码", "book/02_positional_encoding.html"),
    ("zh/", "层规范化", "book/glossary.html"),  # zh.d2l.ai's term
    ("", "softmax", "book/03_attention_numpy.html"),
]


@pytest.mark.parametrize(
    "edition, query, expected", SEARCHES, ids=[s[1] for s in SEARCHES]
)
def test_search_finds_words_of_either_language(
    edition, query, expected, site_url, browser
):
    if not (HTML / edition / "searchindex.js").exists():
        not_ready(f"{HTML / edition} is missing: {HOW_TO_BUILD}")
    context = local_context(browser, 1200)
    tab = context.new_page()
    tab.goto(f"{site_url}/{edition}book/intro.html", wait_until="load")
    # the search field of the page's header, as a reader would use it
    tab.locator("button.search-button-field:visible").first.click()
    field = tab.locator("#pst-search-dialog input[name=q]")
    field.fill(query)
    field.press("Enter")
    tab.wait_for_url("**/search.html?q=*")
    summary = tab.locator("#search-results p.search-summary")
    summary.wait_for()
    tab.wait_for_function(
        "document.querySelector('#search-results p.search-summary')"
        ".innerText.length > 0",
        timeout=30_000,
    )
    found = tab.eval_on_selector_all(
        "#search-results ul.search li > a",
        "links => links.map((a) => a.getAttribute('href'))",
    )
    text = summary.inner_text()
    context.close()
    pages = sorted({href.split("#")[0] for href in found})
    assert expected in pages, f"{edition}search.html?q={query}: {text} {pages}"


def test_the_browser_reaches_only_the_local_server(site_url, browser):
    """BROWSER_FLAGS: the site's own files come from 127.0.0.1, and no other
    host name resolves, not even `localhost` for the same server (a CDN's
    would fail anyway on a machine that is offline, and prove nothing)."""
    context = local_context(browser, 1200)
    tab = context.new_page()
    tab.goto(f"{site_url}/book/intro.html", wait_until="load")
    fetch = (
        "url => fetch(url, {mode: 'no-cors'})"
        ".then(r => r.type, e => 'failed: ' + e.name)"
    )
    local = tab.evaluate(fetch, f"{site_url}/book/intro.html")
    by_name = tab.evaluate(
        fetch, site_url.replace("127.0.0.1", "localhost") + "/book/intro.html"
    )
    context.close()
    assert (local, by_name) == ("basic", "failed: TypeError")
