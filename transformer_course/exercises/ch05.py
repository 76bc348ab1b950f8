"""Checkers for chapter 5: multi-head attention in PyTorch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    ExerciseError,
    _call,
    _expect_close,
    _verdict,
)

__all__ = [
    "check_split_heads",
    "check_merge_heads",
    "check_causal_self_attention",
]


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
