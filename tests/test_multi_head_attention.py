"""Chapter 5's library: MultiHeadAttention against its own math and against PyTorch's module."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course import MultiHeadAttention


def reference(mha, query, key, value, mask=None):
    """softmax(QK^T / sqrt(d_k)) V per head, from the module's own projections, in float64."""
    B, T_q, _ = query.shape
    T_k, h, d_k = key.size(1), mha.n_heads, mha.d_k
    q = mha.q_proj(query).double().view(B, T_q, h, d_k).transpose(1, 2)
    k = mha.k_proj(key).double().view(B, T_k, h, d_k).transpose(1, 2)
    v = mha.v_proj(value).double().view(B, T_k, h, d_k).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        mask = mask.unsqueeze(1) if mask.dim() == 3 else mask
        scores = scores.masked_fill(~mask, float("-inf"))
    heads = scores.softmax(-1) @ v
    merged = heads.transpose(1, 2).reshape(B, T_q, h * d_k)
    return F.linear(merged, mha.out_proj.weight.double(), mha.out_proj.bias.double())


@pytest.fixture
def mha():
    torch.manual_seed(0)
    return MultiHeadAttention(d_model=24, n_heads=4).eval()


@pytest.mark.parametrize("t_k", [5, 9])
@pytest.mark.parametrize("masked", [False, True])
def test_matches_reference(mha, t_k, masked):
    torch.manual_seed(1)
    query, memory = torch.randn(3, 5, 24), torch.randn(3, t_k, 24)
    key = value = query if t_k == 5 else memory
    mask = None
    if masked:
        mask = torch.rand(3, 5, t_k) > 0.4
        mask[..., 0] = True
    expected = reference(mha, query, key, value, mask)
    for return_weights in (False, True):
        got = mha(query, key, value, mask=mask, return_weights=return_weights)
        got = got[0] if return_weights else got
        torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)


def test_per_head_mask(mha):
    x = torch.randn(2, 6, 24)
    mask = torch.rand(2, 4, 6, 6) > 0.5
    mask[..., 0] = True
    torch.testing.assert_close(
        mha(x, x, x, mask).double(), reference(mha, x, x, x, mask), atol=1e-5, rtol=1e-5
    )


def test_equals_torch_multihead_attention_with_copied_weights(mha):
    torch_mha = nn.MultiheadAttention(24, 4, batch_first=True).eval()
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(
            torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight])
        )
        torch_mha.in_proj_bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        torch_mha.out_proj.load_state_dict(mha.out_proj.state_dict())
    x, memory = torch.randn(2, 7, 24), torch.randn(2, 4, 24)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    torch.testing.assert_close(
        mha(x, x, x, causal), torch_mha(x, x, x, attn_mask=~causal)[0], atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(
        mha(x, memory, memory), torch_mha(x, memory, memory)[0], atol=1e-5, rtol=1e-5
    )


def test_causal_outputs_ignore_later_inputs(mha):
    x = torch.randn(2, 8, 24)
    changed = x.clone()
    changed[:, 5:] = torch.randn(2, 3, 24)
    causal = torch.ones(8, 8, dtype=torch.bool).tril()
    torch.testing.assert_close(
        mha(x, x, x, causal)[:, :5], mha(changed, changed, changed, causal)[:, :5]
    )


def test_fully_masked_row_gives_zero_weights_and_no_nan(mha):
    x = torch.randn(2, 4, 24, requires_grad=True)
    mask = torch.ones(2, 4, 4, dtype=torch.bool)
    mask[0, 1] = False  # query 1 of sentence 0 may attend to nothing
    for return_weights in (False, True):
        result = mha(x, x, x, mask, return_weights=return_weights)
        out = result[0] if return_weights else result
        assert not torch.isnan(out).any()
        torch.testing.assert_close(out[0, 1], mha.out_proj.bias)  # zero heads -> just the bias
        if return_weights:
            assert (result[1][0, :, 1] == 0).all()
        out.sum().backward()
        assert torch.isfinite(x.grad).all()
        x.grad = None


def test_dropout_acts_on_attention_weights_in_training_only():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, dropout=0.5)
    x = torch.randn(2, 10, 16)
    _, weights = mha(x, x, x, return_weights=True)
    assert (weights == 0).any() and not torch.allclose(weights.sum(-1), torch.ones(2, 2, 10))
    mha.eval()
    _, weights = mha(x, x, x, return_weights=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 10))


def test_parameters_and_bias_option():
    assert sum(p.numel() for p in MultiHeadAttention(512, 8).parameters()) == 4 * (512 * 512 + 512)
    no_bias = MultiHeadAttention(64, 4, bias=False)
    assert all(
        layer.bias is None
        for layer in (no_bias.q_proj, no_bias.k_proj, no_bias.v_proj, no_bias.out_proj)
    )


@pytest.mark.parametrize(("d_model", "n_heads"), [(30, 4), (10, 3), (512, 7)])
def test_refuses_indivisible_d_model(d_model, n_heads):
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(d_model, n_heads)


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (torch.ones(5, 5, dtype=torch.bool), "does not broadcast"),
        (torch.ones(3, 6, 6, dtype=torch.bool), "does not broadcast"),
        (torch.ones(6, 6), "must be boolean"),
    ],
)
def test_refuses_bad_masks(mha, mask, message):
    x = torch.randn(2, 6, 24)
    with pytest.raises(ValueError, match=message):
        mha(x, x, x, mask)


def test_refuses_bad_shapes(mha):
    with pytest.raises(ValueError, match=r"\(B, T, 24\)"):
        mha(torch.randn(2, 6, 20), torch.randn(2, 6, 20), torch.randn(2, 6, 20))
    with pytest.raises(ValueError, match="share"):
        mha(torch.randn(2, 6, 24), torch.randn(2, 5, 24), torch.randn(2, 6, 24))
