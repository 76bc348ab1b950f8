"""Chapter 8's exercise checkers accept the reference and reject the known wrong answers."""

import math
from collections import Counter

import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_random_state_untouched,
    assert_rejected,
)

from transformer_course.exercises import ch08
from transformer_course.exercises.ch08 import (
    check_beam_step,
    check_brevity_penalty_multi,
    check_clipped_matches_multi,
)


def _grams(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _clipped(clip):
    def clipped_matches_multi(hypothesis, references, n):
        hyp = _grams(hypothesis, n)
        refs = [_grams(r, n) for r in references]
        matches = sum(
            min(count, clip([r[g] for r in refs])) for g, count in hyp.items()
        )
        return matches, sum(hyp.values())

    return clipped_matches_multi


def clipped_matches_multi(hypothesis, references, n):
    return _clipped(max)(hypothesis, references, n)


def _closest(h, rs, shorter=True):
    return min(rs, key=lambda r: (abs(r - h), r if shorter else -r))


def _bp(c, r):
    return 1.0 if c >= r else math.exp(1 - r / c)


def _bp_with(pick):
    def brevity_penalty_multi(hyp_lens, ref_lens):
        r = sum(pick(h, rs) for h, rs in zip(hyp_lens, ref_lens, strict=True))
        return _bp(sum(hyp_lens), r)

    return brevity_penalty_multi


brevity_penalty_multi = _bp_with(_closest)


def _inverted(hyp_lens, ref_lens):
    c = sum(hyp_lens)
    r = sum(_closest(h, rs) for h, rs in zip(hyp_lens, ref_lens, strict=True))
    return 1.0 if c >= r else math.exp(1 - c / r)


def beam_step(scores, log_probs, k):
    vocab = log_probs.size(1)
    best, index = (scores[:, None] + log_probs).flatten().topk(k)
    return best, index // vocab, index % vocab


def beam_step_float32(scores, log_probs, k):
    best, parents, tokens = beam_step(scores.float(), log_probs.float(), k)
    return best, parents, tokens


ACCEPTED = [
    (check_clipped_matches_multi, clipped_matches_multi),
    (check_brevity_penalty_multi, brevity_penalty_multi),
    (check_beam_step, beam_step),
]


def test_every_checker_has_a_reference():
    assert_every_checker_accepted(ch08, ACCEPTED)


@pytest.mark.parametrize(("check", "reference"), ACCEPTED)
def test_accepts_the_reference(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def test_accepts_float32_and_lists(capsys):
    assert_accepts(check_beam_step, beam_step_float32, capsys)

    def as_lists(scores, log_probs, k):
        return tuple(x.tolist() for x in beam_step(scores, log_probs, k))

    assert_accepts(check_beam_step, as_lists, capsys)
    assert_accepts(
        check_clipped_matches_multi,
        lambda h, r, n: list(clipped_matches_multi(h, r, n)),
        capsys,
    )


@pytest.mark.parametrize(("check", "reference"), ACCEPTED)
def test_random_state_untouched(check, reference):
    assert_random_state_untouched(check, reference)
    assert_random_state_untouched(check, lambda *args: None)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_clipped(sum), "not at the sum"),
        (_clipped(min), "not the smallest"),
        (_clipped(lambda counts: counts[0]), "not only the first"),
        (_clipped(lambda c: math.inf if any(c) else 0), "not clipped"),
        (lambda h, r, n: (0, len(h)), None),
        (lambda h, r, n: None, "return"),
    ],
    ids=["sum", "min", "first-reference", "unclipped", "zero", "none"],
)
def test_clipped_matches_multi_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_clipped_matches_multi, wrong_answer, hint)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_bp_with(lambda h, rs: min(rs)), "not the shortest"),
        (_bp_with(lambda h, rs: max(rs)), "not the longest"),
        (_bp_with(lambda h, rs: sum(rs) / len(rs)), "not the average"),
        (_bp_with(lambda h, rs: _closest(h, rs, False)), "shorter reference"),
        (
            lambda hl, rl: (
                sum(
                    _bp(h, _closest(h, rs))
                    for h, rs in zip(hl, rl, strict=True)
                )
                / len(hl)
            ),
            "once for the corpus",
        ),
        (_inverted, "1 - r / c"),
        (lambda hl, rl: 1.0, None),
    ],
    ids=[
        "shortest",
        "longest",
        "average",
        "tie-longer",
        "mean",
        "inverted",
        "one",
    ],
)
def test_brevity_penalty_multi_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_brevity_penalty_multi, wrong_answer, hint)


def _per_beam_best(scores, log_probs, k):
    values, tokens = log_probs.max(dim=-1)
    order = (scores + values).sort(descending=True)
    return order.values, order.indices, tokens[order.indices]


def _without_scores(scores, log_probs, k):
    vocab = log_probs.size(1)
    best, index = log_probs.flatten().topk(k)
    return best, index // vocab, index % vocab


def _split_by_k(scores, log_probs, k):
    best, index = (scores[:, None] + log_probs).flatten().topk(k)
    return best, index // k, index % k


def _swapped_split(scores, log_probs, k):
    vocab = log_probs.size(1)
    best, index = (scores[:, None] + log_probs).flatten().topk(k)
    return best, index % vocab, index // vocab


def _multiplied(scores, log_probs, k):
    vocab = log_probs.size(1)
    best, index = (scores[:, None] * log_probs).flatten().topk(k)
    return best, index // vocab, index % vocab


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_per_beam_best, "only its own best token"),
        (_without_scores, "add each beam's score"),
        (_split_by_k, "i // vocab_size"),
        (_swapped_split, "i // vocab_size"),
        (_multiplied, "log-probabilities add"),
        (lambda s, lp, k: beam_step(s, lp, k)[0], "three things"),
        (lambda s, lp, k: beam_step(s, lp, k)[:2], "three things"),
    ],
    ids=[
        "per-beam",
        "no-scores",
        "by-k",
        "swapped",
        "multiplied",
        "scores-only",
        "two",
    ],
)
def test_beam_step_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_beam_step, wrong_answer, hint)


def test_beam_step_leaves_inputs_alone():
    def in_place(scores, log_probs, k):
        log_probs += scores[:, None]
        return beam_step(torch.zeros_like(scores), log_probs, k)

    check_beam_step(
        in_place
    )  # inputs are copies: the learner's edit is harmless
