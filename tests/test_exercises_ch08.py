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
    known_mistakes,
)

from transformer_course.exercises import ExerciseError, ch08
from transformer_course.exercises.ch08 import (
    BEAM_MISTAKES,
    BREVITY_PENALTY_MULTI,
    CLIPPED_MATCHES_MULTI,
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
        (lambda h, r, n: (0, len(h)), None),
        (lambda h, r, n: None, "return"),
    ],
    ids=["zero", "none"],
)
def test_clipped_matches_multi_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_clipped_matches_multi, wrong_answer, hint)


def _message(check, wrong_answer) -> str:
    with pytest.raises(ExerciseError) as failure:
        check(wrong_answer)
    return str(failure.value)


def _counting(hypothesis, references, n, windows=1, refs_windows=1):
    hyp = Counter(
        tuple(hypothesis[i : i + n])
        for i in range(len(hypothesis) - n + windows)
    )
    refs = [
        Counter(tuple(r[i : i + n]) for i in range(len(r) - n + refs_windows))
        for r in references
    ]
    matches = sum(min(c, max(r[g] for r in refs)) for g, c in hyp.items())
    return matches, sum(hyp.values())


def _best_single_reference(hypothesis, references, n):
    total = sum(_grams(hypothesis, n).values())
    return max(
        clipped_matches_multi(hypothesis, [r], n)[0] for r in references
    ), total


def _unclipped_by_hypothesis(hypothesis, references, n):
    hyp = _grams(hypothesis, n)
    refs = [_grams(r, n) for r in references]
    return sum(max(r[g] for r in refs) for g in hyp), sum(hyp.values())


def _distinct(hypothesis, references, n):
    hyp = _grams(hypothesis, n)
    refs = [_grams(r, n) for r in references]
    return sum(1 for g in hyp if any(r[g] for r in refs)), sum(hyp.values())


def _pops_references(hypothesis, references, n):
    result = clipped_matches_multi(hypothesis, references, n)
    references.pop()
    return result


def _union(hypothesis, references, n):
    """Right, written differently: Counter | takes the max, & the min."""
    hyp, most = _grams(hypothesis, n), Counter()
    for reference in references:
        most |= _grams(reference, n)
    return sum((hyp & most).values()), sum(hyp.values())


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda h, r, n: _counting(h, r, n, 0, 0), "L - n + 1 n-grams"),
        (lambda h, r, n: _counting(h, r, n, 0, 1), "L - n + 1 n-grams"),
        (_best_single_reference, "one best"),
        (_unclipped_by_hypothesis, "in the hypothesis too"),
        (_distinct, "not each distinct"),
        (
            lambda h, r, n: (clipped_matches_multi(h, r, n)[0], len(h)),
            "not its number of tokens",
        ),
        (
            lambda h, r, n: (
                clipped_matches_multi(h, r, n)[0],
                sum(len(x) - n + 1 for x in r),
            ),
            "BLEU is a precision",
        ),
        (lambda h, r, n: clipped_matches_multi(h, r, 1), "not single tokens"),
        (_pops_references, "changed references in place"),
    ],
    ids=[
        "windows",
        "hypothesis-windows",
        "best-reference",
        "no-min",
        "distinct",
        "tokens",
        "recall",
        "unigrams",
        "in-place",
    ],
)
def test_clipped_matches_multi_rejects_more_mistakes(wrong_answer, hint):
    assert_rejected(check_clipped_matches_multi, wrong_answer, hint)


def test_clipping_hints_fit_every_case():
    """A hint is given only for a mistake that explains every case: counting
    each distinct n-gram once agrees with "the first reference only" on the
    first case, by chance, and must not be told so."""
    message = _message(check_clipped_matches_multi, _distinct)
    assert "not only the first" not in message, message
    message = _message(check_clipped_matches_multi, _unclipped_by_hypothesis)
    assert "sum over the references" not in message, message


def _first_on_tie(h, rs):
    return min(rs, key=lambda r: abs(r - h))


def _closest_not_longer(h, rs):
    return max([r for r in rs if r <= h] or [min(rs)])


def _closest_not_shorter(h, rs):
    return min([r for r in rs if r >= h] or [max(rs)])


def _bp_formula(formula):
    def brevity_penalty_multi(hyp_lens, ref_lens):
        c = sum(hyp_lens)
        r = sum(
            _closest(h, rs) for h, rs in zip(hyp_lens, ref_lens, strict=True)
        )
        return formula(c, r)

    return brevity_penalty_multi


