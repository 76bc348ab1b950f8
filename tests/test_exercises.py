"""Every exercise checker accepts the reference answer and rejects the known wrong ones."""

import numpy as np
import pytest
import torch

from transformer_course.exercises import (
    ExerciseError,
    check_additive_mask,
    check_attention,
    check_causal_mask,
    check_causal_self_attention,
    check_cosine_similarity,
    check_embedding_matrix,
    check_merge_heads,
    check_multi_head,
    check_padding_mask,
    check_positional_encoding,
    check_row_normalise,
    check_shift_matrix,
    check_skipgram_pairs,
    check_softmax,
    check_split_heads,
    check_wavelengths,
)


def assert_rejected(check, wrong_answer, hint: str | None) -> None:
    """`check` must raise ExerciseError for `wrong_answer`, naming the input and, if given, the hint."""
    with pytest.raises(ExerciseError) as failure:
        check(wrong_answer)
    assert "on input" in str(failure.value) or "changed" in str(failure.value)
    if hint:
        assert hint in str(failure.value)


def _stub(*args):
    raise NotImplementedError


def test_stub_is_told_not_done_yet(capsys):
    check_row_normalise(_stub)
    assert "Not done yet" in capsys.readouterr().out


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
    assert_rejected(check_skipgram_pairs, wrong_answer, hint)


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
    assert_rejected(check_cosine_similarity, wrong_answer, hint)


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
    assert_rejected(check_embedding_matrix, wrong_answer, hint)


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
    assert_rejected(check_positional_encoding, wrong_answer, hint)


def _shift(k, d_model, sign=1.0, factor=1.0):
    matrix = np.zeros((d_model, d_model))
    for pair in range(d_model // 2):
        angle = k / 10000 ** (factor * 2 * pair / d_model)
        c, s = np.cos(angle), sign * np.sin(angle)
        matrix[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = [[c, s], [-s, c]]
    return matrix


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
    assert_rejected(check_shift_matrix, wrong_answer, hint)


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
    assert_rejected(check_wavelengths, wrong_answer, hint)


# Chapter 3 ------------------------------------------------------------------


def _sm(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, axis=-1: _sm(x, axis=None), "whole matrix"),
        (lambda x, axis=-1: _sm(x, axis=0), "each column sums to 1"),
        (lambda x, axis=-1: np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True), "overflows"),
        (lambda x, axis=-1: _sm(x), None),  # ignores the axis argument
        (lambda x, axis=-1: np.exp(x - x.max()) / np.exp(x - x.max()).sum(), None),
    ],
    ids=["no-axis", "axis-0", "naive-overflow", "ignores-axis", "global-max-and-sum"],
)
def test_softmax_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_softmax, wrong_answer, hint)


def _att(q, k, v, scale=None, axis=-1, k_plain=False, transpose=False):
    scores = q @ k if k_plain else q @ k.T
    scores = scores.T if transpose else scores
    return _sm(scores / (np.sqrt(q.shape[-1]) if scale is None else scale), axis=axis) @ v


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda q, k, v: _att(q, k, v, scale=1.0), "not scaled"),
        (lambda q, k, v: _att(q, k, v, scale=q.shape[-1]), "not by d_k."),
        (lambda q, k, v: _att(q, k, v, scale=q.shape[-1] ** 2), "d_k ** 2"),
        (lambda q, k, v: _att(q, k, v, axis=0), "wrong axis"),
        (lambda q, k, v: _att(q, k, v, k_plain=True), "K is not transposed"),
        (lambda q, k, v: _att(q, k, v, transpose=True), "scores are transposed"),
        (lambda q, k, v: _sm(q @ k.T / np.sqrt(q.shape[-1])), None),  # forgets v
    ],
    ids=["no-scale", "d_k", "d_k-squared", "axis-0", "k-not-transposed", "k-q-order", "no-v"],
)
def test_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_attention, wrong_answer, hint)


def _multi_head(X, W_Q, W_K, W_V, W_O, scale=True, reverse=False, project=True):
    heads = [
        _att(X @ wq, X @ wk, X @ wv, scale=None if scale else 1.0)
        for wq, wk, wv in zip(W_Q, W_K, W_V, strict=True)
    ]
    Z = np.concatenate(heads[::-1] if reverse else heads, axis=-1)
    return Z @ W_O if project else Z


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda *a: _multi_head(*a, project=False), "W_O is missing"),
        (lambda *a: _multi_head(*a, reverse=True), "reverse order"),
        (lambda *a: _multi_head(*a, scale=False), "sqrt(d_k)"),
        (lambda X, W_Q, W_K, W_V, W_O: _multi_head(X, W_Q, W_K, W_V, W_O.T), None),
    ],
    ids=["no-output-projection", "reversed-heads", "unscaled", "W_O-transposed"],
)
def test_multi_head_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_multi_head, wrong_answer, hint)


# Chapter 4 ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda n: np.triu(np.ones((n, n), dtype=bool)), "upper triangle"),
        (lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1), "diagonal must be True"),
        (lambda n: np.triu(np.ones((n, n), dtype=bool), k=1), "forbidden"),
        (lambda n: np.tril(np.ones((n, n))), "boolean"),
        (lambda n: np.triu(np.full((n, n), -np.inf), k=1), "boolean"),
        (lambda n: np.ones((n, n), dtype=bool), None),
    ],
    ids=["upper", "no-diagonal", "inverted", "float-ones", "additive", "all-true"],
)
def test_causal_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_causal_mask, wrong_answer, hint)


