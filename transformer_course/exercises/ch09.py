"""Checkers for chapter 9: beyond the paper (fused attention, RoPE, GQA, KV cache)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _expect_close,
    _expect_equal,
    _fail,
    _Label,
    _rng,
    _torch_generator,
    _verdict,
)

__all__ = [
    "check_online_softmax_update",
    "check_kv_cache_size",
    "check_repeat_kv_heads",
    "check_rope_half",
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


def _run_blocks(update, q, k, v, block, name=None):
    """Attention over key blocks with `update`; the learner's through _call."""
    m = np.full((q.shape[0], 1), -np.inf)
    ell, a = np.zeros((q.shape[0], 1)), np.zeros((q.shape[0], v.shape[1]))
    for start in range(0, k.shape[0], block):
        s = q @ k[start : start + block].T / math.sqrt(q.shape[1])
        args = (
            m.copy(),
            ell.copy(),
            a.copy(),
            s,
            v[start : start + block].copy(),
        )
        result = update(*args) if name is None else _call(update, name, *args)
        if not isinstance(result, tuple | list) or len(result) != 3:
            _fail(
                name,
                f"should return the tuple (m_new, ell_new, a_new), got "
                f"{type(result).__name__}"
                + (
                    f" of {len(result)} items"
                    if hasattr(result, "__len__")
                    else ""
                ),
                [_Label("m, ell, a, s, v_block of one block")],
            )
        m, ell, a = (np.asarray(r, dtype=np.float64) for r in result)
    with np.errstate(divide="ignore", invalid="ignore"):
        return m, a / ell


def check_online_softmax_update(update: Callable) -> None:
    """Check `update(m, ell, a, s, v_block) -> (m_new, ell_new, a_new)`."""
    name = "online_softmax_update"

    def run_cases() -> None:
        rng = _rng(9)
        for T_q, T_k, d, block in [(3, 6, 4, 2), (2, 7, 3, 3)]:
            q, k, v = (rng.normal(size=(n, d)) for n in (T_q, T_k, T_k))
            k[-1] *= 30  # the last block raises the maximum: rescaling matters
            shown = [
                _Label(
                    f"{T_q} queries and {T_k} keys of width {d}, "
                    f"blocks of {block} keys; the last key is large"
                )
            ]
            got_m, got = _run_blocks(update, q, k, v, block, name)
            want_m, want = _run_blocks(_update_reference, q, k, v, block)
            mistakes = [
                (
                    _run_blocks(wrong, q, k, v, block)[1],
                    hint,
                )
                for wrong, hint in [
                    (
                        _update_no_rescale_a,
                        "a was added to without rescaling: multiply the old a "
                        "by exp(m - m_new) too, like ell.",
                    ),
                    (
                        _update_no_rescale,
                        "the old ell and a were computed with the old maximum: "
                        "multiply both by exp(m - m_new) before adding.",
                    ),
                    (
                        _update_block_max,
                        "m_new must be the maximum over everything seen so "
                        "far, np.maximum(m, s.max(...)), not this block's.",
                    ),
                ]
            ]
            _expect_close(
                name, shown, got, want, mistakes, what="sums whose a / ell has"
            )
            _expect_close(
                name,
                shown,
                got_m,
                want_m,
                [
                    (
                        _run_blocks(_update_block_max, q, k, v, block)[0],
                        "m_new must be the maximum over everything seen so far.",
                    )
                ],
                what="an m_new with",
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


def check_kv_cache_size(kv_cache_size: Callable) -> None:
    """Check `kv_cache_size(n_layers, d_model, n_heads, n_kv_heads, length,
    batch, bytes_per_number) -> int` for a decoder-only model."""
    name = "kv_cache_size"

    def run_cases() -> None:
        for args in [
            (3, 256, 8, 2, 100, 5, 4),
            (80, 8192, 64, 8, 4096, 1, 2),
            (12, 768, 12, 12, 1024, 2, 4),
        ]:
            n_layers, d_model, n_heads, n_kv, length, batch, nbytes = args
            got = _call(kv_cache_size, name, *args)
            if isinstance(got, float) and got.is_integer():
                got = int(got)
            mistakes = [
                (
                    _cache_bytes(*args) // 2,
                    "the cache holds keys AND values: a factor 2.",
                ),
                (
                    _cache_bytes(*args) // nbytes,
                    "that is a count of numbers: multiply by the bytes per "
                    "number.",
                ),
                (
                    _cache_bytes(*args) // batch,
                    "every sentence of the batch has its own cache: times "
                    "batch.",
                ),
                (
                    _cache_bytes(
                        n_layers, d_model, n_heads, n_kv, length, batch, nbytes
                    )
                    * n_heads
                    // n_kv,
                    "the keys and values have n_kv_heads heads of d_k = "
                    "d_model / n_heads each, not n_heads heads (d_model "
                    "numbers) per token.",
                ),
            ]
            shown = [
                _Label(
                    f"n_layers={n_layers}, d_model={d_model}, n_heads={n_heads},"
                    f" n_kv_heads={n_kv}, length={length}, batch={batch},"
                    f" bytes_per_number={nbytes}"
                )
            ]
            if n_kv == n_heads:
                mistakes = mistakes[:3]
            _expect_equal(name, shown, got, _cache_bytes(*args), mistakes)

    _verdict(
        name,
        "counts keys and values of every layer, head and token.",
        run_cases,
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
            got = _call(repeat_kv_heads, name, x.clone(), n_rep)
            mistakes = [
                (
                    x.repeat(1, n_rep, 1, 1).numpy(),
                    "x.repeat tiles the heads (0, 1, 0, 1, ...): consecutive "
                    "query heads form a group, so key/value head 0 must come "
                    "n_rep times first (0, 0, 0, 1, 1, 1).",
                ),
                (
                    x.repeat_interleave(n_rep, dim=2).numpy(),
                    "that repeats the tokens (dim 2): repeat the heads (dim 1).",
                ),
            ]
            _expect_close(
                name,
                [_Label(f"x of shape {(B, h_kv, T, d_k)}"), n_rep],
                got,
                x.repeat_interleave(n_rep, dim=1).numpy(),
                mistakes,
            )

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
            got = _call(rope_half, name, x.clone(), positions.clone())
            mistakes = [
                (
                    _rope_half(x, positions, split=False).numpy(),
                    "those are the chapter's pairs (2i, 2i + 1); here "
                    "dimension i pairs with i + d/2.",
                ),
                (
                    _rope_half(x, positions, sign=-1.0).numpy(),
                    "the rotation goes the other way: the first half gets "
                    "x1 cos - x2 sin, the second x2 cos + x1 sin.",
                ),
                (
                    _rope_half(x, positions, exponent=1.0).numpy(),
                    "theta_i = base ** (-2 i / d) for i = 0 .. d/2 - 1 (the "
                    "factor 2 of chapter 2).",
                ),
            ]
            _expect_close(
                name,
                [
                    _Label(f"x of shape {(T, d)}"),
                    _Label(f"positions {start} .. {start + T - 1}"),
                ],
                got,
                _rope_half(x, positions).numpy(),
                mistakes,
            )

    _verdict(name, "rotates dimension i with dimension i + d/2.", run_cases)
