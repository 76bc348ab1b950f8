"""Checkers for chapter 7: training the Transformer."""

from __future__ import annotations

import inspect
import io
import math
import operator
import pickletools
import random
import re
from collections.abc import Callable, Iterator

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _copies,
    _describe,
    _expect_close,
    _expect_equal,
    _expect_kind,
    _expect_returned,
    _expect_unchanged,
    _fail,
    _is_array,
    _is_tensor,
    _IN_PLACE_NEEDED,
    _Label,
    _rng,
    _torch_generator,
    _verdict,
)

__all__ = [
    "check_half_peak_steps",
    "check_token_batches",
    "check_annotated_smoothing",
    "check_rng_checkpoint",
]


def _noam(step: int, d_model: int, warmup: int) -> float:
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def _half_peak_steps(d_model: int, warmup: int) -> tuple[int, int]:
    """By search: the first step with lr >= peak / 2, and the first after the
    peak with lr <= peak / 2."""
    peak = _noam(warmup, d_model, warmup)
    rising = next(
        s for s in range(1, warmup + 1) if _noam(s, d_model, warmup) >= peak / 2
    )
    falling = next(
        s
        for s in range(warmup, 10 * warmup)
        if _noam(s, d_model, warmup) <= peak / 2
    )
    return rising, falling


