"""Chapter 1's checkers accept the reference and reject the known wrong answers."""

import numpy as np
import pytest
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)

from transformer_course.exercises import ExerciseError, ch01
from transformer_course.exercises.ch01 import (
    BPE_ENCODE,
    COSINE_SIMILARITY,
    MOST_SIMILAR,
    SKIPGRAM_PAIRS,
    check_bpe_encode,
    check_cosine_similarity,
    check_most_similar,
    check_skipgram_pairs,
)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(SKIPGRAM_PAIRS, COSINE_SIMILARITY, MOST_SIMILAR, BPE_ENCODE),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


# ------------------------------------------------------------- skip-gram


def _pairs(tokens, window, right_only=False, include_centre=False):
    pairs = []
    for i, centre in enumerate(tokens):
        start = i if right_only else max(0, i - window)
        for j in range(start, min(len(tokens), i + window + 1)):
            if j != i or include_centre:
                pairs.append((centre, tokens[j]))
    return pairs


def _pairs_skipping_by_word(tokens, window):
    """The bug of issue 12: the centre is skipped by word, not by position."""
    pairs = []
    for i, centre in enumerate(tokens):
        for j in range(max(0, i - window), min(len(tokens), i + window + 1)):
            if tokens[j] != centre:
                pairs.append((centre, tokens[j]))
    return pairs


def _pairs_generator(tokens, window):
    return (pair for pair in _pairs(tokens, window))


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_pairs_skipping_by_word, "not by its word"),
        (lambda t, w: list(dict.fromkeys(_pairs(t, w))), "repeated pairs"),
        (lambda t, w: sorted(set(_pairs(t, w))), None),
        (lambda t, w: _pairs(t, w, include_centre=True), "not its own context"),
        (lambda t, w: _pairs(t, w, right_only=True), "both sides"),
        (lambda t, w: _pairs(t, w - 1), "too narrow"),
        (lambda t, w: _pairs(t, w + 1), "too wide"),
        (lambda t, w: _pairs(t, 2), None),
        (lambda t, w: [(b, a) for a, b in _pairs(t, w)], "centre comes first"),
        (lambda t, w: sorted(_pairs(t, w)), None),
        (_pairs_generator, "generator"),
        (lambda t, w: None, "forget `return`"),
    ],
    ids=[
        "skip-by-word",
        "deduplicated",
        "set",
        "centre-included",
        "right-only",
        "narrow",
        "wide",
        "window-ignored",
        "swapped",
        "unordered",
        "generator",
        "none",
    ],
)
def test_skipgram_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_skipgram_pairs, wrong_answer, hint)


def test_skipgram_accepts_lists_of_lists(capsys):
    check_skipgram_pairs(lambda t, w: [list(pair) for pair in _pairs(t, w)])
    assert capsys.readouterr().out.startswith("Correct")


# ------------------------------------------------------------- cosine


def _cosine(u, v):
    return u @ v / np.linalg.norm(u) / np.linalg.norm(v)


def _cosine_in_place(u, v):
    u /= np.linalg.norm(u)
    v /= np.linalg.norm(v)
    return u @ v


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda u, v: u @ v, "plain dot product"),
        (lambda u, v: u @ v / np.linalg.norm(u), "length of v"),
        (lambda u, v: u @ v / np.linalg.norm(v), "length of u"),
        (lambda u, v: u @ v / (u @ u * (v @ v)), "not their squares"),
        (lambda u, v: abs(_cosine(u, v)), "keep the sign"),
        (lambda u, v: 1 - _cosine(u, v), "cosine *distance*"),
        (lambda u, v: u @ v / np.linalg.norm(u) ** 2, None),
        (lambda u, v: np.linalg.norm(u - v), None),
        (_cosine_in_place, "changed its input in place"),
        (lambda u, v: None, "forget `return`"),
    ],
    ids=[
        "dot",
        "u-norm-only",
        "v-norm-only",
        "squared-norms",
        "absolute",
        "distance",
        "u-twice",
        "euclidean",
        "in-place",
        "none",
    ],
)
def test_cosine_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_cosine_similarity, wrong_answer, hint)


def test_cosine_accepts_float32(capsys):
    def float32_cosine(u, v):
        u, v = u.astype(np.float32), v.astype(np.float32)
        return _cosine(u, v)

    check_cosine_similarity(float32_cosine)
    assert capsys.readouterr().out.startswith("Correct")


# ------------------------------------------------------------- neighbours


def _most_similar(vectors, words, word, topn, score="cosine", keep_self=False):
    query = vectors[words.index(word)]
    if score == "cosine":
        scores = vectors @ query / np.linalg.norm(vectors, axis=1)
    elif score == "dot":
        scores = vectors @ query / np.linalg.norm(query)  # query alone
    else:
        scores = -np.linalg.norm(vectors - query, axis=1)
    order = np.argsort(-scores)
    ranked = [words[i] for i in order if keep_self or words[i] != word]
    return ranked[:topn]


def _most_similar_ascending(vectors, words, word, topn):
    return _most_similar(vectors, words, word, topn)[::-1]


def _most_similar_with_scores(vectors, words, word, topn):
    return [(w, 0.5) for w in _most_similar(vectors, words, word, topn)]


