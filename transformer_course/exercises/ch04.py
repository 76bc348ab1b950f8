"""Checkers for chapter 4: masking."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _describe,
    _expect_array,
    _expect_close,
    _expect_returned,
    _expect_unchanged,
    _fail,
    _verdict,
)

__all__ = [
    "check_causal_mask",
    "check_additive_mask",
    "check_sliding_window_mask",
    "check_decoder_mask",
    "check_future_leaks",
]

UPPER_TRIANGLE_HINT = (
    "that is the upper triangle: query i would see keys j >= i, the future. "
    "Keep the lower triangle (np.tril)."
)


def _expect_mask(
    name: str, inputs: Sequence, got, expected: np.ndarray, mistakes
) -> None:
    """Like _expect_close, for boolean masks: the answer must be a boolean array."""
    _expect_array(name, inputs, got)
    if got is not None and not isinstance(got, tuple):
        dtype = np.asarray(got).dtype
        if dtype != np.bool_:
            _fail(
                name,
                f"returned dtype {dtype}; a mask is boolean: True where the "
                "query may attend to the key.",
                inputs,
                "build it from comparisons (j <= i) or np.tril(np.ones(..., dtype=bool)); "
                "an additive 0/-inf mask is another thing (exercise 4.2).",
            )
    _expect_close(name, inputs, got, expected, mistakes)


def _lower(size: int, k: int = 0) -> np.ndarray:
    return np.tril(np.ones((size, size), dtype=bool), k=k)


def _upper(size: int, k: int = 0) -> np.ndarray:
    return np.triu(np.ones((size, size), dtype=bool), k=k)


# ------------------------------------------------------------- exercise 4.1


def check_causal_mask(causal_mask: Callable[[int], np.ndarray]) -> None:
    """Check `causal_mask(size)`: boolean, True on and below the diagonal."""
    name = "causal_mask"

    def run_cases() -> None:
        for size in (4, 1, 6):
            got = _call(causal_mask, name, size)
            mistakes = [
                (_upper(size), UPPER_TRIANGLE_HINT),
                (
                    _lower(size, k=-1),
                    "the diagonal must be True: a token may attend to itself.",
                ),
                (
                    _upper(size, k=1),
                    "True must mean 'may attend'; your mask marks the forbidden keys "
                    "(the sign of the mask is flipped).",
                ),
            ]
            _expect_mask(name, [size], got, _lower(size), mistakes)

    _verdict(name, "lets each query see itself and the past only.", run_cases)


# ------------------------------------------------------------- exercise 4.2


def check_additive_mask(
    additive_mask: Callable[[np.ndarray], np.ndarray],
) -> None:
    """Check `additive_mask(mask)`: 0.0 where True, -inf where False."""
    name = "additive_mask"
    masks = [
        _lower(4),
        np.array(
            [
                [[True, True, True, False, False]],
                [[True, False, False, False, False]],
            ]
        ),
    ]

    def run_cases() -> None:
        for mask in masks:
            given = mask.copy()
            got = _call(additive_mask, name, given)
            _expect_unchanged(name, None, [given], [mask])
            _expect_array(name, [mask], got)
            mistakes = [
                (
                    np.where(mask, 0.0, np.inf),
                    "the sign is flipped: forbidden keys get +inf, so they win the softmax. Use -inf.",
                ),
                (
                    np.where(mask, 0.0, 10000.0),
                    "forbidden keys get +10000, the notes' bug (inf = -10000.0, then -inf): "
                    "adding a large positive number makes them irresistible. Use -inf.",
                ),
                (
                    np.where(mask, -np.inf, 0.0),
                    "inverted: the allowed keys (True) must get 0.",
                ),
                (
                    np.where(mask, 0.0, -1e9),
                    "use -inf rather than a large finite number: -1e9 overflows to -inf in "
                    "float16 anyway, and -inf gives weights of exactly 0.",
                ),
                *(
                    (
                        np.where(mask, 0.0, np.finfo(dtype).min),
                        "use -inf rather than the dtype's most negative "
                        "number: that is finite, so a row with no allowed "
                        "key would get uniform weights instead of zeros.",
                    )
                    for dtype in (np.float64, np.float32)
                ),
                (
                    np.where(mask, np.nan, -np.inf),
                    "0 * -inf is NaN: (1 - mask) * -inf puts NaN where the "
                    "mask is True. Use np.where(mask, 0.0, -np.inf).",
                ),
                (
                    np.where(mask, 1.0, 0.0),
                    "that is the mask as 0 and 1: added to the scores it would change "
                    "nothing that matters. Forbidden keys need -inf, allowed ones 0.",
                ),
            ]
            _expect_close(
                name, [mask], got, np.where(mask, 0.0, -np.inf), mistakes
            )

    _verdict(name, "gives 0 to allowed keys and -inf to the others.", run_cases)


# ------------------------------------------------------------- exercise 4.3


def check_sliding_window_mask(
    sliding_window_mask: Callable[[int, int], np.ndarray],
) -> None:
    """Check `sliding_window_mask(size, window)`: query i sees keys i - window + 1 .. i."""
    name = "sliding_window_mask"

    def run_cases() -> None:
        for size, window in [(6, 3), (5, 1), (4, 10), (7, 2)]:
            got = _call(sliding_window_mask, name, size, window)
            expected = _lower(size) & _upper(size, k=-(window - 1))
            mistakes = [
                (
                    _lower(size) & _upper(size, k=-window),
                    f"each query sees window + 1 = {window + 1} keys: the window "
                    "counts the query's own token, so keep j > i - window.",
                ),
                (
                    _lower(size) & _upper(size, k=-(window - 2)),
                    f"each query sees window - 1 = {window - 1} keys: the window "
                    "includes the query's own token, so keep j > i - window.",
                ),
                (
                    _upper(size) & _lower(size, k=window - 1),
                    "the band lies above the diagonal: query i sees keys i .. i + window - 1, "
                    "the future. Keep j <= i.",
                ),
                (
                    _upper(size, k=-(window - 1)) & _lower(size, k=window - 1),
                    "the band is symmetric: query i also sees the next window - 1 keys, "
                    "the future. Keep j <= i.",
                ),
                (
                    ~expected,
                    "inverted: True must mean 'may attend', so the band itself is True.",
                ),
                (_upper(size), UPPER_TRIANGLE_HINT),
            ]
            if window < size:
                mistakes.append(
                    (
                        _lower(size),
                        "that is the plain causal mask: the window is missing, "
                        "query i must not see keys before i - window + 1.",
                    )
                )
            _expect_mask(name, [size, window], got, expected, mistakes)

    _verdict(
        name,
        "limits each query to its last `window` keys.",
        run_cases,
    )


# ------------------------------------------------------------- exercise 4.4


def check_decoder_mask(
    decoder_mask: Callable[[np.ndarray, int], np.ndarray],
) -> None:
    """Check `decoder_mask(tokens, pad_id)`: (B, 1, T, T), causal and no pad keys."""
    name = "decoder_mask"
    cases = [
        (
            np.array([[0, 0, 5, 6, 7], [0, 8, 9, 4, 3], [2, 3, 4, 5, 6]]),
            0,
        ),  # left padded
        (np.array([[1, 1, 7, 0], [1, 5, 0, 2]]), 1),  # pad id 1; 0 is a word
        (np.array([[3, 4, 0, 0], [5, 6, 7, 0]]), 0),  # right padded
    ]

    def run_cases() -> None:
        for tokens, pad_id in cases:
            got = _call(decoder_mask, name, tokens.copy(), pad_id)
            length = tokens.shape[1]
            causal = _lower(length)  # (T, T)
            keys = (tokens != pad_id)[:, None, :]  # (B, 1, T_k)
            queries = (tokens != pad_id)[:, :, None]  # (B, T_q, 1)
            expected = (causal & keys)[:, None]  # (B, 1, T, T)
            mistakes = [
                (
                    np.broadcast_to(causal, expected.shape),
                    "that is the causal mask alone: with left padding, real tokens "
                    "would attend to the pads in front of them. Combine it with "
                    "the padding mask.",
                ),
                (
                    np.broadcast_to(keys[:, None], expected.shape),
                    "that is the padding mask alone: query i still sees the later "
                    "keys, the future. Combine it with the causal mask.",
                ),
                (
                    (causal | keys)[:, None],
                    "combine masks with & (allowed only if both allow), not |.",
                ),
                (
                    (causal & queries)[:, None],
                    "your padding mask hides pad *queries*, shape (B, T, 1); it must "
                    "hide pad *keys*, shape (B, 1, T).",
                ),
                ((_upper(length) & keys)[:, None], UPPER_TRIANGLE_HINT),
                (
                    (causal & (tokens != 0)[:, None, :])[:, None],
                    "use pad_id, not a hard-coded 0.",
                ),
                (
                    causal & keys,
                    "add the head axis: (B, T, T) -> (B, 1, T, T), e.g. mask[:, None], "
                    "so that the mask broadcasts over the heads.",
                ),
                (
                    (causal & ~keys)[:, None],
                    "True must mean 'may attend': a real key is tokens != "
                    "pad_id, not tokens == pad_id.",
                ),
                (
                    (causal & keys)[:, :, None],
                    "the head axis goes second, after the batch: (B, 1, T, T), "
                    "e.g. mask[:, None].",
                ),
                (
                    (causal & keys)[None],
                    "the head axis goes second, after the batch: (B, 1, T, T), "
                    "e.g. mask[:, None].",
                ),
            ]
            if not np.array_equal(causal & keys & queries, causal & keys):
                mistakes.insert(
                    0,
                    (
                        (causal & keys & queries)[:, None],
                        "you also blank the rows of the pad *queries*: hide "
                        "the pad *keys* only, (B, 1, T) combined with the "
                        "causal mask; a pad query's row keeps what the causal "
                        "mask and the real keys allow.",
                    ),
                )
            _expect_mask(name, [tokens, pad_id], got, expected, mistakes)

    _verdict(
        name,
        "is causal and hides the padding keys, with a head axis.",
        run_cases,
    )


# ------------------------------------------------------------- exercise 4.5


class _Sequence:
    """A sequence function (T, d) -> (T, d) with a readable description."""

    def __init__(
        self,
        function: Callable[[np.ndarray], np.ndarray],
        description: str,
        leaks: bool,
    ):
        self.function = function
        self.description = description
        self.leaks = leaks

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.function(np.asarray(x, dtype=float))

    def __repr__(self) -> str:
        return f"fn: {self.description}"


def _softmax_rows(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _masked_attention(x: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    scores = np.where(allowed, x @ x.T / np.sqrt(x.shape[1]), -np.inf)
    return _softmax_rows(scores) @ x


def _look_ahead_at_2(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    if len(x) > 2:
        out[1] = out[1] + 0.5 * x[2]  # position 1 reads position 2
    return out


def _tiny_leak(x: np.ndarray) -> np.ndarray:
    out = np.cumsum(x, axis=0)
    if len(x) > 3:
        out[0] = out[0] + 0.01 * x[3]  # position 0 reads position 3, a little
    return out


def _sequences() -> list[_Sequence]:
    def band(x, ahead):
        n = len(x)
        return _masked_attention(
            x, np.tril(np.ones((n, n), dtype=bool), k=ahead)
        )

    return [
        _Sequence(lambda x: band(x, 0), "causal self-attention", False),
        _Sequence(
            lambda x: band(x, len(x)), "self-attention without a mask", True
        ),
        _Sequence(
            _look_ahead_at_2,
            "out = x, except out[1] = x[1] + 0.5 * x[2]",
            True,
        ),
        _Sequence(
            lambda x: np.cumsum(x, axis=0), "running sum over positions", False
        ),
        _Sequence(lambda x: x * 2.0, "x * 2, position by position", False),
        _Sequence(
            lambda x: np.cumsum(x[::-1], axis=0)[::-1],
            "sum of the current and all later positions",
            True,
        ),
        _Sequence(
            _tiny_leak, "running sum, plus 0.01 * x[3] at position 0", True
        ),
        _Sequence(
            lambda x: band(x, 1), "attention that sees one token ahead", True
        ),
        _Sequence(
            lambda x: np.vstack([x[:1], np.diff(x, axis=0)]),
            "difference with the previous position",
            False,
        ),
    ]


def check_future_leaks(future_leaks: Callable[[Callable], bool]) -> None:
    """Check `future_leaks(fn)`: True exactly when some output of `fn` depends on a later input."""
    name = "future_leaks"

    def run_cases() -> None:
        for sequence in _sequences():
            with np.errstate(all="ignore"):
                got = _call(future_leaks, name, sequence)
            _expect_returned(name, [sequence], got)
            if not isinstance(got, bool | np.bool_):
                _fail(
                    name,
                    f"returned {_describe(got, 0)}; expected True or False.",
                    [sequence],
                )
            if bool(got) == sequence.leaks:
                continue
            if sequence.leaks:
                hint = (
                    "change each position s in turn (not only the last one) and "
                    "compare the outputs before s; a change by 1.0 and np.allclose "
                    "with its default tolerance will see even a small leak."
                )
                _fail(
                    name,
                    "returned False, but this function leaks the future.",
                    [sequence],
                    hint,
                )
            hint = (
                "compare only the outputs *before* the position you changed: an "
                "output may depend on its own position and on the past."
            )
            _fail(
                name,
                "returned True, but this function is causal.",
                [sequence],
                hint,
            )

    _verdict(name, "tells causal functions from leaking ones.", run_cases)