def _sorts_hyp_lens(hyp_lens, ref_lens):
    hyp_lens.sort()
    return brevity_penalty_multi(hyp_lens, ref_lens)


def _sorts_references(hyp_lens, ref_lens):
    for lengths in ref_lens:
        lengths.sort()  # then min() on a tie keeps the shorter
    return _bp_with(_first_on_tie)(hyp_lens, ref_lens)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_bp_with(_first_on_tie), "keeps the first in the list"),
        (_bp_with(_closest_not_longer), "shorter or longer"),
        (_bp_with(_closest_not_shorter), "shorter or longer"),
        (_bp_with(lambda h, rs: rs[0]), "not the first"),
        (
            _bp_formula(lambda c, r: math.exp(1 - r / c)),
            "no penalty when c >= r",
        ),
        (
            _bp_formula(lambda c, r: 1.0 if c >= r else math.exp(r / c - 1)),
            "at most 1",
        ),
        (
            _bp_formula(lambda c, r: 1.0 if c >= r else math.exp(1 - r // c)),
            "integer division",
        ),
        (_bp_formula(lambda c, r: min(1.0, c / r)), "not c / r"),
        (
            _bp_formula(lambda c, r: 0.0 if c >= r else 1 - r / c),
            "not its logarithm",
        ),
        (
            lambda hl, rl: math.prod(
                _bp(h, _closest(h, rs)) for h, rs in zip(hl, rl, strict=True)
            ),
            "not multiplied",
        ),
        (
            lambda hl, rl: _bp(
                len(hl),
                sum(_closest(h, rs) for h, rs in zip(hl, rl, strict=True)),
            ),
            "not the number of",
        ),
        (_sorts_hyp_lens, "changed hyp_lens in place"),
        (_sorts_references, "changed ref_lens in place"),
    ],
    ids=[
        "first-on-tie",
        "not-longer",
        "not-shorter",
        "first-reference",
        "no-cap",
        "flipped-exponent",
        "integer-division",
        "ratio",
        "logarithm",
        "product",
        "sentences",
        "sorts-hyp-lens",
        "sorts-references",
    ],
)
def test_brevity_penalty_multi_rejects_more_mistakes(wrong_answer, hint):
    assert_rejected(check_brevity_penalty_multi, wrong_answer, hint)


def test_brevity_penalty_hints_fit_every_case():
    """Many mistakes give BP = 1 on one input; a hint must explain them all."""
    message = _message(
        check_brevity_penalty_multi,
        _bp_formula(lambda c, r: 1.0 if c >= r else math.exp(1 - r // c)),
    )
    assert "not the shortest" not in message, message
    message = _message(check_brevity_penalty_multi, _bp_with(_first_on_tie))
    assert "not the average" not in message, message
    assert "Here c = " in message, message  # the lengths it should have used


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda hl, rl: 1.0, None),
    ],
    ids=["one"],
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


def _adds_in_place(scores, log_probs, k):
    log_probs += scores[:, None]
    return beam_step(torch.zeros_like(scores), log_probs, k)


def _updates_scores_in_place(scores, log_probs, k):
    best, parents, tokens = beam_step(scores, log_probs, k)
    scores.copy_(best)
    return scores, parents, tokens


def _worst_first(scores, log_probs, k):
    best, parents, tokens = beam_step(scores, log_probs, k)
    return best.flip(0), parents.flip(0), tokens.flip(0)


def _float_parents(scores, log_probs, k):
    vocab = log_probs.size(1)
    best, index = (scores[:, None] + log_probs).flatten().topk(k)
    return best, (index / vocab).floor(), index % vocab


def _token_scores(scores, log_probs, k):
    best, parents, tokens = beam_step(scores, log_probs, k)
    return log_probs[parents, tokens], parents, tokens


def _probabilities(scores, log_probs, k):
    best, parents, tokens = beam_step(scores, log_probs, k)
    return best.exp(), parents, tokens


def _ranked_by_token(scores, log_probs, k):
    vocab = log_probs.size(1)
    _, index = log_probs.flatten().topk(k)
    total = (scores[:, None] + log_probs).flatten()
    return total[index], index // vocab, index % vocab


def _best_beam_only(scores, log_probs, k):
    parent = int(scores.argmax())
    best, tokens = (scores[parent] + log_probs[parent]).topk(k)
    return best, torch.full((k,), parent), tokens


