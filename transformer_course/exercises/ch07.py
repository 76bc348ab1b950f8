"""Checkers for chapter 7: training the Transformer."""

from __future__ import annotations

import io
import math
import random
from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _expect_close,
    _expect_equal,
    _fail,
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
            got = _call(half_peak_steps, name, d_model, warmup)
            if isinstance(got, list):
                got = tuple(got)
            if isinstance(got, tuple):
                got = tuple(
                    int(v) if isinstance(v, (int, np.integer)) else v
                    for v in got
                )
            expected = _half_peak_steps(d_model, warmup)
            rising, falling = expected
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
                (
                    (warmup // 2, falling),
                    "count steps from 1 and take the first "
                    "step whose lr reaches half the peak: ceil(warmup / 2).",
                ),
                (
                    (rising - 1, falling),
                    "count steps from 1 and take the first "
                    "step whose lr reaches half the peak: ceil(warmup / 2).",
                ),
                (
                    (rising, falling + 1),
                    "the first step with lr <= peak / 2 is "
                    "4 * warmup itself (equality counts).",
                ),
                (
                    (warmup, warmup),
                    "that is the peak itself; the question asks "
                    "where lr is half of it.",
                ),
            ]
            _expect_equal(name, [d_model, warmup], got, expected, mistakes)

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
            ),
            ([(3, 4), (5, 2), (2, 2), (6, 7), (4, 4)], 12),
        ]
        for lengths, max_tokens in cases:
            inputs = [lengths, max_tokens]
            got = _call(token_batches, name, list(lengths), max_tokens)
            if got is None:
                _fail(name, "returned None: did you forget `return`?", inputs)
            try:
                got = [[int(i) for i in batch] for batch in got]
            except TypeError:
                _fail(
                    name,
                    "must return a list of batches, each a list of "
                    f"indices; got {type(got).__name__}.",
                    inputs,
                )
            seen = sorted(i for batch in got for i in batch)
            if seen != list(range(len(lengths))):
                missing = sorted(set(range(len(lengths))) - set(seen))
                twice = len(seen) - len(set(seen))
                problem = (
                    f"loses example {missing[0]}"
                    if missing
                    else f"puts {twice} example(s) in two batches"
                )
                hint = (
                    "the last batch is still open when the loop ends: "
                    "append it too."
                    if missing
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
            source_ok = all(
                len(b) * max(lengths[i][0] for i in b) <= max_tokens
                for b in got
            )
            summed = all(
                sum(max(lengths[i]) for i in b) <= max_tokens for b in got
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
                    elif source_ok:
                        hint = (
                            "check the target side too: the paper counts "
                            "source and target tokens."
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
            if len(got) > 1.5 * len(reference) + 1:
                _fail(
                    name,
                    f"needs {len(got)} batches where {len(reference)} "
                    "suffice: fill each batch up to the budget.",
                    inputs,
                    "sort the examples by length first, then cut.",
                )
            for side, what in [(0, "source"), (1, "target")]:
                real = sum(length[side] for length in lengths)
                waste = 1 - real / _padded(got, lengths, side)
                best = 1 - real / _padded(reference, lengths, side)
                if waste > 2 * best + 0.05:
                    _fail(
                        name,
                        f"wastes {waste:.0%} of the {what} positions on "
                        f"padding (sorting by length wastes {best:.0%}).",
                        inputs,
                        "sort the examples by length before cutting "
                        "them into batches.",
                    )

    _verdict(
        name,
        "never exceeds the budget on either side, and pads little.",
        run_cases,
    )


def _annotated_reference(logits, target, epsilon, pad_id):
    import torch

    V = logits.size(-1)
    log_probs = logits.double().log_softmax(-1)
    q = torch.full_like(log_probs, epsilon / (V - 2))
    q.scatter_(-1, target.unsqueeze(-1), 1 - epsilon)
    q[..., pad_id] = 0.0
    keep = target != pad_id
    return -(q * log_probs).sum(-1)[keep].mean()


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
            inputs = [logits, target, epsilon, pad_id]
            got = _call(
                annotated_smoothing,
                name,
                logits.clone(),
                target.clone(),
                epsilon,
                pad_id,
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
            keep = target != pad_id
            V_minus_1 = logits.double().log_softmax(-1)
            q1 = torch.full_like(V_minus_1, epsilon / (V - 1))
            q1.scatter_(-1, target.unsqueeze(-1), 1 - epsilon)
            q1[..., pad_id] = 0.0
            all_rows = torch.full_like(V_minus_1, epsilon / (V - 2))
            all_rows.scatter_(-1, target.unsqueeze(-1), 1 - epsilon)
            all_rows[..., pad_id] = 0.0
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
                    -(q1 * V_minus_1).sum(-1)[keep].mean(),
                    "spread epsilon over V - 2 tokens: neither the label nor <pad>.",
                ),
                (
                    -(all_rows * V_minus_1).sum(-1).mean(),
                    "rows whose label is <pad> must be left out of the mean.",
                ),
                (
                    -(all_rows * V_minus_1).sum(-1)[keep].sum(),
                    "return the mean over the non-padding tokens, not the sum.",
                ),
            ]
            _expect_close(
                name, inputs, got, expected.float(), mistakes, atol=1e-5
            )

    _verdict(
        name, "computes the Annotated Transformer's smoothed loss.", run_cases
    )


def check_rng_checkpoint(capture, restore: Callable | None = None) -> None:
    """Check `capture() -> state` and `restore(state)` through a weights_only
    torch.save / torch.load round trip (or one `(capture, restore)` pair)."""
    import torch

    if restore is None and isinstance(capture, tuple):
        capture, restore = capture

    name = "rng_checkpoint"
    inputs = ["generators seeded with 5, then three draws from each"]

    def draws():
        return (
            [random.random() for _ in range(3)],
            np.random.rand(3).tolist(),  # noqa: NPY002 (the global generator, on purpose)
            torch.rand(3).tolist(),
        )

    def run_cases() -> None:
        random.seed(5)
        np.random.seed(5)  # noqa: NPY002
        torch.manual_seed(5)
        draws()
        state = _call(capture, name)
        if state is None:
            _fail(name, "returned None: did you forget `return`?", inputs)
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        try:
            loaded = torch.load(buffer, weights_only=True)
        except Exception as error:  # noqa: BLE001 (the unpickler's message is the point)
            hint = (
                "a NumPy array cannot be read with weights_only=True; store it "
                "as a tensor (torch.from_numpy) or a list."
                if "numpy" in str(error)
                else None
            )
            _fail(
                name,
                "returned a state that torch.load(weights_only=True) refuses.",
                inputs,
                hint,
                [str(error).splitlines()[0][:150]],
            )
        expected = draws()
        random.seed(99)
        np.random.seed(99)  # noqa: NPY002
        torch.manual_seed(99)
        _call(restore, "restore", loaded)
        got = draws()
        for what, g, e in zip(
            ["Python's random", "NumPy's", "PyTorch's"],
            got,
            expected,
            strict=True,
        ):
            if g != e:
                _fail(
                    name,
                    f"and restore do not bring back {what} generator: "
                    "after restore it draws other numbers.",
                    inputs,
                    "capture and restore all three: random.getstate(), "
                    "np.random.get_state() and torch.get_rng_state().",
                )

    _verdict(
        name, "brings back every generator, through weights_only.", run_cases
    )
