"""Chapter 2's library: positional_encoding (NumPy) and PositionalEncoding (PyTorch)."""

import math

import numpy as np
import pytest
import torch

from transformer_course import PositionalEncoding, positional_encoding


def formula(seq_len, d_model, base=10000.0):
    """The paper's formula, one entry at a time."""
    table = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            table[pos, 2 * i] = math.sin(angle)
            table[pos, 2 * i + 1] = math.cos(angle)
    return table


def test_matches_formula_for_every_even_d_model_from_4_to_512():
    for d_model in range(4, 513, 2):
        np.testing.assert_allclose(
            positional_encoding(20, d_model),
            formula(20, d_model),
            atol=1e-12,
            err_msg=str(d_model),
        )


@pytest.mark.parametrize("base", [100.0, 10000.0, 1e6])
def test_honours_base(base):
    np.testing.assert_allclose(
        positional_encoding(20, 8, base), formula(20, 8, base), atol=1e-12
    )
    if base != 10000.0:
        assert not np.allclose(
            positional_encoding(20, 8, base), positional_encoding(20, 8)
        )


def test_empty_sequence():
    assert positional_encoding(0, 8).shape == (0, 8)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((10, 7), ValueError, "d_model must be even"),
        ((10, 0), ValueError, "d_model must be at least 2"),
        ((10, -4), ValueError, "d_model must be at least 2"),
        ((10, 8.0), TypeError, "d_model must be an int, got float"),
        ((10, "8"), TypeError, "d_model must be an int, got str"),
        ((10, True), TypeError, "d_model must be an int, got bool"),
        ((-1, 8), ValueError, "seq_len must be at least 0"),
        ((2.5, 8), TypeError, "seq_len must be an int, got float"),
        ((None, 8), TypeError, "seq_len must be an int, got NoneType"),
        ((10, 8, 0.0), ValueError, "base must be finite and greater than 1"),
        ((10, 8, -5.0), ValueError, "base must be finite and greater than 1"),
        ((10, 8, 1.0), ValueError, "base must be finite and greater than 1"),
        ((10, 8, 0.5), ValueError, "base must be finite and greater than 1"),
        ((10, 8, math.inf), ValueError, "base must be finite"),
        ((10, 8, math.nan), ValueError, "base must be finite"),
        ((10, 8, "1e4"), TypeError, "base must be a real number, got str"),
    ],
)
def test_refuses_unsupported_input(arguments, error, message):
    with pytest.raises(error, match=message):
        positional_encoding(*arguments)


def test_accepts_numpy_integers_and_integer_base():
    expected = positional_encoding(5, 8)
    assert np.array_equal(
        positional_encoding(np.int64(5), np.int32(8)), expected
    )
    assert np.array_equal(positional_encoding(5, 8, 10000), expected)


def test_module_adds_exactly_the_encoding_and_has_no_parameters():
    layer = PositionalEncoding(d_model=32, max_len=64)
    x = torch.zeros(3, 20, 32)
    expected = torch.tensor(positional_encoding(20, 32), dtype=torch.float32)
    assert torch.equal(layer(x), expected.expand(3, 20, 32))
    assert not list(layer.parameters())
    assert "pe" in dict(layer.named_buffers())
    assert "pe" not in layer.state_dict()


def test_module_applies_dropout_only_in_training():
    torch.manual_seed(0)
    layer = PositionalEncoding(d_model=16, max_len=10, dropout=0.5)
    x = torch.ones(2, 10, 16)
    assert (layer(x) == 0).any()
    layer.eval()
    assert torch.allclose(layer(x), x + layer.pe[:10])


def test_module_buffer_follows_dtype():
    layer = PositionalEncoding(d_model=8, max_len=10).to(torch.float64)
    assert layer.pe.dtype == torch.float64
    assert (
        layer(torch.zeros(1, 4, 8, dtype=torch.float64)).dtype == torch.float64
    )


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((2, 11, 8), "T=11 positions, more than max_len=10"),
        ((2, 5, 6), r"x must have shape \(B, T, 8\), got \(2, 5, 6\)"),
        ((5, 8), r"x must have shape \(B, T, 8\), got \(5, 8\)"),
    ],
)
def test_module_refuses_bad_input_shape(shape, message):
    with pytest.raises(ValueError, match=message):
        PositionalEncoding(d_model=8, max_len=10)(torch.zeros(shape))


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.zeros((2, 5, 8)), "x must be a torch.Tensor .* got ndarray"),
        ([[[0.0] * 8]], "x must be a torch.Tensor .* got list"),
        (
            torch.zeros(2, 5, 8, dtype=torch.long),
            "floating-point tensor, got torch.int64",
        ),
    ],
)
def test_module_refuses_input_of_the_wrong_type(x, message):
    with pytest.raises(TypeError, match=message):
        PositionalEncoding(d_model=8, max_len=10)(x)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"d_model": 7}, ValueError, "d_model must be even"),
        ({"d_model": 0}, ValueError, "d_model must be at least 2"),
        ({"d_model": 8.0}, TypeError, "d_model must be an int"),
        (
            {"d_model": 8, "max_len": 0},
            ValueError,
            "max_len must be at least 1",
        ),
        ({"d_model": 8, "max_len": 10.0}, TypeError, "max_len must be an int"),
        (
            {"d_model": 8, "dropout": 1.0},
            ValueError,
            r"dropout must be in \[0, 1\)",
        ),
        (
            {"d_model": 8, "dropout": -0.1},
            ValueError,
            r"dropout must be in \[0, 1\)",
        ),
        (
            {"d_model": 8, "dropout": "0.1"},
            TypeError,
            "dropout must be a number",
        ),
        (
            {"d_model": 8, "dropout": None},
            TypeError,
            "dropout must be a number",
        ),
    ],
)
def test_module_refuses_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        PositionalEncoding(**kwargs)


def test_module_start_gives_later_positions():
    module = PositionalEncoding(16, max_len=20)
    x = torch.randn(2, 9, 16)
    whole = module(x)
    torch.testing.assert_close(module(x[:, 3:7], start=3), whole[:, 3:7])
    assert torch.equal(module(x, start=0), whole)
    assert module(x[:, :1], start=19).shape == (2, 1, 16)  # the last position


@pytest.mark.parametrize(
    "start, error, message",
    [
        (-1, ValueError, "start must be at least 0"),
        (1.0, TypeError, "start must be an int"),
        (17, ValueError, r"positions 17 \.\. 20 go past max_len=20"),
    ],
)
def test_module_refuses_bad_start(start, error, message):
    with pytest.raises(error, match=message):
        PositionalEncoding(16, max_len=20)(torch.zeros(1, 4, 16), start=start)
