"""Chapter 3's library: softmax and scaled_dot_product_attention (NumPy)."""

import warnings

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


def test_softmax_nan_in_gives_nan_out_only_in_its_slice():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning either
        p = softmax(np.array([[np.nan, 1.0], [1.0, 1.0], [-np.inf, np.nan]]))
    assert np.isnan(p[0]).all() and np.isnan(p[2]).all()
    np.testing.assert_allclose(p[1], [0.5, 0.5])
    assert np.isnan(softmax([np.nan, 1.0])).all()


@pytest.mark.parametrize("x", [[np.inf, 1.0], [[0.0, 1.0], [np.inf, -np.inf]]])
def test_softmax_refuses_plus_infinity_without_a_warning(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"\+inf"):
            softmax(x)


@pytest.mark.parametrize(
    ("x", "axis", "error", "message"),
    [
        ([], -1, ValueError, "empty array"),
        (np.zeros((3, 0)), -1, ValueError, "empty array"),
        (["a", "b"], -1, TypeError, "x must be an array of real numbers"),
        ([1.0, None], -1, TypeError, "x must be an array of real numbers"),
        ([1.0, 2.0], 1, ValueError, "axis 1 is out of range"),
        ([1.0, 2.0], None, TypeError, "axis must be an integer"),
        ([1.0, 2.0], 0.5, TypeError, "axis must be an integer"),
    ],
    ids=[
        "empty",
        "empty-axis",
        "strings",
        "none-inside",
        "axis-range",
        "axis-none",
        "axis-float",
    ],
)
def test_softmax_refuses_bad_input(x, axis, error, message):
    with pytest.raises(error, match=message):
        softmax(x, axis=axis)


def test_softmax_accepts_lists_and_integers():
    np.testing.assert_allclose(softmax([0, 0]), [0.5, 0.5])


@pytest.mark.parametrize(
    ("batch", "t_q", "t_k", "d_k", "d_v"),
    [
        ((), 3, 3, 4, 4),
        ((2,), 3, 5, 4, 2),
        ((2, 3), 1, 7, 8, 5),
        ((4, 2), 6, 2, 3, 3),
    ],
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
    assert out.shape == (*batch, t_q, d_v) and weights.shape == (
        *batch,
        t_q,
        t_k,
    )


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


def test_attention_accepts_a_shared_2d_mask_and_a_full_rank_mask():
    rng = np.random.default_rng(4)
    q = k = v = rng.normal(size=(2, 3, 4, 5))  # (B, h, T, d_k)
    shared = np.tril(np.ones((4, 4), dtype=bool))  # (T_q, T_k)
    full = np.broadcast_to(shared, (2, 1, 4, 4))  # (B, 1, T_q, T_k)
    first, _ = scaled_dot_product_attention(q, k, v, shared)
    second, _ = scaled_dot_product_attention(q, k, v, full)
    np.testing.assert_array_equal(first, second)


def test_attention_propagates_nan():
    q = np.array([[np.nan, 1.0], [1.0, 1.0]])
    k = v = np.ones((2, 2))
    out, _ = scaled_dot_product_attention(q, k, v)
    assert np.isnan(out[0]).all() and not np.isnan(out[1]).any()


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((3, 4), (3, 5), (3, 5)), "same last dimension d_k"),
        (((3, 4), (5, 4), (6, 2)), "same length T_k"),
        (((2, 3, 4), (3, 5, 4), (3, 5, 2)), "batch dimensions"),
        (((4,), (4,), (4,)), r"q must have shape \(\.\.\., T, d\)"),
        (((3, 4), (5,), (5, 2)), r"k must have shape \(\.\.\., T, d\)"),
        (((3, 4), (5, 4), (5, 0)), "v is empty"),
        (((0, 4), (5, 4), (5, 2)), "q is empty"),
    ],
    ids=["d_k", "T_k", "batch", "1-d", "1-d-k", "empty-v", "empty-q"],
)
def test_attention_refuses_bad_shapes(shapes, message):
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(*(np.zeros(shape) for shape in shapes))


@pytest.mark.parametrize("position", [0, 1, 2])
def test_attention_names_the_argument_that_is_not_numbers(position):
    arrays = [np.zeros((3, 4)), np.zeros((3, 4)), np.zeros((3, 4))]
    arrays[position] = np.full((3, 4), "a")
    name = "qkv"[position]
    with pytest.raises(
        TypeError, match=f"{name} must be an array of real numbers"
    ):
        scaled_dot_product_attention(*arrays)


def test_attention_refuses_infinite_input():
    q = np.array([[np.inf, 0.0]])
    with pytest.raises(ValueError, match="q contains inf"):
        scaled_dot_product_attention(q, np.ones((2, 2)), np.ones((2, 2)))


@pytest.mark.parametrize(
    ("mask", "error", "message"),
    [
        (np.ones((3, 3)), TypeError, "mask must be boolean"),
        (np.ones((2, 3, 3), dtype=int), TypeError, "mask == 1"),
        (np.ones((4, 4), dtype=bool), ValueError, "does not broadcast"),
        (np.ones((2, 5, 3), dtype=bool), ValueError, "does not broadcast"),
        (np.ones(3, dtype=bool), ValueError, r"a \(T_q, T_k\) mask"),
        (np.ones((1, 2, 3, 3), dtype=bool), ValueError, r"\(4 axes\)"),
    ],
    ids=["float", "int", "wrong-T", "wrong-T_q", "1-d", "too-many-axes"],
)
def test_attention_refuses_bad_masks(mask, error, message):
    q = k = v = np.zeros((2, 3, 4))  # scores (B, T_q, T_k) = (2, 3, 3)
    with pytest.raises(error, match=message):
        scaled_dot_product_attention(q, k, v, mask)


def test_attention_refuses_a_3d_mask_on_4d_scores_where_b_equals_h():
    """(B, 1, T_k) on (B, h, T_q, T_k) would line B up with h: refused, with the fix."""
    q = k = v = np.zeros((2, 2, 3, 4))  # (B, h, T, d_k) with B == h
    padding = np.ones((2, 1, 3), dtype=bool)  # (B, 1, T_k)
    with pytest.raises(ValueError, match=r"mask\[:, None\] for the head axis"):
        scaled_dot_product_attention(q, k, v, padding)
    out, _ = scaled_dot_product_attention(q, k, v, padding[:, None])
    assert out.shape == (2, 2, 3, 4)