def _two_stage(scores, log_probs, k):
    """Right, as beam_search does it: each beam's topk(k) first."""
    values, ids = log_probs.topk(k, dim=-1)  # (k, k)
    best, index = (scores[:, None] + values).flatten().topk(k)
    return best, index // k, ids.flatten()[index]


def _two_stage_positions(scores, log_probs, k):
    values, _ = log_probs.topk(k, dim=-1)
    best, index = (scores[:, None] + values).flatten().topk(k)
    return best, index // k, index % k


def _transposed(scores, log_probs, k):
    """Right, over a (vocab_size, k) table."""
    best, index = (log_probs.T + scores).flatten().topk(k)
    return best, index % k, index // k


def _in_probability(scores, log_probs, k):
    """Right, in probabilities (the log of a product is the sum of logs)."""
    vocab = log_probs.size(1)
    p = (scores.exp()[:, None] * log_probs.exp()).flatten()
    best, index = p.topk(k)
    return best.log(), index // vocab, index % vocab


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (_adds_in_place, "changed log_probs in place"),
        (_updates_scores_in_place, "changed scores in place"),
        (_worst_first, "not best first"),
        (_float_parents, "i // vocab_size"),
        (_token_scores, "not the token's log-prob"),
        (_probabilities, "not probabilities"),
        (_ranked_by_token, "by their whole score"),
        (_best_beam_only, "from several beams"),
        (_two_stage_positions, "position in its beam's topk(k)"),
        (
            lambda s, lp, k: torch.stack(beam_step(s, lp, k)[:1] * 3),
            "it returned tensor of shape (3, 3)",
        ),
    ],
    ids=[
        "log-probs-in-place",
        "scores-in-place",
        "worst-first",
        "float-parents",
        "token-scores",
        "probabilities",
        "ranked-by-token",
        "best-beam-only",
        "topk-positions",
        "stacked",
    ],
)
def test_beam_step_rejects_more_mistakes(wrong_answer, hint):
    assert_rejected(check_beam_step, wrong_answer, hint)


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (check_clipped_matches_multi, _union),
        (check_beam_step, _two_stage),
        (check_beam_step, _transposed),
        (check_beam_step, _in_probability),
        (
            check_brevity_penalty_multi,
            _bp_formula(lambda c, r: 1.0 if c > r else math.exp(1 - r / c)),
        ),
    ],
    ids=[
        "union",
        "two-stage",
        "transposed",
        "probabilities",
        "strict-c-above-r",
    ],
)
def test_right_answers_written_differently_are_accepted(check, answer, capsys):
    assert_accepts(check, answer, capsys)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(CLIPPED_MATCHES_MULTI, BREVITY_PENALTY_MULTI),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _beam_mistake(part, mistake):
    """beam_step right but for `part`, where it makes `mistake`."""
    position = ["scores", "parents", "tokens"].index(part)

    def answer(scores, log_probs, k):
        parts = list(beam_step(scores, log_probs, k))
        wrong = (mistake.example or mistake.variant)(scores, log_probs, k)
        parts[position] = torch.as_tensor(wrong)
        return tuple(parts)

    return answer


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        pytest.param(_beam_mistake(part, m), m.hint, id=f"{part}-{i}")
        for part, mistakes in BEAM_MISTAKES.items()
        for i, m in enumerate(mistakes)
    ],
)
def test_every_known_beam_mistake_is_caught_with_its_hint(wrong_answer, hint):
    assert_rejected(check_beam_step, wrong_answer, hint)


def _grams(words, n):
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def _total_may_go_negative(hypothesis, references, n):
    counts = _grams(hypothesis, n)
    matches = sum(
        min(c, max(_grams(r, n)[g] for r in references))
        for g, c in counts.items()
    )
    return matches, len(hypothesis) - n + 1


def _matched_as_substrings(hypothesis, references, n):
    counts = _grams(hypothesis, n)
    matches = sum(
        min(c, max(" ".join(r).count(" ".join(g)) for r in references))
        for g, c in counts.items()
    )
    return matches, max(len(hypothesis) - n + 1, 0)


@pytest.mark.parametrize(
    "wrong_answer",
    [_total_may_go_negative, _matched_as_substrings],
    ids=["negative-total", "substrings"],
)
def test_clipped_matches_multi_rejects_what_its_first_cases_let_through(
    wrong_answer,
):
    assert_rejected(check_clipped_matches_multi, wrong_answer, None)
