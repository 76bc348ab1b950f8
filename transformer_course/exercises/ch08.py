"""Checkers for chapter 8: decoding and evaluation."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

from transformer_course.exercises._core import (
    MAX_LINES,
    ExerciseError,
    IN_PLACE_NEEDED,
    _call,
    _copies,
    _describe,
    _expect_close,
    _expect_equal,
    _expect_unchanged,
    _fail,
    _same,
    _verdict,
)

__all__ = [
    "check_clipped_matches_multi",
    "check_brevity_penalty_multi",
    "check_beam_step",
]


def _counts(tokens, n, extra: int = 1) -> Counter:
    """The n-grams of `tokens`; `extra` = 0 or 2 counts one too few or many
    windows (the off-by-one mistakes)."""
    return Counter(
        tuple(tokens[i : i + n]) for i in range(len(tokens) - n + extra)
    )


def _clipped(
    hypothesis,
    references,
    n,
    clip,
    extra: int = 1,
    ref_extra: int | None = None,
) -> tuple[int, int]:
    """(matches, total) with each n-gram's count clipped by clip(ref counts)."""
    hyp = _counts(hypothesis, n, extra)
    ref_extra = extra if ref_extra is None else ref_extra
    refs = [_counts(r, n, ref_extra) for r in references]
    matches = sum(
        min(count, clip([r[gram] for r in refs])) for gram, count in hyp.items()
    )
    return matches, sum(hyp.values())


def _best_reference(hypothesis, references, n) -> tuple[int, int]:
    """Clipped against each reference alone, the best reference's matches."""
    hyp = _counts(hypothesis, n)
    best = max(
        _clipped(hypothesis, [reference], n, max)[0] for reference in references
    )
    return best, sum(hyp.values())


def _clipping_mistakes(hyp, refs, n) -> list[tuple[tuple[int, int], str]]:
    hyp_counts = _counts(hyp, n)
    ref_counts = [_counts(r, n) for r in refs]
    matches, total = _clipped(hyp, refs, n, max)
    return [
        (
            _clipped(hyp, refs, n, sum),
            "clip at the largest count in any ONE reference, not at "
            "the sum over the references.",
        ),
        (
            _clipped(hyp, refs, n, min),
            "clip at the largest count in any one reference (max), "
            "not the smallest: an n-gram absent from one reference "
            "can still match another.",
        ),
        (
            _clipped(hyp, refs, n, lambda counts: counts[0]),
            "every reference counts, not only the first.",
        ),
        (
            _clipped(hyp, refs, n, lambda c: math.inf if any(c) else 0),
            "the counts are not clipped: an n-gram matches at most as "
            "often as it occurs in a reference.",
        ),
        (
            _best_reference(hyp, refs, n),
            "clip each n-gram on its own, at its largest count in any "
            "reference; do not pick the one best reference for the whole "
            "hypothesis.",
        ),
        (
            (
                sum(max(r[g] for r in ref_counts) for g in hyp_counts),
                total,
            ),
            "min(count, largest reference count): an n-gram matches at "
            "most as often as it occurs in the hypothesis too.",
        ),
        (
            (
                sum(1 for g in hyp_counts if any(r[g] for r in ref_counts)),
                total,
            ),
            "count every occurrence of an n-gram (up to its clip), not "
            "each distinct n-gram once.",
        ),
        (
            (
                sum(1 for g in hyp_counts if any(r[g] for r in ref_counts)),
                len(hyp_counts),
            ),
            "count every occurrence of an n-gram (up to its clip), not "
            "each distinct n-gram once.",
        ),
        (
            _clipped(hyp, refs, n, max, extra=0),
            "a sentence of L tokens has L - n + 1 n-grams: "
            "range(len(tokens) - n + 1), not range(len(tokens) - n).",
        ),
        (
            _clipped(hyp, refs, n, max, extra=0, ref_extra=1),
            "a sentence of L tokens has L - n + 1 n-grams: "
            "range(len(tokens) - n + 1), not range(len(tokens) - n).",
        ),
        (
            (matches, len(hyp)),
            "total is the number of the hypothesis's n-grams, "
            "len(hypothesis) - n + 1, not its number of tokens.",
        ),
        (
            (matches, sum(sum(_counts(r, n).values()) for r in refs)),
            "total counts the hypothesis's n-grams (BLEU is a precision), "
            "not the references'.",
        ),
        (
            _clipped(hyp, refs, 1, max),
            "count n-grams of length n, not single tokens.",
        ),
    ]


_CLIPPING_CASES = [
    ("the the the the cat cat sat", ["the the cat", "cat cat the sat"], 1),
    ("the the the cat sat", ["the cat sat on the mat", "a cat sat there"], 1),
    ("the cat the cat", ["the cat is here", "cat the cat the"], 2),
    ("a a a b", ["b a", "a a b", "c"], 1),
    ("x y z", ["p q", "y z x"], 1),
    ("a b c d", ["a b c d", "a b"], 3),
]


