"""Every exercise checker accepts the reference answer and rejects the known wrong ones."""

import numpy as np
import pytest

from transformer_course.exercises import (
    ExerciseError,
    check_cosine_similarity,
    check_embedding_matrix,
    check_positional_encoding,
    check_row_normalise,
    check_shift_matrix,
    check_skipgram_pairs,
    check_wavelengths,
)


def _stub(*args):
    raise NotImplementedError


def test_stub_is_told_not_done_yet(capsys):
    check_row_normalise(_stub)
    assert "Not done yet" in capsys.readouterr().out


def test_row_normalise_accepts_reference(capsys):
    check_row_normalise(lambda m: m / m.sum(axis=1, keepdims=True))
    assert capsys.readouterr().out.startswith("Correct: row_normalise")


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda m: m / m.sum(axis=0, keepdims=True), "every column sums to 1"),
        (lambda m: m / m.sum(axis=1), "broadcasts such an array"),
        (lambda m: m / m.sum(), None),
        (lambda m: m / m.max(axis=1, keepdims=True), None),
    ],
    ids=["columns", "broadcast-wrong-way", "whole-matrix", "divide-by-max"],
)
def test_row_normalise_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_row_normalise(wrong_answer)
    message = str(failure.value)
    assert "on input" in message and "expected" in message
    if hint:
        assert hint in message


def test_row_normalise_rejects_forgotten_return():
    def forgets_return(matrix):
        matrix / matrix.sum(axis=1, keepdims=True)

    with pytest.raises(ExerciseError, match="forget `return`"):
        check_row_normalise(forgets_return)


def test_row_normalise_rejects_in_place_change():
    def in_place(matrix):
        matrix /= matrix.sum(axis=1, keepdims=True)
        return matrix

    with pytest.raises(ExerciseError, match="changed its input in place"):
        check_row_normalise(in_place)


def test_learner_exception_names_the_input():
    def crashes(matrix):
        return np.linalg.inv(matrix[:, :2])  # a 3x2 slice is not square: LinAlgError

    with pytest.raises(ExerciseError, match=r"raised LinAlgError(.|\n)*on input"):
        check_row_normalise(crashes)


# Chapter 1 ------------------------------------------------------------------


def _pairs(tokens, window, lo_offset=-1, include_centre=False):
    pairs = []
    for i, centre in enumerate(tokens):
        start = i if lo_offset == 0 else max(0, i - window)
        for j in range(start, min(len(tokens), i + window + 1)):
            if j != i or include_centre:
                pairs.append((centre, tokens[j]))
    return pairs


def test_skipgram_accepts_reference(capsys):
    check_skipgram_pairs(_pairs)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda t, w: _pairs(t, w, include_centre=True), "not its own context"),
        (lambda t, w: _pairs(t, w, lo_offset=0), "both sides"),
        (lambda t, w: _pairs(t, w - 1), "too narrow"),
        (lambda t, w: _pairs(t, w + 1), "too wide"),
        (lambda t, w: [(b, a) for a, b in _pairs(t, w)], None),
        (lambda t, w: sorted(_pairs(t, w)), None),
    ],
    ids=["centre-included", "right-only", "narrow", "wide", "swapped", "unordered"],
)
def test_skipgram_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_skipgram_pairs(wrong_answer)
    assert "expected" in str(failure.value)
    if hint:
        assert hint in str(failure.value)


def test_cosine_accepts_reference(capsys):
    check_cosine_similarity(lambda u, v: u @ v / np.linalg.norm(u) / np.linalg.norm(v))
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda u, v: u @ v, "plain dot product"),
        (lambda u, v: u @ v / np.linalg.norm(u), "length of v"),
        (lambda u, v: u @ v / (u @ u * (v @ v)), "not their squares"),
        (lambda u, v: abs(u @ v) / np.linalg.norm(u) / np.linalg.norm(v), None),
        (lambda u, v: np.linalg.norm(u - v), None),
    ],
    ids=["dot", "one-norm", "squared-norms", "absolute", "distance"],
)
def test_cosine_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_cosine_similarity(wrong_answer)
    if hint:
        assert hint in str(failure.value)


