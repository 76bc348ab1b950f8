"""Checkers for chapter 8: decoding and evaluation."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

from transformer_course.exercises._core import (
    _call,
    _expect_close,
    _expect_equal,
    _fail,
    _verdict,
)

__all__ = [
    "check_clipped_matches_multi",
    "check_brevity_penalty_multi",
    "check_beam_step",
]


def _counts(tokens, n) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _clipped(hypothesis, references, n, clip) -> tuple[int, int]:
    """(matches, total) with each n-gram's count clipped by clip(ref counts)."""
    hyp = _counts(hypothesis, n)
    refs = [_counts(r, n) for r in references]
    matches = sum(
        min(count, clip([r[gram] for r in refs])) for gram, count in hyp.items()
    )
    return matches, sum(hyp.values())


_CLIPPING_CASES = [  # the first case tells every known mistake apart
    ("the the the the cat cat sat", ["the the cat", "cat cat the sat"], 1),
    ("the the the cat sat", ["the cat sat on the mat", "a cat sat there"], 1),
    ("the cat the cat", ["the cat is here", "cat the cat the"], 2),
    ("a a a b", ["b a", "a a b", "c"], 1),
    ("x y z", ["p q", "y z x"], 1),
    ("a b c d", ["a b c d", "a b"], 3),
]


def check_clipped_matches_multi(clipped_matches_multi: Callable) -> None:
    """Check `clipped_matches_multi(hypothesis, references, n)`."""
    name = "clipped_matches_multi"

    def run_cases() -> None:
        for hypothesis, references, n in _CLIPPING_CASES:
            hyp, refs = hypothesis.split(), [r.split() for r in references]
            expected = _clipped(hyp, refs, n, max)
            mistakes = [
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
            ]
            got = _call(clipped_matches_multi, name, hyp, list(refs), n)
            if isinstance(got, list):
                got = tuple(got)
            _expect_equal(
                name,
                [hyp, refs, n],
                got,
                expected,
                mistakes,
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


def check_brevity_penalty_multi(brevity_penalty_multi: Callable) -> None:
    """Check `brevity_penalty_multi(hyp_lens, ref_lens)`: corpus BP, closest refs."""
    name = "brevity_penalty_multi"
    cases = [  # the first case tells every known mistake apart
        ([4, 6, 3], [[2, 6], [8, 10, 1], [5, 7]]),
        ([5, 8, 3], [[6, 9], [7, 10], [3, 5]]),
        ([4, 10], [[3, 5], [12, 9]]),
        ([6, 6], [[8, 9], [10, 7]]),
        ([2, 7, 7], [[4, 3], [9, 8], [8, 6]]),
    ]

    def run_cases() -> None:
        for hyp_lens, ref_lens in cases:
            pairs = list(zip(hyp_lens, ref_lens, strict=True))
            c = sum(hyp_lens)
            closest = sum(_closest(h, rs) for h, rs in pairs)
            expected = _bp(c, closest)
            mistakes = [
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
                    sum(_bp(h, _closest(h, rs)) for h, rs in pairs)
                    / len(pairs),
                    "the brevity penalty is computed once for the corpus, "
                    "from the summed lengths, not averaged over sentences.",
                ),
                (
                    _inverted_bp(c, closest),
                    "the exponent is 1 - r / c (reference over hypothesis).",
                ),
            ]
            got = _call(
                brevity_penalty_multi,
                name,
                list(hyp_lens),
                [list(rs) for rs in ref_lens],
            )
            _expect_close(
                name, [hyp_lens, ref_lens], got, expected, mistakes, atol=1e-6
            )

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
            got = _call(beam_step, name, scores.clone(), log_probs.clone(), k)
            if not isinstance(got, (tuple, list)) or len(got) != 3:
                _fail(
                    name,
                    "must return three things: (scores, parents, "
                    "tokens), each of k entries.",
                    inputs,
                )
            got_scores, got_parents, got_tokens = (
                torch.as_tensor(x) for x in got
            )
            own_best = log_probs.max(dim=-1)
            flat = log_probs.flatten().topk(k)
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
                    (scores[:, None] * log_probs).flatten().topk(k).values,
                    "log-probabilities add (probabilities multiply).",
                ),
            ]
            _expect_close(
                name, inputs, got_scores, best, score_mistakes, what="scores"
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
            index_mistakes += [((flat_index // vocab).tolist(), split_hint)]
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
