"""A link on every page to the same page in the book's other language.

The English site is published at the root and the Chinese edition (zh/, built by
tools/zh.py and `jupyter-book build zh`) under zh/, with the same page names. A
book's configuration names where the other one's root is, relative to its own,
and the link's label:

    language_switch = {"root": "zh/", "label": "中文"}    # _config.yml
    language_switch = {"root": "../", "label": "English"}  # zh/_config.yml

Each page gets the link at the top of its text, and a <link rel="alternate"
hreflang=...> in its head. Pages that are not documents of the book (the search
page, the index) get neither.

One language tag per edition: the hreflang of a link to a book is the tag that
book's own pages carry in <html lang>, which Sphinx writes from its `language`
("zh_CN" -> "zh-CN"; the English book leaves it at "en"). A book whose
`language` gives another tag than LANGUAGES says is refused at the start of its
build, so the two cannot drift apart.
"""

import html

from sphinx.errors import ExtensionError

LANGUAGES = {"中文": "zh-CN", "English": "en"}


def _check_language(app, config):
    switch = config.language_switch
    if not switch:
        return
    if switch.get("label") not in LANGUAGES:
        raise ExtensionError(
            f"language_switch: unknown label {switch.get('label')!r}; "
            f"expected one of {sorted(LANGUAGES)}"
        )
    own = (config.language or "en").replace("_", "-")
    expected = [t for label, t in LANGUAGES.items() if label != switch["label"]]
    if own not in expected:
        raise ExtensionError(
            f"language_switch: this book's pages say <html lang={own!r}>, but "
            f"the other book's links to it say hreflang {expected[0]!r}: make "
            "its `language` and LANGUAGES in _ext/language_switch.py agree"
        )


def _add_link(app, pagename, templatename, context, doctree):
    switch = app.config.language_switch
    if not switch or doctree is None or pagename not in app.env.found_docs:
        return
    depth = pagename.count("/")
    href = "../" * depth + switch["root"] + pagename + ".html"
    label, lang = switch["label"], LANGUAGES[switch["label"]]
    link = (
        f'<p class="language-switch"><a href="{html.escape(href)}" '
        f'hreflang="{lang}" lang="{lang}">{html.escape(label)}</a></p>\n'
    )
    context["body"] = link + context.get("body", "")
    context["metatags"] = context.get("metatags", "") + (
        f'<link rel="alternate" hreflang="{lang}" href="{html.escape(href)}">\n'
    )


def setup(app):
    app.add_config_value("language_switch", {}, "html")
    app.connect("config-inited", _check_language)
    app.connect("html-page-context", _add_link)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
