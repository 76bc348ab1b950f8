"""Chapter 7's exercise checkers accept the reference and reject the known wrong answers."""

import math
import pickle
import random

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)

from transformer_course.exercises import ch07
from transformer_course.exercises.ch07 import (
    ANNOTATED_SMOOTHING,
    HALF_PEAK_STEPS,
    check_annotated_smoothing,
    check_half_peak_steps,
    check_rng_checkpoint,
    check_token_batches,
)
from transformer_course.training import noam_lr


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(HALF_PEAK_STEPS, ANNOTATED_SMOOTHING),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _half_peak(d_model, warmup):
    return math.ceil(warmup / 2), 4 * warmup


def _noam(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def _half_peak_lr(d_model, warmup):
    """The learning rates at the two steps, not the steps."""
    rising, falling = _half_peak(d_model, warmup)
    return _noam(rising, d_model, warmup), _noam(falling, d_model, warmup)


def _half_peak_search_from_1(d_model, warmup):
    """Searches the falling step from step 1, before the peak."""
    half = _noam(warmup, d_model, warmup) / 2
    rising = next(
        s for s in range(1, warmup + 1) if _noam(s, d_model, warmup) >= half
    )
    falling = next(
        s for s in range(1, 10 * warmup) if _noam(s, d_model, warmup) <= half
    )
    return rising, falling


def _half_peak_search(d_model, warmup):
    """A right answer by search, with the course's own noam_lr and a factor."""
    peak = noam_lr(warmup, d_model, warmup, factor=0.5)
    rising = next(
        s
        for s in range(1, warmup + 1)
        if noam_lr(s, d_model, warmup, factor=0.5) >= peak / 2
    )
    falling = next(
        s
        for s in range(warmup, 10 * warmup)
        if noam_lr(s, d_model, warmup, factor=0.5) <= peak / 2
    )
    return rising, falling


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda d, w: [math.ceil(w / 2), 4 * w][0], None),
        (lambda d, w: (math.ceil(w / 2) * d**-0.5, 4 * w), None),
        (lambda d, w: (w / 2, 4 * w), "math.ceil(warmup / 2)"),
        (lambda d, w: (math.ceil(w / 2), 4.0 * w), "return ints"),
        (_half_peak_lr, "learning rates"),
        (_half_peak_search_from_1, "after the peak"),
        (lambda d, w: np.array([math.ceil(w / 2), 4 * w]), "tuple of two ints"),
        (lambda d, w: torch.tensor([math.ceil(w / 2), 4 * w]), "tuple"),
    ],
    ids=[
        "one-number",
        "scaled",
        "float-half",
        "float-four",
        "lr-values",
        "falling-from-1",
        "ndarray",
        "tensor",
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


def _greedy(
    lengths, max_tokens, key=None, full=lambda n, longest, m: n * longest > m
):
    """Sorted greedy batching; `key` orders the examples, `full(n, longest,
    max_tokens)` says when n examples no longer fit."""
    order = sorted(range(len(lengths)), key=key or (lambda i: lengths[i]))
    batches, batch, s_max, t_max = [], [], 0, 0
    for i in order:
        s, t = lengths[i]
        n = len(batch) + 1
        if batch and (
            full(n, max(s_max, s), max_tokens)
            or full(n, max(t_max, t), max_tokens)
        ):
            batches.append(batch)
            batch, s_max, t_max = [], 0, 0
        batch.append(i)
        s_max, t_max = max(s_max, s), max(t_max, t)
    return batches + [batch]


def _no_reset(lengths, max_tokens):
    """Forgets to reset the longest lengths when it opens a new batch."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, batch, s_max, t_max = [], [], 0, 0
    for i in order:
        s, t = lengths[i]
        n = len(batch) + 1
        if batch and (
            n * max(s_max, s) > max_tokens or n * max(t_max, t) > max_tokens
        ):
            batches.append(batch)
            batch = []
        batch.append(i)
        s_max, t_max = max(s_max, s), max(t_max, t)
    return batches + [batch]


def _add_then_check(lengths, max_tokens):
    """Adds the example first, closes the batch once it is over budget."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, batch, s_max, t_max = [], [], 0, 0
    for i in order:
        batch.append(i)
        s_max, t_max = max(s_max, lengths[i][0]), max(t_max, lengths[i][1])
        if len(batch) * max(s_max, t_max) > max_tokens:
            batches.append(batch)
            batch, s_max, t_max = [], 0, 0
    return batches + ([batch] if batch else [])


def _sorts_lengths_in_place(lengths, max_tokens):
    lengths.sort()
    return _batches(lengths, max_tokens)


def _yields_batches(lengths, max_tokens):
    yield from _batches(lengths, max_tokens)


def _target_only(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i][1])
    batches, batch, longest = [], [], 0
    for i in order:
        if (
            batch
            and (len(batch) + 1) * max(longest, lengths[i][1]) > max_tokens
        ):
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, lengths[i][1])
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
        (_no_reset, "reset its longest"),
        (
            lambda lengths, m: _greedy(
                lengths, m, full=lambda n, x, m: n * x >= m
            ),
            "fill the budget exactly",
        ),
        (
            lambda lengths, m: _greedy(
                lengths, m, full=lambda n, x, m: (n + 1) * x > m
            ),
            "fill the budget exactly",
        ),
        (lambda lengths, m: _batches(lengths, int(0.7 * m)), "fill the budget"),
        (
            lambda lengths, m: _greedy(lengths, m, full=lambda n, x, m: n > m),
            None,
        ),
        (
            lambda lengths, m: _greedy(
                lengths, m, full=lambda n, x, m: (n - 1) * x > m
            ),
            "WITH the new example",
        ),
        (_add_then_check, "WITH the new example"),
        (_sorts_lengths_in_place, "lengths.sort()"),
        (_yields_batches, "generator"),
        (
            lambda lengths, m: [
                [lengths[i] for i in b] for b in _batches(lengths, m)
            ],
            "pair of lengths",
        ),
        (
            lambda lengths, m: [i for b in _batches(lengths, m) for i in b],
            "flat list",
        ),
        (_target_only, "source side too"),
    ],
    ids=[
        "drops-last",
        "sum-of-lengths",
        "source-only",
        "unsorted",
        "singletons",
        "duplicate",
        "none",
        "no-reset",
        "strict-budget",
        "one-short",
        "budget-fraction",
        "counts-examples",
        "one-too-many",
        "add-then-check",
        "sorts-in-place",
        "generator",
        "lengths-not-indices",
        "flat",
        "target-only",
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


def _normalises_in_place(logits, target, epsilon, pad_id):
    logits -= logits.logsumexp(-1, keepdim=True)
    return _annotated(logits, target, epsilon, pad_id)


def _masks_target_in_place(logits, target, epsilon, pad_id):
    keep = target != pad_id
    target.masked_fill_(~keep, 0)  # the padding rows now point at token 0
    V = logits.size(-1)
    log_probs = logits.log_softmax(-1)
    q = torch.full_like(log_probs, epsilon / (V - 2))
    q.scatter_(-1, target.unsqueeze(-1), 1 - epsilon)
    q[..., pad_id] = 0.0
    return -(q * log_probs).sum(-1)[keep].mean()


def _annotated_by_gather(logits, target, epsilon, pad_id):
    """Right, written differently: (1 - eps) NLL + eps / (V - 2) * the others."""
    V = logits.size(-1)
    log_probs = logits.log_softmax(-1)
    label = log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = log_probs.sum(-1) - label - log_probs[..., pad_id]
    loss = -(1 - epsilon) * label - epsilon / (V - 2) * others
    return loss[target != pad_id].mean().item()


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_normalises_in_place, "changed logits in place"),
        (_masks_target_in_place, "changed target in place"),
        (lambda lo, t, e, p: -_annotated(lo, t, e, p), None),
        (lambda lo, t, e, p: _annotated(lo, t, e, p).repeat(2), "one number"),
    ],
    ids=["logits-in-place", "target-in-place", "sign", "two-numbers"],
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


