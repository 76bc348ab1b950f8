"""Chapter 9's exercise checkers accept the reference and reject the known wrong answers."""

import math

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
)

from transformer_course.exercises import ch09
from transformer_course.exercises.ch09 import (
    check_kv_cache_size,
    check_online_softmax_update,
    check_repeat_kv_heads,
    check_rope_half,
)


def _update(m, ell, a, s, v_block):
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
    p = np.exp(s - m_new)
    rescale = np.exp(m - m_new)
    return (
        m_new,
        ell * rescale + p.sum(-1, keepdims=True),
        a * rescale + p @ v_block,
    )


def _update_float32(m, ell, a, s, v_block):
    return tuple(
        x.astype(np.float32)
        for x in _update(*(np.float32(y) for y in (m, ell, a, s, v_block)))
    )


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda m, ell, a, s, v: (
                np.maximum(m, s.max(-1, keepdims=True)),
                ell * np.exp(m - np.maximum(m, s.max(-1, keepdims=True)))
                + np.exp(s - np.maximum(m, s.max(-1, keepdims=True))).sum(
                    -1, keepdims=True
                ),
                a + np.exp(s - np.maximum(m, s.max(-1, keepdims=True))) @ v,
            ),
            "multiply the old a",
        ),
        (
            lambda m, ell, a, s, v: (
                np.maximum(m, s.max(-1, keepdims=True)),
                ell
                + np.exp(s - np.maximum(m, s.max(-1, keepdims=True))).sum(
                    -1, keepdims=True
                ),
                a + np.exp(s - np.maximum(m, s.max(-1, keepdims=True))) @ v,
            ),
            "old maximum",
        ),
        (
            lambda m, ell, a, s, v: (
                s.max(-1, keepdims=True),
                ell * np.exp(m - s.max(-1, keepdims=True))
                + np.exp(s - s.max(-1, keepdims=True)).sum(-1, keepdims=True),
                a * np.exp(m - s.max(-1, keepdims=True))
                + np.exp(s - s.max(-1, keepdims=True)) @ v,
            ),
            "everything seen so far",
        ),
        (lambda m, ell, a, s, v: [m, ell], "tuple (m_new, ell_new, a_new)"),
        (lambda m, ell, a, s, v: None, "tuple (m_new, ell_new, a_new)"),
    ],
    ids=[
        "a-not-rescaled",
        "nothing-rescaled",
        "block-max",
        "two-items",
        "none",
    ],
)
def test_online_softmax_update_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_online_softmax_update, wrong_answer, hint)


def _cache(n_layers, d_model, n_heads, n_kv_heads, length, batch, nbytes):
    d_k = d_model // n_heads
    return 2 * n_layers * batch * length * n_kv_heads * d_k * nbytes


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda *a: _cache(*a) // 2, "a factor 2"),
        (lambda *a: _cache(*a) // a[-1], "bytes per number"),
        (lambda *a: _cache(*a) // a[-2], "times batch"),
        (lambda *a: _cache(*a) * a[2] // a[3], "not n_heads heads"),
        (
            lambda L, d, h, kv, T, B, n: 2 * L * B * T * kv * (d // kv) * n,
            "not n_heads heads",
        ),
        (lambda *a: None, "forget `return`"),
    ],
    ids=["no-2", "no-bytes", "no-batch", "n_heads", "d_k-from-kv", "none"],
)
def test_kv_cache_size_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_kv_cache_size, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, n: x.repeat(1, n, 1, 1), "tiles the heads"),
        (lambda x, n: x.repeat_interleave(n, dim=2), None),
        (lambda x, n: x, None),
    ],
    ids=["repeat", "tokens-repeated", "unchanged"],
)
def test_repeat_kv_heads_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_repeat_kv_heads, wrong_answer, hint)


def _rope_half(x, positions, base=10000.0):
    T, d = x.shape
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions[:, None].double() * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[:, : d // 2], x[:, d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def _rope_interleaved(x, positions):
    from transformer_course.beyond import rope

    return rope(x, positions)


def _rope_backwards(x, positions):
    return _rope_half(x, -positions)


def _rope_one_exponent(x, positions):
    T, d = x.shape
    theta = 10000.0 ** (-torch.arange(d // 2, dtype=torch.float64) / d)
    angle = positions[:, None].double() * theta
    x1, x2 = x[:, : d // 2], x[:, d // 2 :]
    return torch.cat(
        [
            x1 * angle.cos() - x2 * angle.sin(),
            x2 * angle.cos() + x1 * angle.sin(),
        ],
        dim=-1,
    )


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_rope_interleaved, "(2i, 2i + 1)"),
        (_rope_backwards, "the other way"),
        (_rope_one_exponent, "factor 2"),
        (lambda x, p: x, None),
    ],
    ids=["interleaved", "backwards", "no-factor-2", "unrotated"],
)
def test_rope_half_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_rope_half, wrong_answer, hint)


ACCEPTED = [
    (check_online_softmax_update, _update),
    (check_kv_cache_size, _cache),
    (check_repeat_kv_heads, lambda x, n: x.repeat_interleave(n, dim=1)),
    (check_rope_half, _rope_half),
]

OTHER_RIGHT_ANSWERS = [
    (check_online_softmax_update, _update_float32),
    (check_kv_cache_size, lambda *a: float(_cache(*a))),
    (
        check_repeat_kv_heads,
        lambda x, n: (
            x[:, :, None]
            .expand(x.size(0), x.size(1), n, *x.shape[2:])
            .reshape(x.size(0), -1, *x.shape[2:])
        ),
    ),
    (check_rope_half, lambda x, p: _rope_half(x.float(), p)),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch09, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED + OTHER_RIGHT_ANSWERS,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def test_cache_of_a_known_model():
    # 80 layers, 8 key/value heads of 128, 4,096 tokens in bf16: 1.25 GiB
    assert _cache(80, 8192, 64, 8, 4096, 1, 2) == 1.25 * 2**30
    assert math.isclose(_cache(1, 64, 8, 1, 1, 1, 4), 2 * 8 * 4)
