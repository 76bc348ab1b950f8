"""Chapter 6's exercise checkers accept the reference and reject the known wrong answers."""

import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
)
from torch import nn

from transformer_course import EncoderLayer, count_parameters
from transformer_course.exercises import ch06
from transformer_course.exercises.ch06 import (
    check_decoder_layer_forward,
    check_pre_ln_encode,
    check_teacher_forcing,
    check_vocab_break_even,
)


def _attention(d):
    return 4 * (d * d + d)


def _ffn(d, d_ff):
    return 2 * d * d_ff + d_ff + d


def _decoder(self_mask, keys_values, cross_mask, queries="y"):
    """A decoder-layer forward with other masks, queries or keys/values."""

    def forward(layer, x, memory, src_mask):
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = {
            "causal": causal,
            "none": None,
            "triu": ~causal,
            "memory": src_mask,
        }[self_mask]
        y = layer.residual1(x, lambda z: layer.self_attn(z, z, z, mask))

        def cross(z):
            keys = z if keys_values[0] == "y" else memory
            values = z if keys_values[1] == "y" else memory
            query = z if queries == "y" else memory
            cross = {True: src_mask, False: None, "inverted": ~src_mask}
            return layer.cross_attn(query, keys, values, cross[cross_mask])

        y = layer.residual2(y, cross)
        return layer.residual3(y, layer.feed_forward)

    return forward


def _cross_first(layer, x, memory, mask):
    x = layer.residual1(x, lambda y: layer.cross_attn(y, memory, memory, mask))
    x = layer.residual2(x, lambda y: layer.self_attn(y, y, y, is_causal=True))
    return layer.residual3(x, layer.feed_forward)


def _no_feed_forward(layer, x, memory, mask):
    x = layer.residual1(x, lambda y: layer.self_attn(y, y, y, is_causal=True))
    return layer.residual2(
        x, lambda y: layer.cross_attn(y, memory, memory, mask)
    )


def _residual1_twice(layer, x, memory, mask):
    # the same LayerNorm for two sub-layers: caught only if their gammas differ
    x = layer.residual1(x, lambda y: layer.self_attn(y, y, y, is_causal=True))
    x = layer.residual1(x, lambda y: layer.cross_attn(y, memory, memory, mask))
    return layer.residual3(x, layer.feed_forward)


def _in_place(layer, x, memory, mask):
    return x.copy_(layer(x, memory, mask))


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_decoder("causal", "yy", False), "decoder's states"),
        (_decoder("causal", "mm", False), "src_mask"),
        (_decoder("none", "mm", True), "causal"),
        (_decoder("causal", "ym", True), "keys come from the decoder"),
        (lambda layer, x, memory, mask: layer(x, memory), "src_mask"),
        (lambda layer, x, memory, mask: x, None),
        (_decoder("causal", "my", True), "values come from the decoder"),
        (_decoder("causal", "mm", "inverted"), "memory mask is inverted"),
        (_decoder("triu", "mm", True), "causal mask is inverted"),
        (_decoder("memory", "mm", True), "belongs to the"),
        (_decoder("causal", "yy", True, queries="m"), "queries from the"),
        (_cross_first, "wrong order"),
        (_no_feed_forward, "residual3"),
        (_residual1_twice, None),
        (
            lambda layer, x, memory, mask: layer(x, memory, mask).tolist(),
            "tolist",
        ),
        (_in_place, "changed"),
    ],
    ids=[
        "keys-from-decoder",
        "no-memory-mask",
        "not-causal",
        "keys-only",
        "layer-no-mask",
        "identity",
        "values-from-decoder",
        "inverted-memory-mask",
        "inverted-causal-mask",
        "memory-mask-in-self-attention",
        "memory-as-queries",
        "cross-attention-first",
        "no-feed-forward",
        "residual1-twice",
        "list",
        "in-place",
    ],
)
def test_decoder_layer_forward_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_decoder_layer_forward, wrong_answer, hint)


def test_decoder_layer_forward_reports_the_bug_that_crashes():
    # cross-attention with the memory as queries: shapes clash for T_src != T_tgt
    assert_rejected(
        check_decoder_layer_forward,
        lambda layer, x, memory, mask: layer.residual2(
            x, lambda z: layer.cross_attn(memory, z, z, mask)
        ),
        None,
    )


def _append_eos(ids, bos, eos):
    ids.append(eos)  # the caller's sentence now ends with eos_id
    return [bos, *ids[:-1]], ids


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda ids, bos, eos: (ids, ids), "nothing is shifted"),
        (lambda ids, bos, eos: ([bos, *ids[:-1]], ids), "notes' example"),
        (lambda ids, bos, eos: ([bos, *ids, eos], [*ids, eos]), "same length"),
        (lambda ids, bos, eos: ([bos, *ids], ids), "must end with eos_id"),
        (lambda ids, bos, eos: ([*ids, eos], [bos, *ids]), "swapped"),
        (lambda ids, bos, eos: ([bos, *ids], [bos, *ids]), "shifted left"),
        (lambda ids, bos, eos: ([1, *ids], [*ids, 2]), None),
        (lambda ids, bos, eos: [[bos, *ids], [*ids, eos]], None),
        (_append_eos, "changed ids in place"),
        (
            lambda ids, bos, eos: (
                torch.tensor([[bos, *ids]]),
                torch.tensor([[*ids, eos]]),
            ),
            "no batch dimension",
        ),
        (lambda ids, bos, eos: ([bos, *ids[:-1]], [*ids[1:], eos]), "lost"),
        (lambda ids, bos, eos: ([bos, *ids], [eos, *ids]), "end of the target"),
        (lambda ids, bos, eos: [bos, *ids, eos], "not the framed sentence"),
        (lambda ids, bos, eos: ("1 6 7", "6 7 2"), None),
    ],
    ids=[
        "no-shift",
        "notes-example",
        "eos-in-input",
        "no-eos",
        "swapped",
        "same-list",
        "hard-coded-ids",
        "list-not-tuple",
        "append-in-place",
        "batch-dimension",
        "words-lost",
        "eos-first",
        "framed-only",
        "strings",
    ],
)
def test_teacher_forcing_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_teacher_forcing, wrong_answer, hint)


