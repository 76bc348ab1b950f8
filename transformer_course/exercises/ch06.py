"""Checkers for chapter 6: the full Transformer."""

from __future__ import annotations

from collections.abc import Callable

from transformer_course.exercises._core import (
    _call,
    _expect_close,
    _expect_equal,
    _fail,
    _verdict,
)

__all__ = [
    "check_decoder_layer_parameters",
    "check_pre_ln_sublayer",
    "check_decoder_layer_forward",
    "check_teacher_forcing",
]


def _numpy(value):
    """A learner's tensor as a float64 NumPy array; anything else unchanged."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().double().numpy()
    return value


def check_decoder_layer_parameters(decoder_layer_parameters: Callable) -> None:
    """Check `decoder_layer_parameters(d_model, d_ff)`: one DecoderLayer's count."""
    name = "decoder_layer_parameters"

    def run_cases() -> None:
        for d, d_ff in [(512, 2048), (1024, 4096), (16, 48)]:
            attention = 4 * (d * d + d)
            ffn = 2 * d * d_ff + d_ff + d
            norm = 2 * d
            expected = 2 * attention + ffn + 3 * norm
            mistakes = [
                (
                    attention + ffn + 3 * norm,
                    "a decoder layer has two attention sub-layers: masked "
                    "self-attention and cross-attention.",
                ),
                (
                    2 * attention + ffn + 2 * norm,
                    "a decoder layer has three sub-layers, so three LayerNorms.",
                ),
                (
                    2 * attention + ffn + 3 * d,
                    "a LayerNorm has 2 * d_model parameters: gamma and beta.",
                ),
                (
                    2 * attention + ffn,
                    "the LayerNorms have parameters too: 2 * d_model each.",
                ),
                (
                    2 * 4 * d * d + 2 * d * d_ff + 3 * norm,
                    "every nn.Linear of the paper's layer has a bias.",
                ),
                (
                    2 * 3 * (d * d + d) + ffn + 3 * norm,
                    "each attention has four projections: W^Q, W^K, W^V and "
                    "the output projection W^O.",
                ),
            ]
            got = _call(decoder_layer_parameters, name, d, d_ff)
            _expect_equal(name, [d, d_ff], got, expected, mistakes)

    _verdict(name, "counts every weight, bias and LayerNorm.", run_cases)


def _sublayer_case(d_model: int = 8):
    """A LayerNorm with random gamma/beta, a feed-forward sub-layer, an input."""
    import torch
    from torch import nn

    from transformer_course.transformer import FeedForward

    torch.manual_seed(0)  # _verdict restores the learner's random state
    norm = nn.LayerNorm(d_model)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 2.0)
        norm.bias.uniform_(-1.0, 1.0)
    sublayer = FeedForward(d_model, 4 * d_model)
    x = 3.0 + 2.0 * torch.randn(2, 4, d_model)  # far from normalised
    return x, sublayer, norm


def check_pre_ln_sublayer(pre_ln_sublayer: Callable) -> None:
    """Check `pre_ln_sublayer(x, sublayer, norm)`: x + sublayer(norm(x))."""
    import torch

    name = "pre_ln_sublayer"

    def run_cases() -> None:
        x, sublayer, norm = _sublayer_case()
        with torch.no_grad():
            expected = x + sublayer(norm(x))
            mistakes = [
                (
                    norm(x + sublayer(x)),
                    "that is post-LN, the paper's order: pre-LN normalises the "
                    "sub-layer's input and adds x afterwards.",
                ),
                (
                    norm(x) + sublayer(norm(x)),
                    "the residual path must carry x itself, not LayerNorm(x).",
                ),
                (
                    x + norm(sublayer(x)),
                    "normalise the sub-layer's input, not its output.",
                ),
                (
                    sublayer(norm(x)),
                    "the residual connection is missing: add x.",
                ),
                (x + sublayer(x), "the LayerNorm is missing."),
            ]
            inputs = ["x of shape (2, 4, 8)", "a FeedForward(8, 32)", "norm"]
            original = x.clone()
            got = _call(pre_ln_sublayer, name, x, sublayer, norm)
            if not torch.equal(x, original):
                _fail(name, "changed x in place; return a new tensor.", inputs)
            _expect_close(
                name,
                inputs,
                _numpy(got),
                _numpy(expected),
                [(_numpy(w), m) for w, m in mistakes],
                atol=1e-5,
            )

    _verdict(name, "normalises the input, then adds the residual.", run_cases)


def _decoder_variant(layer, x, memory, self_mask, keys_values, cross_mask):
    """DecoderLayer's computation with other masks, or with keys and values
    taken from the decoder's states ("y") or the memory ("m")."""
    y = layer.residual1(x, lambda z: layer.self_attn(z, z, z, self_mask))

    def cross(z):
        keys = z if keys_values[0] == "y" else memory
        values = z if keys_values[1] == "y" else memory
        return layer.cross_attn(z, keys, values, cross_mask)

    y = layer.residual2(y, cross)
    return layer.residual3(y, layer.feed_forward)