def _most_similar_normalising_in_place(vectors, words, word, topn):
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return _most_similar(vectors, words, word, topn)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda *a: _most_similar(*a, score="dot"), "dot product"),
        (lambda *a: _most_similar(*a, score="euclid"), "Euclidean"),
        (lambda *a: _most_similar(*a, keep_self=True), "leave it out"),
        (_most_similar_ascending, "reverse the order"),
        (
            lambda v, w, word, n: _most_similar(v, w, word, n + 1)[1:],
            None,
        ),
        (lambda v, w, word, n: _most_similar(v, w, word, n - 1), None),
        (_most_similar_with_scores, "return the words"),
        (_most_similar_normalising_in_place, "changed its input in place"),
    ],
    ids=[
        "dot",
        "euclidean",
        "self",
        "ascending",
        "skips-first",
        "too-few",
        "with-scores",
        "in-place",
    ],
)
def test_most_similar_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_most_similar, wrong_answer, hint)


def test_most_similar_accepts_float32_and_arrays(capsys):
    def float32_answer(vectors, words, word, topn):
        vectors = vectors.astype(np.float32)
        return np.array(_most_similar(vectors, words, word, topn))

    check_most_similar(float32_answer)
    assert capsys.readouterr().out.startswith("Correct")


def test_most_similar_agrees_with_gensim():
    from gensim.models import KeyedVectors

    from transformer_course.exercises.ch01 import _neighbour_cases

    for vectors, words, word, topn in _neighbour_cases():
        keyed = KeyedVectors(vector_size=vectors.shape[1])
        keyed.add_vectors(words, vectors)
        expected = [w for w, _ in keyed.most_similar(word, topn=topn)]
        assert _most_similar(vectors, words, word, topn) == expected


# ------------------------------------------------------------- BPE


def _merge(symbols, pair, first_only=False):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
            if first_only:
                return out + list(symbols[i:])
        else:
            out.append(symbols[i])
            i += 1
    return out


def _bpe(word, merges, marker="</w>", first_only=False, skip_last=False):
    symbols = [*word[:-1], word[-1] + marker]
    for pair in merges[:-1] if skip_last else merges:
        symbols = _merge(symbols, tuple(pair), first_only)
    return symbols


def _bpe_replace(word, merges):
    text = " ".join([*word[:-1], word[-1] + "</w>"])
    for left, right in merges:
        text = text.replace(f"{left} {right}", left + right)
    return text.split()


def _bpe_leftmost(word, merges):
    symbols = [*word[:-1], word[-1] + "</w>"]
    merged = True
    while merged:
        merged = False
        for i in range(len(symbols) - 1):
            if (symbols[i], symbols[i + 1]) in merges:
                symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
                merged = True
                break
    return symbols


def _bpe_popping_merges(word, merges):
    pieces = []
    while merges:
        pieces = _bpe(word, [merges.pop(0)])
    return pieces


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda w, m: _bpe(w, m, first_only=True), "everywhere it occurs"),
        (_bpe_replace, "joined string"),
        (_bpe_leftmost, "order they were learned"),
        (lambda w, m: _bpe(w, m, marker=""), "'</w>'"),
        (lambda w, m: _bpe(w, m, skip_last=True), "last merge"),
        (lambda w, m: _bpe(w, m[::-1]), None),
        (lambda w, m: "".join(_bpe(w, m)), "list of pieces"),
        (lambda w, m: list(w), None),
        (_bpe_popping_merges, "changed the list of merges"),
    ],
    ids=[
        "first-only",
        "string-replace",
        "leftmost",
        "no-marker",
        "skip-last",
        "reversed",
        "string",
        "characters",
        "mutates-merges",
    ],
)
def test_bpe_encode_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_bpe_encode, wrong_answer, hint)


def test_bpe_reference_agrees_with_tokenizers():
    """The checker's reference encodes like the `tokenizers` BPE model."""
    from tokenizers import models

    from transformer_course.exercises.ch01 import _BPE_CASES, _bpe_reference

    for word, merges in _BPE_CASES:
        pieces = {"<unk>": 0}
        for left, right in merges:
            pieces.setdefault(left, len(pieces))
            pieces.setdefault(right, len(pieces))
            pieces.setdefault(left + right, len(pieces))
        for symbol in _bpe_reference(word, []):
            pieces.setdefault(symbol, len(pieces))
        bpe = models.BPE(
            pieces, list(merges), unk_token="<unk>", end_of_word_suffix="</w>"
        )
        got = [token.value for token in bpe.tokenize(word)]
        assert got == _bpe_reference(word, merges), word


# ------------------------------------------------------------- all


ACCEPTED = [
    (check_skipgram_pairs, _pairs),
    (check_cosine_similarity, _cosine),
    (check_most_similar, _most_similar),
    (check_bpe_encode, _bpe),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch01, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def test_message_is_short_and_names_the_problem_first():
    with pytest.raises(ExerciseError) as failure:
        check_skipgram_pairs(_pairs_skipping_by_word)
    lines = str(failure.value).splitlines()
    assert len(lines) <= 15
    assert lines[0].startswith("_pairs_skipping_by_word returned")


def test_most_similar_names_row_numbers_returned_instead_of_words():
    def indices(vectors, words, word, topn):
        ranked = _most_similar(vectors, words, word, topn)
        return [words.index(w) for w in ranked]

    assert_rejected(check_most_similar, indices, "return the words themselves")


def test_skipgram_names_pairs_in_another_order():
    def sorted_pairs(tokens, window):
        return sorted(ch01._skipgram_reference(tokens, window))

    assert_rejected(check_skipgram_pairs, sorted_pairs, "another order")
