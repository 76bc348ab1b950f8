"""Checkers for chapter 9: beyond the paper (fused attention, RoPE, GQA, KV cache)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _expect_close,
    _expect_equal,
    _expect_kind,
    _expect_unchanged,
    _fail,
    _Label,
    _rng,
    _same,
    _torch_generator,
    _verdict,
)

__all__ = [
    "check_online_softmax_update",
    "check_kv_cache_size",
    "check_repeat_kv_heads",
    "check_rope_half",
    "check_cached_window_mask",
]


# ------------------------------------------------------------ online softmax


def _update_reference(m, ell, a, s, v_block):
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
    p = np.exp(s - m_new)
    rescale = np.exp(m - m_new)
    return (
        m_new,
        ell * rescale + p.sum(-1, keepdims=True),
        a * rescale + p @ v_block,
    )


def _update_no_rescale_a(m, ell, a, s, v_block):
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
    p = np.exp(s - m_new)
    rescale = np.exp(m - m_new)
    return m_new, ell * rescale + p.sum(-1, keepdims=True), a + p @ v_block


def _update_no_rescale_ell(m, ell, a, s, v_block):
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
    p = np.exp(s - m_new)
    rescale = np.exp(m - m_new)
    return m_new, ell + p.sum(-1, keepdims=True), a * rescale + p @ v_block


def _update_no_rescale(m, ell, a, s, v_block):
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
    p = np.exp(s - m_new)
    return m_new, ell + p.sum(-1, keepdims=True), a + p @ v_block


def _update_block_max(m, ell, a, s, v_block):
    m_new = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m_new)
    rescale = np.exp(m - m_new)
    return (
        m_new,
        ell * rescale + p.sum(-1, keepdims=True),
        a * rescale + p @ v_block,
    )


def _update_keep_m(m, ell, a, s, v_block):
    return (m, *_update_reference(m, ell, a, s, v_block)[1:])


def _update_no_max(m, ell, a, s, v_block):
    """The maximum tracked but never subtracted: exp(s) overflows."""
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
    p = np.exp(s)
    return m_new, ell + p.sum(-1, keepdims=True), a + p @ v_block


_NO_MAX_HINT = (
    "ell_new and a_new must be sums of exp(s - m_new), relative to the running "
    "maximum: p = np.exp(s - m_new). Without the maximum, exp overflows to inf "
    "for large scores."
)


def _describe_result(result) -> str:
    if result is None:
        return "None (did you forget `return`?)"
    if hasattr(result, "shape"):
        return f"an array of shape {tuple(result.shape)}"
    if isinstance(result, tuple | list):
        return f"a {type(result).__name__} of {len(result)} items"
    return f"a {type(result).__name__}"


def _check_states(name, result, args) -> list[np.ndarray]:
    """The learner's (m_new, ell_new, a_new) as float arrays (float32 kept),
    each of the shape of its input, or an ExerciseError that says what is
    wrong."""
    shown = [
        _Label(
            "m, ell, a, s, v_block of shapes "
            + ", ".join(str(tuple(arg.shape)) for arg in args)
        )
    ]
    if not isinstance(result, tuple | list) or len(result) != 3:
        _fail(
            name,
            "should return the tuple (m_new, ell_new, a_new), got "
            + _describe_result(result),
            shown,
        )
    try:
        states = [np.asarray(r) for r in result]
        # float32 stays float32: _expect_close's tolerance follows the dtype
        states = [
            state if state.dtype.kind == "f" else state.astype(np.float64)
            for state in states
        ]
    except (TypeError, ValueError) as error:
        _fail(
            name,
            "should return three arrays (m_new, ell_new, a_new) of numbers",
            shown,
            details=[f"NumPy could not read them as arrays: {error}"],
        )
    wanted = [arg.shape for arg in args[:3]]
    got = [state.shape for state in states]
    if got != wanted:
        which = next(i for i in range(3) if got[i] != wanted[i])
        hint = None
        if sorted(got) == sorted(wanted):
            hint = "return them in the order (m_new, ell_new, a_new)."
        elif which < 2:
            hint = (
                "m_new and ell_new keep one column per query: reduce with "
                "keepdims=True (s.max(axis=-1, keepdims=True), ...)."
            )
        _fail(
            name,
            f"returned {('m_new', 'ell_new', 'a_new')[which]} of shape "
            f"{got[which]}, expected {wanted[which]} (the shape of "
            f"{('m', 'ell', 'a')[which]}).",
            shown,
            hint,
        )
    return states


def _run_blocks(update, q, k, v, block, name=None):
    """Attention over key blocks with `update`; the learner's through _call.

    Returns the final (m, ell, a) and whether `update` wrote into the m it
    was given.
    """
    m = np.full((q.shape[0], 1), -np.inf)
    ell, a = np.zeros((q.shape[0], 1)), np.zeros((q.shape[0], v.shape[1]))
    m_overwritten = False
    for start in range(0, k.shape[0], block):
        s = q @ k[start : start + block].T / math.sqrt(q.shape[1])
        args = tuple(
            np.array(arg) for arg in (m, ell, a, s, v[start : start + block])
        )
        if name is None:
            with np.errstate(over="ignore", invalid="ignore"):
                m, ell, a = update(*args)
            continue
        result = _call(update, name, *args)
        m_overwritten |= not np.array_equal(args[0], m)
        m, ell, a = _check_states(name, result, args)
    return m, ell, a, m_overwritten


def _ratio(a, ell):
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / ell


def check_online_softmax_update(update: Callable) -> None:
    """Check `update(m, ell, a, s, v_block) -> (m_new, ell_new, a_new)`."""
    name = "online_softmax_update"

    def run_cases() -> None:
        rng = _rng(9)
        for T_q, T_k, d, block, scale in [
            (3, 6, 4, 2, 1.0),
            (2, 7, 3, 3, 1.0),
            (2, 5, 3, 2, 500.0),
        ]:
            q, k, v = (rng.normal(size=(n, d)) for n in (T_q, T_k, T_k))
            k[-1] *= 30  # the last block raises the maximum: rescaling matters
            q *= scale
            shown = [
                _Label(
                    f"{T_q} queries and {T_k} keys of width {d}, "
                    f"blocks of {block} keys; the last key is large"
                    + ("; scores in the thousands" if scale > 1 else "")
                )
            ]
            got_m, got_ell, got_a, m_overwritten = _run_blocks(
                update, q, k, v, block, name
            )
            want_m, want_ell, want_a, _ = _run_blocks(
                _update_reference, q, k, v, block
            )
            wrong = {
                mistake: _run_blocks(mistake, q, k, v, block)
                for mistake in (
                    _update_no_rescale_a,
                    _update_no_rescale_ell,
                    _update_no_rescale,
                    _update_keep_m,
                    _update_no_max,
                )
            }
            mistakes = [
                (_ratio(wrong[mistake][2], wrong[mistake][1]), hint)
                for mistake, hint in [
                    (
                        _update_no_rescale_a,
                        "a was added to without rescaling: multiply the old a "
                        "by exp(m - m_new) too, like ell.",
                    ),
                    (
                        _update_no_rescale_ell,
                        "ell was added to without rescaling: multiply the old "
                        "ell by exp(m - m_new) too, like a.",
                    ),
                    (
                        _update_no_rescale,
                        "the old ell and a were computed with the old maximum: "
                        "multiply both by exp(m - m_new) before adding.",
                    ),
                    (
                        _update_keep_m,
                        "return m_new, not the old m: the next block must "
                        "rescale from the new maximum.",
                    ),
                    (_update_no_max, _NO_MAX_HINT),
                ]
            ]
            mistakes.append(
                (
                    np.full((T_q, d), np.nan),
                    "NaN everywhere: at the first block m is -inf, so "
                    "exp(m - m_new) is 0, as it should be, but exp(m_new - m) "
                    "or exp(s - m) is inf (and inf * 0 is NaN). Take every "
                    "exponent relative to m_new.",
                )
            )
            if m_overwritten:  # np.maximum(m, ..., out=m): the rescale is 1
                mistakes.insert(
                    0,
                    (
                        _ratio(
                            wrong[_update_no_rescale][2],
                            wrong[_update_no_rescale][1],
                        ),
                        "your function wrote into m (out=m, m[...] = ...) "
                        "before exp(m - m_new): the rescale became 1. Make "
                        "m_new a new array.",
                    ),
                )
            _expect_close(
                name,
                shown,
                _ratio(got_a, got_ell),
                _ratio(want_a, want_ell),
                mistakes,
                what="sums whose a / ell has",
            )
            _expect_close(
                name,
                shown,
                got_m,
                want_m,
                [
                    (
                        _run_blocks(_update_block_max, q, k, v, block)[0],
                        "m_new must be the maximum over everything seen so "
                        "far, np.maximum(m, s.max(...)), not this block's.",
                    )
                ],
                what="an m_new with",
            )
            # a / ell and m are right: ell (and with it a) can only be wrong
            # by a factor, the sums taken relative to another maximum
            _expect_close(
                name,
                shown,
                got_ell,
                want_ell,
                [(got_ell, "a / ell is right, but " + _NO_MAX_HINT)],
                what="an ell_new with",
            )

    _verdict(name, "rescales the old sums to the new maximum.", run_cases)


# ------------------------------------------------------------ KV cache size


def _cache_bytes(n_layers, d_model, n_heads, n_kv_heads, length, batch, nbytes):
    return (
        2
        * n_layers
        * batch
        * length
        * n_kv_heads
        * (d_model // n_heads)
        * nbytes
    )


def _int32(value: int) -> int:
    """What a 32-bit integer holds of `value`: wrapped around past 2**31."""
    return (value + 2**31) % 2**32 - 2**31


_GIB_HINT = (
    "return the bytes themselves, not GiB, MiB or GB: divide only to print."
)
_BYTES_HINT = (
    "bytes_per_number is an argument: multiply by it, not by a fixed {}."
)

# (wrong answer from the arguments, hint), None where it does not apply
_CACHE_MISTAKES = [
    (lambda c, a: c // 2, "the cache holds keys AND values: a factor 2."),
    (
        lambda c, a: c // a[6],
        "that is a count of numbers: multiply by the bytes per number.",
    ),
    (
        lambda c, a: c // a[5],
        "every sentence of the batch has its own cache: times batch.",
    ),
    (
        lambda c, a: c // a[0],
        "every layer has its own keys and values: times n_layers.",
    ),
    (
        lambda c, a: c * a[2] // a[3] if a[2] != a[3] else None,
        "the keys and values have n_kv_heads heads of d_k = d_model / n_heads "
        "each, not n_heads heads (d_model numbers) per token.",
    ),
    (
        lambda c, a: 2 * c,
        "a decoder-only model has no cross-attention: one key and one value "
        "per layer and token (the factor 2), not two of each.",
    ),
    (
        lambda c, a: 8 * c,
        "that is bits: bytes_per_number already counts bytes.",
    ),
    (lambda c, a: c // a[6] * 4 if a[6] != 4 else None, _BYTES_HINT.format(4)),
    (lambda c, a: c // a[6] * 2 if a[6] != 2 else None, _BYTES_HINT.format(2)),
    (lambda c, a: c / 2**30, _GIB_HINT),
    (lambda c, a: c / 2**20, _GIB_HINT),
    (lambda c, a: c / 1e9, _GIB_HINT),
    (
        lambda c, a: _int32(c) if c >= 2**31 else None,
        "the product overflowed a 32-bit integer (np.int32 or torch.int32 "
        "wrap around past 2**31): multiply Python ints.",
    ),
]


def check_kv_cache_size(kv_cache_size: Callable) -> None:
    """Check `kv_cache_size(n_layers, d_model, n_heads, n_kv_heads, length,
    batch, bytes_per_number) -> int` for a decoder-only model."""
    name = "kv_cache_size"

    def run_cases() -> None:
        passed = []  # the cases so far: a mistake that fails one is not it
        for args in [
            (3, 256, 16, 4, 100, 5, 4),
            (80, 8192, 64, 8, 4096, 1, 2),
            (12, 768, 12, 12, 1024, 2, 4),
            (80, 8192, 64, 8, 4096, 8, 2),  # 10 GiB, past 2**32
        ]:
            got = _call(kv_cache_size, name, *args)
            want = _cache_bytes(*args)
            if isinstance(got, float) and abs(got - want) <= 1e-9 * want:
                got = want  # right but for the round-off of float arithmetic
            elif isinstance(got, float) and got.is_integer():
                got = int(got)  # shown as 1536000, not 1.536e+06
            hints: dict = {}  # merged where two mistakes give the same value
            for mistake, hint in _CACHE_MISTAKES:
                if all(
                    mistake(_cache_bytes(*before), before)
                    in (None, _cache_bytes(*before))
                    for before in passed
                ):
                    value = mistake(want, args)
                    if value is not None and hint not in hints.get(value, []):
                        hints.setdefault(value, []).append(hint)
            mistakes = [(value, " Or: ".join(h)) for value, h in hints.items()]
            shown = [
                _Label(
                    "n_layers={}, d_model={}, n_heads={}, n_kv_heads={}, "
                    "length={}, batch={}, bytes_per_number={}".format(*args)
                )
            ]
            if (
                isinstance(got, float)
                and not got.is_integer()
                and not any(_same(got, value) for value, _ in mistakes)
            ):
                _fail(
                    name,
                    f"returned {got!r}, not a whole number of bytes; "
                    f"expected {want}.",
                    shown,
                    "d_model // n_heads is the head width d_k, an integer.",
                )
            _expect_equal(name, shown, got, want, mistakes)
            passed.append(args)

    _verdict(
        name,
        "counts keys and values of every layer, head and token.",
        run_cases,
    )


# ------------------------------------------------------------ tensors


def _expect_tensor(name: str, inputs, got, shape) -> None:
    """Reject a list, a NumPy array or a number where a tensor is expected;
    a tuple or None is left to `_expect_close`, which names it."""
    import torch

    _expect_kind(
        name,
        inputs,
        got,
        f"a tensor of shape {tuple(shape)}",
        "keep the result a torch.Tensor: no .tolist(), .numpy() or NumPy "
        "functions on the way.",
        accept=(type(None), tuple, torch.Tensor),
    )


def _expect_tensor_unchanged(name: str, inputs, given, x, hint) -> None:
    """Reject a function that changed its input tensor x (values or shape)."""
    if given.shape != x.shape:
        _fail(
            name,
            f"changed the shape of its input x in place, to "
            f"{tuple(given.shape)}; leave the caller's tensor as it was.",
            inputs,
            "unsqueeze_, squeeze_, resize_ and the like modify x itself: use "
            "x[:, :, None] or x.unsqueeze(2), which give a new view.",
        )
    _expect_unchanged(
        name,
        inputs,
        [given],
        [x],
        "changed its input x in place; return a new tensor and leave x as "
        "it was.",
        hint,
    )


# ------------------------------------------------------------ GQA heads


def check_repeat_kv_heads(repeat_kv_heads: Callable) -> None:
    """Check `repeat_kv_heads(x, n_rep)`: (B, h_kv, T, d_k) -> (B, h_kv*n_rep, T, d_k)."""
    import torch

    name = "repeat_kv_heads"

    def run_cases() -> None:
        for B, h_kv, T, d_k, n_rep in [
            (2, 2, 3, 4, 3),
            (1, 3, 2, 2, 2),
            (1, 2, 2, 2, 1),
        ]:
            x = torch.randn(B, h_kv, T, d_k, generator=_torch_generator(h_kv))
            given = x.clone()
            got = _call(repeat_kv_heads, name, given, n_rep)
            shown = [_Label(f"x of shape {(B, h_kv, T, d_k)}"), n_rep]
            expected = x.repeat_interleave(n_rep, dim=1)
            _expect_tensor(name, shown, got, expected.shape)
            _expect_tensor_unchanged(
                name,
                shown,
                given,
                x,
                "x[...] = ... and x.mul_() write into the caller's tensor.",
            )
            expanded = x[:, :, None].expand(B, h_kv, n_rep, T, d_k)
            mistakes = [
                (
                    x.repeat(1, n_rep, 1, 1),
                    "x.repeat tiles the heads (0, 1, 0, 1, ...): consecutive "
                    "query heads form a group, so key/value head 0 must come "
                    "n_rep times first (0, 0, 0, 1, 1, 1).",
                ),
                (
                    x.repeat_interleave(n_rep, dim=2),
                    "that repeats the tokens (dim 2): repeat the heads (dim 1).",
                ),
                (
                    x[:, :, :, None]
                    .expand(B, h_kv, T, n_rep, d_k)
                    .reshape(B, -1, T, d_k),
                    "the new axis must come right after the heads, "
                    "x[:, :, None]: the reshape then merges (h_kv, n_rep) "
                    "into the heads; after the tokens it mixes tokens and "
                    "heads.",
                ),
                (
                    expanded,
                    "the expanded tensor (B, h_kv, n_rep, T, d_k) still needs "
                    "its reshape to (B, h_kv * n_rep, T, d_k).",
                ),
            ]
            _expect_close(name, shown, got, expected, mistakes)

    _verdict(
        name, "gives each group of query heads its key/value head.", run_cases
    )


# ------------------------------------------------------------ RoPE, half split


def _rope_half(x, positions, base=10000.0, sign=1.0, exponent=2.0, split=True):
    import torch

    T, d = x.shape[-2:]
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = base ** (-exponent * i / d)
    angle = (
        torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta * sign
    )
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    if split:
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(
        -2
    )


def check_rope_half(rope_half: Callable) -> None:
    """Check `rope_half(x, positions)`: RoPE pairing dimension i with i + d/2."""
    import torch

    name = "rope_half"

    def run_cases() -> None:
        for T, d, start in [(4, 8, 0), (3, 6, 5)]:
            x = torch.randn(
                T, d, generator=_torch_generator(d), dtype=torch.float64
            )
            positions = torch.arange(start, start + T)
            given = x.clone()
            got = _call(rope_half, name, given, positions.clone())
            shown = [
                _Label(f"x of shape {(T, d)}"),
                _Label(f"positions {start} .. {start + T - 1}"),
            ]
            expected = _rope_half(x, positions)
            _expect_tensor(name, shown, got, expected.shape)
            _expect_tensor_unchanged(
                name,
                shown,
                given,
                x,
                "x[:, :d//2] = ... writes into x (and into x1, a view of it, "
                "before x2's half is computed): build the result with "
                "torch.cat.",
            )
            arange = torch.arange(T)
            mistakes = [
                (
                    _rope_half(x, positions, split=False),
                    "those are the chapter's pairs (2i, 2i + 1); here "
                    "dimension i pairs with i + d/2.",
                ),
                (
                    _rope_half(x, positions, sign=-1.0),
                    "the rotation goes the other way: the first half gets "
                    "x1 cos - x2 sin, the second x2 cos + x1 sin.",
                ),
                (
                    _rope_half(x, positions, exponent=1.0),
                    "theta_i = base ** (-2 i / d) for i = 0 .. d/2 - 1 (the "
                    "factor 2 of chapter 2).",
                ),
                (
                    _rope_half(x, positions, exponent=-2.0),
                    "theta_i = base ** (-2 i / d) shrinks with i: mind the "
                    "minus sign of the exponent.",
                ),
                (
                    _rope_half(x, arange),
                    f"rotate by the positions given ({start} .. "
                    f"{start + T - 1} here), not by torch.arange(T).",
                ),
                (
                    _rope_half(x, positions + 1),
                    "the positions are off by one: the angle is p theta_i "
                    "with p as given (position 0 is not rotated).",
                ),
                (
                    _rope_half(x, positions - 1),
                    "the positions are off by one: the angle is p theta_i "
                    "with p as given (position 0 is not rotated).",
                ),
                (
                    expected.roll(d // 2, dims=-1),
                    "the halves of the output are swapped: first "
                    "x1 cos - x2 sin, then x2 cos + x1 sin.",
                ),
            ]
            _expect_close(name, shown, got, expected, mistakes)

    _verdict(name, "rotates dimension i with dimension i + d/2.", run_cases)


# ------------------------------------------------------- sliding-window mask


def _window_masks(n_new: int, length: int, window: int) -> dict:
    """The right mask and the wrong ones learners write, by name: (n_new,
    length + n_new) booleans, True = may attend."""
    import torch

    key = torch.arange(length + n_new)[None, :]
    query = torch.arange(length, length + n_new)[:, None]  # true positions
    j = torch.arange(n_new)[:, None]  # positions among the new tokens only
    causal = key <= query
    return {
        "right": causal & (key > query - window),
        "upper left": (key <= j) & (key > j - window),
        "window + 1": causal & (key >= query - window),
        "no causal": key > query - window,
        "no window": causal,
        "one window": causal & (key > length + n_new - 1 - window),
    }


_WINDOW_HINTS = {
    "upper left": "new token j is token length + j: align the mask to the "
    "bottom right (the keys it sees end at position length + j), as "
    "DecoderCache's tril(diagonal=length) does.",
    "window + 1": "that lets each token see window + 1 keys: the window "
    "counts the token itself, so key > query - window, not >=.",
    "no causal": "a token must not see the tokens after it: key <= query, "
    "as well as the window.",
    "no window": "that is the causal mask alone: a key more than window - 1 "
    "positions back is out of the window.",
    "one window": "the window moves with each new token: each one sees the "
    "window keys ending at its own position, not those ending at the last.",
}


def check_cached_window_mask(cached_window_mask: Callable) -> None:
    """Check `cached_window_mask(n_new, length, window)` -> (n_new, length +
    n_new) bool tensor: new token j (position length + j) may attend to the
    keys at positions length + j - window + 1 .. length + j."""
    import torch

    name = "cached_window_mask"

    def run_cases() -> None:
        for args in [(1, 7, 3), (4, 5, 3), (5, 0, 2), (3, 2, 10), (2, 6, 1)]:
            n_new, length, window = args
            got = _call(cached_window_mask, name, *args)
            masks = _window_masks(*args)
            expected = masks["right"]
            shown = [_Label(f"n_new={n_new}, length={length}, window={window}")]
            _expect_kind(
                name,
                shown,
                got,
                f"a bool tensor of shape {tuple(expected.shape)}",
                "keep the result a torch.Tensor: no .tolist(), .numpy() or "
                "NumPy functions on the way.",
                accept=torch.Tensor,
            )
            if got.shape != expected.shape:
                _fail(
                    name,
                    f"returned a tensor of shape {tuple(got.shape)}; expected "
                    f"{tuple(expected.shape)}: one row per new token, one "
                    "column per key, cached and new.",
                    shown,
                )
            if got.dtype != torch.bool:
                _fail(
                    name,
                    f"returned a {got.dtype} tensor; expected torch.bool.",
                    shown,
                    "F.scaled_dot_product_attention adds a float mask to the "
                    "scores instead of reading it as allowed/not allowed: "
                    "return booleans, True = may attend.",
                )
            if torch.equal(got, expected):
                continue
            hint = next(
                (
                    _WINDOW_HINTS[wrong]
                    for wrong, mask in masks.items()
                    if wrong != "right" and torch.equal(got, mask)
                ),
                None,
            )
            row = next(
                i for i in range(n_new) if not torch.equal(got[i], expected[i])
            )
            seen = got[row].nonzero().flatten().tolist()
            right = expected[row].nonzero().flatten().tolist()
            _fail(
                name,
                f"new token {row} (position {length + row}) may attend to "
                f"keys {seen}; expected {right}.",
                shown,
                hint,
            )

    _verdict(
        name,
        "lets each new token see itself and the window - 1 tokens before it.",
        run_cases,
    )
