"""Chapter 6's exercise checkers accept the reference and reject the known wrong answers."""

import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)
from torch import nn

from transformer_course import EncoderLayer, count_parameters
from transformer_course.exercises import ch06
from transformer_course.exercises.ch06 import (
    DECODER_LAYER_FORWARD,
    PRE_LN_ENCODE,
    TEACHER_FORCING,
    VOCAB_BREAK_EVEN,
    check_decoder_layer_forward,
    check_pre_ln_encode,
    check_teacher_forcing,
    check_vocab_break_even,
)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(
        DECODER_LAYER_FORWARD, TEACHER_FORCING, VOCAB_BREAK_EVEN, PRE_LN_ENCODE
    ),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _attention(d):
    return 4 * (d * d + d)


def _ffn(d, d_ff):
    return 2 * d * d_ff + d_ff + d


def _by_hand(layer, x, memory, mask):
    x = layer.residual1(x, lambda y: layer.self_attn(y, y, y, is_causal=True))
    x = layer.residual2(x, lambda y: layer.cross_attn(y, memory, memory, mask))
    return layer.residual3(x, layer.feed_forward)


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
        (lambda layer, x, memory, mask: layer(x, memory), "src_mask"),
        (lambda layer, x, memory, mask: x, None),
        (_residual1_twice, None),
        (
            lambda layer, x, memory, mask: layer(x, memory, mask).tolist(),
            "tolist",
        ),
        (_in_place, "changed"),
    ],
    ids=[
        "layer-no-mask",
        "identity",
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
        (lambda ids, bos, eos: ("1 6 7", "6 7 2"), None),
    ],
    ids=[
        "hard-coded-ids",
        "list-not-tuple",
        "append-in-place",
        "batch-dimension",
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
        (lambda d, n, f: _vocab_break_even(d, n, f) + 1, None),
        (lambda d, n, f: _encoder(d, n, f) / d, None),
    ],
    ids=[
        "off-by-one",
        "float",
    ],
)
def test_vocab_break_even_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_vocab_break_even, wrong_answer, hint)


def _pre_ln_encode(model, src, pad_id=None):
    """The pre-LN encoder by hand; pad_id: the model's unless given."""
    pad_id = model.config.pad_id if pad_id is None else pad_id
    mask = (src != pad_id)[:, None, :]
    x = model.embed(src)
    for layer in model.encoder_layers:
        y = layer.residual1.norm(x)
        x = x + layer.self_attn(y, y, y, mask)
        x = x + layer.feed_forward(layer.residual2.norm(x))
    return model.encoder_norm(x)


def _pad_in_place(model, src):
    out = _pre_ln_encode(model, src)
    src[:, -1] = model.config.pad_id
    return out


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda model, src: model.encode(src)[0], "model.encode"),
        (lambda model, src: _pre_ln_encode(model, src).tolist(), "tensor"),
        (_pad_in_place, "in place"),
    ],
    ids=[
        "model-encode",
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
        _by_hand,
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


# wrong answers that the first cases let through (found by a learner's read)
@pytest.mark.parametrize(
    ("check", "wrong_answer"),
    [
        (
            check_vocab_break_even,
            lambda d, n, d_ff: round(ch06._encoder(d, n, d_ff) / d) + 1,
        ),
        (
            check_teacher_forcing,
            lambda ids, bos, eos: ([eos - 1, *ids], [*ids, eos]),
        ),
        (
            check_teacher_forcing,
            lambda ids, bos, eos: ([bos, *sorted(ids)], [*sorted(ids), eos]),
        ),
        (
            check_pre_ln_encode,
            lambda model, src: _pre_ln_encode(model, src, pad_id=0),
        ),
    ],
    ids=["rounded", "bos-from-eos", "sorted-ids", "pad-id-0"],
)
def test_the_later_cases_reject_what_the_first_let_through(check, wrong_answer):
    assert_rejected(check, wrong_answer, None)
