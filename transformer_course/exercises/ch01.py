"""Checkers for chapter 1: from words to vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _copies,
    _expect_close,
    _expect_equal,
    _expect_unchanged,
    _fail,
    _rng,
    _verdict,
)

__all__ = [
    "check_skipgram_pairs",
    "check_cosine_similarity",
    "check_most_similar",
    "check_bpe_encode",
]

END_OF_WORD = "</w>"


# ------------------------------------------------------------- skip-gram


def _skipgram_reference(
    tokens,
    window,
    include_centre=False,
    right_only=False,
    skip_by_word=False,
):
    """The skip-gram pairs, or a known variant of them."""
    pairs = []
    for position, centre in enumerate(tokens):
        start = position if right_only else max(0, position - window)
        for other in range(start, min(len(tokens), position + window + 1)):
            if skip_by_word and tokens[other] == centre:
                continue
            if other != position or include_centre:
                pairs.append((centre, tokens[other]))
    return pairs


def _as_pairs(got):
    """A list of pairs as tuples, so that lists `[c, w]` are accepted too."""
    if isinstance(got, list | tuple) and all(
        isinstance(pair, list | tuple) for pair in got
    ):
        return [tuple(pair) for pair in got]
    return got


def check_skipgram_pairs(
    skipgram_pairs: Callable[[list[str], int], list],
) -> None:
    """Check `skipgram_pairs(tokens, window)`: (centre, context) pairs in order.

    Sentences repeat words inside a window, so that skipping the centre by
    word instead of by position, or dropping repeated pairs, is caught.
    """
    name = "skipgram_pairs"
    cases = [
        (["the", "black", "cat", "sat", "on", "the", "couch"], 2),
        (["a", "b", "c", "d"], 1),
        (["the", "cat", "the", "dog", "the"], 2),
        (["no", "no", "no"], 1),
        (["one", "word", "sentence"], 3),
        (["only"], 3),
    ]

    def run_cases() -> None:
        for tokens, window in cases:
            got = _as_pairs(_call(skipgram_pairs, name, list(tokens), window))
            expected = _skipgram_reference(tokens, window)
            mistakes = [
                (
                    _skipgram_reference(tokens, window, skip_by_word=True),
                    "skip the centre by its position (`j != i`), not by its "
                    "word (`tokens[j] != centre`): the same word elsewhere in "
                    "the window is a real context.",
                ),
                (
                    list(dict.fromkeys(expected)),
                    "keep repeated pairs: a pair that occurs twice in the "
                    "text is two training examples.",
                ),
                (
                    _skipgram_reference(tokens, window, include_centre=True),
                    "a word is not its own context: skip the centre position.",
                ),
                (
                    _skipgram_reference(tokens, window, right_only=True),
                    "the context lies on both sides of the centre, not only "
                    "after it.",
                ),
                (
                    _skipgram_reference(tokens, window - 1),
                    "the window is one word too narrow: include positions up "
                    "to `window` away (range's end is exclusive).",
                ),
                (
                    _skipgram_reference(tokens, window + 1),
                    "the window is one word too wide.",
                ),
                (
                    [(context, centre) for centre, context in expected],
                    "each pair is (centre, context): the centre comes first.",
                ),
            ]
            if sorted(expected) != expected:
                mistakes.append(
                    (
                        sorted(expected),
                        "the right pairs in another order: keep the text's "
                        "order, centre by centre, each centre's contexts left "
                        "to right.",
                    )
                )
            _expect_equal(name, [tokens, window], got, expected, mistakes)

    _verdict(name, "produces the skip-gram pairs.", run_cases)


# ------------------------------------------------------------- cosine


def check_cosine_similarity(
    cosine_similarity: Callable[[np.ndarray, np.ndarray], float],
) -> None:
    """Check `cosine_similarity(u, v)`: the dot product divided by both lengths.

    The inputs have different lengths and one pair points in opposite
    directions; the inputs must come back unchanged.
    """
    name = "cosine_similarity"
    rng = _rng(1)
    cases = [
        (np.array([3.0, 4.0, 0.0]), np.array([2.0, 0.0, 0.0])),
        (np.array([1.0, 2.0]), np.array([-2.0, -4.0])),
        (rng.normal(size=512) * 3, rng.normal(size=512) + 0.5),
    ]

    def run_cases() -> None:
        for u, v in cases:
            given = _copies(u, v)
            got = _call(cosine_similarity, name, *given)
            _expect_unchanged(name, None, given, [u, v])
            dot = float(u @ v)
            norm_u, norm_v = np.linalg.norm(u), np.linalg.norm(v)
            cosine = dot / (norm_u * norm_v)
            mistakes = [
                (
                    dot,
                    "that is the plain dot product; divide by the lengths of "
                    "both vectors.",
                ),
                (dot / norm_u, "divide by the length of v too."),
                (dot / norm_v, "divide by the length of u too."),
                (
                    dot / (norm_u**2 * norm_v**2),
                    "divide by the lengths, not their squares.",
                ),
                (
                    1 - cosine,
                    "that is the cosine *distance*, 1 - similarity (what "
                    "scipy.spatial.distance.cosine returns).",
                ),
                (
                    abs(cosine),
                    "keep the sign: opposite directions give -1, not 1.",
                ),
            ]
            _expect_close(name, [u, v], got, np.array(cosine), mistakes)

    _verdict(name, "is the cosine of the angle between u and v.", run_cases)


# ------------------------------------------------------------- neighbours


def _ranked(scores: np.ndarray, words, word, topn, keep_self=False):
    order = np.argsort(-scores, kind="stable")
    ranked = [words[i] for i in order if keep_self or words[i] != word]
    return ranked[:topn]


def _neighbour_cases():
    """Vectors whose lengths differ a lot, so dot product and cosine disagree."""
    rng = _rng(3)
    words = [f"w{i}" for i in range(12)]
    directions = rng.normal(size=(12, 6))
    lengths = rng.uniform(0.2, 5.0, size=(12, 1))
    vectors = directions * lengths
    return [
        (vectors, words, "w0", 4),
        (vectors, words, "w5", 3),
        (vectors[:5], words[:5], "w4", 1),
    ]


def check_most_similar(
    most_similar: Callable[[np.ndarray, Sequence[str], str, int], list],
) -> None:
    """Check `most_similar(vectors, words, word, topn)`: the `topn` words by cosine.

    Row i of `vectors` is the vector of `words[i]`; the answer lists the
    `topn` other words, most similar first, like gensim's `most_similar`.
    """
    name = "most_similar"

    def run_cases() -> None:
        for vectors, words, word, topn in _neighbour_cases():
            given = vectors.copy()
            got = _call(most_similar, name, given, list(words), word, topn)
            _expect_unchanged(name, None, [given], [vectors])
            if isinstance(got, np.ndarray | tuple):
                got = list(got.tolist() if isinstance(got, np.ndarray) else got)
            if isinstance(got, list) and all(
                isinstance(item, tuple | list) and len(item) == 2
                for item in got
            ):
                _fail(
                    name,
                    "returned (word, similarity) pairs; return the words "
                    "only, most similar first.",
                    [vectors, words, word, topn],
                )
            if (
                isinstance(got, list)
                and got
                and all(
                    isinstance(item, int | np.integer)
                    and not isinstance(item, bool)
                    for item in got
                )
            ):
                _fail(
                    name,
                    "returned row numbers; return the words themselves: "
                    "words[i] for each row i.",
                    [vectors, words, word, topn],
                )
            query = vectors[words.index(word)]
            lengths = np.linalg.norm(vectors, axis=1)
            cosines = vectors @ query / (lengths * np.linalg.norm(query))
            expected = _ranked(cosines, words, word, topn)
            dots = vectors @ query
            distances = -np.linalg.norm(vectors - query, axis=1)
            mistakes = [
                (
                    _ranked(dots, words, word, topn),
                    "that ranks by the dot product, which favours long "
                    "vectors: divide by the lengths of the other vectors too "
                    "(normalising the query alone changes no ranking).",
                ),
                (
                    _ranked(distances, words, word, topn),
                    "that ranks by Euclidean distance; rank by cosine "
                    "similarity, which ignores the vectors' lengths.",
                ),
                (
                    _ranked(cosines, words, word, topn, keep_self=True),
                    "the word itself is always its own nearest neighbour: "
                    "leave it out.",
                ),
                (
                    _ranked(-cosines, words, word, topn),
                    "those are the least similar words: sort by decreasing "
                    "similarity.",
                ),
                (
                    _ranked(cosines, words, word, topn)[::-1],
                    "most similar first: reverse the order.",
                ),
            ]
            _expect_equal(
                name, [vectors, words, word, topn], got, expected, mistakes
            )

    _verdict(name, "ranks the neighbours by cosine similarity.", run_cases)


# ------------------------------------------------------------- BPE


def _symbols(word: str, marker: str = END_OF_WORD) -> list[str]:
    return [*word[:-1], word[-1] + marker]


def _merge_all(symbols, pair, first_only=False):
    merged, i, done = [], 0, False
    while i < len(symbols):
        if (
            not done
            and i + 1 < len(symbols)
            and (symbols[i], symbols[i + 1]) == pair
        ):
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
            done = first_only
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def _bpe_reference(word, merges, marker=END_OF_WORD, first_only=False):
    """Apply the merges in the order they were learned, each everywhere."""
    symbols = _symbols(word, marker) if marker else list(word)
    for pair in merges:
        symbols = _merge_all(symbols, tuple(pair), first_only)
    return symbols


def _bpe_string_replace(word, merges):
    """The classic bug: merging by replacing text in the space-joined word."""
    text = " ".join(_symbols(word))
    for left, right in merges:
        text = text.replace(f"{left} {right}", left + right)
    return text.split()


def _bpe_leftmost(word, merges):
    """Another bug: merge the leftmost known pair, whatever its rank."""
    known = {tuple(pair) for pair in merges}
    symbols = _symbols(word)
    while True:
        for i in range(len(symbols) - 1):
            if (symbols[i], symbols[i + 1]) in known:
                symbols = [
                    *symbols[:i],
                    symbols[i] + symbols[i + 1],
                    *symbols[i + 2 :],
                ]
                break
        else:
            return symbols


_BPE_CASES = [
    # (word, merges in the order they were learned)
    ("lowest", [("l", "o"), ("lo", "w"), ("e", "s"), ("es", "t</w>")]),
    ("banana", [("a", "n"), ("b", "an"), ("an", "a</w>")]),
    ("best", [("e", "s"), ("s", "t</w>"), ("b", "es")]),
    ("est", [("s", "t</w>"), ("e", "s")]),
    ("newer", [("n", "e"), ("e", "r</w>"), ("ne", "w"), ("new", "er</w>")]),
    ("a", [("a", "b")]),
]


def check_bpe_encode(
    bpe_encode: Callable[[str, list[tuple[str, str]]], list[str]],
) -> None:
    """Check `bpe_encode(word, merges)`: the word's pieces after the merges.

    The last character carries the end-of-word marker `</w>`; the merges are
    applied in the order they were learned, each wherever it occurs.
    """
    name = "bpe_encode"

    def run_cases() -> None:
        for word, merges in _BPE_CASES:
            given = _copies(merges)
            got = _call(bpe_encode, name, word, *given)
            _expect_unchanged(
                name,
                [word, merges],
                given,
                [merges],
                "changed the list of merges it was given; leave it as it was.",
                None,
            )
            expected = _bpe_reference(word, merges)
            mistakes = [
                (
                    _bpe_reference(word, merges, first_only=True),
                    "merge a pair everywhere it occurs in the word, not only "
                    "its first occurrence.",
                ),
                (
                    _bpe_string_replace(word, merges),
                    "replacing text in the joined string also matches inside "
                    "pieces merged earlier ('es t' contains 's t'): compare "
                    "whole symbols, pair by pair.",
                ),
                (
                    _bpe_leftmost(word, merges),
                    "apply the merges in the order they were learned (the "
                    "first merge first), not the leftmost pair of the word.",
                ),
                (
                    _bpe_reference(word, merges, marker=""),
                    "mark the last character with '</w>', as in training: "
                    "merges such as ('es', 't</w>') need it.",
                ),
                (
                    _bpe_reference(word, merges[:-1]),
                    "the last merge was not applied: loop over all of them.",
                ),
            ]
            if isinstance(got, tuple):
                got = list(got)
            if isinstance(got, str):
                _fail(
                    name,
                    f"returned the str {got!r}; return the list of pieces.",
                    [word, merges],
                )
            _expect_equal(name, [word, merges], got, expected, mistakes)

    _verdict(name, "applies the merges like a BPE tokenizer.", run_cases)
