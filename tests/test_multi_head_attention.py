"""Chapter 5's library: MultiHeadAttention against its own math and against PyTorch's module."""

import math

import numpy as np
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
    return F.linear(
        merged, mha.out_proj.weight.double(), mha.out_proj.bias.double()
    )


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
        mha(x, x, x, mask).double(),
        reference(mha, x, x, x, mask),
        atol=1e-5,
        rtol=1e-5,
    )


def test_equals_torch_multihead_attention_with_copied_weights(mha):
    torch_mha = nn.MultiheadAttention(24, 4, batch_first=True).eval()
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(
            torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight])
        )
        torch_mha.in_proj_bias.copy_(
            torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias])
        )
        torch_mha.out_proj.load_state_dict(mha.out_proj.state_dict())
    x, memory = torch.randn(2, 7, 24), torch.randn(2, 4, 24)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    torch.testing.assert_close(
        mha(x, x, x, causal),
        torch_mha(x, x, x, attn_mask=~causal)[0],
        atol=1e-5,
        rtol=1e-5,
    )
    torch.testing.assert_close(
        mha(x, memory, memory),
        torch_mha(x, memory, memory)[0],
        atol=1e-5,
        rtol=1e-5,
    )


def test_causal_outputs_ignore_later_inputs(mha):
    x = torch.randn(2, 8, 24)
    changed = x.clone()
    changed[:, 5:] = torch.randn(2, 3, 24)
    causal = torch.ones(8, 8, dtype=torch.bool).tril()
    torch.testing.assert_close(
        mha(x, x, x, causal)[:, :5],
        mha(changed, changed, changed, causal)[:, :5],
    )


def test_fully_masked_row_gives_zero_weights_and_no_nan(mha):
    x = torch.randn(2, 4, 24, requires_grad=True)
    mask = torch.ones(2, 4, 4, dtype=torch.bool)
    mask[0, 1] = False  # query 1 of sentence 0 may attend to nothing
    for return_weights in (False, True):
        result = mha(x, x, x, mask, return_weights=return_weights)
        out = result[0] if return_weights else result
        assert not torch.isnan(out).any()
        torch.testing.assert_close(
            out[0, 1], mha.out_proj.bias
        )  # zero heads -> just the bias
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
    assert (weights == 0).any() and not torch.allclose(
        weights.sum(-1), torch.ones(2, 2, 10)
    )
    mha.eval()
    _, weights = mha(x, x, x, return_weights=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 10))


def test_parameters_and_bias_option():
    assert sum(
        p.numel() for p in MultiHeadAttention(512, 8).parameters()
    ) == 4 * (512 * 512 + 512)
    no_bias = MultiHeadAttention(64, 4, bias=False)
    assert all(
        layer.bias is None
        for layer in (
            no_bias.q_proj,
            no_bias.k_proj,
            no_bias.v_proj,
            no_bias.out_proj,
        )
    )


@pytest.mark.parametrize(("d_model", "n_heads"), [(30, 4), (10, 3), (512, 7)])
def test_refuses_indivisible_d_model(d_model, n_heads):
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(d_model, n_heads)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((8, 0), ValueError, "n_heads must be a positive integer, got 0"),
        ((8, -2), ValueError, "n_heads must be a positive integer, got -2"),
        ((0, 2), ValueError, "d_model must be a positive integer, got 0"),
        ((8.0, 2), ValueError, "d_model must be a positive integer, got 8.0"),
        ((8, True), ValueError, "n_heads must be a positive integer"),
        ((8, 2, 2.0), ValueError, r"dropout must be in \[0, 1\), got 2.0"),
        ((8, 2, -0.1), ValueError, r"dropout must be in \[0, 1\)"),
        ((8, 2, "0.1"), TypeError, "dropout must be a float"),
    ],
)
def test_refuses_bad_constructor_arguments(args, error, message):
    with pytest.raises(error, match=message):
        MultiHeadAttention(*args)


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (
            torch.ones(5, 5, dtype=torch.bool),
            r"mask must have shape \(T_q, T_k\)",
        ),
        (torch.ones(3, 6, 6, dtype=torch.bool), "got \\(3, 6, 6\\)"),
        (torch.ones(2, 3, 6, 6, dtype=torch.bool), "got \\(2, 3, 6, 6\\)"),
        (torch.ones(6, dtype=torch.bool), "padding_mask"),
        (torch.ones(2, 6, dtype=torch.bool)[:, :5], "got \\(2, 5\\)"),
        (
            torch.ones(1, 2, 1, 6, 6, dtype=torch.bool),
            "B, h or 1, T_q or 1, T_k",
        ),
        (torch.ones(6, 6), "must be boolean"),
        (np.ones((6, 6)), "must be boolean"),
    ],
    ids=[
        "wrong-T",
        "wrong-B",
        "wrong-h",
        "1-D",
        "2-D-padding",
        "5-D",
        "float",
        "numpy-float",
    ],
)
def test_refuses_bad_masks(mha, mask, message):
    x = torch.randn(2, 6, 24)
    with pytest.raises(ValueError, match=message):
        mha(x, x, x, mask)