def _consistent(mistakes_by_case, answers, same) -> set[int]:
    """The positions of the known mistakes that give the learner's answer in
    every case: a hint is given only for a mistake that explains them all,
    never for one that agrees with the answer by chance on one input."""
    return {
        position
        for position in range(len(mistakes_by_case[0]))
        if all(
            same(answer, mistakes[position][0])
            for answer, mistakes in zip(answers, mistakes_by_case, strict=True)
        )
    }


_CHANGED_LISTS_HINT = (
    "sort(), append(), pop() and x[i] = change the caller's lists; build new "
    "ones (sorted(...), a + [x], a copy)."
)


def check_clipped_matches_multi(clipped_matches_multi: Callable) -> None:
    """Check `clipped_matches_multi(hypothesis, references, n)`."""
    name = "clipped_matches_multi"

    def run_cases() -> None:
        answers, expected, mistakes = [], [], []
        for hypothesis, references, n in _CLIPPING_CASES:
            hyp, refs = hypothesis.split(), [r.split() for r in references]
            given = _copies(hyp, refs)
            got = _call(clipped_matches_multi, name, *given, n)
            _expect_unchanged(
                name,
                [hyp, refs, n],
                given,
                {"hypothesis": hyp, "references": refs},
                "changed {what} in place; leave the inputs as they were.",
                _CHANGED_LISTS_HINT,
            )
            if isinstance(got, list):
                got = tuple(got)
            answers.append(got)
            expected.append(_clipped(hyp, refs, n, max))
            mistakes.append(_clipping_mistakes(hyp, refs, n))
        known = _consistent(mistakes, answers, _same)
        for (hypothesis, references, n), got, right, case_mistakes in zip(
            _CLIPPING_CASES, answers, expected, mistakes, strict=True
        ):
            _expect_equal(
                name,
                [hypothesis.split(), [r.split() for r in references], n],
                got,
                right,
                [m for i, m in enumerate(case_mistakes) if i in known],
                what="(matches, total)",
            )

    _verdict(
        name, "clips each n-gram at its largest reference count.", run_cases
    )


def _closest(hyp_len, ref_lens, prefer_shorter=True):
    key = (
        (lambda r: (abs(r - hyp_len), r))
        if prefer_shorter
        else (lambda r: (abs(r - hyp_len), -r))
    )
    return min(ref_lens, key=key)


def _inverted_bp(c, r) -> float:
    return 1.0 if c >= r else math.exp(1 - c / r)


def _bp(c, r) -> float:
    if c >= r:
        return 1.0
    return math.exp(1 - r / c) if c > 0 else 0.0


def _bp_mistakes(hyp_lens, ref_lens) -> list[tuple[float, str]]:
    pairs = list(zip(hyp_lens, ref_lens, strict=True))
    c = sum(hyp_lens)
    closest = sum(_closest(h, rs) for h, rs in pairs)
    closest_hint = (
        "take the reference length closest to the hypothesis's, shorter "
        "or longer: min(lengths, key=lambda r: (abs(r - h), r))."
    )
    return [
        (
            _bp(c, sum(min(rs) for _, rs in pairs)),
            "use the reference length closest to each hypothesis's, "
            "not the shortest.",
        ),
        (
            _bp(c, sum(max(rs) for _, rs in pairs)),
            "use the reference length closest to each hypothesis's, "
            "not the longest.",
        ),
        (
            _bp(c, sum(sum(rs) / len(rs) for _, rs in pairs)),
            "use the closest reference length, not the average.",
        ),
        (
            _bp(c, sum(_closest(h, rs, False) for h, rs in pairs)),
            "on a tie (one reference as much shorter as another is "
            "longer), take the shorter reference, as sacreBLEU does.",
        ),
        (
            _bp(c, sum(min(rs, key=lambda r: abs(r - h)) for h, rs in pairs)),
            "on a tie, min() with key=abs(r - h) keeps the first in the "
            "list; take the shorter reference, as sacreBLEU does: "
            "key=lambda r: (abs(r - h), r).",
        ),
        (
            _bp(c, sum(rs[0] for _, rs in pairs)),
            "use the closest of each sentence's reference lengths, not the "
            "first.",
        ),
        (
            _bp(
                c,
                sum(
                    max([r for r in rs if r <= h] or [min(rs)])
                    for h, rs in pairs
                ),
            ),
            closest_hint,
        ),
        (
            _bp(
                c,
                sum(
                    min([r for r in rs if r >= h] or [max(rs)])
                    for h, rs in pairs
                ),
            ),
            closest_hint,
        ),
        (
            sum(_bp(h, _closest(h, rs)) for h, rs in pairs) / len(pairs),
            "the brevity penalty is computed once for the corpus, "
            "from the summed lengths, not averaged over sentences.",
        ),
        (
            math.prod(_bp(h, _closest(h, rs)) for h, rs in pairs),
            "the brevity penalty is computed once for the corpus, "
            "from the summed lengths, not multiplied over sentences.",
        ),
        (
            _inverted_bp(c, closest),
            "the exponent is 1 - r / c (reference over hypothesis).",
        ),
        (
            1.0 if c >= closest else math.exp(closest / c - 1),
            "the exponent is 1 - r / c, negative when c < r: the "
            "penalty is at most 1.",
        ),
        (
            math.exp(1 - closest / c),
            "no penalty when c >= r: BP is 1 then (exp(1 - r / c) would "
            "exceed 1).",
        ),
        (
            1.0 if c >= closest else math.exp(1 - closest // c),
            "r // c is integer division: use r / c.",
        ),
        (
            min(1.0, c / closest),
            "BP = exp(1 - r / c) when c < r, not c / r.",
        ),
        (
            0.0 if c >= closest else 1 - closest / c,
            "return the penalty itself, exp(1 - r / c), not its logarithm.",
        ),
        (
            _bp(len(hyp_lens), closest),
            "c is the sum of the hypothesis lengths, not the number of "
            "sentences.",
        ),
    ]


def _close_number(a, b) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-5, abs_tol=1e-6)
    except (TypeError, ValueError):
        return False


