"""Checkers for the book's exercises.

Each `check_*` function takes the learner's function, calls it on a few inputs and
compares the results with the expected ones:

- correct: prints "Correct: ...";
- still the stub (it raises `NotImplementedError`): prints "Not done yet: ..." and
  returns, so "run all" carries on to the reference solution;
- wrong: raises `ExerciseError`, whose message names the input, what was expected
  and what came back, with a hint when the answer matches a known mistake.

This is the one hand-written module of the package (the rest is exported from the
chapters); `tests/test_exercises.py` proves that every checker rejects the known
wrong answers.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "ExerciseError",
    "check_additive_mask",
    "check_attention",
    "check_causal_mask",
    "check_causal_self_attention",
    "check_cosine_similarity",
    "check_embedding_matrix",
    "check_merge_heads",
    "check_multi_head",
    "check_padding_mask",
    "check_positional_encoding",
    "check_row_normalise",
    "check_shift_matrix",
    "check_skipgram_pairs",
    "check_split_heads",
    "check_softmax",
    "check_wavelengths",
]


class ExerciseError(AssertionError):
    """The answer to an exercise is wrong; the message says where and why."""


class _NotDone(Exception):
    """The learner's function still raises NotImplementedError."""


def _describe(value) -> str:
    """A short, readable rendering of an input or output for a message."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, precision=4, suppress_small=True, separator=", ")
        return f"array of shape {value.shape}:\n{text}"
    return repr(value)


def _call(fn: Callable, name: str, *args):
    """Call the learner's `fn`; turn its exceptions into messages about the input."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise _NotDone() from None
    except Exception as error:  # the learner's bug, reported with the input that caused it
        inputs = "\n".join(_describe(a) for a in args)
        raise ExerciseError(
            f"{name} raised {type(error).__name__}: {error}\non input {inputs}"
        ) from error


def _matching_mistake(got: np.ndarray, known_mistakes, atol: float) -> str | None:
    for wrong, message in known_mistakes:
        wrong = np.asarray(wrong, dtype=float)
        if wrong.shape == got.shape and np.allclose(got, wrong, atol=atol):
            return message
    return None


def _expect_close(
    name: str,
    inputs: Sequence,
    got,
    expected: np.ndarray,
    known_mistakes: Sequence[tuple[np.ndarray, str]] = (),
    atol: float = 1e-6,
) -> None:
    """Raise ExerciseError unless `got` equals `expected`, naming a known mistake if it matches one."""
    shown_inputs = "\n".join(_describe(a) for a in inputs)
    if got is None:
        raise ExerciseError(
            f"{name} on input {shown_inputs}\nreturned None: did you forget `return`?"
        )
    try:
        got_array = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise ExerciseError(
            f"{name} on input {shown_inputs}\nshould return numbers, but returned {got!r}"
        ) from None
    expected = np.asarray(expected, dtype=float)
    if got_array.shape == expected.shape and np.allclose(got_array, expected, atol=atol):
        return
    hint = _matching_mistake(got_array, known_mistakes, atol)
    if got_array.shape != expected.shape:
        problem = f"should return shape {expected.shape}, but returned shape {got_array.shape}."
    else:
        problem = f"expected {_describe(expected)}\nbut got {_describe(got_array)}"
    raise ExerciseError(
        f"{name} on input {shown_inputs}\n{problem}"
        + (("\n" + textwrap.fill(f"Hint: {hint}", width=80)) if hint else "")
    )


def _expect_equal(name: str, inputs: Sequence, got, expected, known_mistakes=()) -> None:
    """Raise ExerciseError unless `got == expected` (for lists, tuples and other exact answers)."""
    if got == expected:
        return
    hint = next((message for wrong, message in known_mistakes if got == wrong), None)
    shown_inputs = "\n".join(_describe(a) for a in inputs)
    raise ExerciseError(
        f"{name} on input {shown_inputs}\nexpected {expected!r}\nbut got {got!r}"
        + (("\n" + textwrap.fill(f"Hint: {hint}", width=80)) if hint else "")
    )


