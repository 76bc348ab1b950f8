"""Checkers for chapter 4: masking."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    Exercise,
    Mistake,
    Refusal,
    describe,
    expect_returned,
    fail,
    message,
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


def _not_boolean(got) -> bool:
    """An array (not a list, a tuple or None) whose dtype is not bool."""
    if got is None or isinstance(got, (tuple, list)):
        return False
    return np.asarray(got).dtype != np.bool_


_BOOLEAN = Refusal(
    _not_boolean,
    "returned dtype {dtype}; a mask is boolean: True where the query may "
    "attend to the key.",
    "build it from comparisons (j <= i) or np.tril(np.ones(..., "
    "dtype=bool)); an additive 0/-inf mask is another thing (exercise 4.2).",
    fields=lambda got: {"dtype": np.asarray(got).dtype},
)


def _lower(size: int, k: int = 0) -> np.ndarray:
    return np.tril(np.ones((size, size), dtype=bool), k=k)


def _upper(size: int, k: int = 0) -> np.ndarray:
    return np.triu(np.ones((size, size), dtype=bool), k=k)


# ------------------------------------------------------------- exercise 4.1

CAUSAL_MASK = Exercise(
    name="causal_mask",
    success="lets each query see itself and the past only.",
    doc="Check `causal_mask(size)`: boolean, True on and below the diagonal.",
    cases=[(4,), (1,), (6,)],
    reference=_lower,
    array=True,
    refusals=[_BOOLEAN],
    mistakes=[
        Mistake(_upper, UPPER_TRIANGLE_HINT),
        Mistake(
            lambda size: _lower(size, k=-1),
            "the diagonal must be True: a token may attend to itself.",
        ),
        Mistake(
            lambda size: _upper(size, k=1),
            "True must mean 'may attend'; your mask marks the forbidden keys "
            "(the sign of the mask is flipped).",
        ),
    ],
)
check_causal_mask = CAUSAL_MASK.checker()


# ------------------------------------------------------------- exercise 4.2


def _where(allowed: float, forbidden: float) -> Callable:
    return lambda mask: np.where(mask, allowed, forbidden)


_FINITE_MINIMUM = (
    "use -inf rather than the dtype's most negative number: that is finite, "
    "so a row with no allowed key would get uniform weights instead of zeros."
)

ADDITIVE_MASK = Exercise(
    name="additive_mask",
    success="gives 0 to allowed keys and -inf to the others.",
    doc="Check `additive_mask(mask)`: 0.0 where True, -inf where False.",
    cases=[
        (_lower(4),),
        (np.array([[[1, 1, 1, 0, 0]], [[1, 0, 0, 0, 0]]], dtype=bool),),
    ],
    reference=_where(0.0, -np.inf),
    array=True,
    mistakes=[
        Mistake(
            _where(0.0, np.inf),
            "the sign is flipped: forbidden keys get +inf, so they win the "
            "softmax. Use -inf.",
        ),
        Mistake(
            _where(0.0, 10000.0),
            "forbidden keys get +10000, the notes' bug (inf = -10000.0, then "
            "-inf): adding a large positive number makes them irresistible. "
            "Use -inf.",
        ),
        Mistake(
            _where(-np.inf, 0.0),
            "inverted: the allowed keys (True) must get 0.",
        ),
        Mistake(
            _where(0.0, -1e9),
            "use -inf rather than a large finite number: -1e9 overflows to "
            "-inf in float16 anyway, and -inf gives weights of exactly 0.",
        ),
        Mistake(_where(0.0, np.finfo(np.float64).min), _FINITE_MINIMUM),
        Mistake(_where(0.0, np.finfo(np.float32).min), _FINITE_MINIMUM),
        Mistake(
            _where(np.nan, -np.inf),
            "0 * -inf is NaN: (1 - mask) * -inf puts NaN where the mask is "
            "True. Use np.where(mask, 0.0, -np.inf).",
        ),
        Mistake(
            _where(1.0, 0.0),
            "that is the mask as 0 and 1: added to the scores it would change "
            "nothing that matters. Forbidden keys need -inf, allowed ones 0.",
        ),
    ],
)
check_additive_mask = ADDITIVE_MASK.checker()


# ------------------------------------------------------------- exercise 4.3


def _band(size: int, window: int) -> np.ndarray:
    return _lower(size) & _upper(size, k=-(window - 1))


SLIDING_WINDOW_MASK = Exercise(
    name="sliding_window_mask",
    success="limits each query to its last `window` keys.",
    doc="Check `sliding_window_mask(size, window)`: query i sees keys i - "
    "window + 1 .. i.",
    cases=[(6, 3), (5, 1), (4, 10), (7, 2)],
    reference=_band,
    array=True,
    refusals=[_BOOLEAN],
    mistakes=[
        Mistake(
            lambda size, window: _band(size, window + 1),
            "each query sees window + 1 = {n} keys: the window counts the "
            "query's own token, so keep j > i - window.",
            fields=lambda size, window: {"n": window + 1},
        ),
        Mistake(
            lambda size, window: _band(size, window - 1),
            "each query sees window - 1 = {n} keys: the window includes the "
            "query's own token, so keep j > i - window.",
            fields=lambda size, window: {"n": window - 1},
        ),
        Mistake(
            lambda size, window: _upper(size) & _lower(size, k=window - 1),
            "the band lies above the diagonal: query i sees keys i .. i + "
            "window - 1, the future. Keep j <= i.",
        ),
        Mistake(
            lambda size, window: (
                _upper(size, k=-(window - 1)) & _lower(size, k=window - 1)
            ),
            "the band is symmetric: query i also sees the next window - 1 "
            "keys, the future. Keep j <= i.",
        ),
        Mistake(
            lambda size, window: ~_band(size, window),
            "inverted: True must mean 'may attend', so the band itself is "
            "True.",
        ),
        Mistake(lambda size, window: _upper(size), UPPER_TRIANGLE_HINT),
        Mistake(
            lambda size, window: _lower(size) if window < size else None,
            "that is the plain causal mask: the window is missing, query i "
            "must not see keys before i - window + 1.",
        ),
    ],
)
check_sliding_window_mask = SLIDING_WINDOW_MASK.checker()


# ------------------------------------------------------------- exercise 4.4


def _masks(tokens: np.ndarray, pad_id: int):
    """The causal mask (T, T), the real keys (B, 1, T_k) and the real
    queries (B, T_q, 1)."""
    real = tokens != pad_id
    return _lower(tokens.shape[1]), real[:, None, :], real[:, :, None]


def _decoder(combine: Callable) -> Callable:
    """A decoder mask from `combine(causal, keys, queries)`."""
    return lambda tokens, pad_id: combine(*_masks(tokens, pad_id))


def _pad_queries_blanked(tokens: np.ndarray, pad_id: int):
    causal, keys, queries = _masks(tokens, pad_id)
    if np.array_equal(causal & keys & queries, causal & keys):
        return None
    return (causal & keys & queries)[:, None]


_HEAD_AXIS = (
    "the head axis goes second, after the batch: (B, 1, T, T), e.g. "
    "mask[:, None]."
)

DECODER_MASK = Exercise(
    name="decoder_mask",
    success="is causal and hides the padding keys, with a head axis.",
    doc="Check `decoder_mask(tokens, pad_id)`: (B, 1, T, T), causal and no "
    "pad keys.",
    cases=[
        (np.array([[0, 0, 5, 6, 7], [0, 8, 9, 4, 3], [2, 3, 4, 5, 6]]), 0),
        (np.array([[1, 1, 7, 0], [1, 5, 0, 2]]), 1),  # pad id 1; 0 is a word
        (np.array([[3, 4, 0, 0], [5, 6, 7, 0]]), 0),  # right padded
    ],
    reference=_decoder(lambda causal, keys, queries: (causal & keys)[:, None]),
    array=True,
    refusals=[_BOOLEAN],
    mistakes=[
        Mistake(
            _pad_queries_blanked,
            "you also blank the rows of the pad *queries*: hide the pad *keys* "
            "only, (B, 1, T) combined with the causal mask; a pad query's row "
            "keeps what the causal mask and the real keys allow.",
        ),
        Mistake(
            _decoder(
                lambda causal, keys, queries: np.broadcast_to(
                    causal, (len(keys), 1, *causal.shape)
                )
            ),
            "that is the causal mask alone: with left padding, real tokens "
            "would attend to the pads in front of them. Combine it with the "
            "padding mask.",
        ),
        Mistake(
            _decoder(
                lambda causal, keys, queries: np.broadcast_to(
                    keys[:, None], (len(keys), 1, *causal.shape)
                )
            ),
            "that is the padding mask alone: query i still sees the later "
            "keys, the future. Combine it with the causal mask.",
        ),
        Mistake(
            _decoder(lambda causal, keys, queries: (causal | keys)[:, None]),
            "combine masks with & (allowed only if both allow), not |.",
        ),
        Mistake(
            _decoder(lambda causal, keys, queries: (causal & queries)[:, None]),
            "your padding mask hides pad *queries*, shape (B, T, 1); it must "
            "hide pad *keys*, shape (B, 1, T).",
        ),
        Mistake(
            _decoder(lambda causal, keys, queries: (causal.T & keys)[:, None]),
            UPPER_TRIANGLE_HINT,
        ),
        Mistake(
            lambda tokens, pad_id: (
                _lower(tokens.shape[1]) & (tokens != 0)[:, None, :]
            )[:, None],
            "use pad_id, not a hard-coded 0.",
        ),
        Mistake(
            _decoder(lambda causal, keys, queries: causal & keys),
            "add the head axis: (B, T, T) -> (B, 1, T, T), e.g. mask[:, None], "
            "so that the mask broadcasts over the heads.",
        ),
        Mistake(
            _decoder(lambda causal, keys, queries: (causal & ~keys)[:, None]),
            "True must mean 'may attend': a real key is tokens != pad_id, not "
            "tokens == pad_id.",
        ),
        Mistake(
            _decoder(lambda causal, keys, queries: (causal & keys)[:, :, None]),
            _HEAD_AXIS,
        ),
        Mistake(
            _decoder(lambda causal, keys, queries: (causal & keys)[None]),
            _HEAD_AXIS,
        ),
    ],
)
check_decoder_mask = DECODER_MASK.checker()


# ------------------------------------------------------------- exercise 4.5


@dataclasses.dataclass(frozen=True, repr=False)
class _Sequence:
    """A sequence function (T, d) -> (T, d) with a readable description."""

    function: Callable[[np.ndarray], np.ndarray]
    description: str
    leaks: bool
    missed_hint: str | None = None  # for a detector that misses this leak

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.function(np.asarray(x, dtype=float))

    def __repr__(self) -> str:
        description = message(self.description)
        return message("fn: {description}", description=description)


def _attention(x: np.ndarray, ahead: int) -> np.ndarray:
    """Self-attention in which position i sees the keys up to i + ahead."""
    allowed = _lower(len(x), k=ahead)
    scores = np.where(allowed, x @ x.T / np.sqrt(x.shape[1]), -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ x


def _look_ahead_at_2(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    if len(x) > 2:
        out[1] = out[1] + 0.5 * x[2]  # position 1 reads position 2
    return out


def _product_leak(x: np.ndarray) -> np.ndarray:
    out = x.copy()
    if len(x) > 1:
        out[0] = x[0] * x[1]  # position 0 reads position 1, as a product
    return out


def _tiny_leak(x: np.ndarray) -> np.ndarray:
    out = np.cumsum(x, axis=0)
    if len(x) > 3:
        out[0] = out[0] + 0.01 * x[3]  # position 0 reads position 3, a little
    return out


def _sequences() -> list[_Sequence]:
    return [
        _Sequence(lambda x: _attention(x, 0), "causal self-attention", False),
        _Sequence(
            lambda x: _attention(x, len(x)),
            "self-attention without a mask",
            True,
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
            lambda x: _attention(x, 1),
            "attention that sees one token ahead",
            True,
        ),
        _Sequence(
            _product_leak,
            "out = x, except out[0] = x[0] * x[1]",
            True,
            "probe with random inputs, not zeros: x[0] * x[1] stays 0 "
            "whatever x[1] becomes while x[0] is 0.",
        ),
        _Sequence(
            lambda x: np.vstack([x[:1], np.diff(x, axis=0)]),
            "difference with the previous position",
            False,
        ),
    ]


def _judge_leaks(name, shown, got, leaks, sequence) -> None:
    """True or False, and the right one, with the hint for a wrong verdict."""
    expect_returned(name, shown, got)
    if not isinstance(got, bool | np.bool_):
        problem = "returned {got}; expected True or False."
        fail(name, problem, shown, got=describe(got, 0))
    if bool(got) == leaks:
        return
    if leaks:
        hint = sequence.missed_hint or (
            "change each position s in turn (not only the last one) and "
            "compare the outputs before s; a change by 1.0 and np.allclose "
            "with its default tolerance will see even a small leak."
        )
        problem = "returned False, but this function leaks the future."
        fail(name, problem, shown, hint)
    hint = (
        "compare only the outputs *before* the position you changed: an "
        "output may depend on its own position and on the past."
    )
    fail(name, "returned True, but this function is causal.", shown, hint)


FUTURE_LEAKS = Exercise(
    name="future_leaks",
    success="tells causal functions from leaking ones.",
    doc="Check `future_leaks(fn)`: True exactly when some output of `fn` "
    "depends on a later input.",
    cases=[(sequence,) for sequence in _sequences()],
    reference=lambda sequence: sequence.leaks,
    shared=1,
    quiet=True,
    compare=_judge_leaks,
)
check_future_leaks = FUTURE_LEAKS.checker()