def test_embedding_matrix_accepts_reference(capsys):
    check_embedding_matrix(lambda tokens, vectors: np.stack([vectors[t] for t in tokens]))
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda tokens, vectors: np.stack([vectors[t] for t in tokens]).T, "not (d, T)"),
        (
            lambda tokens, vectors: np.stack([vectors[t] for t in dict.fromkeys(tokens)]),
            "repeated word",
        ),
        (lambda tokens, vectors: np.stack([vectors[t] for t in sorted(tokens)]), None),
        (lambda tokens, vectors: np.stack(list(vectors.values())), None),
    ],
    ids=["transposed", "unique", "sorted", "vocabulary"],
)
def test_embedding_matrix_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_embedding_matrix(wrong_answer)
    if hint:
        assert hint in str(failure.value)


# Chapter 2 ------------------------------------------------------------------


def _pe(seq_len, d_model, factor=1.0, swap=False, sin_only=False):
    angles = np.arange(seq_len)[:, None] / 10000 ** (factor * np.arange(0, d_model, 2) / d_model)
    table = np.zeros((seq_len, d_model))
    table[:, 0::2] = np.cos(angles) if swap else np.sin(angles)
    table[:, 1::2] = np.sin(angles) if (swap or sin_only) else np.cos(angles)
    return table


def notes_loop(seq_len, d_model):
    """The seed notes' loop, vectorised over positions: doubled exponent."""
    return np.stack(
        [
            np.array(
                [
                    f(pos / 10000 ** ((2 * i) / d_model))
                    for i in range(0, d_model, 2)
                    for f in (np.sin, np.cos)
                ]
            )
            for pos in range(seq_len)
        ]
    )


def test_positional_encoding_accepts_reference(capsys):
    check_positional_encoding(_pe)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (notes_loop, "exponent is doubled"),
        (lambda t, d: _pe(t, d, swap=True), "swapped"),
        (lambda t, d: _pe(t, d).T, "rows are positions"),
        (lambda t, d: _pe(t, d, sin_only=True), None),
        (lambda t, d: _pe(t + 1, d)[1:], None),
    ],
    ids=["notes-doubled-exponent", "sin-cos-swapped", "transposed", "sines-only", "from-one"],
)
def test_positional_encoding_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_positional_encoding(wrong_answer)
    if hint:
        assert hint in str(failure.value)


def _shift(k, d_model, sign=1.0, factor=1.0):
    matrix = np.zeros((d_model, d_model))
    for pair in range(d_model // 2):
        angle = k / 10000 ** (factor * 2 * pair / d_model)
        c, s = np.cos(angle), sign * np.sin(angle)
        matrix[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = [[c, s], [-s, c]]
    return matrix


def test_shift_matrix_accepts_reference(capsys):
    check_shift_matrix(_shift)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda k, d: _shift(k, d, sign=-1.0), "rotates backwards"),
        (lambda k, d: _shift(k, d).T, "transpose"),
        (lambda k, d: _shift(k, d, factor=2.0), None),
        (lambda k, d: np.eye(d), None),
        (lambda k, d: _shift(k + 1, d), None),
    ],
    ids=["backwards", "transposed", "doubled-exponent", "identity", "off-by-one"],
)
def test_shift_matrix_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_shift_matrix(wrong_answer)
    if hint:
        assert hint in str(failure.value)


def test_wavelengths_accepts_reference(capsys):
    check_wavelengths(lambda d: 2 * np.pi * 10000 ** (np.arange(0, d, 2) / d))
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda d: 10000 ** (np.arange(0, d, 2) / d), "multiply by 2 pi"),
        (lambda d: 10000 ** (-np.arange(0, d, 2) / d), "frequencies"),
        (lambda d: 2 * np.pi * 10000 ** (2 * np.arange(0, d, 2) / d), "doubled"),
        (lambda d: 2 * np.pi * 10000 ** (np.arange(d) / d), None),
    ],
    ids=["no-2pi", "frequency", "doubled", "one-per-dimension"],
)
def test_wavelengths_rejects_known_mistakes(wrong_answer, hint):
    with pytest.raises(ExerciseError) as failure:
        check_wavelengths(wrong_answer)
    if hint:
        assert hint in str(failure.value)
