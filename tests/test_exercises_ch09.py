"""Chapter 9's exercise checkers accept the reference and reject the known wrong answers."""

import math

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)

from transformer_course.exercises import ch09
from transformer_course.exercises.ch09 import (
    KV_CACHE_SIZE,
    MERGE_PARTIALS,
    REPEAT_KV_HEADS,
    ROPE_HALF,
    _window_masks,
    check_cached_window_mask,
    check_kv_cache_size,
    check_merge_partials,
    check_repeat_kv_heads,
    check_rope_half,
)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(MERGE_PARTIALS, KV_CACHE_SIZE, REPEAT_KV_HEADS, ROPE_HALF),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _merge(first, second):
    m = np.maximum(first[0], second[0])
    r1, r2 = np.exp(first[0] - m), np.exp(second[0] - m)
    return m, first[1] * r1 + second[1] * r2, first[2] * r1 + second[2] * r2


def _merge_with_where(first, second):
    (m1, ell1, a1), (m2, ell2, a2) = first, second
    m = np.where(m1 > m2, m1, m2)
    w1, w2 = np.exp(m1 - m), np.exp(m2 - m)
    return m, w1 * ell1 + w2 * ell2, w1 * a1 + w2 * a2


def _merge_float32(first, second):
    return tuple(x.astype(np.float32) for x in _merge(first, second))


def _merge_in_place(first, second):
    m = np.maximum(first[0], second[0], out=first[0])  # m1 overwritten
    return _merge((m, *first[1:]), second)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda f, s: _merge(f, s)[2] / _merge(f, s)[1], "not the output"),
        (lambda f, s: _merge(f, s)[::-1], None),
        (lambda f, s: _merge(f, s)[:2], None),
        (lambda f, s: None, None),
        (
            lambda f, s: tuple(x.ravel() for x in _merge(f, s)),
            "keepdims=True",
        ),
        (_merge_in_place, "changed a part it was given in place"),
        (lambda f, s: (max(f[0], s[0]), f[1] + s[1], f[2] + s[2]), None),
        (
            lambda f, s: (_merge(f, s)[0], f[1] + s[1], _merge(f, s)[2]),
            None,
        ),
    ],
    ids=[
        "output",
        "reversed",
        "two-items",
        "none",
        "flat",
        "in-place",
        "python-max",
        "ell-not-rescaled",
    ],
)
def test_merge_partials_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_merge_partials, wrong_answer, hint)


@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_the_merged_parts_give_the_attention_over_every_key(scale):
    """The checker's reference: the parts' states (`_partial`) merged in turn
    (`_merge_reference`) give the attention over all the keys, scores in the
    thousands too (the cases of merge_partials are built so)."""
    rng = np.random.default_rng(9)
    q, k, v = (rng.normal(size=(n, 3)) for n in (2, 9, 9))
    k[-1] *= 30  # the last part holds the largest score
    q *= scale
    state = ch09._partial(q, k[:2], v[:2])
    for a, b in [(2, 7), (7, 9)]:
        state = ch09._merge_reference(state, ch09._partial(q, k[a:b], v[a:b]))
    scores = q @ k.T / math.sqrt(3)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attention = weights / weights.sum(axis=-1, keepdims=True) @ v
    if scale > 1:  # exp of such scores overflows unless shifted
        assert np.abs(scores).max() > 1000
    assert np.allclose(state[2] / state[1], attention)