def check_decoder_layer_forward(decoder_layer_forward: Callable) -> None:
    """Check `decoder_layer_forward(layer, x, memory, memory_mask)`."""
    import torch

    from transformer_course.transformer import DecoderLayer

    name = "decoder_layer_forward"

    def run_cases() -> None:
        torch.manual_seed(0)  # _verdict restores the learner's random state
        layer = DecoderLayer(16, 4, 64).eval()
        for T_tgt, T_src in [(5, 5), (4, 7)]:
            x = torch.randn(2, T_tgt, 16)
            memory = torch.randn(2, T_src, 16)
            memory_mask = torch.ones(2, 1, T_src, dtype=torch.bool)
            memory_mask[1, :, T_src - 2 :] = False  # two padded source tokens
            causal = torch.ones(T_tgt, T_tgt, dtype=torch.bool).tril()

            with torch.no_grad():
                expected = layer(x, memory, memory_mask)
                mistakes = [
                    (
                        _decoder_variant(layer, x, memory, causal, "yy", None),
                        "the cross-attention takes its keys and values from the "
                        "decoder's states: they must come from the memory.",
                    ),
                    (
                        _decoder_variant(layer, x, memory, causal, "mm", None),
                        "the source's padding is attended to: pass memory_mask "
                        "to the cross-attention.",
                    ),
                    (
                        _decoder_variant(
                            layer, x, memory, None, "mm", memory_mask
                        ),
                        "the self-attention sees the future: make it causal.",
                    ),
                ]
                if T_tgt == T_src:
                    mistakes.append(
                        (
                            _decoder_variant(
                                layer, x, memory, causal, "yy", memory_mask
                            ),
                            "the cross-attention takes its keys and values from "
                            "the decoder's states: they must come from the memory.",
                        )
                    )
                    mistakes.append(
                        (
                            _decoder_variant(
                                layer, x, memory, causal, "ym", memory_mask
                            ),
                            "the keys come from the decoder's states: both keys "
                            "and values must come from the memory.",
                        )
                    )
                inputs = [
                    "a DecoderLayer(16, 4, 64)",
                    f"x of shape (2, {T_tgt}, 16)",
                    f"memory of shape (2, {T_src}, 16)",
                    f"memory_mask of shape (2, 1, {T_src})",
                ]
                got = _call(
                    decoder_layer_forward, name, layer, x, memory, memory_mask
                )
                _expect_close(
                    name,
                    inputs,
                    _numpy(got),
                    _numpy(expected),
                    [(_numpy(w), m) for w, m in mistakes],
                    atol=1e-5,
                )

    _verdict(name, "reads the source through the memory.", run_cases)


def check_teacher_forcing(teacher_forcing: Callable) -> None:
    """Check `teacher_forcing(ids, bos_id, eos_id) -> (decoder_input, target)`."""
    name = "teacher_forcing"

    def run_cases() -> None:
        for ids, bos, eos in [([6, 7, 8], 1, 2), ([10, 11, 12, 13, 14], 3, 4)]:
            expected = ([bos, *ids], [*ids, eos])
            mistakes = [
                (
                    (ids, ids),
                    "nothing is shifted: the decoder would learn to copy its "
                    "input. Put bos_id in front of the input.",
                ),
                (
                    ([bos, *ids[:-1]], ids),
                    "that is the notes' example (<bos> 我 爱 -> 我 爱 你), which "
                    "never teaches the model to stop: end the target with "
                    "eos_id and keep the last word in the input.",
                ),
                (
                    ([bos, *ids, eos], [*ids, eos]),
                    "the input and the target must have the same length: the "
                    "input stops before eos_id.",
                ),
                (
                    ([bos, *ids], ids),
                    "the target must end with eos_id, so that the model learns "
                    "to stop.",
                ),
                (
                    ([*ids, eos], [bos, *ids]),
                    "input and target are swapped: the decoder input starts "
                    "with bos_id.",
                ),
                (
                    ([bos, *ids], [bos, *ids]),
                    "the target is the input shifted left by one position.",
                ),
            ]
            got = _call(teacher_forcing, name, list(ids), bos, eos)
            if isinstance(got, tuple) and len(got) == 2:
                got = tuple(
                    [int(i) for i in part]
                    if hasattr(part, "__iter__")
                    else part
                    for part in got
                )
            _expect_equal(
                name,
                [ids, bos, eos],
                got,
                expected,
                mistakes,
                what="(decoder_input, target)",
            )

    _verdict(name, "frames the sentence for teacher forcing.", run_cases)
