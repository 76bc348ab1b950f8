"""A link on every page of the website to the whole book as one PDF.

tools/pdf.py prints each edition into a PDF at the root of its site (the Pages
workflow runs it after the build): the English book's is transformer-book.pdf
and the Chinese edition's, under zh/, transformer-book-zh.pdf. The file's name
and the link's label follow the book's `language`, so one configuration line
(`local_extensions`, copied into zh/_config.yml by tools/zh.py) serves both.

The link is absolute, to where the site is published (`html.baseurl`, Sphinx's
html_baseurl): only the Pages workflow makes the PDFs, so a local build has
none to link to, and tests/test_site.py, which checks every link within the
site, leaves links to another address alone. Only the html builder adds the
link: the singlehtml page that tools/pdf.py prints has none (and pdf.css hides
it on a page printed from the website).
"""

import html

from sphinx.errors import ExtensionError

# language -> (the PDF's file name at the root of the site, the link's label)
PDF_FILES = {
    "en": ("transformer-book.pdf", "PDF"),
    "zh_CN": ("transformer-book-zh.pdf", "PDF 版"),
}


def pdf_file(language: str | None) -> str:
    """The PDF's file name for a book in `language` (Sphinx's setting)."""
    language = language or "en"
    if language not in PDF_FILES:
        raise ExtensionError(
            f"pdf_link: no PDF is named for language {language!r}; "
            f"expected one of {sorted(PDF_FILES)} (PDF_FILES in "
            "_ext/pdf_link.py)"
        )
    return PDF_FILES[language][0]


def _check_config(app, config):
    pdf_file(config.language)
    if not config.html_baseurl.startswith("https://"):
        raise ExtensionError(
            "pdf_link: the link to the PDF needs the address the site is "
            f"published at (html.baseurl in _config.yml), not "
            f"{config.html_baseurl!r}"
        )


def _add_link(app, pagename, templatename, context, doctree):
    if app.builder.name != "html" or doctree is None:
        return
    if pagename not in app.env.found_docs:
        return
    name, label = PDF_FILES[app.config.language or "en"]
    href = app.config.html_baseurl.rstrip("/") + "/" + name
    link = (
        f'<p class="pdf-link"><a href="{html.escape(href)}" '
        f'type="application/pdf">{html.escape(label)}</a></p>\n'
    )
    context["body"] = link + context.get("body", "")


def setup(app):
    app.connect("config-inited", _check_config)
    app.connect("html-page-context", _add_link)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
