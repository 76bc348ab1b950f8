"""Checkers for chapter 5: multi-head attention in PyTorch."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from transformer_course.exercises._core import (
    Exercise,
    Mistake,
    call,
    to_array,
    fail,
    label,
    shape_of,
)

__all__ = [
    "check_split_heads",
    "check_merge_heads",
    "check_causal_self_attention",
    "check_einsum_attention",
    "check_parameter_count",
]


def _seeded_module(d_model: int, n_heads: int, seed: int, bias: bool = True):
    """A MultiHeadAttention with weights from a local generator.

    Creating the module draws from the global generator; the verdict
    restores it, and the weights are then redrawn locally, so that they are
    the same whatever the learner's random state was.
    """
    import torch

    from transformer_course.multi_head_attention import MultiHeadAttention

    module = MultiHeadAttention(d_model, n_heads, bias=bias).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(
                torch.randn(parameter.shape, generator=generator)
                / parameter.shape[-1] ** 0.5
            )
    return module


def _counting(*shape) -> object:
    """A float32 tensor of `shape` holding 0, 1, 2, ..."""
    import torch

    return torch.arange(int(np.prod(shape)), dtype=torch.float32).view(shape)


def _holding(x) -> object:
    return label("x of shape {shape} holding 0, 1, ...", shape=shape_of(x))


def _split(x, h: int):
    """(B, T, d_model) -> (B, T, h, d_k): each head's d_k columns."""
    return x.view(*x.shape[:2], h, -1)


SPLIT_HEADS = Exercise(
    name="split_heads",
    success="gives every head its own d_k columns.",
    doc="Check `split_heads(x, n_heads)`: (B, T, d_model) -> (B, h, T, d_k).",
    cases=lambda: [(_counting(2, 5, 6), 3), (_counting(1, 4, 8), 2)],
    reference=lambda x, h: _split(x, h).transpose(1, 2),
    shown=lambda x, h: [_holding(x), h],
    mistakes=[
        Mistake(
            lambda x, h: x.view(x.size(0), h, x.size(1), -1),
            "view(B, h, T, d_k) has the right shape but cuts the tokens, not "
            "the features: view as (B, T, h, d_k) first, then transpose(1, 2).",
        ),
        Mistake(
            _split,
            "the head axis must come before the token axis: transpose(1, 2).",
        ),
        Mistake(
            lambda x, h: x.view(*x.shape[:2], -1, h).permute(0, 3, 1, 2),
            "each head takes d_k consecutive columns, not every h-th column.",
        ),
    ],
)
check_split_heads = SPLIT_HEADS.checker()


def _merged(x, order=(0, 2, 1, 3)):
    """(B, h, T, d_k) permuted to `order`, then (B, T, h * d_k)."""
    B, h, T, d_k = x.shape
    return x.permute(*order).reshape(B, T, h * d_k)


MERGE_HEADS = Exercise(
    name="merge_heads",
    success="puts the heads back side by side.",
    doc="Check `merge_heads(x)`: (B, h, T, d_k) -> (B, T, h * d_k).",
    cases=lambda: [(_counting(2, 3, 5, 2),), (_counting(1, 2, 4, 4),)],
    reference=_merged,
    shown=lambda x: [_holding(x)],
    errors=[
        (
            "view size is not compatible",
            "view needs the elements in memory order, and transpose only "
            "changes the strides: use reshape (which copies when it must) or "
            ".contiguous().view.",
        )
    ],
    mistakes=[
        Mistake(
            lambda x: _merged(x, (0, 1, 2, 3)),
            "the heads were not moved back next to the features: "
            "transpose(1, 2) before reshaping, (B, h, T, d_k) -> (B, T, h, "
            "d_k) -> (B, T, h * d_k).",
        ),
        Mistake(
            lambda x: _merged(x, (0, 2, 3, 1)),
            "the heads' columns are interleaved: keep each head's d_k columns "
            "together.",
        ),
    ],
)
check_merge_heads = MERGE_HEADS.checker()