NOTES_INF = -10000.0  # the notes' "inf", negated once more when the mask is built


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda mask: np.where(mask, 0.0, np.inf), "sign is flipped"),
        (lambda mask: np.where(mask, 0.0, -NOTES_INF), "notes' bug"),
        (lambda mask: np.where(mask, -np.inf, 0.0), "inverted"),
        (lambda mask: np.where(mask, 0.0, -1e9), "large finite number"),
        (lambda mask: mask.astype(float), None),
    ],
    ids=["plus-inf", "notes-plus-10000", "inverted", "minus-1e9", "ones-and-zeros"],
)
def test_additive_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_additive_mask, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda tokens, pad: (tokens != pad)[:, :, None], "masks queries"),
        (lambda tokens, pad: (tokens == pad)[:, None, :], "inverted"),
        (lambda tokens, pad: tokens != pad, "add the query axis"),
        (lambda tokens, pad: (tokens != 0)[:, None, :], "hard-coded 0"),
        (lambda tokens, pad: (tokens != pad)[:, None, :].astype(int), "boolean"),
    ],
    ids=["over-queries", "inverted", "no-query-axis", "pad-is-zero", "integers"],
)
def test_padding_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_padding_mask, wrong_answer, hint)


# Chapter 5 ------------------------------------------------------------------


def _split(x, h):
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, h: x.view(x.size(0), h, x.size(1), -1), "cuts the tokens"),
        (lambda x, h: x.reshape(x.size(0), h, x.size(1), -1), "cuts the tokens"),
        (lambda x, h: x.view(x.size(0), x.size(1), h, -1), "transpose(1, 2)"),
        (lambda x, h: x.view(x.size(0), x.size(1), -1, h).permute(0, 3, 1, 2), "consecutive"),
        (lambda x, h: _split(x, h).transpose(2, 3), None),
    ],
    ids=["view-wrong-order", "reshape-wrong-order", "no-transpose", "strided", "T-and-d_k-swapped"],
)
def test_split_heads_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_split_heads, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x: x.reshape(x.size(0), x.size(2), -1), "transpose(1, 2)"),
        (lambda x: x.permute(0, 2, 3, 1).reshape(x.size(0), x.size(2), -1), "interleaved"),
        (lambda x: x.transpose(1, 2).reshape(x.size(0), -1, x.size(2)), None),
        (lambda x: x.sum(dim=1), None),
    ],
    ids=["no-transpose", "interleaved", "wrong-final-shape", "sum-of-heads"],
)
def test_merge_heads_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_merge_heads, wrong_answer, hint)


def _tril(x):
    return torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda mha, x: mha(x, x, x), "no mask"),
        (lambda mha, x: mha(x, x, x, mask=_tril(x).T.clone()), "upper triangle"),
        (lambda mha, x: mha(x, x, x, mask=~_tril(x)), "convention"),
        (lambda mha, x: mha(x, x, x, mask=_tril(x).tril(-1)), "keep the diagonal"),
        (lambda mha, x: mha(x, x.flip(1), x, mask=_tril(x)), None),
    ],
    ids=["no-mask", "upper", "torch-convention", "no-diagonal", "keys-reversed"],
)
def test_causal_self_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_causal_self_attention, wrong_answer, hint)


# Every checker accepts its reference answer ----------------------------------


ACCEPTED = [
    (check_row_normalise, lambda m: m / m.sum(axis=1, keepdims=True)),
    (check_skipgram_pairs, _pairs),
    (check_cosine_similarity, lambda u, v: u @ v / np.linalg.norm(u) / np.linalg.norm(v)),
    (check_embedding_matrix, lambda tokens, vectors: np.stack([vectors[t] for t in tokens])),
    (check_positional_encoding, _pe),
    (check_shift_matrix, _shift),
    (check_wavelengths, lambda d: 2 * np.pi * 10000 ** (np.arange(0, d, 2) / d)),
    (check_softmax, _sm),
    (check_attention, _att),
    (check_multi_head, _multi_head),
    (check_causal_mask, lambda n: np.tril(np.ones((n, n), dtype=bool))),
    (check_additive_mask, lambda mask: np.where(mask, 0.0, -np.inf)),
    (check_padding_mask, lambda tokens, pad: (tokens != pad)[:, None, :]),
    (check_split_heads, _split),
    (check_merge_heads, lambda x: x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)),
    (check_causal_self_attention, lambda mha, x: mha(x, x, x, mask=_tril(x))),
]


def test_every_checker_is_tested():
    import transformer_course.exercises as exercises

    checkers = {name for name in exercises.__all__ if name.startswith("check_")}
    assert checkers == {check.__name__ for check, _ in ACCEPTED}


@pytest.mark.parametrize(
    ("check", "reference"), ACCEPTED, ids=lambda value: getattr(value, "__name__", "")
)
def test_checker_accepts_reference(check, reference, capsys):
    check(reference)
    assert capsys.readouterr().out.startswith(f"Correct: {check.__name__.removeprefix('check_')}")
