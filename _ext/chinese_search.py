"""Chinese words in the search index of the Chinese edition.

Sphinx's Chinese search (sphinx.search.zh, for `language = "zh_CN"`) splits
Chinese text into words with jieba; without jieba it indexes only the Latin
words, and a search for 位置编码 finds nothing. So the build of a Chinese book
stops at once when jieba is missing.

jieba's dictionary does not know the book's terms: it splits 位置编码 into 位置
and 编码, and the search box, which looks a query up whole, would find no page
for it. Every glossary term written in Chinese (zh/book/glossary.md's Chinese
term lines, tools/zh.py) is made a word of jieba's dictionary before the pages
are indexed: the index then holds 位置编码 as well as its parts (jieba's search
mode keeps both).

Sphinx 7's Chinese indexer keeps every Latin word it splits in a list
(`SearchChinese.latin_terms`, extended at every paragraph, repeats and all)
and looks each word up in it while stemming: in this book, 28,000 searches
through a list that grows to 87,000 words (5,500 distinct), more than half
of the Chinese build's time. The list is made a set, which answers the same
lookups at once (the search index comes out byte for byte the same).
"""

import re

from sphinx.errors import ExtensionError

CHINESE = re.compile("[\u4e00-\u9fff]")


def _is_chinese(config) -> bool:
    return (config.language or "").startswith("zh")


def _require_jieba(app, config):
    if not _is_chinese(config):
        return
    try:
        import jieba  # noqa: F401
    except ImportError as error:
        raise ExtensionError(
            "jieba is not installed: the Chinese search index would hold no "
            "Chinese words (pip install -r requirements.txt)"
        ) from error


class _LatinTerms(set):
    """The Latin words seen so far: a set that the indexer can extend."""

    def extend(self, words):
        self.update(words)


def _fast_latin_terms(app, config):
    if not _is_chinese(config):
        return
    from sphinx.search.zh import SearchChinese

    if not isinstance(SearchChinese.latin_terms, _LatinTerms):
        SearchChinese.latin_terms = _LatinTerms(SearchChinese.latin_terms)


def chinese_terms(env) -> list[str]:
    """The glossary terms (std domain objects of type "term") in Chinese."""
    std = env.get_domain("std")
    return sorted(
        name
        for (kind, name) in std.objects
        if kind == "term" and CHINESE.search(name)
    )


def _add_terms(app, env):
    if not _is_chinese(app.config):
        return
    import jieba

    for term in chinese_terms(env):
        jieba.add_word(term)


def setup(app):
    app.connect("config-inited", _require_jieba)
    app.connect("config-inited", _fast_latin_terms)
    app.connect("env-updated", _add_terms)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