def _verdict(name: str, success: str, run_cases: Callable[[], None]) -> None:
    """Run the cases and print the verdict; a wrong answer raises ExerciseError."""
    try:
        run_cases()
    except _NotDone:
        print(
            f"Not done yet: {name} still raises NotImplementedError.\n"
            "Write your answer in its cell, run that cell, then run this one again."
        )
        return
    print(f"Correct: {name} {success}")


# ---------------------------------------------------------------------------
# Chapter 0: getting started


def check_row_normalise(row_normalise: Callable[[np.ndarray], np.ndarray]) -> None:
    """Check `row_normalise(matrix)`: every row divided by its own sum, input left unchanged."""
    name = "row_normalise"
    square = np.array([[1.0, 3.0, 0.0], [2.0, 2.0, 4.0], [0.0, 1.0, 9.0]])
    wide = np.array([[1.0, 1.0, 2.0, 4.0], [5.0, 0.0, 3.0, 2.0]])

    def run_cases() -> None:
        for matrix in (square, wide):
            given = matrix.copy()
            got = _call(row_normalise, name, given)
            expected = matrix / matrix.sum(axis=1, keepdims=True)
            mistakes = [
                (
                    matrix / matrix.sum(axis=0, keepdims=True),
                    "every column sums to 1, not every row: sum over axis=1 (the columns "
                    "of one row), not axis=0.",
                ),
            ]
            if matrix.shape[0] == matrix.shape[1]:
                mistakes.append(
                    (
                        matrix / matrix.sum(axis=1),
                        "the row sums have shape (n,), and NumPy broadcasts such an array "
                        "along the last axis, so element [i, j] was divided by the sum of "
                        "row j. Keep the summed axis: matrix.sum(axis=1, keepdims=True).",
                    )
                )
            _expect_close(name, [matrix], got, expected, mistakes)
            if not np.array_equal(given, matrix):
                raise ExerciseError(
                    f"{name} changed its input in place; return a new array and leave "
                    f"the input as it was:\n{_describe(matrix)}"
                )

    _verdict(name, "divides every row by its own sum.", run_cases)


# ---------------------------------------------------------------------------
# Chapter 1: from words to vectors


def _skipgram_reference(tokens, window, include_centre=False, right_only=False):
    pairs = []
    for position, centre in enumerate(tokens):
        start = position if right_only else max(0, position - window)
        for other in range(start, min(len(tokens), position + window + 1)):
            if other != position or include_centre:
                pairs.append((centre, tokens[other]))
    return pairs


def check_skipgram_pairs(skipgram_pairs: Callable[[list[str], int], list]) -> None:
    """Check `skipgram_pairs(tokens, window)`: (centre, context) pairs, in order, never (w, w) by position."""
    name = "skipgram_pairs"
    cases = [
        (["the", "black", "cat", "sat", "on", "the", "couch"], 2),
        (["a", "b", "c", "d"], 1),
        (["only"], 3),
    ]

    def run_cases() -> None:
        for tokens, window in cases:
            got = _call(skipgram_pairs, name, list(tokens), window)
            got = [tuple(pair) for pair in got] if isinstance(got, list | tuple) else got
            mistakes = [
                (
                    _skipgram_reference(tokens, window, include_centre=True),
                    "a word is not its own context: skip the centre position.",
                ),
                (
                    _skipgram_reference(tokens, window, right_only=True),
                    "the context lies on both sides of the centre, not only after it.",
                ),
                (
                    _skipgram_reference(tokens, window - 1),
                    "the window is one word too narrow: include positions up to "
                    "`window` away (range's end is exclusive).",
                ),
                (
                    _skipgram_reference(tokens, window + 1),
                    "the window is one word too wide.",
                ),
            ]
            _expect_equal(
                name, [tokens, window], got, _skipgram_reference(tokens, window), mistakes
            )

    _verdict(name, "produces the skip-gram pairs.", run_cases)