def _encoder(d, n, f):
    return n * (_attention(d) + _ffn(d, f) + 4 * d)


def _vocab_break_even(d, n, f):
    return _encoder(d, n, f) // d + 1


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda d, n, f: _encoder(d, n, f) // d, "MORE"),
        (lambda d, n, f: -(-_encoder(d, n, f) // d), "MORE"),
        (lambda d, n, f: _encoder(d, 1, f) // d + 1, "one encoder layer"),
        (
            lambda d, n, f: (
                (
                    _encoder(d, n, f)
                    + n * (2 * _attention(d) + _ffn(d, f) + 6 * d)
                )
                // d
                + 1
            ),
            "encoder only",
        ),
        (
            lambda d, n, f: (
                n * (2 * _attention(d) + _ffn(d, f) + 6 * d) // d + 1
            ),
            "that is the decoder",
        ),
        (
            lambda d, n, f: n * (_attention(d) + _ffn(d, f)) // d + 1,
            "LayerNorms have",
        ),
        (
            lambda d, n, f: n * (4 * d * d + 2 * d * f + 4 * d) // d + 1,
            "bias",
        ),
        (
            lambda d, n, f: (_encoder(d, n, f) + 2 * d) // d + 1,
            "no final LayerNorm",
        ),
        (
            lambda d, n, f: (
                n * (_attention(d) + _ffn(d, 4 * d) + 4 * d) // d + 1
            ),
            "not always 4 * d_model",
        ),
        (lambda d, n, f: _vocab_break_even(d, n, f) + 1, None),
        (lambda d, n, f: _encoder(d, n, f) / d, None),
    ],
    ids=[
        "as-many",
        "ceil",
        "one-layer",
        "encoder-and-decoder",
        "decoder",
        "no-norms",
        "no-biases",
        "final-norm",
        "d_ff-hard-coded",
        "off-by-one",
        "float",
    ],
)
def test_vocab_break_even_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_vocab_break_even, wrong_answer, hint)


def _pre_ln_encode(model, src):
    mask = (src != model.config.pad_id)[:, None, :]
    x = model.embed(src)
    for layer in model.encoder_layers:
        y = layer.residual1.norm(x)
        x = x + layer.self_attn(y, y, y, mask)
        x = x + layer.feed_forward(layer.residual2.norm(x))
    return model.encoder_norm(x)


def _encode_variant(**kwargs):
    return lambda model, src: ch06._encode_variant(model, src, **kwargs)


def _pad_in_place(model, src):
    out = _pre_ln_encode(model, src)
    src[:, -1] = model.config.pad_id
    return out


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_encode_variant(final=None), "final LayerNorm is missing"),
        (_encode_variant(final="every"), "once, after the last"),
        (_encode_variant(order="post"), "post-LN"),
        (lambda model, src: model.encode(src)[0], "model.encode"),
        (_encode_variant(order="post", final=None), "post-LN encoder"),
        (_encode_variant(mask=False), "padding mask"),
        (lambda model, src: _pre_ln_encode(model, src).tolist(), "tensor"),
        (_pad_in_place, "in place"),
    ],
    ids=[
        "no-final-norm",
        "final-norm-every-layer",
        "post-ln-order",
        "model-encode",
        "post-ln-encoder",
        "no-mask",
        "list",
        "in-place",
    ],
)
def test_pre_ln_encode_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_pre_ln_encode, wrong_answer, hint)


ACCEPTED = [
    (check_vocab_break_even, _vocab_break_even),
    (check_pre_ln_encode, _pre_ln_encode),
    (
        check_decoder_layer_forward,
        lambda layer, x, memory, mask: layer(x, memory, mask),
    ),
    (check_teacher_forcing, lambda ids, bos, eos: ([bos, *ids], [*ids, eos])),
]

OTHER_RIGHT_ANSWERS = [
    (
        check_vocab_break_even,
        lambda d, n, f: (
            count_parameters(
                nn.ModuleList(EncoderLayer(d, 1, f) for _ in range(n))
            )
            // d
            + 1
        ),
    ),
    (
        check_pre_ln_encode,
        lambda model, src: _pre_ln_encode(model, src).double(),
    ),
    (
        check_decoder_layer_forward,
        _decoder("causal", "mm", True),
    ),
    (
        check_teacher_forcing,
        lambda ids, bos, eos: (
            torch.tensor([bos, *ids]),
            torch.tensor([*ids, eos]),
        ),
    ),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch06, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED + OTHER_RIGHT_ANSWERS,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)
