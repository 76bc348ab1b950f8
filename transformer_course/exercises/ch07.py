"""Checkers for chapter 7: training the Transformer."""

from __future__ import annotations

import functools
import io
import math
import operator
import pickletools
import random
import re
from collections.abc import Callable, Iterator

import numpy as np

from transformer_course.exercises._core import (
    IN_PLACE_NEEDED,
    Exercise,
    Mistake,
    Refusal,
    call,
    describe,
    expect_returned,
    is_array,
    is_tensor,
    verdict,
    fail,
    label,
    message,
    shape_of,
    unchanged,
)

__all__ = [
    "check_half_peak_steps",
    "check_token_batches",
    "check_annotated_smoothing",
    "check_rng_checkpoint",
]


def _noam(step: int, d_model: int, warmup: int) -> float:
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


@functools.cache
def _half_peak_steps(d_model: int, warmup: int) -> tuple[int, int]:
    """By search: the first step with lr >= peak / 2, and the first after the
    peak with lr <= peak / 2."""
    lr = functools.partial(_noam, d_model=d_model, warmup=warmup)
    peak = lr(warmup)
    rising = next(s for s in range(1, warmup + 1) if lr(s) >= peak / 2)
    falling = next(s for s in range(warmup, 10 * warmup) if lr(s) <= peak / 2)
    return rising, falling


def _steps(wrong: Callable) -> Callable:
    """A variant from `wrong(rising, falling, warmup)`, the right steps given."""
    return lambda d, w: wrong(*_half_peak_steps(d, w), w)


def _as_steps(name: str, shown, got):
    """A list or tuple of steps as a tuple of ints; floats refused."""
    if isinstance(got, list):
        got = tuple(got)
    if not isinstance(got, tuple):
        return got
    floats = [v for v in got if isinstance(v, (float, np.floating))]
    if floats:
        hint = (
            "these look like learning rates: return the steps where lr "
            "crosses half the peak, not the lr."
            if all(abs(v) < 1 for v in floats)
            else "return plain ints: math.ceil(warmup / 2) is one, warmup / 2 "
            "a float."
        )
        problem = "returned {got}: steps are whole numbers, return ints."
        fail(name, problem, shown, hint, got=describe(got, 0))
    return tuple(int(v) if isinstance(v, (int, np.integer)) else v for v in got)


def _searched_from_the_start(got, d_model: int, warmup: int) -> bool:
    """A falling step before the peak: the search started at step 1."""
    return (
        isinstance(got, tuple)
        and len(got) == 2
        and isinstance(got[1], int)
        and got[1] < warmup
        and got[0] == _half_peak_steps(d_model, warmup)[0]
    )


_FROM_ONE = (
    "count steps from 1 and take the first step whose lr reaches half the "
    "peak: ceil(warmup / 2)."
)