def check_cosine_similarity(cosine_similarity: Callable[[np.ndarray, np.ndarray], float]) -> None:
    """Check `cosine_similarity(u, v)`: the dot product divided by both lengths."""
    name = "cosine_similarity"
    rng = np.random.default_rng(1)
    cases = [
        (np.array([3.0, 4.0, 0.0]), np.array([2.0, 0.0, 0.0])),
        (np.array([1.0, 2.0]), np.array([-2.0, -4.0])),
        (rng.normal(size=512) * 3, rng.normal(size=512) + 0.5),
    ]

    def run_cases() -> None:
        for u, v in cases:
            got = _call(cosine_similarity, name, u.copy(), v.copy())
            dot = float(u @ v)
            norm_u, norm_v = np.linalg.norm(u), np.linalg.norm(v)
            mistakes = [
                (dot, "that is the plain dot product; divide by the lengths of both vectors."),
                (dot / norm_u, "divide by the length of v too."),
                (dot / norm_v, "divide by the length of u too."),
                (dot / (norm_u**2 * norm_v**2), "divide by the lengths, not their squares."),
            ]
            _expect_close(name, [u, v], got, np.array(dot / (norm_u * norm_v)), mistakes)

    _verdict(name, "is the cosine of the angle between u and v.", run_cases)


def check_embedding_matrix(embedding_matrix: Callable[[list[str], dict], np.ndarray]) -> None:
    """Check `embedding_matrix(tokens, vectors)`: row t is the vector of tokens[t]."""
    name = "embedding_matrix"
    rng = np.random.default_rng(2)
    words = ["the", "black", "cat", "sat", "on", "couch"]
    vectors = {word: rng.normal(size=5).round(2) for word in words}
    tokens = ["the", "black", "cat", "sat", "on", "the", "couch"]

    def run_cases() -> None:
        got = _call(embedding_matrix, name, list(tokens), dict(vectors))
        expected = np.stack([vectors[token] for token in tokens])
        unique = list(dict.fromkeys(tokens))
        mistakes = [
            (expected.T, "rows are tokens and columns are dimensions: shape (T, d), not (d, T)."),
            (
                np.stack([vectors[token] for token in unique]),
                "a repeated word needs its row each time it occurs (T rows, not one per "
                "distinct word).",
            ),
            (
                np.stack([vectors[token] for token in sorted(set(tokens))]),
                "keep the tokens in sentence order, with repeats.",
            ),
        ]
        _expect_close(name, [tokens, "a dict of 5-dimensional vectors"], got, expected, mistakes)

    _verdict(name, "stacks one row per token.", run_cases)


# ---------------------------------------------------------------------------
# Chapter 2: positional encoding


def _encoding(seq_len: int, d_model: int, exponent_factor: float = 1.0, swap: bool = False):
    """The sinusoidal encoding; exponent_factor=2 is the notes' doubled exponent."""
    angles = np.arange(seq_len)[:, None] / 10000.0 ** (
        exponent_factor * np.arange(0, d_model, 2) / d_model
    )
    encoding = np.zeros((seq_len, d_model))
    encoding[:, 0::2] = np.cos(angles) if swap else np.sin(angles)
    encoding[:, 1::2] = np.sin(angles) if swap else np.cos(angles)
    return encoding


def check_positional_encoding(positional_encoding: Callable[[int, int], np.ndarray]) -> None:
    """Check `positional_encoding(seq_len, d_model)` against the paper's formula (base 10000)."""
    name = "positional_encoding"

    def run_cases() -> None:
        for seq_len, d_model in [(6, 8), (50, 64), (20, 512)]:
            got = _call(positional_encoding, name, seq_len, d_model)
            mistakes = [
                (
                    _encoding(seq_len, d_model, exponent_factor=2.0),
                    "the exponent is doubled: if your loop index already steps by 2 "
                    "(0, 2, 4, ...), it *is* 2i; do not multiply it by 2 again.",
                ),
                (
                    _encoding(seq_len, d_model, swap=True),
                    "sine and cosine are swapped: even dimensions 2i get the sine, odd "
                    "dimensions 2i+1 the cosine.",
                ),
                (
                    _encoding(seq_len, d_model).T,
                    "rows are positions and columns are dimensions: shape (seq_len, d_model).",
                ),
            ]
            expected = _encoding(seq_len, d_model)
            _expect_close(name, [seq_len, d_model], got, expected, mistakes)

    _verdict(name, "matches the formula of the paper.", run_cases)