def check_half_peak_steps(half_peak_steps: Callable) -> None:
    """Check `half_peak_steps(d_model, warmup) -> (rising, falling)`."""
    name = "half_peak_steps"

    def run_cases() -> None:
        for d_model, warmup in [(512, 4000), (64, 200), (256, 333), (128, 7)]:
            inputs = [d_model, warmup]
            got = _call(half_peak_steps, name, d_model, warmup)
            _expect_kind(
                name,
                inputs,
                got,
                "a tuple of two ints (rising, falling)",
                "return (rising, falling) with plain ints: "
                "tuple(int(v) for v in ...).",
                reject=_is_array,
            )
            if isinstance(got, list):
                got = tuple(got)
            if isinstance(got, tuple):
                floats = [v for v in got if isinstance(v, (float, np.floating))]
                if floats:
                    hint = (
                        "these look like learning rates: return the steps "
                        "where lr crosses half the peak, not the lr."
                        if all(abs(v) < 1 for v in floats)
                        else "return plain ints: math.ceil(warmup / 2) is "
                        "one, warmup / 2 a float."
                    )
                    _fail(
                        name,
                        f"returned {_describe(got, 0)}: steps are whole "
                        "numbers, return ints.",
                        inputs,
                        hint,
                    )
                got = tuple(
                    int(v) if isinstance(v, (int, np.integer)) else v
                    for v in got
                )
            expected = _half_peak_steps(d_model, warmup)
            rising, falling = expected
            from_one = (
                "count steps from 1 and take the first "
                "step whose lr reaches half the peak: ceil(warmup / 2)."
            )
            mistakes = [
                (
                    (rising, 2 * warmup),
                    "after the peak lr falls as step**-0.5, not "
                    "linearly: half the peak is at 4 * warmup, not 2 * warmup.",
                ),
                (
                    (rising, round(math.sqrt(2) * warmup)),
                    "lr = peak * "
                    "(warmup / step)**0.5 after the peak; solve (warmup/step)**0.5 = 1/2.",
                ),
                ((warmup // 2, falling), from_one),
                ((rising - 1, falling), from_one),
                (
                    (rising - 1, falling - 1),
                    "both steps are one too early: steps count from 1 "
                    "(the first update has step = 1), not from 0.",
                ),
                (
                    (rising, falling + 1),
                    "the first step with lr <= peak / 2 is "
                    "4 * warmup itself (equality counts).",
                ),
                (
                    (rising, falling - 1),
                    "at 4 * warmup - 1 the lr is still above half the peak; "
                    "4 * warmup is the first step with lr <= peak / 2.",
                ),
                (
                    (falling, rising),
                    "the two steps are swapped: return (rising, falling), "
                    "the step on the way up first.",
                ),
                (
                    (warmup, warmup),
                    "that is the peak itself; the question asks "
                    "where lr is half of it.",
                ),
            ]
            if (
                isinstance(got, tuple)
                and len(got) == 2
                and isinstance(got[1], int)
                and got[1] < warmup
                and got[0] == rising
            ):
                mistakes.append(
                    (
                        got,
                        "the second step comes after the peak: search "
                        "from step = warmup on (the lr is small at the start "
                        "too).",
                    )
                )
            _expect_equal(name, inputs, got, expected, mistakes)

    _verdict(
        name, "finds where the warm-up schedule is at half its peak.", run_cases
    )


def _reference_batches(lengths, max_tokens):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, batch, source, target = [], [], 0, 0
    for i in order:
        s, t = lengths[i]
        if batch and (
            (len(batch) + 1) * max(source, s) > max_tokens
            or (len(batch) + 1) * max(target, t) > max_tokens
        ):
            batches.append(batch)
            batch, source, target = [], 0, 0
        batch.append(i)
        source, target = max(source, s), max(target, t)
    return batches + [batch]


def _padded(batches, lengths, side):
    return sum(len(b) * max(lengths[i][side] for i in b) for b in batches)


_FULL_BATCHES = (
    "a batch may fill the budget exactly: 4 examples of length 3 make "
    "4 * 3 = 12 <= max_tokens=12. Start a new batch only when "
    "(len(batch) + 1) * longest > max_tokens."
)
_RESET_LONGEST = (
    "the 6 examples (2, 1) fit in one batch (6 * 2 = 12); a new batch starts "
    "empty: reset its longest source and target lengths when you open it."
)


def _as_batches(name: str, inputs, got) -> list[list[int]]:
    """The learner's batches as lists of ints, or a message saying what they are."""
    _expect_returned(name, inputs, got)
    if inspect.isgenerator(got) or isinstance(got, Iterator):
        _fail(
            name,
            f"returned a {type(got).__name__}, not a list of batches: a "
            "generator is lazy and can be read only once.",
            inputs,
            "collect the batches in a list (batches.append(batch)) and "
            "return the list.",
        )
    if not isinstance(got, (list, tuple)):
        _fail(
            name,
            "must return a list of batches, each a list of indices; got "
            f"{_describe(got, 0)}.",
            inputs,
        )
    batches = []
    for position, batch in enumerate(got):
        if isinstance(batch, (int, np.integer)):
            _fail(
                name,
                f"returned a flat list (item {position} is the index "
                f"{int(batch)}); expected a list of batches, each a list "
                "of indices.",
                inputs,
            )
        try:
            items = list(batch)
        except TypeError:
            _fail(
                name,
                f"returned {_describe(batch, 0)} as batch {position}; each "
                "batch must be a list of indices.",
                inputs,
            )
        indices = []
        for item in items:
            try:
                indices.append(operator.index(item))
            except TypeError:
                what = (
                    "a (source, target) pair of lengths"
                    if isinstance(item, (tuple, list))
                    else _describe(item, 0)
                )
                _fail(
                    name,
                    f"put {what} in batch {position}, not an index: each "
                    "batch lists the indices i of its examples.",
                    inputs,
                    "batch.append(i), where lengths[i] is the example's "
                    "pair of lengths.",
                )
        batches.append(indices)
    return batches


def _one_too_many(batch, lengths, max_tokens) -> bool:
    """Whether leaving one example out of `batch` brings it within budget."""
    for left_out in batch:
        rest = [i for i in batch if i != left_out]
        if rest and all(
            len(rest) * max(lengths[i][side] for i in rest) <= max_tokens
            for side in (0, 1)
        ):
            return True
    return False


def check_token_batches(token_batches: Callable) -> None:
    """Check `token_batches(lengths, max_tokens)` for (source, target) lengths."""
    name = "token_batches"

    def run_cases() -> None:
        rng = _rng(7)
        cases = [
            (
                [
                    (int(s), int(t))
                    for s, t in rng.integers(1, 30, size=(300, 2))
                ],
                200,
                None,
            ),
            (
                [
                    (int(s), int(s) + int(d))
                    for s, d in zip(
                        rng.integers(2, 40, 400),
                        rng.integers(-1, 8, 400),
                        strict=True,
                    )
                ],
                256,
                None,
            ),
            ([(3, 4), (5, 2), (2, 2), (6, 7), (4, 4)], 12, None),
            # two small cases whose fewest batches every sorted greedy finds
            ([(3, 3)] * 12, 12, _FULL_BATCHES),
            (
                [
                    (2, 1),
                    (1, 6),
                    (2, 1),
                    (2, 1),
                    (1, 6),
                    (2, 1),
                    (2, 1),
                    (2, 1),
                ],
                12,
                _RESET_LONGEST,
            ),
        ]
        for lengths, max_tokens, exact_hint in cases:
            inputs = [lengths, max_tokens]
            given = _copies(lengths)
            got = _call(token_batches, name, *given, max_tokens)
            _expect_unchanged(
                name,
                inputs,
                given,
                [lengths],
                "changed lengths in place, so the indices no longer point "
                "at the examples they name.",
                "lengths.sort() reorders the caller's list; sort the "
                "indices instead: sorted(range(len(lengths)), "
                "key=lambda i: lengths[i]).",
            )
            got = _as_batches(name, inputs, got)
            seen = sorted(i for batch in got for i in batch)
            if seen != list(range(len(lengths))):
                missing = sorted(set(range(len(lengths))) - set(seen))
                twice = len(seen) - len(set(seen))
                outside = [i for i in seen if not 0 <= i < len(lengths)]
                if outside:
                    problem = f"returns index {outside[0]}, which is no example"
                elif missing:
                    problem = f"loses example {missing[0]}"
                else:
                    problem = f"puts {twice} example(s) in two batches"
                hint = (
                    "the last batch is still open when the loop ends: "
                    "append it too."
                    if missing and not outside
                    else None
                )
                _fail(
                    name,
                    f"{problem}: every index must be in exactly one batch.",
                    inputs,
                    hint,
                )
            if any(len(batch) == 0 for batch in got):
                _fail(name, "returned an empty batch.", inputs)
            fits = {
                side: all(
                    len(b) * max(lengths[i][side] for i in b) <= max_tokens
                    for b in got
                )
                for side in (0, 1)
            }
            summed = all(
                sum(lengths[i][side] for i in b) <= max_tokens
                for b in got
                for side in (0, 1)
            )
            for batch in got:
                for side, what in [(0, "source"), (1, "target")]:
                    padded = len(batch) * max(lengths[i][side] for i in batch)
                    if padded <= max_tokens:
                        continue
                    if summed:
                        hint = (
                            "count padded positions: len(batch) * the "
                            "longest length in it, not the sum of lengths."
                        )
                    elif fits[0] != fits[1]:
                        hint = (
                            f"check the {what} side too: the paper counts "
                            "source and target tokens."
                        )
                    elif _one_too_many(batch, lengths, max_tokens):
                        hint = (
                            "check the batch as it would be WITH the new "
                            "example: (len(batch) + 1) * max(longest, its "
                            "length) <= max_tokens, before adding it."
                        )
                    else:
                        hint = None
                    _fail(
                        name,
                        f"made a batch of {len(batch)} whose padded "
                        f"{what} size is {padded} > max_tokens={max_tokens}.",
                        inputs,
                        hint,
                    )
            reference = _reference_batches(lengths, max_tokens)
            if exact_hint is not None and len(got) > len(reference):
                _fail(
                    name,
                    f"needs {len(got)} batches where {len(reference)} "
                    "suffice: fill each batch up to the budget.",
                    inputs,
                    exact_hint,
                )
            if len(got) > 1.5 * len(reference) + 1:
                _fail(
                    name,
                    f"needs {len(got)} batches where {len(reference)} "
                    "suffice: fill each batch up to the budget.",
                    inputs,
                    "sort the examples by length first, then cut.",
                )
            # padding of source and target together: sorting by the source,
            # the target or their sum are all fine ways to keep it small
            real = sum(s + t for s, t in lengths)
            waste = 1 - real / (
                _padded(got, lengths, 0) + _padded(got, lengths, 1)
            )
            best = 1 - real / (
                _padded(reference, lengths, 0) + _padded(reference, lengths, 1)
            )
            if waste > 2 * best + 0.05:
                _fail(
                    name,
                    f"wastes {waste:.0%} of its padded positions (source and "
                    f"target together) on padding; sorting by length wastes "
                    f"{best:.0%}.",
                    inputs,
                    "sort the examples by length before cutting "
                    "them into batches.",
                )

    _verdict(
        name,
        "never exceeds the budget on either side, and pads little.",
        run_cases,
    )


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
    if log_probs is None:
        log_probs = logits.double().log_softmax(-1)
    q = torch.full_like(log_probs, epsilon / spread(V))
    if add_label:
        q.scatter_add_(
            -1,
            target.unsqueeze(-1),
            torch.full_like(q[..., :1], label(epsilon)),
        )
    else:
        q.scatter_(-1, target.unsqueeze(-1), label(epsilon))
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


def _annotated_reference(logits, target, epsilon, pad_id):
    return _smoothed(logits, target, epsilon, pad_id)


def check_annotated_smoothing(annotated_smoothing: Callable) -> None:
    """Check `annotated_smoothing(logits, target, epsilon, pad_id) -> loss`."""
    import torch
    import torch.nn.functional as F

    name = "annotated_smoothing"

    def run_cases() -> None:
        generator = _torch_generator(3)
        for B, T, V, epsilon, pad_id in [(2, 5, 7, 0.1, 0), (3, 4, 11, 0.2, 2)]:
            logits = torch.randn(B, T, V, generator=generator)
            target = torch.randint(0, V, (B, T), generator=generator)
            target[target == pad_id] = (pad_id + 1) % V
            target[0, -2:] = pad_id
            target[-1, -1] = pad_id
            if pad_id != 0:  # a token 0 that is not padding
                target[1, 0] = 0
            inputs = [logits, target, epsilon, pad_id]
            given = _copies(logits, target)
            got = _call(annotated_smoothing, name, *given, epsilon, pad_id)
            _expect_unchanged(
                name,
                inputs,
                given,
                {"logits": logits, "target": target},
                _IN_PLACE_NEEDED,
                "-=, masked_fill_(), scatter_() and x[...] = write into the "
                "caller's tensor; work on a new one (x - m, "
                "x.masked_fill(...), x.clone()).",
            )
            if isinstance(got, torch.Tensor):
                got = got.detach()
                if got.numel() != 1:
                    _fail(
                        name,
                        f"returned a tensor of shape {tuple(got.shape)}; "
                        "expected one number, the mean over the non-padding "
                        "tokens.",
                        inputs,
                    )
                got = got.reshape(())
            expected = _annotated_reference(logits, target, epsilon, pad_id)
            flat = logits.flatten(0, 1)
            args = (logits, target, epsilon, pad_id)
            double = logits.double()
            q = _smoothed(*args, log_probs=double, reduce="q")
            log_q = torch.where(q > 0, q, 1.0).log()  # 0 log 0 = 0
            over_tokens = (
                "average over the non-padding tokens (divide by their number): "
            )
            mistakes = [
                (
                    F.cross_entropy(
                        flat,
                        target.flatten(),
                        label_smoothing=epsilon,
                        ignore_index=pad_id,
                    ),
                    "that is PyTorch's smoothing (epsilon / V on every token, the "
                    "label and <pad> included); here <pad> gets 0 and the other "
                    "V - 2 tokens epsilon / (V - 2).",
                ),
                (
                    _smoothed(*args, spread=lambda V: V - 1),
                    "spread epsilon over V - 2 tokens: neither the label nor <pad>.",
                ),
                (
                    _smoothed(*args, spread=lambda V: V),
                    "spread epsilon over V - 2 tokens (epsilon / (V - 2) each), "
                    "not over V: neither the label nor <pad> shares it.",
                ),
                (
                    _smoothed(*args, zero_column=False),
                    "<pad> gets 0 in every row: q[..., pad_id] = 0 after "
                    "filling q with epsilon / (V - 2).",
                ),
                (
                    _smoothed(*args, add_label=True),
                    "the label gets exactly 1 - epsilon: set it (scatter_), "
                    "do not add 1 - epsilon to its epsilon / (V - 2).",
                ),
                (
                    _smoothed(*args, label=lambda epsilon: 1.0),
                    "the label gets 1 - epsilon, not 1: the target q sums to 1.",
                ),
                (
                    _smoothed(*args, mask_id=-1),
                    "rows whose label is <pad> must be left out of the mean.",
                ),
                (
                    _smoothed(*args, mask_id=-1, zero_column=False),
                    "rows whose label is <pad> must be left out of the mean.",
                ),
                (
                    _smoothed(*args) * (target != pad_id).sum(),
                    "return the mean over the non-padding tokens, not the sum.",
                ),
                (
                    _smoothed(*args, reduce="all"),
                    over_tokens + "rows of padding count 0 in the sum, but "
                    "not in the mean's denominator B * T.",
                ),
                (
                    _smoothed(*args, reduce="sentences"),
                    over_tokens + "a mean per sentence, then over sentences, "
                    "weighs the tokens of short sentences more.",
                ),
                (
                    _smoothed(*args, reduce="batch"),
                    over_tokens + "not by the number of sentences.",
                ),
                (
                    _smoothed(*args, log_probs=double),
                    "logits are not log-probabilities: take "
                    "logits.log_softmax(dim=-1) first.",
                ),
                (
                    _smoothed(*args, log_probs=double.log_softmax(1)),
                    "normalise over the vocabulary, the last dimension: "
                    "log_softmax(dim=-1).",
                ),
                (
                    _smoothed(*args, log_probs=double.softmax(-1)),
                    "use log-probabilities, not probabilities: "
                    "log_softmax(dim=-1).",
                ),
                (
                    _smoothed(*args) - _smoothed(*args, log_probs=log_q),
                    "that is the KL divergence from q, which is smaller by "
                    "q's own entropy; the exercise asks for the "
                    "cross-entropy -sum_k q_k log p_k.",
                ),
            ]
            if pad_id != 0:
                zero = "<pad> is pad_id, not 0."
                mistakes += [
                    (_smoothed(*args, mask_id=0), zero),
                    (_smoothed(*args, column_id=0), zero),
                    (_smoothed(*args, mask_id=0, column_id=0), zero),
                ]
            _expect_close(
                name, inputs, got, expected.float(), mistakes, atol=1e-5
            )

    _verdict(
        name, "computes the Annotated Transformer's smoothed loss.", run_cases
    )


_PLAIN = (bool, int, float, str, bytes, type(None))


def _first_unsafe(value, path: str = "state"):
    """(path, value) of the first item that is not plain data
    (tensors, numbers, strings, bytes, lists, tuples, dicts, sets), if any."""
    if _is_tensor(value) or type(value) in _PLAIN:
        return None
    if isinstance(value, dict):
        items = [(f"{path}[{key!r}]", item) for key, item in value.items()]
    elif type(value) in (list, tuple, set, frozenset):
        items = [(f"{path}[{i}]", item) for i, item in enumerate(value)]
    else:
        return path, value
    for item_path, item in items:
        found = _first_unsafe(item, item_path)
        if found is not None:
            return found
    return None


def _pickled(value):
    """The first bytes object in `value` that is a whole pickle, if any."""
    if isinstance(value, (bytes, bytearray)):
        if len(value) < 2 or value[0] != 0x80:  # pickle protocols 2 to 5
            return None
        try:
            ops = list(pickletools.genops(bytes(value)))
        except Exception:  # noqa: BLE001 (not a pickle: any error says so)
            return None
        last = ops[-1] if ops else None
        if last and last[0].name == "STOP" and last[2] == len(value) - 1:
            return value
        return None
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            if _pickled(item) is not None:
                return item
    return None


def _unsafe_hint(value) -> str:
    if isinstance(value, np.ndarray):
        return (
            "a NumPy array cannot be read with weights_only=True; store it "
            "as a tensor (torch.from_numpy) or a list."
        )
    if isinstance(value, np.generic):
        return (
            "a NumPy number (np.int64, np.float64) is not plain data: "
            "int(x), float(x) or x.item()."
        )
    return (
        "keep only tensors, numbers, strings, lists, tuples and dicts: "
        "store what getstate(), np.random.get_state() and "
        "torch.get_rng_state() return, not a generator object."
    )


def _generator_states():
    import torch

    return (
        random.getstate(),
        np.random.get_state(),  # noqa: NPY002
        torch.get_rng_state(),
    )


def _same_state(a, b) -> bool:
    if _is_tensor(a):
        return bool(a.shape == b.shape and (a == b).all())
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(
            _same_state(x, y) for x, y in zip(a, b, strict=True)
        )
    return a == b


_GENERATORS = ["Python's random", "NumPy's", "PyTorch's"]
_GAUSS_HINTS = [
    "random.getstate() is (version, internal state, gauss_next): keep all "
    "three; the last is the Gaussian that random.gauss() holds back.",
    "np.random.get_state() has five items: name, keys, position, has_gauss "
    "and cached_gaussian; keep all five (the last two are the Gaussian that "
    "randn() holds back).",
    None,
]


def check_rng_checkpoint(capture, restore: Callable | None = None) -> None:
    """Check `capture() -> state` and `restore(state)` through a weights_only
    torch.save / torch.load round trip (or one `(capture, restore)` pair)."""
    import torch

    if restore is None and isinstance(capture, tuple):
        capture, restore = capture

    name = "rng_checkpoint"
    inputs = [
        _Label(
            "generators seeded with 5, then uniform and Gaussian draws from "
            "each"
        )
    ]

    def draws():
        """Per generator: (uniform draws, a Gaussian draw). One Gaussian
        leaves the second of its pair cached, in random and in NumPy."""
        return (
            ([random.random() for _ in range(2)], random.gauss(0.0, 1.0)),
            (
                np.random.rand(2).tolist(),  # noqa: NPY002 (the global generator, on purpose)
                float(np.random.standard_normal()),  # noqa: NPY002
            ),
            (torch.rand(2).tolist(), torch.randn(1).item()),
        )

    def run_cases() -> None:
        random.seed(5)
        np.random.seed(5)  # noqa: NPY002
        torch.manual_seed(5)
        draws()
        before = _generator_states()
        state = _call(capture, name)
        after = _generator_states()
        for what, b, a in zip(_GENERATORS, before, after, strict=True):
            if not _same_state(b, a):
                _fail(
                    name,
                    f"changed the state of {what} generator: capture must "
                    "only read the generators, so that saving a checkpoint "
                    "leaves the run as it was.",
                    inputs,
                    "no seeding and no draws in capture: random.getstate(), "
                    "np.random.get_state() and torch.get_rng_state() only "
                    "read.",
                )
        _expect_returned(name, inputs, state)
        buffer = io.BytesIO()
        try:
            torch.save(state, buffer)
        except Exception as error:  # noqa: BLE001 (its message is the point)
            _fail(
                name,
                "returned a state that torch.save cannot write.",
                inputs,
                _unsafe_hint(None),
                [str(error).splitlines()[0][:150]] if str(error) else [],
            )
        buffer.seek(0)
        try:
            loaded = torch.load(buffer, weights_only=True)
        except Exception as error:  # noqa: BLE001 (the unpickler's message is the point)
            found = _first_unsafe(state)
            text = str(error)
            unsupported = re.search(r"Unsupported global: GLOBAL (\S+)", text)
            details = (
                [f"torch.load: unsupported global {unsupported.group(1)}"]
                if unsupported
                else []
            )
            if found is not None:
                path, value = found
                kind = type(value)
                problem = (
                    "returned a state that torch.load(weights_only=True) "
                    f"refuses: {path} is a {kind.__module__}.{kind.__qualname__}."
                )
                hint = _unsafe_hint(value)
            else:
                problem = (
                    "returned a state that torch.load(weights_only=True) "
                    "refuses."
                )
                hint = _unsafe_hint(np.zeros(0)) if "numpy" in text else None
            _fail(name, problem, inputs, hint, details)
        if _pickled(loaded) is not None:
            _fail(
                name,
                "stored pickled bytes (pickle.dumps) in the state: restore "
                "would unpickle them, which can run any code, exactly what "
                "weights_only=True guards against.",
                inputs,
                "store the states themselves as plain data: lists, numbers, "
                "strings and tensors.",
            )
        expected = draws()
        random.seed(99)
        np.random.seed(99)  # noqa: NPY002
        torch.manual_seed(99)
        _call(restore, "restore", loaded)
        got = draws()
        for what, g, e, gauss_hint in zip(
            _GENERATORS, got, expected, _GAUSS_HINTS, strict=True
        ):
            if g != e:
                hint = (
                    gauss_hint
                    if g[0] == e[0] and gauss_hint
                    else "capture and restore all three: random.getstate(), "
                    "np.random.get_state() and torch.get_rng_state()."
                )
                problem = (
                    "and restore do not bring back the Gaussian that "
                    f"{what} generator holds back: after restore, "
                    "uniform draws agree but a Gaussian draw differs."
                    if g[0] == e[0] and gauss_hint
                    else f"and restore do not bring back {what} generator: "
                    "after restore it draws other numbers."
                )
                _fail(name, problem, inputs, hint)

    _verdict(
        name, "brings back every generator, through weights_only.", run_cases
    )
