"""Chapter 5's exercise checkers accept the reference and reject the known wrong answers."""

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)

from transformer_course.exercises import ch05
from transformer_course.exercises.ch05 import (
    CAUSAL_SELF_ATTENTION,
    EINSUM_ATTENTION,
    MERGE_HEADS,
    PARAMETER_COUNT,
    SPLIT_HEADS,
    check_causal_self_attention,
    check_einsum_attention,
    check_merge_heads,
    check_parameter_count,
    check_split_heads,
)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(
        SPLIT_HEADS,
        MERGE_HEADS,
        CAUSAL_SELF_ATTENTION,
        EINSUM_ATTENTION,
        PARAMETER_COUNT,
    ),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _split(x, h):
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda x, h: x.view(x.size(0), h, x.size(1), -1), "cuts the tokens"),
        (
            lambda x, h: x.reshape(x.size(0), h, x.size(1), -1),
            "cuts the tokens",
        ),
        (lambda x, h: x.view(x.size(0), x.size(1), h, -1), "transpose(1, 2)"),
        (
            lambda x, h: x.view(x.size(0), x.size(1), -1, h).permute(
                0, 3, 1, 2
            ),
            "consecutive",
        ),
        (lambda x, h: _split(x, h).transpose(2, 3), None),
    ],
    ids=[
        "view-wrong-order",
        "reshape-wrong-order",
        "no-transpose",
        "strided",
        "T-and-d_k-swapped",
    ],
)
def test_split_heads_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_split_heads, wrong_answer, hint)


def _merge_with_view(x):
    B, h, T, d_k = x.shape
    return x.transpose(1, 2).view(B, T, h * d_k)  # the bug the chapter teaches


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_merge_with_view, "use reshape"),
        (lambda x: x.reshape(x.size(0), x.size(2), -1), "transpose(1, 2)"),
        (
            lambda x: x.permute(0, 2, 3, 1).reshape(x.size(0), x.size(2), -1),
            "interleaved",
        ),
        (lambda x: x.transpose(1, 2).reshape(x.size(0), -1, x.size(2)), None),
        (lambda x: x.sum(dim=1), None),
        (lambda x: x.transpose(1, 2).reshape(x.size(2), -1), None),
    ],
    ids=[
        "view-after-transpose",
        "no-transpose",
        "interleaved",
        "wrong-final-shape",
        "sum-of-heads",
        "reshape-T-minus-1",
    ],
)
def test_merge_heads_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_merge_heads, wrong_answer, hint)


def _tril(x):
    return torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda mha, x: mha(x, x.flip(1), x, mask=_tril(x)), None),
        (lambda mha, x: mha(x, x, x, mask=_tril(x).float()), "must be boolean"),
        (
            lambda mha, x: mha(x, x, x, mask=_tril(x), return_weights=True),
            "(output, weights)",
        ),
    ],
    ids=["keys-reversed", "float-mask", "returns-weights-too"],
)
def test_causal_self_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_causal_self_attention, wrong_answer, hint)


def _einsum(x, W_q, W_k, W_v, W_o, softmax_dim=-1, scale=None):
    q = torch.einsum("btd,hdk->bhtk", x, W_q)
    k = torch.einsum("btd,hdk->bhtk", x, W_k)
    v = torch.einsum("btd,hdk->bhtk", x, W_v)
    scale = W_q.shape[-1] ** -0.5 if scale is None else scale
    scores = torch.einsum("bhqk,bhsk->bhqs", q, k) * scale
    weights = scores.softmax(dim=softmax_dim)
    heads = torch.einsum("bhqs,bhsk->bhqk", weights, v)
    return torch.einsum("bhtk,hkd->btd", heads, W_o)


