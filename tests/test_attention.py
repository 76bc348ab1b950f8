"""Chapter 3's library: softmax and scaled_dot_product_attention (NumPy)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_course import scaled_dot_product_attention, softmax


def reference(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax_normalises_along_axis(axis):
    x = np.random.default_rng(0).normal(size=(3, 4, 5))
    p = softmax(x, axis=axis)
    np.testing.assert_allclose(p.sum(axis=axis), 1.0)
    assert (p > 0).all()


def test_softmax_is_finite_near_1000():
    p = softmax(np.array([[1000.0, 999.0, 998.0], [-1000.0, -999.0, -1001.0]]))
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p[0], softmax(np.array([2.0, 1.0, 0.0])))


def test_softmax_of_all_minus_infinity_is_zero():
    p = softmax(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    np.testing.assert_array_equal(p, [[0.0, 0.0], [1.0, 0.0]])


@pytest.mark.parametrize(
    ("batch", "t_q", "t_k", "d_k", "d_v"),
    [((), 3, 3, 4, 4), ((2,), 3, 5, 4, 2), ((2, 3), 1, 7, 8, 5), ((4, 2), 6, 2, 3, 3)],
)
def test_attention_matches_formula(batch, t_q, t_k, d_k, d_v):
    rng = np.random.default_rng(1)
    q = rng.normal(size=(*batch, t_q, d_k))
    k = rng.normal(size=(*batch, t_k, d_k))
    v = rng.normal(size=(*batch, t_k, d_v))
    out, weights = scaled_dot_product_attention(q, k, v)
    expected_out, expected_weights = reference(q, k, v)
    np.testing.assert_allclose(out, expected_out, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-12)
    assert out.shape == (*batch, t_q, d_v) and weights.shape == (*batch, t_q, t_k)


def test_attention_with_mask_matches_formula_and_pytorch():
    rng = np.random.default_rng(2)
    q, k, v = (
        rng.normal(size=(2, 3, 4, 8)),
        rng.normal(size=(2, 3, 6, 8)),
        rng.normal(size=(2, 3, 6, 5)),
    )
    mask = rng.random(size=(2, 1, 4, 6)) > 0.3
    mask[..., 0] = True  # every query keeps at least one key
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    expected_out, expected_weights = reference(q, k, v, mask)
    np.testing.assert_allclose(out, expected_out, atol=1e-12)
    assert (weights[~np.broadcast_to(mask, weights.shape)] == 0).all()
    torch_out = F.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(mask)
    )
    np.testing.assert_allclose(out, torch_out.numpy(), atol=1e-10)


def test_attention_broadcasts_batch_dimensions():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(2, 1, 4, 8))
    k = rng.normal(size=(1, 3, 5, 8))
    v = rng.normal(size=(1, 3, 5, 2))
    out, _ = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 4, 2)


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((3, 4), (3, 5), (3, 5)), "same last dimension"),
        (((3, 4), (5, 4), (6, 2)), "same length T_k"),
        (((2, 3, 4), (3, 5, 4), (3, 5, 2)), "batch dimensions"),
        (((4,), (4,), (4,)), "at least 2 dimensions"),
    ],
)
def test_attention_refuses_bad_shapes(shapes, message):
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(*(np.zeros(shape) for shape in shapes))


def test_attention_refuses_bad_masks():
    q = k = v = np.zeros((2, 3, 4))
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(q, k, v, np.ones((4, 4), dtype=bool))
    with pytest.raises(ValueError, match="must be boolean"):
        scaled_dot_product_attention(q, k, v, np.ones((3, 3)))
