"""Checkers for chapter 1: from words to vectors."""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np

from transformer_course.exercises._core import Exercise, Mistake, fail

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


def _as_pairs(name: str, shown, got):
    """A list of pairs as tuples, so that lists `[c, w]` are accepted too."""
    if isinstance(got, list | tuple) and all(
        isinstance(pair, list | tuple) for pair in got
    ):
        return [tuple(pair) for pair in got]
    return got


SKIPGRAM_PAIRS = Exercise(
    name="skipgram_pairs",
    success="produces the skip-gram pairs.",
    doc="""Check `skipgram_pairs(tokens, window)`: (centre, context) pairs in order.

    Sentences repeat words inside a window, so that skipping the centre by
    word instead of by position, or dropping repeated pairs, is caught.""",
    cases=[
        (["the", "black", "cat", "sat", "on", "the", "couch"], 2),
        (["a", "b", "c", "d"], 1),
        (["the", "cat", "the", "dog", "the"], 2),
        (["no", "no", "no"], 1),
        (["one", "word", "sentence"], 3),
        (["only"], 3),
    ],
    reference=_skipgram_reference,
    compare="equal",
    convert=_as_pairs,
    mistakes=[
        Mistake(
            partial(_skipgram_reference, skip_by_word=True),
            "skip the centre by its position (`j != i`), not by its word "
            "(`tokens[j] != centre`): the same word elsewhere in the window "
            "is a real context.",
        ),
        Mistake(
            lambda *args: list(dict.fromkeys(_skipgram_reference(*args))),
            "keep repeated pairs: a pair that occurs twice in the text is two "
            "training examples.",
        ),
        Mistake(
            partial(_skipgram_reference, include_centre=True),
            "a word is not its own context: skip the centre position.",
        ),
        Mistake(
            partial(_skipgram_reference, right_only=True),
            "the context lies on both sides of the centre, not only after it.",
        ),
        Mistake(
            lambda tokens, window: _skipgram_reference(tokens, window - 1),
            "the window is one word too narrow: include positions up to "
            "`window` away (range's end is exclusive).",
        ),
        Mistake(
            lambda tokens, window: _skipgram_reference(tokens, window + 1),
            "the window is one word too wide.",
        ),
        Mistake(
            lambda *args: [(b, a) for a, b in _skipgram_reference(*args)],
            "each pair is (centre, context): the centre comes first.",
        ),
        Mistake(
            lambda *args: (
                None
                if sorted(pairs := _skipgram_reference(*args)) == pairs
                else sorted(pairs)
            ),
            "the right pairs in another order: keep the text's order, centre "
            "by centre, each centre's contexts left to right.",
        ),
    ],
)
check_skipgram_pairs = SKIPGRAM_PAIRS.checker()


# ------------------------------------------------------------- cosine


def _cosine(u, v, power: int = 1, which: str = "uv") -> float:
    """u . v over the lengths of the vectors in `which`, to `power`."""
    lengths = {"u": np.linalg.norm(u), "v": np.linalg.norm(v)}
    return float(u @ v) / np.prod([lengths[w] ** power for w in which])


_RNG = np.random.default_rng(1)

COSINE_SIMILARITY = Exercise(
    name="cosine_similarity",
    success="is the cosine of the angle between u and v.",
    doc="""Check `cosine_similarity(u, v)`: the dot product divided by both lengths.

    The inputs have different lengths and one pair points in opposite
    directions; the inputs must come back unchanged.""",
    cases=[
        (np.array([3.0, 4.0, 0.0]), np.array([2.0, 0.0, 0.0])),
        (np.array([1.0, 2.0]), np.array([-2.0, -4.0])),
        (_RNG.normal(size=512) * 3, _RNG.normal(size=512) + 0.5),
    ],
    reference=lambda u, v: np.array(_cosine(u, v)),
    mistakes=[
        Mistake(
            lambda u, v: float(u @ v),
            "that is the plain dot product; divide by the lengths of both "
            "vectors.",
        ),
        Mistake(
            lambda u, v: _cosine(u, v, which="u"),
            "divide by the length of v too.",
        ),
        Mistake(
            lambda u, v: _cosine(u, v, which="v"),
            "divide by the length of u too.",
        ),
        Mistake(
            lambda u, v: _cosine(u, v, power=2),
            "divide by the lengths, not their squares.",
        ),
        Mistake(
            lambda u, v: 1 - _cosine(u, v),
            "that is the cosine *distance*, 1 - similarity (what "
            "scipy.spatial.distance.cosine returns).",
        ),
        Mistake(
            lambda u, v: abs(_cosine(u, v)),
            "keep the sign: opposite directions give -1, not 1.",
        ),
    ],
)
check_cosine_similarity = COSINE_SIMILARITY.checker()


# ------------------------------------------------------------- neighbours