HALF_PEAK_STEPS = Exercise(
    name="half_peak_steps",
    success="finds where the warm-up schedule is at half its peak.",
    doc="""Check `half_peak_steps(d_model, warmup) -> (rising, falling)`.""",
    # warm-up 8: ceil of a float product lands on 5; warm-up 1: the peak itself
    cases=[(512, 4000), (64, 200), (256, 333), (128, 7), (64, 8), (64, 1)],
    reference=_half_peak_steps,
    compare="equal",
    refusals=[
        Refusal(
            is_array,
            "returned {kind}; expected a tuple of two ints (rising, falling).",
            "return (rising, falling) with plain ints: tuple(int(v) for v in "
            "...).",
        )
    ],
    convert=_as_steps,
    mistakes=[
        Mistake(
            _steps(lambda r, f, w: (r, 2 * w)),
            "after the peak lr falls as step**-0.5, not linearly: half the "
            "peak is at 4 * warmup, not 2 * warmup.",
        ),
        Mistake(
            _steps(lambda r, f, w: (r, round(math.sqrt(2) * w))),
            "lr = peak * (warmup / step)**0.5 after the peak; solve "
            "(warmup/step)**0.5 = 1/2.",
        ),
        Mistake(_steps(lambda r, f, w: (w // 2, f)), _FROM_ONE),
        Mistake(_steps(lambda r, f, w: (r - 1, f)), _FROM_ONE),
        Mistake(
            _steps(lambda r, f, w: (r - 1, f - 1)),
            "both steps are one too early: steps count from 1 (the first "
            "update has step = 1), not from 0.",
        ),
        Mistake(
            _steps(lambda r, f, w: (r, f + 1)),
            "the first step with lr <= peak / 2 is 4 * warmup itself "
            "(equality counts).",
        ),
        Mistake(
            _steps(lambda r, f, w: (r, f - 1)),
            "at 4 * warmup - 1 the lr is still above half the peak; 4 * "
            "warmup is the first step with lr <= peak / 2.",
        ),
        Mistake(
            _steps(lambda r, f, w: (f, r)),
            "the two steps are swapped: return (rising, falling), the step on "
            "the way up first.",
        ),
        Mistake(
            lambda d, w: (w, w),
            "that is the peak itself; the question asks where lr is half of "
            "it.",
        ),
        Mistake(
            None,
            "the second step comes after the peak: search from step = warmup "
            "on (the lr is small at the start too).",
            when=_searched_from_the_start,
            example=_steps(lambda r, f, w: (r, 1)),
        ),
    ],
)
check_half_peak_steps = HALF_PEAK_STEPS.checker()


def _reference_batches(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    # both sides fit the budget when the longest length of either side does
    batches, batch, longest = [], [], 0
    for i in order:
        if batch and (len(batch) + 1) * max(longest, *lengths[i]) > max_tokens:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, *lengths[i])
    return batches + [batch]


def _padded(batch, lengths, side) -> int:
    """The padded size of one side (0: source, 1: target) of a batch."""
    return len(batch) * max(lengths[i][side] for i in batch)


def _padding_waste(batches, lengths) -> float:
    """The share of the padded positions, both sides together, that is
    padding."""
    real = sum(s + t for s, t in lengths)
    padded = sum(_padded(b, lengths, side) for b in batches for side in (0, 1))
    return 1 - real / padded


def _as_batches(name: str, shown, got) -> list[list[int]]:
    """The learner's batches as lists of ints, or a message saying what they are."""
    expect_returned(name, shown, got)
    if isinstance(got, Iterator):  # a generator, map(), iter(...)
        problem = (
            "returned a {type}, not a list of batches: a generator is lazy "
            "and can be read only once."
        )
        hint = (
            "collect the batches in a list (batches.append(batch)) and return "
            "the list."
        )
        fail(name, problem, shown, hint, type=type(got).__name__)
    if not isinstance(got, (list, tuple)):
        problem = (
            "must return a list of batches, each a list of indices; got {got}."
        )
        fail(name, problem, shown, got=describe(got, 0))
    return [_as_indices(name, shown, batch, i) for i, batch in enumerate(got)]


def _as_indices(name: str, shown, batch, position: int) -> list[int]:
    """One batch as a list of indices, or a message saying what it holds."""
    if isinstance(batch, (int, np.integer)):
        problem = (
            "returned a flat list (item {position} is the index {index}); "
            "expected a list of batches, each a list of indices."
        )
        fail(name, problem, shown, position=position, index=int(batch))
    try:
        items = list(batch)
    except TypeError:
        problem = (
            "returned {got} as batch {position}; each batch must be a list "
            "of indices."
        )
        fail(name, problem, shown, got=describe(batch, 0), position=position)
    for item in items:
        if isinstance(item, (tuple, list)):
            what = message("a (source, target) pair of lengths")
        elif not hasattr(item, "__index__"):
            what = describe(item, 0)
        else:
            continue
        problem = (
            "put {what} in batch {position}, not an index: each batch lists "
            "the indices i of its examples."
        )
        hint = (
            "batch.append(i), where lengths[i] is the example's pair of "
            "lengths."
        )
        fail(name, problem, shown, hint, what=what, position=position)
    return [operator.index(item) for item in items]


def _expect_every_index_once(name, shown, got, lengths) -> None:
    seen = sorted(i for batch in got for i in batch)
    if seen == list(range(len(lengths))):
        if any(len(batch) == 0 for batch in got):
            fail(name, "returned an empty batch.", shown)
        return
    missing = sorted(set(range(len(lengths))) - set(seen))
    outside = [i for i in seen if not 0 <= i < len(lengths)]
    hint = None
    if outside:
        problem = message(
            "returns index {i}, which is no example", i=outside[0]
        )
    elif missing:
        problem = message("loses example {i}", i=missing[0])
        hint = "the last batch is still open when the loop ends: append it too."
    else:
        twice = len(seen) - len(set(seen))
        problem = message("puts {n} example(s) in two batches", n=twice)
    line = "{wrong}: every index must be in exactly one batch."
    fail(name, line, shown, hint, wrong=problem)


def _one_too_many(batch, lengths, max_tokens) -> bool:
    """Whether leaving one example out of `batch` brings it within budget."""
    rests = ([i for i in batch if i != left_out] for left_out in batch)
    return any(
        rest
        and all(_padded(rest, lengths, side) <= max_tokens for side in (0, 1))
        for rest in rests
    )


def _over_budget_hint(got, batch, lengths, max_tokens) -> str | None:
    """Why a batch is over budget: the first reason that holds."""
    if all(
        sum(lengths[i][side] for i in b) <= max_tokens
        for b in got
        for side in (0, 1)
    ):
        return (
            "count padded positions: len(batch) * the longest length in it, "
            "not the sum of lengths."
        )
    fits = [
        all(_padded(b, lengths, side) <= max_tokens for b in got)
        for side in (0, 1)
    ]
    if fits[0] != fits[1]:
        return (
            "check the {what} side too: the paper counts source and target "
            "tokens."
        )
    if _one_too_many(batch, lengths, max_tokens):
        return (
            "check the batch as it would be WITH the new example: (len(batch) "
            "+ 1) * max(longest, its length) <= max_tokens, before adding it."
        )
    return None


def _expect_within_budget(name, shown, got, lengths, max_tokens) -> None:
    for batch in got:
        for side, what in [(0, "source"), (1, "target")]:
            padded = _padded(batch, lengths, side)
            if padded <= max_tokens:
                continue
            hint = _over_budget_hint(got, batch, lengths, max_tokens)
            problem = (
                "made a batch of {n} whose padded {what} size is {padded} > "
                "max_tokens={max_tokens}."
            )
            what = message(what)
            fields = {"n": len(batch), "what": what, "max_tokens": max_tokens}
            hint = hint and message(hint, what=what)
            fail(name, problem, shown, hint, padded=padded, **fields)


_TOO_MANY_BATCHES = (
    "needs {got} batches where {best} suffice: fill each batch up to the "
    "budget."
)
_FULL_LENGTHS = [(3, 3)] * 12
_RESET_LENGTHS = [(2, 1), (1, 6), (2, 1), (2, 1), (1, 6)] + [(2, 1)] * 3
# two small cases whose fewest batches every sorted greedy finds, and the
# hint for an answer that needs more
_EXACT = [
    (
        _FULL_LENGTHS,
        "a batch may fill the budget exactly: 4 examples of length 3 make 4 * "
        "3 = 12 <= max_tokens=12. Start a new batch only when (len(batch) + "
        "1) * longest > max_tokens.",
    ),
    (
        _RESET_LENGTHS,
        "the 6 examples (2, 1) fit in one batch (6 * 2 = 12); a new batch "
        "starts empty: reset its longest source and target lengths when you "
        "open it.",
    ),
]


def _judge_batches(name, shown, got, reference, lengths, max_tokens) -> None:
    """Every example once, within budget on both sides, few batches, little
    padding: any sorted greedy passes, not only the reference's order."""
    _expect_every_index_once(name, shown, got, lengths)
    _expect_within_budget(name, shown, got, lengths, max_tokens)
    counts = {"got": len(got), "best": len(reference)}
    exact = next((hint for case, hint in _EXACT if case is lengths), None)
    if exact is not None and len(got) > len(reference):
        fail(name, _TOO_MANY_BATCHES, shown, exact, **counts)
    if len(got) > 1.5 * len(reference) + 1:
        hint = "sort the examples by length first, then cut."
        fail(name, _TOO_MANY_BATCHES, shown, hint, **counts)
    # padding of source and target together: sorting by the source, the
    # target or their sum are all fine ways to keep it small
    waste = _padding_waste(got, lengths)
    best = _padding_waste(reference, lengths)
    if waste > 2 * best + 0.05:
        problem = (
            "wastes {waste:.0%} of its padded positions (source and target "
            "together) on padding; sorting by length wastes {best:.0%}."
        )
        hint = "sort the examples by length before cutting them into batches."
        fail(name, problem, shown, hint, waste=waste, best=best)


def _token_cases():
    rng = np.random.default_rng(7)
    pairs = rng.integers(1, 30, size=(300, 2))
    sources, extra = rng.integers(2, 40, 400), rng.integers(-1, 8, 400)
    return [
        ([(int(s), int(t)) for s, t in pairs], 200),
        (
            [(int(s), int(s + d)) for s, d in zip(sources, extra, strict=True)],
            256,
        ),
        ([(3, 4), (5, 2), (2, 2), (6, 7), (4, 4)], 12),
        (_FULL_LENGTHS, 12),
        (_RESET_LENGTHS, 12),
    ]


TOKEN_BATCHES = Exercise(
    name="token_batches",
    success="never exceeds the budget on either side, and pads little.",
    doc="""Check `token_batches(lengths, max_tokens)` for (source, target) lengths.""",
    cases=_token_cases(),
    reference=_reference_batches,
    in_place=(
        "changed lengths in place, so the indices no longer point at the "
        "examples they name.",
        "lengths.sort() reorders the caller's list; sort the indices instead: "
        "sorted(range(len(lengths)), key=lambda i: lengths[i]).",
    ),
    convert=_as_batches,
    compare=_judge_batches,
)
check_token_batches = TOKEN_BATCHES.checker()


def _smoothed(
    logits,
    target,
    epsilon,
    pad_id,
    *,
    spread=lambda V: V - 2,
    label=lambda epsilon: 1 - epsilon,
    add_label=False,
    zero_column=True,
    column_id=None,
    mask_id=None,
    log_probs=None,
    reduce="tokens",
):
    """The Annotated Transformer's smoothed loss, or one of its variations
    (each keyword changes one step, to recognise a learner's mistake)."""
    import torch

    V = logits.size(-1)
    if callable(log_probs):
        log_probs = log_probs(logits.double())
    elif log_probs is None:
        log_probs = logits.double().log_softmax(-1)
    q = torch.full_like(log_probs, epsilon / spread(V))
    labels = torch.full_like(q[..., :1], label(epsilon))
    (q.scatter_add_ if add_label else q.scatter_)(-1, target[..., None], labels)
    if zero_column:
        q[..., pad_id if column_id is None else column_id] = 0.0
    if reduce == "q":
        return q
    per_token = -(q * log_probs).sum(-1)  # (B, T)
    keep = target != (pad_id if mask_id is None else mask_id)
    if reduce == "tokens":
        return per_token[keep].mean()
    if reduce == "all":  # padding rows zeroed, divided by B * T
        return (per_token * keep).sum() / keep.numel()
    if reduce == "sentences":  # a mean per sentence, then over sentences
        return ((per_token * keep).sum(-1) / keep.sum(-1)).mean()
    if reduce == "batch":  # summed, divided by the number of sentences
        return (per_token * keep).sum() / keep.size(0)
    raise ValueError(reduce)


def _pad_is_zero(**changes) -> Callable:
    """A mistake that takes token 0 for <pad>: seen only where pad_id != 0."""
    return lambda *args: None if args[3] == 0 else _smoothed(*args, **changes)


def _pytorch_smoothing(logits, target, epsilon, pad_id):
    import torch.nn.functional as F

    return F.cross_entropy(
        logits.flatten(0, 1),
        target.flatten(),
        label_smoothing=epsilon,
        ignore_index=pad_id,
    )


def _kl_divergence(*args):
    """The KL divergence from q: the loss less q's own entropy."""
    import torch

    q = _smoothed(*args, log_probs=lambda x: x, reduce="q")
    log_q = torch.where(q > 0, q, 1.0).log()  # 0 log 0 = 0
    return _smoothed(*args) - _smoothed(*args, log_probs=log_q)


def _smoothing_cases():
    import torch

    generator = torch.Generator().manual_seed(3)
    cases = []
    for B, T, V, epsilon, pad_id in [(2, 5, 7, 0.1, 0), (3, 4, 11, 0.2, 2)]:
        logits = torch.randn(B, T, V, generator=generator)
        target = torch.randint(0, V, (B, T), generator=generator)
        target[target == pad_id] = (pad_id + 1) % V
        target[0, -2:] = pad_id
        target[-1, -1] = pad_id
        if pad_id != 0:  # a token 0 that is not padding
            target[1, 0] = 0
        cases.append((logits, target, epsilon, pad_id))
    return cases


def _one_number(name: str, shown, got):
    """A tensor answer detached, as a 0-d tensor; more than one number fails."""
    if not is_tensor(got):
        return got
    got = got.detach()
    if got.numel() != 1:
        problem = (
            "returned a tensor of shape {shape}; expected one number, the "
            "mean over the non-padding tokens."
        )
        fail(name, problem, shown, shape=shape_of(got))
    return got.reshape(())


_PAD_ROWS = "rows whose label is <pad> must be left out of the mean."
_PAD_IS_PAD_ID = "<pad> is pad_id, not 0."

ANNOTATED_SMOOTHING = Exercise(
    name="annotated_smoothing",
    success="computes the Annotated Transformer's smoothed loss.",
    doc="""Check `annotated_smoothing(logits, target, epsilon, pad_id) -> loss`.""",
    cases=_smoothing_cases,
    reference=lambda *args: _smoothed(*args).float(),
    names=("logits", "target", "epsilon", "pad_id"),
    in_place=(
        IN_PLACE_NEEDED,
        "-=, masked_fill_(), scatter_() and x[...] = write into the caller's "
        "tensor; work on a new one (x - m, x.masked_fill(...), x.clone()).",
    ),
    convert=_one_number,
    atol=1e-5,
    mistakes=[
        Mistake(
            _pytorch_smoothing,
            "that is PyTorch's smoothing (epsilon / V on every token, the "
            "label and <pad> included); here <pad> gets 0 and the other V - 2 "
            "tokens epsilon / (V - 2).",
        ),
        Mistake(
            functools.partial(_smoothed, spread=lambda V: V - 1),
            "spread epsilon over V - 2 tokens: neither the label nor <pad>.",
        ),
        Mistake(
            functools.partial(_smoothed, spread=lambda V: V),
            "spread epsilon over V - 2 tokens (epsilon / (V - 2) each), not "
            "over V: neither the label nor <pad> shares it.",
        ),
        Mistake(
            functools.partial(_smoothed, zero_column=False),
            "<pad> gets 0 in every row: q[..., pad_id] = 0 after filling q "
            "with epsilon / (V - 2).",
        ),
        Mistake(
            functools.partial(_smoothed, add_label=True),
            "the label gets exactly 1 - epsilon: set it (scatter_), do not add "
            "1 - epsilon to its epsilon / (V - 2).",
        ),
        Mistake(
            functools.partial(_smoothed, label=lambda epsilon: 1.0),
            "the label gets 1 - epsilon, not 1: the target q sums to 1.",
        ),
        Mistake(functools.partial(_smoothed, mask_id=-1), _PAD_ROWS),
        Mistake(
            functools.partial(_smoothed, mask_id=-1, zero_column=False),
            _PAD_ROWS,
        ),
        Mistake(
            lambda *args: _smoothed(*args) * (args[1] != args[3]).sum(),
            "return the mean over the non-padding tokens, not the sum.",
        ),
        Mistake(
            functools.partial(_smoothed, reduce="all"),
            "average over the non-padding tokens (divide by their number): "
            "rows of padding count 0 in the sum, but not in the mean's "
            "denominator B * T.",
        ),
        Mistake(
            functools.partial(_smoothed, reduce="sentences"),
            "average over the non-padding tokens (divide by their number): a "
            "mean per sentence, then over sentences, weighs the tokens of "
            "short sentences more.",
        ),
        Mistake(
            functools.partial(_smoothed, reduce="batch"),
            "average over the non-padding tokens (divide by their number), "
            "not by the number of sentences.",
        ),
        Mistake(
            functools.partial(_smoothed, log_probs=lambda x: x),
            "logits are not log-probabilities: take logits.log_softmax(dim=-1) "
            "first.",
        ),
        Mistake(
            functools.partial(_smoothed, log_probs=lambda x: x.log_softmax(1)),
            "normalise over the vocabulary, the last dimension: "
            "log_softmax(dim=-1).",
        ),
        Mistake(
            functools.partial(_smoothed, log_probs=lambda x: x.softmax(-1)),
            "use log-probabilities, not probabilities: log_softmax(dim=-1).",
        ),
        Mistake(
            _kl_divergence,
            "that is the KL divergence from q, which is smaller by q's own "
            "entropy; the exercise asks for the cross-entropy -sum_k q_k log "
            "p_k.",
        ),
        Mistake(_pad_is_zero(mask_id=0), _PAD_IS_PAD_ID),
        Mistake(_pad_is_zero(column_id=0), _PAD_IS_PAD_ID),
        Mistake(_pad_is_zero(mask_id=0, column_id=0), _PAD_IS_PAD_ID),
    ],
)
check_annotated_smoothing = ANNOTATED_SMOOTHING.checker()


_PLAIN = (bool, int, float, str, bytes, type(None))


def _leaves(value, path: str = "state") -> list[tuple[str, object]]:
    """(path, item) of every item of `value`, nested lists, tuples, sets and
    dicts opened."""
    if isinstance(value, dict):
        items = [(f"{path}[{key!r}]", item) for key, item in value.items()]
    elif type(value) in (list, tuple, set, frozenset):
        items = [(f"{path}[{i}]", item) for i, item in enumerate(value)]
    else:
        return [(path, value)]
    return [leaf for at, item in items for leaf in _leaves(item, at)]


def _first_unsafe(state):
    """(path, value) of the first item that is not plain data
    (tensors, numbers, strings, bytes, lists, tuples, dicts, sets), if any."""
    for path, value in _leaves(state):
        if not (is_tensor(value) or type(value) in _PLAIN):
            return path, value
    return None


def _is_pickle(value) -> bool:
    """Whether `value` is bytes that hold a whole pickle."""
    if not isinstance(value, (bytes, bytearray)) or value[:1] != b"\x80":
        return False  # not bytes, or no pickle of protocols 2 to 5
    try:
        ops = list(pickletools.genops(bytes(value)))
    except Exception:  # noqa: BLE001 (not a pickle: any error says so)
        return False
    return (
        bool(ops) and ops[-1][0].name == "STOP" and ops[-1][2] == len(value) - 1
    )


def _unsafe_hint(value) -> str:
    if isinstance(value, np.ndarray):
        return (
            "a NumPy array cannot be read with weights_only=True; store it as "
            "a tensor (torch.from_numpy) or a list."
        )
    if isinstance(value, np.generic):
        return (
            "a NumPy number (np.int64, np.float64) is not plain data: int(x), "
            "float(x) or x.item()."
        )
    return (
        "keep only tensors, numbers, strings, lists, tuples and dicts: store "
        "what getstate(), np.random.get_state() and torch.get_rng_state() "
        "return, not a generator object."
    )


def _generator_states():
    import torch

    return (
        random.getstate(),
        np.random.get_state(),  # noqa: NPY002
        torch.get_rng_state(),
    )


# the three generators: how a message names each, and the hint for one whose
# held-back Gaussian is lost (PyTorch's is in its state)
_GENERATORS = [
    (
        "Python's random",
        "random.getstate() is (version, internal state, gauss_next): keep "
        "all three; the last is the Gaussian that random.gauss() holds back.",
    ),
    (
        "NumPy's",
        "np.random.get_state() has five items: name, keys, position, "
        "has_gauss and cached_gaussian; keep all five (the last two are the "
        "Gaussian that randn() holds back).",
    ),
    ("PyTorch's", None),
]


def _draws():
    """Per generator: (uniform draws, a Gaussian draw). One Gaussian leaves
    the second of its pair cached, in random and in NumPy."""
    import torch

    return (
        ([random.random() for _ in range(2)], random.gauss(0.0, 1.0)),
        (
            np.random.rand(2).tolist(),  # noqa: NPY002 (the global one, on purpose)
            float(np.random.standard_normal()),  # noqa: NPY002
        ),
        (torch.rand(2).tolist(), torch.randn(1).item()),
    )


def _seed_all(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002
    torch.manual_seed(seed)


def _captured(name: str, shown, capture: Callable):
    """The learner's state, checked to leave the generators as they were."""
    before = _generator_states()
    state = call(capture, name)
    after = _generator_states()
    for (what, _), b, a in zip(_GENERATORS, before, after, strict=True):
        if not unchanged(a, b):
            problem = (
                "changed the state of {what} generator: capture must only "
                "read the generators, so that saving a checkpoint leaves the "
                "run as it was."
            )
            hint = (
                "no seeding and no draws in capture: random.getstate(), "
                "np.random.get_state() and torch.get_rng_state() only read."
            )
            fail(name, problem, shown, hint, what=message(what))
    expect_returned(name, shown, state)
    return state


def _saved_and_loaded(name: str, shown, state):
    """`state` through torch.save and torch.load(weights_only=True)."""
    import torch

    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
    except Exception as error:  # noqa: BLE001 (its message is the point)
        problem = "returned a state that torch.save cannot write."
        details = [str(error).splitlines()[0][:150]] if str(error) else []
        fail(name, problem, shown, _unsafe_hint(None), details)
    buffer.seek(0)
    try:
        loaded = torch.load(buffer, weights_only=True)
    except Exception as error:  # noqa: BLE001 (the unpickler's message is the point)
        _refused_by_load(name, shown, state, str(error))
    if any(_is_pickle(value) for _, value in _leaves(loaded)):
        problem = (
            "stored pickled bytes (pickle.dumps) in the state: restore would "
            "unpickle them, which can run any code, exactly what "
            "weights_only=True guards against."
        )
        hint = (
            "store the states themselves as plain data: lists, numbers, "
            "strings and tensors."
        )
        fail(name, problem, shown, hint)
    return loaded


def _refused_by_load(name: str, shown, state, error: str) -> None:
    """Fail naming the first item of `state` that weights_only refuses."""
    found = _first_unsafe(state)
    unsupported = re.search(r"Unsupported global: GLOBAL (\S+)", error)
    text = "torch.load: unsupported global {name}"
    details = [message(text, name=unsupported[1])] if unsupported else []
    if found is None:
        hint = _unsafe_hint(np.zeros(0)) if "numpy" in error else None
        problem = "returned a state that torch.load(weights_only=True) refuses."
        fail(name, problem, shown, hint, details)
    path, value = found
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    problem = (
        "returned a state that torch.load(weights_only=True) refuses: {path} "
        "is a {kind}."
    )
    fail(
        name, problem, shown, _unsafe_hint(value), details, path=path, kind=kind
    )


def _expect_restored(name: str, shown, got, expected) -> None:
    """Fail naming the first generator whose draws differ after restore."""
    for (what, gauss_hint), g, e in zip(
        _GENERATORS, got, expected, strict=True
    ):
        if g == e:
            continue
        if g[0] == e[0] and gauss_hint:
            problem = (
                "and restore do not bring back the Gaussian that {what} "
                "generator holds back: after restore, uniform draws agree but "
                "a Gaussian draw differs."
            )
            hint = gauss_hint
        else:
            problem = (
                "and restore do not bring back {what} generator: after "
                "restore it draws other numbers."
            )
            hint = (
                "capture and restore all three: random.getstate(), "
                "np.random.get_state() and torch.get_rng_state()."
            )
        fail(name, problem, shown, hint, what=message(what))


def check_rng_checkpoint(capture, restore: Callable | None = None) -> None:
    """Check `capture() -> state` and `restore(state)` through a weights_only
    torch.save / torch.load round trip (or one `(capture, restore)` pair)."""
    if restore is None and isinstance(capture, tuple):
        capture, restore = capture
    name = "rng_checkpoint"
    shown = [
        label(
            "generators seeded with 5, then uniform and Gaussian draws from "
            "each"
        )
    ]

    def run_cases() -> None:
        _seed_all(5)
        _draws()
        state = _saved_and_loaded(name, shown, _captured(name, shown, capture))
        expected = _draws()
        _seed_all(99)
        call(restore, "restore", state)
        _expect_restored(name, shown, _draws(), expected)

    success = "brings back every generator, through weights_only."
    verdict(name, message(success), run_cases)
