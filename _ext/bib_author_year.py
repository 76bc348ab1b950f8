"""Reference-list labels in the author-year form of the in-text citations.

sphinxcontrib-bibtex cites as "Mikolov et al., 2013a" (bibtex_reference_style:
author_year in _config.yml), but its default pybtex style labels the reference
list "[MCCD3a]". This style labels each entry the way the text cites it.
"""

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle


class AuthorYearLabels(BaseLabelStyle):
    """'Vaswani et al., 2017', 'Bahdanau et al., 2015', 'Ba and Hinton, 2016'."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            authors = entry.persons["author"]
            label = " ".join(authors[0].last_names)
            if len(authors) == 2:
                label += " and " + " ".join(authors[1].last_names)
            elif len(authors) > 2:
                label += " et al."
            yield f"{label}, {entry.fields['year']}"


class AuthorYearStyle(UnsrtStyle):
    default_label_style = AuthorYearLabels
    default_sorting_style = "author_year_title"


def setup(app):
    register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)
    return {"parallel_read_safe": True}