def _cache(n_layers, d_model, n_heads, n_kv_heads, length, batch, nbytes):
    d_k = d_model // n_heads
    return 2 * n_layers * batch * length * n_kv_heads * d_k * nbytes


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda L, d, h, kv, T, B, n: 2 * L * B * T * kv * (d // kv) * n,
            "not n_heads heads",
        ),
        (lambda *a: None, "forget `return`"),
        (
            # np.prod on Windows with NumPy < 2 multiplies in int32
            lambda L, d, h, kv, T, B, n: np.prod(
                np.array([2, L, B, T, kv, d // h, n], dtype=np.int32),
                dtype=np.int32,
            ),
            "32-bit",
        ),
        (lambda *a: _cache(*a) * 1.0001, "not a whole number of bytes"),
        (lambda L, d, h, kv, T, B, n: _cache(L, d, h, kv, T + 1, B, n), None),
    ],
    ids=[
        "d_k-from-kv",
        "none",
        "int32-overflow",
        "not-whole",
        "length-plus-one",
    ],
)
def test_kv_cache_size_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_kv_cache_size, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, n: x, None),
        (
            lambda x, n: (
                x[:, None]
                .expand(x.size(0), n, *x.shape[1:])
                .reshape(x.size(0), -1, *x.shape[2:])
            ),
            "tiles the heads",
        ),
        (lambda x, n: torch.cat([x] * n, dim=1), "tiles the heads"),
        (lambda x, n: x.numpy().repeat(n, axis=1), "a NumPy array"),
        (lambda x, n: x.repeat_interleave(n, dim=1).tolist(), "a list"),
        (
            lambda x, n: (
                x.unsqueeze_(2)
                .expand(-1, -1, n, -1, -1)
                .reshape(x.size(0), -1, *x.shape[3:])
            ),
            "changed the shape of its input",
        ),
        (
            lambda x, n: x.mul_(2).repeat_interleave(n, dim=1) / 2,
            "changed its input",
        ),
    ],
    ids=[
        "unchanged",
        "expand-before-heads",
        "cat",
        "numpy",
        "list",
        "unsqueeze-in-place",
        "mul-in-place",
    ],
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


def _rope_in_place(x, positions):
    """Right values, but written into the caller's x."""
    d = x.shape[1] // 2
    rotated = _rope_half(x, positions)
    x[:, :d], x[:, d:] = rotated[:, :d], rotated[:, d:]
    return x


def _rope_complex(x, positions):
    """Right: the pairs (x1, x2) as complex numbers, times e^(i angle)."""
    T, d = x.shape
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = positions[:, None].double() * theta
    z = torch.complex(x[:, : d // 2], x[:, d // 2 :]) * torch.polar(
        torch.ones_like(angle), angle
    )
    return torch.cat([z.real, z.imag], dim=-1)


def _rope_rotate_half(x, positions):
    """Right: Hugging Face's rotate_half formulation, in float32."""
    T, d = x.shape
    inv_freq = 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d)
    angle = torch.outer(positions.float(), inv_freq)
    angle = torch.cat([angle, angle], dim=-1)
    rotated = torch.cat([-x[:, d // 2 :], x[:, : d // 2]], dim=-1)
    return x * angle.cos() + rotated * angle.sin()


def _rope_by_permutation(x, positions):
    """Right: the chapter's interleaved rope on the features reordered."""
    from transformer_course.beyond import rope

    half = x.shape[1] // 2
    order = torch.stack([torch.arange(half), torch.arange(half) + half], -1)
    order = order.flatten()  # 0, d/2, 1, d/2 + 1, ...
    return rope(x[:, order], positions)[:, torch.argsort(order)]


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
        (lambda x, p: _rope_half(x, p).numpy(), "a NumPy array"),
        (_rope_in_place, "changed its input x in place"),
        (lambda x, p: _rope_half(x, p, base=1000.0), None),
    ],
    ids=[
        "interleaved",
        "backwards",
        "no-factor-2",
        "unrotated",
        "numpy",
        "in-place",
        "base-1000",
    ],
)
def test_rope_half_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_rope_half, wrong_answer, hint)


def _window_reference(n_new, length, window):
    query = torch.arange(length, length + n_new)[:, None]
    key = torch.arange(length + n_new)[None, :]
    return (key <= query) & (key > query - window)


def _window_by_tril(n_new, length, window):
    ones = torch.ones(n_new, length + n_new, dtype=torch.bool)
    return ones.tril(diagonal=length) & ~ones.tril(diagonal=length - window)


def _window_by_loop(n_new, length, window):
    mask = torch.zeros(n_new, length + n_new, dtype=torch.bool)
    for j in range(n_new):
        p = length + j
        mask[j, max(0, p - window + 1) : p + 1] = True
    return mask