def _capture_without_gauss():
    """Keeps NumPy's keys and position, drops its cached Gaussian."""
    _, keys, position, _, _ = np.random.get_state()  # noqa: NPY002
    return {**_capture(), "numpy": [keys.tolist(), position]}


def _restore_without_gauss(state):
    keys, position = state["numpy"]
    _restore(
        {
            **state,
            "numpy": ["MT19937", keys, position, 0, 0.0],
        }
    )


def _capture_python_internal():
    """Keeps Python's internal state, drops gauss_next."""
    _, internal, _ = random.getstate()
    return {**_capture(), "python": list(internal)}


def _restore_python_internal(state):
    _restore({**state, "python": (3, tuple(state["python"]), None)})


def _capture_by_reseeding():
    seed = random.randrange(2**31)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002
    torch.manual_seed(seed)
    return {"seed": seed}


def _restore_by_reseeding(state):
    random.seed(state["seed"])
    np.random.seed(state["seed"])  # noqa: NPY002
    torch.manual_seed(state["seed"])


def _capture_then_draw():
    state = _capture()
    random.random()  # e.g. a random file name for the checkpoint
    return state


def _capture_pickled():
    return {"blob": pickle.dumps((random.getstate(), np.random.get_state()))}  # noqa: NPY002


def _restore_pickled(state):
    python, numpy = pickle.loads(state["blob"])  # noqa: S301
    random.setstate(python)
    np.random.set_state(numpy)  # noqa: NPY002