def test_refuses_a_mask_that_is_not_an_array(mha):
    x = torch.randn(2, 6, 24)
    with pytest.raises(
        TypeError, match="mask must be a boolean tensor, got list"
    ):
        mha(x, x, x, [[True] * 6] * 6)


@pytest.mark.parametrize(
    "shape",
    [
        (6, 6),
        (1, 6),
        (2, 6, 6),
        (2, 1, 6),
        (1, 1, 6),
        (2, 4, 6, 6),
        (2, 1, 1, 6),
    ],
)
def test_accepts_every_documented_mask_shape(mha, shape):
    torch.manual_seed(2)
    x = torch.randn(2, 6, 24)
    mask = torch.rand(shape) > 0.3
    mask[..., 0] = True
    full = mask.unsqueeze(1) if mask.dim() == 3 else mask
    expected = reference(mha, x, x, x, full.expand(2, 4, 6, 6))
    torch.testing.assert_close(
        mha(x, x, x, mask).double(), expected, atol=1e-5, rtol=1e-5
    )


def test_accepts_a_numpy_boolean_mask_like_chapter_4s(mha):
    from transformer_course import causal_mask

    x = torch.randn(2, 5, 24)
    torch.testing.assert_close(
        mha(x, x, x, causal_mask(5)),
        mha(x, x, x, torch.from_numpy(causal_mask(5))),
    )


def test_padding_mask_of_chapter_4_is_accepted(mha):
    from transformer_course import padding_mask

    tokens = np.array([[5, 6, 7, 0, 0, 0], [5, 6, 7, 8, 9, 4]])
    x = torch.randn(2, 6, 24)
    mask = torch.from_numpy(padding_mask(tokens, pad_id=0))  # (B, 1, T_k)
    out = mha(x, x, x, mask)
    changed = x.clone()
    changed[0, 3:] = torch.randn(
        3, 24
    )  # only the padded keys of sentence 0 change
    torch.testing.assert_close(mha(changed, x, x, mask)[0, :3], out[0, :3])
    torch.testing.assert_close(mha(x, changed, changed, mask)[0], out[0])


def test_refuses_bad_shapes(mha):
    with pytest.raises(ValueError, match=r"query must have shape \(B, T, 24\)"):
        mha(torch.randn(2, 6, 20), torch.randn(2, 6, 20), torch.randn(2, 6, 20))
    with pytest.raises(ValueError, match="share"):
        mha(torch.randn(2, 6, 24), torch.randn(2, 5, 24), torch.randn(2, 6, 24))


def test_refuses_float64_input_with_a_clear_message(mha):
    x = torch.randn(2, 6, 24)
    with pytest.raises(TypeError, match="query has dtype torch.float64"):
        mha(x.double(), x, x)
    with pytest.raises(TypeError, match="value has dtype torch.float16"):
        mha(x, x, x.half())


def test_refuses_numpy_input_with_a_clear_message(mha):
    x = torch.randn(2, 6, 24)
    with pytest.raises(
        TypeError, match="key must be a torch.Tensor .* got ndarray"
    ):
        mha(x, x.numpy(), x)


def test_float64_module_accepts_float64_input():
    torch.manual_seed(0)
    mha = MultiHeadAttention(24, 4).double()
    x = torch.randn(2, 6, 24, dtype=torch.float64)
    assert mha(x, x, x, is_causal=True).dtype == torch.float64