def _window_wrong(name):
    return lambda *args: _window_masks(*args)[name]


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_window_wrong("upper left"), "align the mask to the bottom right"),
        (_window_wrong("window + 1"), "not >="),
        (_window_wrong("no causal"), "must not see the tokens after it"),
        (_window_wrong("no window"), "causal mask alone"),
        (_window_wrong("window from j"), "not from j"),
        (lambda *a: _window_reference(*a).to(torch.uint8), "not 0 and 1"),
        (_window_wrong("one window"), "the window moves with each new token"),
        (lambda *a: _window_reference(*a).float(), "return booleans"),
        (lambda *a: _window_reference(*a).int(), "return booleans"),
        (lambda *a: _window_reference(*a).tolist(), "keep the result"),
        (lambda *a: _window_reference(*a)[:, 1:], "cached and new"),
        (lambda *a: ~_window_reference(*a), None),
        (
            lambda n, L, w: _window_reference(n, L, w)[-1:].expand(n, -1),
            None,
        ),
    ],
    ids=[
        "upper-left",
        "window-plus-one",
        "no-causal",
        "no-window",
        "window-from-j",
        "uint8",
        "one-window",
        "float",
        "int",
        "list",
        "cached-keys-only",
        "inverted",
        "last-row-everywhere",
    ],
)
def test_cached_window_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_cached_window_mask, wrong_answer, hint)


def test_window_mistakes_differ_from_the_right_mask_in_every_case():
    # each wrong mask must be caught by at least one of the checker's cases
    for name in ("upper left", "window + 1", "no causal", "no window"):
        assert any(
            not torch.equal(
                _window_masks(*args)[name], _window_masks(*args)["right"]
            )
            for args in [(1, 7, 3), (4, 5, 3), (5, 0, 2), (3, 2, 10), (2, 6, 1)]
        ), name


ACCEPTED = [
    (check_merge_partials, _merge),
    (check_kv_cache_size, _cache),
    (check_repeat_kv_heads, lambda x, n: x.repeat_interleave(n, dim=1)),
    (check_rope_half, _rope_half),
    (check_cached_window_mask, _window_reference),
]

OTHER_RIGHT_ANSWERS = [
    (check_merge_partials, _merge_with_where),
    (check_merge_partials, _merge_float32),
    (check_kv_cache_size, lambda *a: float(_cache(*a))),
    (check_kv_cache_size, lambda *a: np.int64(_cache(*a))),
    (
        check_kv_cache_size,
        lambda L, d, h, kv, T, B, n: 2 * L * B * T * kv * (d / h) * n,
    ),
    (
        check_repeat_kv_heads,
        lambda x, n: (
            x[:, :, None]
            .expand(x.size(0), x.size(1), n, *x.shape[2:])
            .reshape(x.size(0), -1, *x.shape[2:])
        ),
    ),
    (check_repeat_kv_heads, lambda x, n: torch.stack([x] * n, 2).flatten(1, 2)),
    (check_rope_half, lambda x, p: _rope_half(x.float(), p)),
    (check_rope_half, _rope_complex),
    (check_rope_half, _rope_rotate_half),
    (check_rope_half, _rope_by_permutation),
    (check_cached_window_mask, _window_by_tril),
    (check_cached_window_mask, _window_by_loop),
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


def _cache_in_float32(
    n_layers, d_model, n_heads, n_kv_heads, length, batch, size
):
    numbers = [
        2.0,
        n_layers,
        batch,
        length,
        n_kv_heads,
        d_model / n_heads,
        size,
    ]
    return torch.tensor(numbers).prod().item()  # float32: 82,003,920


def _rope_from_the_first_position(x, positions):
    """Positions counted from positions[0], not as given."""
    T, d = x.shape[-2:]
    start = int(positions[0])
    i = torch.arange(d // 2, dtype=torch.float64)
    angle = torch.arange(start, start + T, dtype=torch.float64)[:, None]
    angle = angle * 10000.0 ** (-2 * i / d)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat(
        [
            x1 * angle.cos() - x2 * angle.sin(),
            x2 * angle.cos() + x1 * angle.sin(),
        ],
        dim=-1,
    )


@pytest.mark.parametrize(
    ("check", "wrong_answer"),
    [
        (check_kv_cache_size, _cache_in_float32),
        (check_rope_half, _rope_from_the_first_position),
    ],
    ids=["cache-float32", "rope-consecutive"],
)
def test_the_later_cases_reject_what_the_first_let_through(check, wrong_answer):
    assert_rejected(check, wrong_answer, None)