def _causal_cases() -> list[tuple]:
    """(mha, x) at two lengths, so that a mask written for T = 5 only is
    caught; the module's weights take no gradient, as under no_grad."""
    import torch

    mha = _seeded_module(16, 4, seed=0).requires_grad_(False)
    generator = torch.Generator().manual_seed(1)
    sizes = [(2, 5), (1, 7)]
    return [(mha, torch.randn(B, T, 16, generator=generator)) for B, T in sizes]


def _masked(wrong: Callable) -> Callable:
    """`mha`'s output under the mask `wrong(lower)` (lower: the causal one)."""
    import torch

    def output(mha, x):
        lower = torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()
        return mha(x, x, x, mask=wrong(lower))

    return output


def _no_leak(name: str, fn: Callable, shown, got, mha, x) -> None:
    """Changing the last token must leave the earlier outputs alone."""
    changed = x.clone()
    changed[:, -1] += 1.0
    earlier = to_array(call(fn, name, mha, changed))[:, :-1]
    if not np.allclose(earlier, to_array(got)[:, :-1], atol=1e-4):
        problem = (
            "leaks the future: changing the last token changed the "
            "outputs of earlier ones."
        )
        fail(name, problem, shown)


CAUSAL_SELF_ATTENTION = Exercise(
    name="causal_self_attention",
    success="hides the future from every token.",
    doc="Check `causal_self_attention(mha, x)`: mha(x, x, x), no future leak.",
    cases=_causal_cases,
    reference=_masked(lambda lower: lower),
    shared=1,
    atol=1e-5,
    after=_no_leak,
    mistakes=[
        Mistake(
            _masked(lambda lower: None),
            "no mask: every token attends to the future too.",
        ),
        Mistake(
            _masked(lambda lower: lower.T.clone()),
            "the mask is the upper triangle: True must be on and below the "
            "diagonal.",
        ),
        Mistake(
            _masked(lambda lower: ~lower),
            "that is nn.MultiheadAttention's convention (True = forbidden); "
            "this book's mask is True where a query may attend.",
        ),
        Mistake(
            _masked(lambda lower: lower.tril(-1)),
            "a token may attend to itself: keep the diagonal.",
        ),
    ],
)
check_causal_self_attention = CAUSAL_SELF_ATTENTION.checker()


def _einsum_reference(x, W_q, W_k, W_v, W_o, softmax_dim=-1, scale=None):
    """Multi-head self-attention from per-head matrices, with view and matmul."""
    q, k, v = (x[:, None] @ W[None] for W in (W_q, W_k, W_v))  # (B, h, T, d_k)
    d_k = W_q.shape[-1]
    scale = d_k**-0.5 if scale is None else scale
    weights = (q @ k.transpose(-2, -1) * scale).softmax(dim=softmax_dim)
    heads = weights @ v  # (B, h, T, d_k)
    # (B, h, T, d_model) -> (B, T, d_model)
    return (heads @ W_o[None]).sum(dim=1)


def _einsum_cases():
    import torch

    generator = torch.Generator().manual_seed(5)
    cases = []
    # d_k = 4 and 9, so that a scale written in for d_k = 4 is caught
    for B, T, d_model, h in [(2, 5, 12, 3), (1, 4, 18, 2)]:
        d_k = d_model // h
        x = torch.randn(B, T, d_model, generator=generator)
        W_q, W_k, W_v = (
            torch.randn(3, h, d_model, d_k, generator=generator) / d_model**0.5
        ).unbind(0)
        W_o = torch.randn(h, d_k, d_model, generator=generator) / d_model**0.5
        cases.append((x, W_q, W_k, W_v, W_o))
    return cases


