"""Checkers for chapter 5: multi-head attention in PyTorch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    ExerciseError,
    _call,
    _expect_close,
    _expect_equal,
    _fail,
    _Label,
    _to_array,
    _torch_generator,
    _verdict,
)

__all__ = [
    "check_split_heads",
    "check_merge_heads",
    "check_causal_self_attention",
    "check_einsum_attention",
    "check_parameter_count",
]


def _call_with_hints(fn: Callable, name: str, hints, *args):
    """`_call`, with a hint when the learner's error matches a known mistake.

    `hints` is a list of (text in the error message, hint).
    """
    try:
        return _call(fn, name, *args)
    except ExerciseError as failure:
        cause = failure.__cause__
        text = str(cause) if cause is not None else ""
        for fragment, hint in hints:
            if fragment in text:
                lines = str(failure).splitlines()
                cut = next(
                    i for i, line in enumerate(lines) if line.startswith("on ")
                )
                problem = " ".join(lines[:cut]).split(" ", 1)[1]
                _fail(name, problem, None, hint, lines[cut:], cause)
        raise


def _seeded_module(d_model: int, n_heads: int, seed: int, bias: bool = True):
    """A MultiHeadAttention with weights from a local generator.

    Creating the module draws from the global generator; `_verdict` restores
    it, and the weights are then redrawn locally, so that they are the same
    whatever the learner's random state was.
    """
    import torch

    from transformer_course.multi_head_attention import MultiHeadAttention

    module = MultiHeadAttention(d_model, n_heads, bias=bias).eval()
    generator = _torch_generator(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(
                torch.randn(parameter.shape, generator=generator)
                / parameter.shape[-1] ** 0.5
            )
    return module


def check_split_heads(split_heads: Callable) -> None:
    """Check `split_heads(x, n_heads)`: (B, T, d_model) -> (B, h, T, d_k)."""
    import torch

    name = "split_heads"

    def run_cases() -> None:
        for B, T, d_model, h in [(2, 5, 6, 3), (1, 4, 8, 2)]:
            x = torch.arange(B * T * d_model, dtype=torch.float32)
            x = x.view(B, T, d_model)
            d_k = d_model // h
            got = _call(split_heads, name, x.clone(), h)
            mistakes = [
                (
                    x.view(B, h, T, d_k),
                    "view(B, h, T, d_k) has the right shape but cuts the "
                    "tokens, not the features: view as (B, T, h, d_k) first, "
                    "then transpose(1, 2).",
                ),
                (
                    x.view(B, T, h, d_k),
                    "the head axis must come before the token axis: "
                    "transpose(1, 2).",
                ),
                (
                    x.view(B, T, d_k, h).permute(0, 3, 1, 2),
                    "each head takes d_k consecutive columns, not every h-th "
                    "column.",
                ),
            ]
            expected = x.view(B, T, h, d_k).transpose(1, 2)
            _expect_close(
                name,
                [_Label(f"x of shape {(B, T, d_model)} holding 0, 1, ..."), h],
                got,
                expected,
                mistakes,
            )

    _verdict(name, "gives every head its own d_k columns.", run_cases)


_VIEW_AFTER_TRANSPOSE = (
    "view needs the elements in memory order, and transpose only changes the "
    "strides: use reshape (which copies when it must) or .contiguous().view."
)


def check_merge_heads(merge_heads: Callable) -> None:
    """Check `merge_heads(x)`: (B, h, T, d_k) -> (B, T, h * d_k)."""
    import torch

    name = "merge_heads"

    def run_cases() -> None:
        for B, h, T, d_k in [(2, 3, 5, 2), (1, 2, 4, 4)]:
            x = torch.arange(B * h * T * d_k, dtype=torch.float32)
            x = x.view(B, h, T, d_k)
            got = _call_with_hints(
                merge_heads,
                name,
                [("view size is not compatible", _VIEW_AFTER_TRANSPOSE)],
                x.clone(),
            )
            mistakes = [
                (
                    x.reshape(B, T, h * d_k),
                    "the heads were not moved back next to the features: "
                    "transpose(1, 2) before reshaping, (B, h, T, d_k) -> "
                    "(B, T, h, d_k) -> (B, T, h * d_k).",
                ),
                (
                    x.permute(0, 2, 3, 1).reshape(B, T, h * d_k),
                    "the heads' columns are interleaved: keep each head's d_k "
                    "columns together.",
                ),
            ]
            expected = x.transpose(1, 2).reshape(B, T, h * d_k)
            _expect_close(
                name,
                [_Label(f"x of shape {(B, h, T, d_k)} holding 0, 1, ...")],
                got,
                expected,
                mistakes,
            )

    _verdict(name, "puts the heads back side by side.", run_cases)


def check_causal_self_attention(causal_self_attention: Callable) -> None:
    """Check `causal_self_attention(mha, x)`: mha(x, x, x), no future leak."""
    import torch

    name = "causal_self_attention"

    def run_cases() -> None:
        mha = _seeded_module(16, 4, seed=0)
        generator = _torch_generator(1)
        # two lengths, so that a mask written for T = 5 only is caught
        for B, T in [(2, 5), (1, 7)]:
            x = torch.randn(B, T, 16, generator=generator)
            lower = torch.ones(T, T, dtype=torch.bool).tril()
            _one_causal_case(causal_self_attention, name, mha, x, lower)

    _verdict(name, "hides the future from every token.", run_cases)


def _one_causal_case(causal_self_attention, name, mha, x, lower) -> None:
    """One input: the output of mha(x, x, x, mask=lower), and no leak."""
    import torch

    with torch.no_grad():
        got = _call(causal_self_attention, name, mha, x.clone())
        mistakes = [
            (
                mha(x, x, x),
                "no mask: every token attends to the future too.",
            ),
            (
                mha(x, x, x, mask=lower.T.clone()),
                "the mask is the upper triangle: True must be on and "
                "below the diagonal.",
            ),
            (
                mha(x, x, x, mask=~lower),
                "that is nn.MultiheadAttention's convention (True = "
                "forbidden); this book's mask is True where a query may "
                "attend.",
            ),
            (
                mha(x, x, x, mask=lower.tril(-1)),
                "a token may attend to itself: keep the diagonal.",
            ),
        ]
        shown = [mha, x]
        _expect_close(
            name, shown, got, mha(x, x, x, mask=lower), mistakes, atol=1e-5
        )
        changed = x.clone()
        changed[:, -1] += 1.0
        later = _call(causal_self_attention, name, mha, changed)
        earlier = _to_array(later)[:, :-1]
        if not np.allclose(earlier, _to_array(got)[:, :-1], atol=1e-4):
            _fail(
                name,
                "leaks the future: changing the last token changed the "
                "outputs of earlier ones.",
                shown,
            )


def _einsum_reference(x, W_q, W_k, W_v, W_o, softmax_dim=-1, scale=None):
    """Multi-head self-attention from per-head matrices, with view and matmul."""
    q, k, v = (x[:, None] @ W[None] for W in (W_q, W_k, W_v))  # (B, h, T, d_k)
    d_k = W_q.shape[-1]
    scale = d_k**-0.5 if scale is None else scale
    weights = (q @ k.transpose(-2, -1) * scale).softmax(dim=softmax_dim)
    heads = weights @ v  # (B, h, T, d_k)
    return (heads @ W_o[None]).sum(
        dim=1
    )  # (B, h, T, d_model) -> (B, T, d_model)


def check_einsum_attention(einsum_attention: Callable) -> None:
    """Check `einsum_attention(x, W_q, W_k, W_v, W_o)` against MultiHeadAttention.

    x: (B, T, d_model); W_q, W_k, W_v: (h, d_model, d_k); W_o: (h, d_k, d_model).
    """
    import torch

    name = "einsum_attention"

    def run_cases() -> None:
        generator = _torch_generator(5)
        # d_k = 4 and 9, so that a scale written in for d_k = 4 is caught
        for B, T, d_model, h in [(2, 5, 12, 3), (1, 4, 18, 2)]:
            d_k = d_model // h
            x = torch.randn(B, T, d_model, generator=generator)
            W_q, W_k, W_v = (
                torch.randn(3, h, d_model, d_k, generator=generator)
                / d_model**0.5
            ).unbind(0)
            W_o = (
                torch.randn(h, d_k, d_model, generator=generator) / d_model**0.5
            )
            # the same weights in the module: the heads' matrices side by side
            module = _seeded_module(d_model, h, seed=0, bias=False)
            with torch.no_grad():
                for layer, W in zip(
                    (module.q_proj, module.k_proj, module.v_proj),
                    (W_q, W_k, W_v),
                    strict=True,
                ):
                    # (h, d_model, d_k) -> (d_model, h * d_k), stored transposed
                    layer.weight.copy_(
                        W.permute(1, 0, 2).reshape(d_model, -1).T
                    )
                module.out_proj.weight.copy_(W_o.reshape(h * d_k, d_model).T)
                expected = module(x, x, x).numpy()
                args = [t.clone() for t in (x, W_q, W_k, W_v, W_o)]
                got = _call(einsum_attention, name, *args)
                mistakes = [
                    (
                        _einsum_reference(
                            x, W_q, W_k, W_v, W_o, softmax_dim=-2
                        ),
                        "the softmax runs over the queries: each query's "
                        "weights over the keys must sum to 1 (the key axis).",
                    ),
                    (
                        _einsum_reference(x, W_q, W_k, W_v, W_o, scale=0.5),
                        "the scale is written in as 1/2, right only for d_k "
                        "= 4: take d_k from the weights, W_q.shape[-1].",
                    ),
                    (
                        _einsum_reference(x, W_q, W_k, W_v, W_o, scale=1.0),
                        "the scores are not scaled: divide by sqrt(d_k).",
                    ),
                    (
                        _einsum_reference(x, W_q, W_k, W_v, W_o, scale=1 / d_k),
                        "the scores are divided by d_k: divide by sqrt(d_k).",
                    ),
                    (
                        _einsum_reference(
                            x, W_q, W_k, W_v, W_o, scale=d_model**-0.5
                        ),
                        "the scores are divided by sqrt(d_model): each head's "
                        "dot products have d_k terms, so divide by sqrt(d_k).",
                    ),
                ]
            _expect_close(
                name,
                [x, W_q, W_k, W_v, W_o],
                got,
                expected,
                mistakes,
                atol=1e-5,
            )

    _verdict(
        name, "equals MultiHeadAttention with the same weights.", run_cases
    )


def check_parameter_count(parameter_count: Callable) -> None:
    """Check `parameter_count(d_model, n_heads, bias=True)` against the module."""
    from transformer_course.multi_head_attention import MultiHeadAttention

    name = "parameter_count"

    def run_cases() -> None:
        for d_model, n_heads, bias in [
            (512, 8, True),
            (512, 1, True),
            (64, 4, False),
            (12, 3, True),
        ]:
            module = MultiHeadAttention(d_model, n_heads, bias=bias)
            expected = sum(p.numel() for p in module.parameters())
            got = _call(parameter_count, name, d_model, n_heads, bias)
            d = d_model
            b = d if bias else 0
            mistakes = [
                (
                    3 * (d * d + b),
                    "W^O counts too: four d_model x d_model layers.",
                ),
                (
                    4 * d * d if bias else 4 * (d * d + d),
                    "each layer has a bias of d_model numbers when bias=True, "
                    "and none when bias=False.",
                ),
                (
                    4 * (d * (d // n_heads) + b),
                    "all heads together: each projection is d_model x (h * d_k) "
                    "= d_model x d_model, not one head's d_model x d_k.",
                ),
                (
                    4 * n_heads * (d * d + b),
                    "the heads share the d_model x d_model projections: h "
                    "heads of d_k = d_model / h columns each.",
                ),
            ]
            _expect_equal(
                name,
                [d_model, n_heads, bias],
                got,
                expected,
                [
                    (wrong, hint)
                    for wrong, hint in mistakes
                    if wrong != expected
                ],
            )

    _verdict(name, "counts every weight and bias of the module.", run_cases)