def check_brevity_penalty_multi(brevity_penalty_multi: Callable) -> None:
    """Check `brevity_penalty_multi(hyp_lens, ref_lens)`: corpus BP, closest refs."""
    name = "brevity_penalty_multi"
    cases = [
        ([4, 6, 3], [[2, 6], [8, 10, 1], [5, 7]]),
        ([5, 8, 3], [[6, 9], [7, 10], [3, 5]]),
        ([4, 10], [[3, 5], [12, 9]]),
        ([6, 6], [[8, 9], [10, 7]]),
        ([2, 7, 7], [[4, 3], [9, 8], [8, 6]]),
        # r = 6 + 6 + 3 (closest), 3 + 6 + 3 (closest not longer),
        # 2 + 6 + 3 (shortest), 6 + 6 + 7 (closest not shorter)
        ([5, 1, 4], [[2, 3, 6], [6, 9], [3, 7]]),
    ]

    def run_cases() -> None:
        answers, mistakes = [], []
        for hyp_lens, ref_lens in cases:
            given = _copies(hyp_lens, ref_lens)
            got = _call(brevity_penalty_multi, name, *given)
            _expect_unchanged(
                name,
                [hyp_lens, ref_lens],
                given,
                {"hyp_lens": hyp_lens, "ref_lens": ref_lens},
                "changed {what} in place (it is now {now}); leave the inputs "
                "as they were.",
                "hyp_lens[i] must stay paired with ref_lens[i]; "
                + _CHANGED_LISTS_HINT,
            )
            answers.append(got)
            mistakes.append(_bp_mistakes(hyp_lens, ref_lens))
        known = _consistent(mistakes, answers, _close_number)
        for (hyp_lens, ref_lens), got, case_mistakes in zip(
            cases, answers, mistakes, strict=True
        ):
            c = sum(hyp_lens)
            lengths = [
                _closest(h, rs)
                for h, rs in zip(hyp_lens, ref_lens, strict=True)
            ]
            try:
                _expect_close(
                    name,
                    [hyp_lens, ref_lens],
                    got,
                    _bp(c, sum(lengths)),
                    [m for i, m in enumerate(case_mistakes) if i in known],
                    atol=1e-6,
                )
            except ExerciseError as error:
                lines = str(error).splitlines()[: MAX_LINES - 1]
                lines.append(
                    f"Here c = {c} and r = {' + '.join(map(str, lengths))} "
                    f"= {sum(lengths)} (the closest reference lengths)."
                )
                raise ExerciseError("\n".join(lines)) from None

    _verdict(
        name, "compares the corpus with its closest references.", run_cases
    )


def _beam_cases():
    import torch

    generator = torch.Generator().manual_seed(0)
    cases = []
    for k, vocab in [(3, 7), (2, 5), (4, 6)]:
        scores = -torch.rand(k, generator=generator, dtype=torch.float64) * 3
        scores = scores.sort(descending=True).values
        log_probs = torch.randn(
            k, vocab, generator=generator, dtype=torch.float64
        ).log_softmax(-1)
        cases.append((scores, log_probs, k))
    return cases


def _beam_reference(scores, log_probs, k):
    total = scores[:, None] + log_probs  # (k, vocab)
    best, index = total.flatten().topk(k)
    vocab = log_probs.size(1)
    return best, index // vocab, index % vocab