def _module_output(x, W_q, W_k, W_v, W_o):
    """MultiHeadAttention with the same weights: the heads side by side."""
    import torch

    h, d_model, d_k = W_q.shape
    module = _seeded_module(d_model, h, seed=0, bias=False)
    with torch.no_grad():
        projections = (module.q_proj, module.k_proj, module.v_proj)
        for layer, W in zip(projections, (W_q, W_k, W_v), strict=True):
            # (h, d_model, d_k) -> (d_model, h * d_k), stored transposed
            layer.weight.copy_(W.permute(1, 0, 2).reshape(d_model, -1).T)
        module.out_proj.weight.copy_(W_o.reshape(h * d_k, d_model).T)
        return module(x, x, x).numpy()


def _scaled(scale: Callable) -> Callable:
    """The reference with the scale `scale(d_model, d_k)`."""

    def variant(x, W_q, *W):
        scaled = scale(x.size(-1), W_q.size(-1))
        return _einsum_reference(x, W_q, *W, scale=scaled)

    return variant


EINSUM_ATTENTION = Exercise(
    name="einsum_attention",
    success="equals MultiHeadAttention with the same weights.",
    doc="""Check `einsum_attention(x, W_q, W_k, W_v, W_o)` against MultiHeadAttention.

    x: (B, T, d_model); W_q, W_k, W_v: (h, d_model, d_k); W_o: (h, d_k, d_model).""",
    cases=_einsum_cases,
    reference=_module_output,
    atol=1e-5,
    mistakes=[
        Mistake(
            partial(_einsum_reference, softmax_dim=-2),
            "the softmax runs over the queries: each query's weights over the "
            "keys must sum to 1 (the key axis).",
        ),
        Mistake(
            partial(_einsum_reference, scale=0.5),
            "the scale is written in as 1/2, right only for d_k = 4: take d_k "
            "from the weights, W_q.shape[-1].",
        ),
        Mistake(
            partial(_einsum_reference, scale=1.0),
            "the scores are not scaled: divide by sqrt(d_k).",
        ),
        Mistake(
            _scaled(lambda d_model, d_k: 1 / d_k),
            "the scores are divided by d_k: divide by sqrt(d_k).",
        ),
        Mistake(
            _scaled(lambda d_model, d_k: d_model**-0.5),
            "the scores are divided by sqrt(d_model): each head's dot "
            "products have d_k terms, so divide by sqrt(d_k).",
        ),
    ],
)
check_einsum_attention = EINSUM_ATTENTION.checker()


def _parameters(d_model: int, n_heads: int, bias: bool) -> int:
    from transformer_course.multi_head_attention import MultiHeadAttention

    module = MultiHeadAttention(d_model, n_heads, bias=bias)
    return sum(p.numel() for p in module.parameters())


def _unless_right(count: Callable) -> Callable:
    """A wrong count, None where it happens to be the right one."""

    def variant(d, n_heads, bias):
        wrong = count(d, n_heads, d if bias else 0)
        return None if wrong == _parameters(d, n_heads, bias) else wrong

    return variant


PARAMETER_COUNT = Exercise(
    name="parameter_count",
    success="counts every weight and bias of the module.",
    doc="Check `parameter_count(d_model, n_heads, bias=True)` against the "
    "module.",
    cases=[(512, 8, True), (512, 1, True), (64, 4, False), (12, 3, True)],
    reference=_parameters,
    compare="equal",
    mistakes=[
        Mistake(
            _unless_right(lambda d, h, b: 3 * (d * d + b)),
            "W^O counts too: four d_model x d_model layers.",
        ),
        Mistake(
            _unless_right(lambda d, h, b: 4 * d * d if b else 4 * (d * d + d)),
            "each layer has a bias of d_model numbers when bias=True, and none "
            "when bias=False.",
        ),
        Mistake(
            _unless_right(lambda d, h, b: 4 * (d * (d // h) + b)),
            "all heads together: each projection is d_model x (h * d_k) = "
            "d_model x d_model, not one head's d_model x d_k.",
        ),
        Mistake(
            _unless_right(lambda d, h, b: 4 * h * (d * d + b)),
            "the heads share the d_model x d_model projections: h heads of d_k "
            "= d_model / h columns each.",
        ),
    ],
)
check_parameter_count = PARAMETER_COUNT.checker()