def _capture_torch_list():
    """Right, written differently: every state as lists of ints."""
    return {**_capture(), "torch": torch.get_rng_state().tolist()}


def _restore_torch_list(state):
    _restore(
        {**state, "torch": torch.tensor(state["torch"], dtype=torch.uint8)}
    )


def _capture_keys_tensor():
    """Right, written differently: NumPy's keys as an int64 tensor."""
    name, keys, position, has_gauss, gauss = np.random.get_state()  # noqa: NPY002
    keys = torch.from_numpy(keys.astype(np.int64))
    return {**_capture(), "numpy": [name, keys, position, has_gauss, gauss]}


def _restore_keys_tensor(state):
    name, keys, position, has_gauss, gauss = state["numpy"]
    keys = keys.tolist()
    _restore({**state, "numpy": [name, keys, position, has_gauss, gauss]})


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        ((_capture_without_gauss, _restore_without_gauss), "keep all five"),
        ((_capture_python_internal, _restore_python_internal), "gauss_next"),
        ((_capture_by_reseeding, _restore_by_reseeding), "no seeding"),
        ((_capture_then_draw, _restore), "no seeding and no draws"),
        ((_capture_pickled, _restore_pickled), "pickled bytes"),
        (
            (
                lambda: {**_capture(), "torch": torch.default_generator},
                _restore,
            ),
            "state['torch'] is a torch._C.Generator",
        ),
        (
            (lambda: {**_capture(), "python": random.Random(1)}, _restore),
            "random.Random",
        ),
        (
            (lambda: {**_capture(), "step": np.int64(3)}, _restore),
            "a NumPy number",
        ),
        (
            (lambda: {**_capture(), "later": lambda: None}, _restore),
            "torch.save cannot write",
        ),
    ],
    ids=[
        "numpy-gauss",
        "python-gauss",
        "reseeds",
        "draws",
        "pickle",
        "torch-generator",
        "random-object",
        "numpy-scalar",
        "lambda",
    ],
)
def test_rng_checkpoint_rejects_more_mistakes(wrong_answer, hint):
    assert_rejected(check_rng_checkpoint, wrong_answer, hint)


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


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (check_half_peak_steps, _half_peak_search),
        (
            check_token_batches,
            lambda lengths, m: _greedy(
                lengths, m, key=lambda i: sum(lengths[i])
            ),
        ),
        (
            check_token_batches,
            lambda lengths, m: _greedy(
                lengths, m, key=lambda i: max(lengths[i])
            ),
        ),
        (
            check_token_batches,
            lambda lengths, m: _greedy(
                lengths, m, key=lambda i: (lengths[i][1], lengths[i][0])
            ),
        ),
        (
            check_token_batches,
            lambda lengths, m: _greedy(
                lengths, m, key=lambda i: (-lengths[i][0], -lengths[i][1])
            ),
        ),
        (
            check_token_batches,
            lambda lengths, m: [np.array(b) for b in _batches(lengths, m)][
                ::-1
            ],
        ),
        (check_annotated_smoothing, _annotated_by_gather),
        (
            check_annotated_smoothing,
            lambda lo, t, e, p: _annotated(lo.softmax(-1).log(), t, e, p),
        ),
        (check_rng_checkpoint, (_capture_torch_list, _restore_torch_list)),
        (check_rng_checkpoint, (_capture_keys_tensor, _restore_keys_tensor)),
    ],
    ids=[
        "half-peak-by-search",
        "batches-by-sum",
        "batches-by-max",
        "batches-by-target",
        "batches-descending",
        "batches-arrays-reversed",
        "smoothing-by-gather",
        "smoothing-softmax-log",
        "rng-torch-list",
        "rng-keys-tensor",
    ],
)
def test_right_answers_written_differently_are_accepted(check, answer, capsys):
    assert_accepts(check, answer, capsys)


def _ceil_of_floats(d_model, warmup):
    """The rising step by a float product: ceil lands one too high (8 -> 5)."""
    return math.ceil(warmup**1.5 * warmup**-0.5 / 2), 4 * warmup


def _search_below_the_peak(d_model, warmup):
    """The rising step searched in range(1, warmup): empty at warm-up 1."""
    peak = noam_lr(warmup, d_model, warmup)
    rising = next(
        s for s in range(1, warmup) if noam_lr(s, d_model, warmup) >= peak / 2
    )
    return rising, 4 * warmup


@pytest.mark.parametrize(
    "wrong_answer",
    [_ceil_of_floats, _search_below_the_peak],
    ids=["ceil", "range"],
)
def test_half_peak_steps_rejects_what_its_first_cases_let_through(wrong_answer):
    assert_rejected(check_half_peak_steps, wrong_answer, None)