def check_beam_step(beam_step: Callable) -> None:
    """Check `beam_step(scores, log_probs, k)` -> (scores, parents, tokens)."""
    import torch

    name = "beam_step"

    def run_cases() -> None:
        for scores, log_probs, k in _beam_cases():
            vocab = log_probs.size(1)
            best, parents, tokens = _beam_reference(scores, log_probs, k)
            inputs = [scores, log_probs, k]
            given = _copies(scores, log_probs)
            got = _call(beam_step, name, *given, k)
            _expect_unchanged(
                name,
                inputs,
                given,
                {"scores": scores, "log_probs": log_probs},
                IN_PLACE_NEEDED,
                "+=, add_() and x[...] = write into the caller's tensor; "
                "compute a new one: scores[:, None] + log_probs.",
            )
            if not isinstance(got, (tuple, list)) or len(got) != 3:
                returned = (
                    f"a {type(got).__name__} of {len(got)} items"
                    if isinstance(got, (tuple, list))
                    else _describe(got, 0)
                )
                _fail(
                    name,
                    "must return three things: (scores, parents, "
                    f"tokens), each of k entries; it returned {returned}.",
                    inputs,
                )
            got_scores, got_parents, got_tokens = (
                torch.as_tensor(x) for x in got
            )
            own_best = log_probs.max(dim=-1)
            flat = log_probs.flatten().topk(k)
            total = scores[:, None] + log_probs  # (k, vocab)
            by_token = log_probs.flatten()[total.flatten().topk(k).indices]
            best_beam = scores.argmax()
            score_mistakes = [
                (
                    (scores + own_best.values).sort(descending=True).values,
                    "each beam kept only its own best token: the k best "
                    "extensions may all come from one beam. Rank all "
                    "k x vocab_size extensions together.",
                ),
                (
                    flat.values,
                    "add each beam's score to its extensions' log-probs: "
                    "a hypothesis's score is log P of the whole prefix.",
                ),
                (
                    total.flatten()[flat.indices],
                    "rank the extensions by their whole score, scores[:, None] "
                    "+ log_probs, not by the new token's log-prob alone.",
                ),
                (
                    by_token,
                    "return the extensions' whole scores (the parent's "
                    "score + the token's log-prob), not the token's log-prob.",
                ),
                (
                    (scores[:, None] * log_probs).flatten().topk(k).values,
                    "log-probabilities add (probabilities multiply).",
                ),
                (
                    best.exp(),
                    "return log-probabilities, not probabilities.",
                ),
                (
                    total[best_beam].topk(k).values,
                    "the k best extensions may come from several beams, "
                    "not only from the best one: rank all k x vocab_size.",
                ),
            ]
            if got_scores.shape == best.shape and torch.allclose(
                got_scores.double().sort(descending=True).values,
                best,
                rtol=1e-4,
                atol=1e-4,
            ):
                score_mistakes.append(
                    (
                        got_scores,
                        "these are the k best scores, but not best first: "
                        "topk(k) returns them sorted, the largest first.",
                    )
                )
            _expect_close(
                name, inputs, got_scores, best, score_mistakes, what="scores"
            )
            for what, values in [
                ("parents", got_parents),
                ("tokens", got_tokens),
            ]:
                if values.dtype.is_floating_point or values.dtype == torch.bool:
                    _fail(
                        name,
                        f"returned {what} as {values.dtype} numbers; they are "
                        "indices: return integers (an int64 tensor).",
                        inputs,
                        "i / vocab_size is true division (a float); "
                        "i // vocab_size and i % vocab_size keep integers.",
                    )
            flat_index = parents * vocab + tokens
            split_hint = (
                "the flat index i over (k, vocab_size) splits as "
                "parent = i // vocab_size, token = i % vocab_size."
            )
            index_mistakes = [
                ((flat_index % vocab).tolist(), split_hint),
                ((flat_index // k).tolist(), split_hint),
                ((flat_index % k).tolist(), split_hint),
                (flat_index.tolist(), split_hint),
            ]
            _expect_equal(
                name,
                inputs,
                got_parents.tolist(),
                parents.tolist(),
                index_mistakes,
                what="parents",
            )
            # the token's rank in its beam's topk(k), not its id
            chosen = log_probs[parents, tokens]
            rank = (log_probs[parents] > chosen[:, None]).sum(-1)
            index_mistakes += [
                ((flat_index // vocab).tolist(), split_hint),
                (
                    rank.tolist(),
                    "that is each token's position in its beam's topk(k), "
                    "not its id: map it back through the indices that "
                    "topk returned.",
                ),
            ]
            _expect_equal(
                name,
                inputs,
                got_tokens.tolist(),
                tokens.tolist(),
                index_mistakes,
                what="tokens",
            )

    _verdict(
        name, "keeps the k best of all k x vocab_size extensions.", run_cases
    )