def _einsum_float64(x, W_q, W_k, W_v, W_o):
    return _einsum(*(t.double() for t in (x, W_q, W_k, W_v, W_o)))


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda *args: _einsum(*args, softmax_dim=-2), "over the queries"),
        (lambda *args: _einsum(*args, scale=1.0), "not scaled"),
        (
            lambda *args: _einsum(*args, scale=1 / args[1].shape[-1]),
            "divided by d_k",
        ),
        (
            lambda *args: _einsum(*args, scale=args[0].shape[-1] ** -0.5),
            "sqrt(d_model)",
        ),
        (lambda x, *_: x, None),
        (
            lambda x, W_q, W_k, W_v, W_o: torch.einsum(
                "bhtk,hkd->bhtd",
                torch.einsum("btd,hdk->bhtk", x, W_v),
                W_o,
            ),
            None,
        ),
        (lambda *args: (_einsum(*args), None), "return only the output"),
    ],
    ids=[
        "softmax-over-queries",
        "no-scale",
        "scale-d_k",
        "scale-d_model",
        "identity",
        "heads-not-summed",
        "tuple",
    ],
)
def test_einsum_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_einsum_attention, wrong_answer, hint)


def _count(d_model, n_heads, bias=True):
    return 4 * (d_model * d_model + (d_model if bias else 0))


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda d, h, bias=True: 3 * (d * d + (d if bias else 0)),
            "W^O counts",
        ),
        (lambda d, h, bias=True: 4 * d * d, "bias of d_model"),
        (lambda d, h, bias=True: 4 * (d * d + d), "bias of d_model"),
        (
            lambda d, h, bias=True: 4 * (d * (d // h) + (d if bias else 0)),
            "all heads together",
        ),
        (
            lambda d, h, bias=True: 4 * h * (d * d + (d if bias else 0)),
            "share",
        ),
        (lambda d, h, bias=True: None, "forget `return`"),
    ],
    ids=["no-W_O", "no-bias", "bias-always", "one-head", "h-times", "none"],
)
def test_parameter_count_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_parameter_count, wrong_answer, hint)


ACCEPTED = [
    (check_split_heads, _split),
    (
        check_merge_heads,
        lambda x: x.transpose(1, 2).reshape(x.size(0), x.size(2), -1),
    ),
    (check_causal_self_attention, lambda mha, x: mha(x, x, x, mask=_tril(x))),
    (check_einsum_attention, _einsum),
    (check_parameter_count, _count),
]

OTHER_RIGHT_ANSWERS = [
    (
        check_merge_heads,
        lambda x: x.transpose(1, 2).contiguous().view(x.size(0), x.size(2), -1),
    ),
    (check_causal_self_attention, lambda mha, x: mha(x, x, x, is_causal=True)),
    (
        check_causal_self_attention,
        lambda mha, x: mha(
            x, x, x, mask=np.tril(np.ones((x.size(1),) * 2, bool))
        ),
    ),
    (check_einsum_attention, _einsum_float64),
    (
        check_parameter_count,
        lambda d, h, bias=True: float(_count(d, h, bias)),
    ),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch05, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED + OTHER_RIGHT_ANSWERS,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def test_causal_checker_result_does_not_depend_on_the_learners_seed(capsys):
    for seed in (0, 1):
        torch.manual_seed(seed)
        check_causal_self_attention(lambda mha, x: mha(x, x, x, is_causal=True))
    assert capsys.readouterr().out.count("Correct") == 2


def test_causal_self_attention_rejects_a_mask_written_for_one_length():
    """causal_mask(5) written in passes an input of T = 5 only."""
    from transformer_course import causal_mask

    assert_rejected(
        check_causal_self_attention,
        lambda mha, x: mha(x, x, x, mask=causal_mask(5)),
        "mask must have shape",
    )


def test_einsum_attention_rejects_a_scale_written_in_for_d_k_4():
    """Dividing by 2 (sqrt(4)) is right for the first input only."""
    assert_rejected(
        check_einsum_attention,
        lambda *args: _einsum(*args, scale=0.5),
        "right only for d_k = 4",
    )


def test_causal_self_attention_rejects_a_future_that_leaks():
    """Its second call changes only the last token: the earlier outputs
    must not move."""
    calls = []

    def leaks(mha, x):
        calls.append(x)
        out = mha(x, x, x, mask=_tril(x))
        return out + x[:, -1:].sum() if len(calls) == 2 else out

    assert_rejected(check_causal_self_attention, leaks, "leaks the future")