def _shift(k: int, d_model: int, sign: float = 1.0) -> np.ndarray:
    matrix = np.zeros((d_model, d_model))
    for pair in range(d_model // 2):
        angle = k / 10000.0 ** (2 * pair / d_model)
        c, s = np.cos(angle), sign * np.sin(angle)
        matrix[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = [[c, s], [-s, c]]
    return matrix


def check_shift_matrix(shift_matrix: Callable[[int, int], np.ndarray]) -> None:
    """Check `shift_matrix(k, d_model)`: M @ PE[pos] == PE[pos + k] for every position."""
    name = "shift_matrix"

    def run_cases() -> None:
        for k, d_model in [(1, 4), (5, 16), (12, 64)]:
            got = _call(shift_matrix, name, k, d_model)
            mistakes = [
                (
                    _shift(k, d_model, sign=-1.0),  # also the transpose of the right answer
                    "this rotates backwards, giving PE[pos - k] (it is the transpose of "
                    "the right matrix): in each block the sine goes top right with a plus "
                    "sign, [[cos, sin], [-sin, cos]].",
                ),
            ]
            _expect_close(name, [k, d_model], got, _shift(k, d_model), mistakes)

    _verdict(name, "shifts every encoding by k positions.", run_cases)


def check_wavelengths(wavelengths: Callable[[int], np.ndarray]) -> None:
    """Check `wavelengths(d_model)`: 2 pi * 10000 ** (2i / d_model) for each pair i."""
    name = "wavelengths"

    def run_cases() -> None:
        for d_model in [4, 64, 512]:
            got = _call(wavelengths, name, d_model)
            exponents = np.arange(0, d_model, 2) / d_model
            mistakes = [
                (
                    10000.0**exponents,
                    "a wavelength is 2 pi divided by the frequency: multiply by 2 pi.",
                ),
                (
                    10000.0 ** (-exponents),
                    "those are the frequencies; the wavelength is 2 pi / frequency.",
                ),
                (2 * np.pi * 10000.0 ** (2 * exponents), "the exponent is doubled."),
            ]
            _expect_close(name, [d_model], got, 2 * np.pi * 10000.0**exponents, mistakes, atol=1e-6)

    _verdict(name, "gives the wavelength of every pair.", run_cases)


# ---------------------------------------------------------------------------
# Chapter 3: attention in NumPy


def _softmax(x: np.ndarray, axis=-1) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def check_softmax(softmax: Callable[..., np.ndarray]) -> None:
    """Check `softmax(x, axis=-1)`: normalises along `axis` only, finite for large inputs."""
    name = "softmax"
    matrix = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.0, -2.0, 5.0]])
    cube = np.arange(24, dtype=float).reshape(2, 3, 4) / 5

    def run_cases() -> None:
        got = _call(softmax, name, matrix.copy())
        mistakes = [
            (
                _softmax(matrix, axis=None),
                "you normalised the whole matrix (softmax without an axis): each row must sum to 1.",
            ),
            (
                _softmax(matrix, axis=0),
                "each column sums to 1: normalise along the last axis (the keys).",
            ),
        ]
        _expect_close(name, [matrix], got, _softmax(matrix), mistakes)
        for axis in (0, 1):
            got = _call(softmax, name, cube.copy(), axis)
            _expect_close(f"{name} with axis={axis}", [cube], got, _softmax(cube, axis=axis))
        big = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1000.5]])
        with np.errstate(all="ignore"):
            got = _call(softmax, name, big.copy())
        if got is not None and not np.isfinite(np.asarray(got, dtype=float)).all():
            raise ExerciseError(
                f"{name} on input {_describe(big)}\nreturned {_describe(np.asarray(got, dtype=float))}\n"
                "Hint: exp(1000) overflows to inf (and exp(-1000) underflows to 0). Subtract "
                "the largest entry of each slice before exponentiating; softmax does not change."
            )
        _expect_close(name, [big], got, _softmax(big))

    _verdict(name, "is stable and normalises along the given axis.", run_cases)


def _attention(q, k, v, scale=None, axis=-1, transpose_scores=False, k_untransposed=False):
    d_k = q.shape[-1]
    scores = q @ k if k_untransposed else q @ k.T
    if transpose_scores:
        scores = scores.T
    scores = scores / (np.sqrt(d_k) if scale is None else scale)
    return _softmax(scores, axis=axis) @ v