@pytest.mark.parametrize("return_weights", [False, True])
@pytest.mark.parametrize("extra_mask", [False, True])
def test_is_causal_equals_the_causal_mask_forward_and_backward(
    return_weights, extra_mask
):
    from transformer_course import causal_mask

    torch.manual_seed(3)
    mha = MultiHeadAttention(24, 4)
    x = torch.randn(2, 7, 24)
    padding = torch.ones(2, 1, 7, dtype=torch.bool)
    padding[0, :, 5:] = False
    causal = torch.from_numpy(causal_mask(7))
    results = []
    for kwargs in (
        {"mask": causal & padding if extra_mask else causal},
        {"mask": padding if extra_mask else None, "is_causal": True},
    ):
        mha.zero_grad()
        inputs = x.clone().requires_grad_()
        result = mha(
            inputs, inputs, inputs, return_weights=return_weights, **kwargs
        )
        out = result[0] if return_weights else result
        (
            out.square().sum() + (result[1].sum() if return_weights else 0)
        ).backward()
        grads = [inputs.grad] + [p.grad.clone() for p in mha.parameters()]
        results.append((result, grads))
    (got, got_grads), (expected, expected_grads) = results[1], results[0]
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    for a, b in zip(got_grads, expected_grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_is_causal_refuses_cross_attention_and_says_why(mha):
    x, memory = torch.randn(2, 5, 24), torch.randn(2, 7, 24)
    with pytest.raises(
        ValueError, match="T_q == T_k.*upper left.*bottom right"
    ):
        mha(x, memory, memory, is_causal=True)


def test_is_causal_is_keyword_only(mha):
    x = torch.randn(2, 5, 24)
    with pytest.raises(TypeError):
        mha(x, x, x, None, True)


def saved_weight_tensors(run, B, h, T) -> int:
    """How many distinct (B, h, T, T) float tensors autograd keeps for backward.

    Counted by storage, so a view that matmul folds to (B * h, T, T) is the
    same tensor as the softmax output it was made from.
    """
    storages = set()

    def pack(tensor):
        if (
            tensor.is_floating_point()
            and tensor.numel() == B * h * T * T
            and tensor.shape[-2:] == (T, T)
        ):
            storages.add(tensor.untyped_storage().data_ptr())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        run()
    return len(storages)


def test_explicit_path_saves_one_weight_tensor_for_backward():
    """The (B, h, T_q, T_k) weights are kept once, with or without a mask;
    the fused path keeps none."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(24, 4)
    x = torch.randn(2, 7, 24, requires_grad=True)
    mask = torch.ones(2, 7, 7, dtype=torch.bool)
    mask[0, 1] = False  # one fully masked query
    for kwargs in ({}, {"mask": mask}, {"is_causal": True}):
        explicit = saved_weight_tensors(
            lambda kwargs=kwargs: mha(x, x, x, return_weights=True, **kwargs),
            2,
            4,
            7,
        )
        fused = saved_weight_tensors(
            lambda kwargs=kwargs: mha(x, x, x, **kwargs), 2, 4, 7
        )
        assert (explicit, fused) == (1, 0), kwargs


def test_the_weight_count_sees_a_masked_fill_after_the_softmax():
    """The counter itself: zeroing the weights before `@ v` keeps a second copy."""
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, 7, 6, requires_grad=True).unbind(0)

    def zeroed_before_matmul():
        weights = (q @ k.transpose(-2, -1)).softmax(-1)
        return weights.masked_fill(torch.zeros(7, 1, dtype=torch.bool), 0.0) @ v

    assert saved_weight_tensors(zeroed_before_matmul, 2, 4, 7) == 2


def test_importing_the_package_does_not_load_the_benchmark_code():
    """torch.utils.benchmark may warn on stderr (a CUDA build without a GPU)."""
    import subprocess
    import sys

    code = (
        "import sys, transformer_course; "
        "print('torch.utils.benchmark' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False"]
    assert result.stderr == ""


def test_sizes_may_be_numpy_integers_and_flags_must_be_bools(mha):
    """d_model read from a NumPy shape works; bias="yes", is_causal=1 and
    return_weights=1 are refused by name, not accepted or passed to PyTorch."""
    module = MultiHeadAttention(np.int64(24), np.int64(4))
    assert (module.d_model, module.n_heads) == (24, 4)
    assert type(module.d_k) is int
    with pytest.raises(TypeError, match="bias must be True or False"):
        MultiHeadAttention(24, 4, bias="yes")
    x = torch.randn(2, 3, 24)
    for flag in ("is_causal", "return_weights"):
        with pytest.raises(TypeError, match=f"{flag} must be True or False"):
            mha(x, x, x, **{flag: 1})
