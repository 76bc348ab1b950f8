"""Chapter 7's exercise checkers accept the reference and reject the known wrong answers."""

import math
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
)

from transformer_course.exercises import ch07
from transformer_course.exercises.ch07 import (
    check_annotated_smoothing,
    check_half_peak_steps,
    check_rng_checkpoint,
    check_token_batches,
)


def _half_peak(d_model, warmup):
    return math.ceil(warmup / 2), 4 * warmup


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda d, w: (math.ceil(w / 2), 2 * w), "not linearly"),
        (
            lambda d, w: (math.ceil(w / 2), round(math.sqrt(2) * w)),
            "(warmup/step)**0.5",
        ),
        (lambda d, w: (w // 2, 4 * w), "ceil(warmup / 2)"),
        (lambda d, w: (math.ceil(w / 2), 4 * w + 1), "equality counts"),
        (lambda d, w: (w, w), "the peak itself"),
        (lambda d, w: [math.ceil(w / 2), 4 * w][0], None),
        (lambda d, w: (math.ceil(w / 2) * d**-0.5, 4 * w), None),
    ],
    ids=[
        "linear-decay",
        "sqrt2",
        "floor",
        "off-by-one",
        "peak",
        "one-number",
        "scaled",
    ],
)
def test_half_peak_steps_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_half_peak_steps, wrong_answer, hint)


def _batches(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, batch, s_max, t_max = [], [], 0, 0
    for i in order:
        s, t = lengths[i]
        n = len(batch) + 1
        if batch and (
            n * max(s_max, s) > max_tokens or n * max(t_max, t) > max_tokens
        ):
            batches.append(batch)
            batch, s_max, t_max = [], 0, 0
        batch.append(i)
        s_max, t_max = max(s_max, s), max(t_max, t)
    return batches + [batch]


def _sum_of_lengths(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, batch, used = [], [], 0
    for i in order:
        cost = max(lengths[i])
        if batch and used + cost > max_tokens:
            batches.append(batch)
            batch, used = [], 0
        batch.append(i)
        used += cost
    return batches + [batch]


def _source_only(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i][0])
    batches, batch, longest = [], [], 0
    for i in order:
        if (
            batch
            and (len(batch) + 1) * max(longest, lengths[i][0]) > max_tokens
        ):
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, lengths[i][0])
    return batches + [batch]


def _unsorted(lengths, max_tokens):
    batches, batch, s_max, t_max = [], [], 0, 0
    for i, (s, t) in enumerate(lengths):
        n = len(batch) + 1
        if batch and (
            n * max(s_max, s) > max_tokens or n * max(t_max, t) > max_tokens
        ):
            batches.append(batch)
            batch, s_max, t_max = [], 0, 0
        batch.append(i)
        s_max, t_max = max(s_max, s), max(t_max, t)
    return batches + [batch]


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda lengths, m: _batches(lengths, m)[:-1], "last batch"),
        (_sum_of_lengths, "count padded positions"),
        (_source_only, "target side too"),
        (_unsorted, "sort the examples by length"),
        (
            lambda lengths, m: [[i] for i in range(len(lengths))],
            "fill each batch",
        ),
        (lambda lengths, m: _batches(lengths, m) + [[0]], None),
        (lambda lengths, m: None, "return"),
    ],
    ids=[
        "drops-last",
        "sum-of-lengths",
        "source-only",
        "unsorted",
        "singletons",
        "duplicate",
        "none",
    ],
)
def test_token_batches_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_token_batches, wrong_answer, hint)


def _annotated(logits, target, epsilon, pad_id):
    V = logits.size(-1)
    log_probs = logits.log_softmax(-1)
    q = torch.full_like(log_probs, epsilon / (V - 2))
    q.scatter_(-1, target.unsqueeze(-1), 1 - epsilon)
    q[..., pad_id] = 0.0
    return -(q * log_probs).sum(-1)[target != pad_id].mean()


def _annotated_v_minus_1(logits, target, epsilon, pad_id):
    V = logits.size(-1)
    log_probs = logits.log_softmax(-1)
    q = torch.full_like(log_probs, epsilon / (V - 1))
    q.scatter_(-1, target.unsqueeze(-1), 1 - epsilon)
    q[..., pad_id] = 0.0
    return -(q * log_probs).sum(-1)[target != pad_id].mean()


def _annotated_pad_rows(logits, target, epsilon, pad_id):
    V = logits.size(-1)
    log_probs = logits.log_softmax(-1)
    q = torch.full_like(log_probs, epsilon / (V - 2))
    q.scatter_(-1, target.unsqueeze(-1), 1 - epsilon)
    q[..., pad_id] = 0.0
    return -(q * log_probs).sum(-1).mean()


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda lo, t, e, p: F.cross_entropy(
                lo.flatten(0, 1), t.flatten(), label_smoothing=e, ignore_index=p
            ),
            "PyTorch's smoothing",
        ),
        (_annotated_v_minus_1, "V - 2 tokens"),
        (_annotated_pad_rows, "left out of the mean"),
        (
            lambda lo, t, e, p: _annotated(lo, t, e, p) * (t != p).sum(),
            "not the sum",
        ),
        (lambda lo, t, e, p: -_annotated(lo, t, e, p), None),
        (lambda lo, t, e, p: _annotated(lo, t, e, p).repeat(2), "one number"),
    ],
    ids=["pytorch", "v-minus-1", "pad-rows", "sum", "sign", "two-numbers"],
)
def test_annotated_smoothing_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_annotated_smoothing, wrong_answer, hint)


def _capture():
    name, keys, position, has_gauss, gauss = np.random.get_state()  # noqa: NPY002
    return {
        "python": random.getstate(),
        "numpy": [name, keys.tolist(), position, has_gauss, gauss],
        "torch": torch.get_rng_state(),
    }


def _restore(state):
    random.setstate(state["python"])
    name, keys, position, has_gauss, gauss = state["numpy"]
    np.random.set_state(  # noqa: NPY002
        (name, np.array(keys, dtype=np.uint32), position, has_gauss, gauss)
    )
    torch.set_rng_state(state["torch"])


def _capture_ndarray():
    return {**_capture(), "numpy": np.random.get_state()}  # noqa: NPY002


def _restore_ndarray(state):
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])  # noqa: NPY002
    torch.set_rng_state(state["torch"])


def _restore_no_numpy(state):
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])


def _restore_no_python(state):
    _restore({**state, "python": random.getstate()})


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        ((_capture_ndarray, _restore_ndarray), "NumPy array cannot be read"),
        ((_capture, _restore_no_numpy), "np.random.get_state()"),
        ((_capture, _restore_no_python), "random.getstate()"),
        ((lambda: None, _restore), "return"),
    ],
    ids=["ndarray", "no-numpy", "no-python", "none"],
)
def test_rng_checkpoint_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_rng_checkpoint, wrong_answer, hint)


ACCEPTED = [
    (check_half_peak_steps, _half_peak),
    (check_token_batches, _batches),
    (check_annotated_smoothing, _annotated),
    (check_rng_checkpoint, (_capture, _restore)),
]


def test_every_checker_has_a_reference():
    assert_every_checker_accepted(ch07, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def test_float32_and_float64_smoothing_are_both_accepted(capsys):
    check_annotated_smoothing(
        lambda lo, t, e, p: _annotated(lo.double(), t, e, p)
    )
    check_annotated_smoothing(
        lambda lo, t, e, p: _annotated(lo.float(), t, e, p).float()
    )
    assert capsys.readouterr().out.count("Correct") == 2