def check_attention(attention: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> None:
    """Check `attention(q, k, v)` = softmax(q k^T / sqrt(d_k)) v on 2-D inputs."""
    name = "attention"
    rng = np.random.default_rng(3)
    cases = [
        (rng.normal(size=(4, 4)) * 2, rng.normal(size=(4, 4)) * 2, rng.normal(size=(4, 3))),
        (rng.normal(size=(3, 8)), rng.normal(size=(5, 8)), rng.normal(size=(5, 2))),
    ]

    def run_cases() -> None:
        for q, k, v in cases:
            got = _call(attention, name, q.copy(), k.copy(), v.copy())
            d_k = q.shape[-1]
            mistakes = [
                (
                    _attention(q, k, v, scale=1.0),
                    "the scores are not scaled: divide q k^T by sqrt(d_k).",
                ),
                (_attention(q, k, v, scale=d_k), "divide by sqrt(d_k), not by d_k."),
                (_attention(q, k, v, scale=d_k**2), "divide by sqrt(d_k), not by d_k ** 2."),
                (
                    _attention(q, k, v, axis=0),
                    "softmax over the wrong axis: each query's row of weights (over the keys) "
                    "must sum to 1, so use axis=-1.",
                ),
            ]
            if q.shape[0] == k.shape[0]:
                mistakes += [
                    (
                        _attention(q, k, v, k_untransposed=True),
                        "K is not transposed: the scores are q @ k.T, one row per query, one column per key.",
                    ),
                    (
                        _attention(q, k, v, transpose_scores=True),
                        "the scores are transposed (k @ q.T): rows must be queries, columns keys.",
                    ),
                ]
            shown = [q, k, v]
            _expect_close(name, shown, got, _attention(q, k, v), mistakes)

    _verdict(name, "computes softmax(q k^T / sqrt(d_k)) v.", run_cases)


def check_multi_head(multi_head: Callable[..., np.ndarray]) -> None:
    """Check `multi_head(X, W_Q, W_K, W_V, W_O)` with stacked (h, d_model, d_k) weights."""
    name = "multi_head"
    rng = np.random.default_rng(4)
    h, d_model, length = 2, 6, 4
    d_k = d_model // h
    X = rng.normal(size=(length, d_model))
    W_Q, W_K, W_V = rng.normal(size=(3, h, d_model, d_k))
    W_O = rng.normal(size=(d_model, d_model))

    def heads(scale=None):
        return [_attention(X @ W_Q[i], X @ W_K[i], X @ W_V[i], scale=scale) for i in range(h)]

    def run_cases() -> None:
        got = _call(multi_head, name, X.copy(), W_Q.copy(), W_K.copy(), W_V.copy(), W_O.copy())
        mistakes = [
            (np.concatenate(heads(), axis=-1), "the output projection W_O is missing (step 8)."),
            (
                np.concatenate(heads()[::-1], axis=-1) @ W_O,
                "the heads are concatenated in reverse order.",
            ),
            (
                np.concatenate(heads(scale=1.0), axis=-1) @ W_O,
                "the scores are not divided by sqrt(d_k).",
            ),
        ]
        shown = [X, "W_Q, W_K, W_V of shape (2, 6, 3)", "W_O of shape (6, 6)"]
        _expect_close(name, shown, got, np.concatenate(heads(), axis=-1) @ W_O, mistakes)

    _verdict(name, "computes multi-head attention.", run_cases)


# ---------------------------------------------------------------------------
# Chapter 4: masking


def _expect_mask(name: str, inputs: Sequence, got, expected: np.ndarray, mistakes) -> None:
    """Like _expect_close, for boolean masks: the answer must be a boolean array."""
    if got is not None and np.asarray(got).dtype != bool:
        raise ExerciseError(
            f"{name} on input {_describe(inputs[0])}\nreturned dtype {np.asarray(got).dtype}; "
            "a mask is boolean: True where the query may attend to the key."
        )
    _expect_close(
        name, inputs, got, expected.astype(float), [(w.astype(float), m) for w, m in mistakes]
    )


def check_causal_mask(causal_mask: Callable[[int], np.ndarray]) -> None:
    """Check `causal_mask(size)`: boolean, True on and below the diagonal."""
    name = "causal_mask"

    def run_cases() -> None:
        for size in (4, 1, 6):
            got = _call(causal_mask, name, size)
            ones = np.ones((size, size), dtype=bool)
            mistakes = [
                (
                    np.triu(ones),
                    "that is the upper triangle: query i would see keys j >= i, the future. "
                    "Keep the lower triangle (np.tril).",
                ),
                (np.tril(ones, k=-1), "the diagonal must be True: a token may attend to itself."),
                (
                    np.triu(ones, k=1),
                    "True must mean 'may attend'; your mask marks the forbidden keys.",
                ),
            ]
            _expect_mask(name, [size], got, np.tril(ones), mistakes)

    _verdict(name, "lets each query see itself and the past only.", run_cases)


def check_additive_mask(additive_mask: Callable[[np.ndarray], np.ndarray]) -> None:
    """Check `additive_mask(mask)`: 0.0 where True, -inf where False."""
    name = "additive_mask"
    masks = [
        np.tril(np.ones((4, 4), dtype=bool)),
        np.array([[[True, True, True, False, False]], [[True, False, False, False, False]]]),
    ]

    def run_cases() -> None:
        for mask in masks:
            got = _call(additive_mask, name, mask.copy())
            mistakes = [
                (
                    np.where(mask, 0.0, np.inf),
                    "the sign is flipped: forbidden keys get +inf, so they win the softmax. "
                    "Use -inf.",
                ),
                (
                    np.where(mask, 0.0, 10000.0),
                    "forbidden keys get +10000, the notes' bug (inf = -10000.0, then -inf): "
                    "adding a large positive number makes them irresistible. Use -inf.",
                ),
                (np.where(mask, -np.inf, 0.0), "inverted: the allowed keys (True) must get 0."),
                (
                    np.where(mask, 0.0, -1e9),
                    "use -inf rather than a large finite number: -1e9 overflows to -inf in "
                    "float16 anyway, and -inf gives weights of exactly 0.",
                ),
            ]
            _expect_close(name, [mask], got, np.where(mask, 0.0, -np.inf), mistakes)

    _verdict(name, "gives 0 to allowed keys and -inf to the others.", run_cases)


def check_padding_mask(padding_mask: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """Check `padding_mask(tokens, pad_id)`: (B, 1, T) boolean, True for real keys."""
    name = "padding_mask"
    cases = [
        (np.array([[5, 7, 2, 9, 0, 0], [3, 0, 0, 0, 0, 0], [4, 4, 8, 6, 2, 1]]), 0),
        (np.array([[2, 3, 1, 1], [1, 1, 1, 1]]), 1),
    ]

    def run_cases() -> None:
        for tokens, pad_id in cases:
            got = _call(padding_mask, name, tokens.copy(), pad_id)
            real = tokens != pad_id
            mistakes = [
                (
                    real[:, :, None],
                    "this masks queries, shape (B, T, 1): the padding mask hides pad *keys* "
                    "from every query, shape (B, 1, T).",
                ),
                (~real[:, None, :], "inverted: True must mark the real tokens."),
                (
                    real,
                    "add the query axis: (B, T) -> (B, 1, T), so the mask broadcasts over queries.",
                ),
                ((tokens != 0)[:, None, :], "use pad_id, not a hard-coded 0."),
            ]
            _expect_mask(name, [tokens, pad_id], got, real[:, None, :], mistakes)

    _verdict(name, "hides the padding keys from every query.", run_cases)


# ---------------------------------------------------------------------------
# Chapter 5: multi-head attention in PyTorch


def _numpy(value):
    """A learner's tensor (or array) as a float NumPy array, for comparison."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().double().numpy()
    return value


def check_split_heads(split_heads: Callable) -> None:
    """Check `split_heads(x, n_heads)`: (B, T, d_model) -> (B, h, T, d_k), each head its own columns."""
    import torch

    name = "split_heads"

    def run_cases() -> None:
        for B, T, d_model, h in [(2, 5, 6, 3), (1, 4, 8, 2)]:
            x = torch.arange(B * T * d_model, dtype=torch.float32).view(B, T, d_model)
            d_k = d_model // h
            got = _numpy(_call(split_heads, name, x.clone(), h))
            mistakes = [
                (
                    x.view(B, h, T, d_k),
                    "view(B, h, T, d_k) has the right shape but cuts the tokens, not the "
                    "features: view as (B, T, h, d_k) first, then transpose(1, 2).",
                ),
                (
                    x.view(B, T, h, d_k),
                    "the head axis must come before the token axis: transpose(1, 2).",
                ),
                (
                    x.view(B, T, d_k, h).permute(0, 3, 1, 2),
                    "each head takes d_k consecutive columns, not every h-th column.",
                ),
            ]
            expected = x.view(B, T, h, d_k).transpose(1, 2)
            _expect_close(
                name,
                [f"x of shape {(B, T, d_model)} holding 0, 1, 2, ...", h],
                got,
                expected.numpy(),
                [(w.numpy(), m) for w, m in mistakes],
            )

    _verdict(name, "gives every head its own d_k columns.", run_cases)


def check_merge_heads(merge_heads: Callable) -> None:
    """Check `merge_heads(x)`: (B, h, T, d_k) -> (B, T, h * d_k), the inverse of the split."""
    import torch

    name = "merge_heads"

    def run_cases() -> None:
        for B, h, T, d_k in [(2, 3, 5, 2), (1, 2, 4, 4)]:
            x = torch.arange(B * h * T * d_k, dtype=torch.float32).view(B, h, T, d_k)
            got = _numpy(_call(merge_heads, name, x.clone()))
            mistakes = [
                (
                    x.reshape(B, T, h * d_k),
                    "the heads were not moved back next to the features: transpose(1, 2) "
                    "before reshaping, (B, h, T, d_k) -> (B, T, h, d_k) -> (B, T, h * d_k).",
                ),
                (
                    x.permute(0, 2, 3, 1).reshape(B, T, h * d_k),
                    "the heads' columns are interleaved: keep each head's d_k columns together.",
                ),
            ]
            expected = x.transpose(1, 2).reshape(B, T, h * d_k)
            _expect_close(
                name,
                [f"x of shape {(B, h, T, d_k)} holding 0, 1, 2, ..."],
                got,
                expected.numpy(),
                [(w.numpy(), m) for w, m in mistakes],
            )

    _verdict(name, "puts the heads back side by side.", run_cases)


def check_causal_self_attention(causal_self_attention: Callable) -> None:
    """Check `causal_self_attention(mha, x)`: mha(x, x, x) with the causal mask, no future leak."""
    import torch

    from transformer_course.multi_head_attention import MultiHeadAttention

    name = "causal_self_attention"
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model=16, n_heads=4).eval()
    x = torch.randn(2, 5, 16)
    lower = torch.ones(5, 5, dtype=torch.bool).tril()

    def run_cases() -> None:
        with torch.no_grad():
            got = _numpy(_call(causal_self_attention, name, mha, x.clone()))
            mistakes = [
                (mha(x, x, x), "no mask: every token attends to the future too."),
                (
                    mha(x, x, x, mask=lower.T.clone()),
                    "the mask is the upper triangle: True must be on and below the diagonal.",
                ),
                (
                    mha(x, x, x, mask=~lower),
                    "that is nn.MultiheadAttention's convention (True = forbidden); this "
                    "book's mask is True where a query may attend.",
                ),
                (
                    mha(x, x, x, mask=lower.tril(-1)),
                    "a token may attend to itself: keep the diagonal.",
                ),
            ]
            shown = ["MultiHeadAttention(16, 4)", "x of shape (2, 5, 16)"]
            _expect_close(
                name,
                shown,
                got,
                _numpy(mha(x, x, x, mask=lower)),
                [(_numpy(w), m) for w, m in mistakes],
                atol=1e-5,
            )
            changed = x.clone()
            changed[:, -1] += 1.0
            later = _numpy(_call(causal_self_attention, name, mha, changed))
            if not np.allclose(later[:, :-1], got[:, :-1], atol=1e-5):
                raise ExerciseError(f"{name}: changing the last token changed earlier outputs")

    _verdict(name, "hides the future from every token.", run_cases)
