"""Chapter 4's library: causal_mask, padding_mask, and masks in scaled_dot_product_attention."""

import numpy as np
import pytest

from transformer_course import (
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)


@pytest.mark.parametrize("size", [0, 1, 2, 5, 16, np.int64(3)])
def test_causal_mask_is_boolean_lower_triangle(size):
    mask = causal_mask(size)
    assert mask.dtype == bool and mask.shape == (size, size)
    for i in range(size):
        for j in range(size):
            assert mask[i, j] == (j <= i)


@pytest.mark.parametrize(
    ("size", "error"),
    [
        (-1, ValueError),
        (2.0, TypeError),
        ("3", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_causal_mask_refuses_bad_size(size, error):
    with pytest.raises(error, match="size must be a non-negative integer"):
        causal_mask(size)


def test_padding_mask_marks_real_keys_and_broadcasts():
    tokens = np.array([[5, 6, 7, 0], [8, 0, 0, 0]])
    mask = padding_mask(tokens, pad_id=0)
    assert mask.dtype == bool and mask.shape == (2, 1, 4)
    np.testing.assert_array_equal(mask[:, 0], tokens != 0)
    assert np.broadcast_to(mask, (2, 3, 4)).shape == (2, 3, 4)
    np.testing.assert_array_equal(
        padding_mask(tokens, pad_id=8)[1, 0], [False, True, True, True]
    )
    np.testing.assert_array_equal(
        padding_mask(tokens.tolist(), np.int64(0)), mask
    )


def test_padding_mask_refuses_wrong_rank():
    with pytest.raises(
        ValueError, match=r"tokens must have shape \(B, T\).*tokens\[None\]"
    ):
        padding_mask(np.array([1, 2, 0]), 0)


@pytest.mark.parametrize("pad_id", [None, 0.0, "0", True])
def test_padding_mask_refuses_a_pad_id_that_is_not_an_integer(pad_id):
    with pytest.raises(TypeError, match="pad_id must be an integer token id"):
        padding_mask(np.array([[1, 2, 0]]), pad_id)


def test_padding_mask_refuses_tokens_that_are_not_ids():
    with pytest.raises(TypeError, match="tokens must be integer token ids"):
        padding_mask(np.array([[1.0, 2.0, 0.0]]), 0)


def test_combined_masks_give_zero_weight_where_masked():
    rng = np.random.default_rng(0)
    tokens = np.array([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0]])
    x = rng.normal(size=(2, 5, 8))
    mask = causal_mask(5) & padding_mask(tokens, 0)  # (B, T, T)
    out, weights = scaled_dot_product_attention(x, x, x, mask)
    assert (weights[~mask] == 0).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    assert out.shape == (2, 5, 8)


def test_padding_mask_with_a_head_axis_on_4d_arrays():
    rng = np.random.default_rng(3)
    tokens = np.array([[3, 4, 0], [5, 0, 0]])
    x = rng.normal(size=(2, 2, 3, 4))  # (B, h, T, d_k), B == h
    mask = padding_mask(tokens, 0)[:, None]  # (B, 1, 1, T_k)
    _, weights = scaled_dot_product_attention(x, x, x, mask)
    assert (weights[1, :, :, 1:] == 0).all() and (
        weights[0, :, :, 2] == 0
    ).all()
    with pytest.raises(ValueError, match="head axis"):
        scaled_dot_product_attention(x, x, x, padding_mask(tokens, 0))


def test_causal_outputs_do_not_depend_on_later_inputs():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 4))
    changed = x.copy()
    changed[4:] += rng.normal(size=(2, 4))
    first, _ = scaled_dot_product_attention(x, x, x, causal_mask(6))
    second, _ = scaled_dot_product_attention(
        changed, changed, changed, causal_mask(6)
    )
    np.testing.assert_allclose(first[:4], second[:4])
    assert not np.allclose(first[4:], second[4:])


def test_fully_masked_query_gets_zero_weights_and_output():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 2, 4, 5))
    mask = np.ones((2, 4, 4), dtype=bool)
    mask[0, 2] = False
    mask[1] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert not np.isnan(out).any()
    assert (weights[0, 2] == 0).all() and (out[0, 2] == 0).all()
    assert (weights[1] == 0).all() and (out[1] == 0).all()