def _neighbour_cases():
    """Vectors whose lengths differ a lot, so dot product and cosine disagree."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(12)]
    directions = rng.normal(size=(12, 6))
    lengths = rng.uniform(0.2, 5.0, size=(12, 1))
    vectors = directions * lengths
    return [
        (vectors, words, "w0", 4),
        (vectors, words, "w5", 3),
        (vectors[:5], words[:5], "w4", 1),
    ]


def _as_words(name: str, shown, got):
    """An array or tuple of words as a list; pairs and row numbers refused."""
    if isinstance(got, np.ndarray | tuple):
        got = list(got.tolist() if isinstance(got, np.ndarray) else got)
    if not isinstance(got, list):
        return got
    if all(isinstance(item, tuple | list) and len(item) == 2 for item in got):
        problem = (
            "returned (word, similarity) pairs; return the words only, most "
            "similar first."
        )
        fail(name, problem, shown)
    if got and all(
        isinstance(item, int | np.integer) and not isinstance(item, bool)
        for item in got
    ):
        problem = (
            "returned row numbers; return the words themselves: words[i] for "
            "each row i."
        )
        fail(name, problem, shown)
    return got


def _by(score: str, keep_self=False, reverse=False):
    """The `topn` words ranked by `score` ("cosine", "dot", "distance",
    "-cosine"), the word itself left out unless `keep_self`."""

    def variant(vectors, words, word, topn):
        query = vectors[words.index(word)]
        lengths = np.linalg.norm(vectors, axis=1)
        scores = {
            "cosine": vectors @ query / (lengths * np.linalg.norm(query)),
            "dot": vectors @ query,
            "distance": -np.linalg.norm(vectors - query, axis=1),
        }
        scores["-cosine"] = -scores["cosine"]
        order = np.argsort(-scores[score], kind="stable")
        ranked = [words[i] for i in order if keep_self or words[i] != word]
        return ranked[:topn][::-1] if reverse else ranked[:topn]

    return variant


MOST_SIMILAR = Exercise(
    name="most_similar",
    success="ranks the neighbours by cosine similarity.",
    doc="""Check `most_similar(vectors, words, word, topn)`: the `topn` words by cosine.

    Row i of `vectors` is the vector of `words[i]`; the answer lists the
    `topn` other words, most similar first, like gensim's `most_similar`.""",
    cases=_neighbour_cases(),
    reference=_by("cosine"),
    compare="equal",
    convert=_as_words,
    mistakes=[
        Mistake(
            _by("dot"),
            "that ranks by the dot product, which favours long vectors: "
            "divide by the lengths of the other vectors too (normalising the "
            "query alone changes no ranking).",
        ),
        Mistake(
            _by("distance"),
            "that ranks by Euclidean distance; rank by cosine similarity, "
            "which ignores the vectors' lengths.",
        ),
        Mistake(
            _by("cosine", keep_self=True),
            "the word itself is always its own nearest neighbour: leave it "
            "out.",
        ),
        Mistake(
            _by("-cosine"),
            "those are the least similar words: sort by decreasing similarity.",
        ),
        Mistake(
            _by("cosine", reverse=True),
            "most similar first: reverse the order.",
        ),
    ],
)
check_most_similar = MOST_SIMILAR.checker()


# ------------------------------------------------------------- BPE


def _symbols(word: str, marker: str = END_OF_WORD) -> list[str]:
    return [*word[:-1], word[-1] + marker]


def _merge_all(symbols, pair, first_only=False):
    merged, i = [], 0
    while i < len(symbols):
        if tuple(symbols[i : i + 2]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            if first_only:
                return merged + symbols[i + 2 :]
            i += 2
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
        pairs = itertools.pairwise(symbols)
        pair = next((pair for pair in pairs if pair in known), None)
        if pair is None:
            return symbols
        symbols = _merge_all(symbols, pair, first_only=True)


_BPE_CASES = [
    # (word, merges in the order they were learned)
    ("lowest", [("l", "o"), ("lo", "w"), ("e", "s"), ("es", "t</w>")]),
    ("banana", [("a", "n"), ("b", "an"), ("an", "a</w>")]),
    ("best", [("e", "s"), ("s", "t</w>"), ("b", "es")]),
    ("est", [("s", "t</w>"), ("e", "s")]),
    ("newer", [("n", "e"), ("e", "r</w>"), ("ne", "w"), ("new", "er</w>")]),
    ("a", [("a", "b")]),
]


def _as_pieces(name: str, shown, got):
    """A tuple of pieces as a list; one string refused."""
    if isinstance(got, tuple):
        got = list(got)
    if isinstance(got, str):
        problem = "returned the str {got!r}; return the list of pieces."
        fail(name, problem, shown, got=got)
    return got


BPE_ENCODE = Exercise(
    name="bpe_encode",
    success="applies the merges like a BPE tokenizer.",
    doc="""Check `bpe_encode(word, merges)`: the word's pieces after the merges.

    The last character carries the end-of-word marker `</w>`; the merges are
    applied in the order they were learned, each wherever it occurs.""",
    cases=_BPE_CASES,
    reference=_bpe_reference,
    compare="equal",
    in_place=(
        "changed the list of merges it was given; leave it as it was.",
        None,
    ),
    convert=_as_pieces,
    mistakes=[
        Mistake(
            lambda word, merges: _bpe_reference(word, merges, first_only=True),
            "merge a pair everywhere it occurs in the word, not only its "
            "first occurrence.",
        ),
        Mistake(
            _bpe_string_replace,
            "replacing text in the joined string also matches inside pieces "
            "merged earlier ('es t' contains 's t'): compare whole symbols, "
            "pair by pair.",
        ),
        Mistake(
            _bpe_leftmost,
            "apply the merges in the order they were learned (the first merge "
            "first), not the leftmost pair of the word.",
        ),
        Mistake(
            lambda word, merges: _bpe_reference(word, merges, marker=""),
            "mark the last character with '</w>', as in training: merges such "
            "as ('es', 't</w>') need it.",
        ),
        Mistake(
            lambda word, merges: _bpe_reference(word, merges[:-1]),
            "the last merge was not applied: loop over all of them.",
        ),
    ],
)
check_bpe_encode = BPE_ENCODE.checker()
