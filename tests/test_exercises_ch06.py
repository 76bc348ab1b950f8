"""Chapter 6's exercise checkers accept the reference and reject the known wrong answers."""

import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_random_state_untouched,
    assert_rejected,
)

from transformer_course import DecoderLayer, count_parameters
from transformer_course.exercises import ch06
from transformer_course.exercises.ch06 import (
    check_decoder_layer_forward,
    check_decoder_layer_parameters,
    check_pre_ln_sublayer,
    check_teacher_forcing,
)


def _attention(d):
    return 4 * (d * d + d)


def _ffn(d, d_ff):
    return 2 * d * d_ff + d_ff + d


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda d, f: _attention(d) + _ffn(d, f) + 6 * d, "two attention"),
        (
            lambda d, f: 2 * _attention(d) + _ffn(d, f) + 4 * d,
            "three LayerNorms",
        ),
        (lambda d, f: 2 * _attention(d) + _ffn(d, f) + 3 * d, "gamma and beta"),
        (lambda d, f: 2 * _attention(d) + _ffn(d, f), "LayerNorms have"),
        (lambda d, f: 8 * d * d + 2 * d * f + 6 * d, "bias"),
        (lambda d, f: 6 * (d * d + d) + _ffn(d, f) + 6 * d, "W^O"),
        (lambda d, f: 2 * _attention(d) + _ffn(d, f) + 6 * d + 1, None),
        (
            lambda d, f: float(2 * _attention(d) + _ffn(d, f) + 6 * d) + 0.5,
            None,
        ),
    ],
    ids=[
        "one-attention",
        "two-norms",
        "norm-gamma-only",
        "no-norms",
        "no-biases",
        "three-projections",
        "off-by-one",
        "float",
    ],
)
def test_decoder_layer_parameters_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_decoder_layer_parameters, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, f, norm: norm(x + f(x)), "post-LN"),
        (lambda x, f, norm: norm(x) + f(norm(x)), "carry x itself"),
        (lambda x, f, norm: x + norm(f(x)), "not its output"),
        (lambda x, f, norm: f(norm(x)), "residual connection is missing"),
        (lambda x, f, norm: x + f(x), "LayerNorm is missing"),
        (lambda x, f, norm: x.add_(f(norm(x))), "changed"),
    ],
    ids=[
        "post-ln",
        "normalised-residual",
        "norm-after",
        "no-residual",
        "no-norm",
        "in-place",
    ],
)
def test_pre_ln_sublayer_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_pre_ln_sublayer, wrong_answer, hint)


def _decoder(self_mask, keys_values, cross_mask):
    """A decoder-layer forward with other masks or keys/values."""

    def forward(layer, x, memory, memory_mask):
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = {"causal": causal, "none": None}[self_mask]
        y = layer.residual1(x, lambda z: layer.self_attn(z, z, z, mask))

        def cross(z):
            keys = z if keys_values[0] == "y" else memory
            values = z if keys_values[1] == "y" else memory
            return layer.cross_attn(
                z, keys, values, memory_mask if cross_mask else None
            )

        y = layer.residual2(y, cross)
        return layer.residual3(y, layer.feed_forward)

    return forward


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_decoder("causal", "yy", False), "decoder's states"),
        (_decoder("causal", "mm", False), "memory_mask"),
        (_decoder("none", "mm", True), "causal"),
        (_decoder("causal", "ym", True), "keys come from the decoder"),
        (lambda layer, x, memory, mask: layer(x, memory), "memory_mask"),
        (lambda layer, x, memory, mask: x, None),
    ],
    ids=[
        "keys-from-decoder",
        "no-memory-mask",
        "not-causal",
        "keys-only",
        "layer-no-mask",
        "identity",
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
    ],
)
def test_teacher_forcing_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_teacher_forcing, wrong_answer, hint)


def _decoder_layer_parameters(d_model, d_ff):
    attention = 4 * (d_model**2 + d_model)
    return 2 * attention + _ffn(d_model, d_ff) + 3 * 2 * d_model


ACCEPTED = [
    (check_decoder_layer_parameters, _decoder_layer_parameters),
    (check_pre_ln_sublayer, lambda x, sublayer, norm: x + sublayer(norm(x))),
    (
        check_decoder_layer_forward,
        lambda layer, x, memory, mask: layer(x, memory, mask),
    ),
    (check_teacher_forcing, lambda ids, bos, eos: ([bos, *ids], [*ids, eos])),
]

OTHER_RIGHT_ANSWERS = [
    (
        check_decoder_layer_parameters,
        lambda d, f: count_parameters(DecoderLayer(d, 1, f)),
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


@pytest.mark.parametrize(("check", "reference"), ACCEPTED)
def test_checker_leaves_random_state_alone(check, reference):
    assert_random_state_untouched(check, reference)
