"""Checkers for chapter 8: decoding and evaluation."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

from transformer_course.exercises._core import (
    IN_PLACE_NEEDED,
    Exercise,
    Mistake,
    describe,
    expect_close,
    expect_equal,
    same,
    fail,
    message,
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
    clip=max,
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
    best = max(_clipped(hypothesis, [r], n)[0] for r in references)
    return best, sum(_counts(hypothesis, n).values())


def _unclipped(hyp, refs, n) -> tuple[int, int]:
    """The largest reference count, not at most the hypothesis's count."""
    ref_counts = [_counts(r, n) for r in refs]
    largest = sum(max(r[g] for r in ref_counts) for g in _counts(hyp, n))
    return largest, _clipped(hyp, refs, n)[1]


def _distinct(hyp, refs, n, total=None) -> tuple[int, int]:
    """Each distinct n-gram counted once; `total` of distinct ones too."""
    ref_counts = [_counts(r, n) for r in refs]
    hyp_counts = _counts(hyp, n)
    matches = sum(1 for g in hyp_counts if any(r[g] for r in ref_counts))
    return matches, len(hyp_counts) if total else _clipped(hyp, refs, n)[1]


_DISTINCT = (
    "count every occurrence of an n-gram (up to its clip), not each distinct "
    "n-gram once."
)
_OFF_BY_ONE = (
    "a sentence of L tokens has L - n + 1 n-grams: range(len(tokens) - n + "
    "1), not range(len(tokens) - n)."
)
_CHANGED_LISTS_HINT = (
    "sort(), append(), pop() and x[i] = change the caller's lists; build new "
    "ones (sorted(...), a + [x], a copy)."
)

_CLIPPING_CASES = [
    ("the the the the cat cat sat", ["the the cat", "cat cat the sat"], 1),
    ("the the the cat sat", ["the cat sat on the mat", "a cat sat there"], 1),
    ("the cat the cat", ["the cat is here", "cat the cat the"], 2),
    ("a a a b", ["b a", "a a b", "c"], 1),
    ("x y z", ["p q", "y z x"], 1),
    ("a b c d", ["a b c d", "a b"], 3),
    ("a", ["a b c"], 3),  # shorter than n: no n-gram at all, (0, 0)
    ("a", ["cat"], 1),  # tokens, not letters: "a" is not in "cat"
    ("a a a", ["a a a"], 2),  # overlapping bigrams: two of "a a"
]

CLIPPED_MATCHES_MULTI = Exercise(
    name="clipped_matches_multi",
    success="clips each n-gram at its largest reference count.",
    doc="""Check `clipped_matches_multi(hypothesis, references, n)`.""",
    cases=[
        (hyp.split(), [r.split() for r in refs], n)
        for hyp, refs, n in _CLIPPING_CASES
    ],
    reference=_clipped,
    compare="equal",
    what="(matches, total)",
    names=("hypothesis", "references", "n"),
    in_place=(
        "changed {what} in place; leave the inputs as they were.",
        _CHANGED_LISTS_HINT,
    ),
    convert=lambda name, shown, got: (
        tuple(got) if isinstance(got, list) else got
    ),
    agree=same,
    mistakes=[
        Mistake(
            lambda hyp, refs, n: _clipped(hyp, refs, n, sum),
            "clip at the largest count in any ONE reference, not at the sum "
            "over the references.",
        ),
        Mistake(
            lambda hyp, refs, n: _clipped(hyp, refs, n, min),
            "clip at the largest count in any one reference (max), not the "
            "smallest: an n-gram absent from one reference can still match "
            "another.",
        ),
        Mistake(
            lambda hyp, refs, n: _clipped(hyp, refs, n, lambda c: c[0]),
            "every reference counts, not only the first.",
        ),
        Mistake(
            lambda hyp, refs, n: _clipped(
                hyp, refs, n, lambda c: math.inf if any(c) else 0
            ),
            "the counts are not clipped: an n-gram matches at most as often "
            "as it occurs in a reference.",
        ),
        Mistake(
            _best_reference,
            "clip each n-gram on its own, at its largest count in any "
            "reference; do not pick the one best reference for the whole "
            "hypothesis.",
        ),
        Mistake(
            _unclipped,
            "min(count, largest reference count): an n-gram matches at most "
            "as often as it occurs in the hypothesis too.",
        ),
        Mistake(_distinct, _DISTINCT),
        Mistake(lambda *args: _distinct(*args, total="distinct"), _DISTINCT),
        Mistake(
            lambda hyp, refs, n: _clipped(hyp, refs, n, extra=0), _OFF_BY_ONE
        ),
        Mistake(
            lambda hyp, refs, n: _clipped(hyp, refs, n, extra=0, ref_extra=1),
            _OFF_BY_ONE,
        ),
        Mistake(
            lambda hyp, refs, n: (_clipped(hyp, refs, n)[0], len(hyp)),
            "total is the number of the hypothesis's n-grams, len(hypothesis) "
            "- n + 1, not its number of tokens.",
        ),
        Mistake(
            lambda hyp, refs, n: (
                _clipped(hyp, refs, n)[0],
                sum(sum(_counts(r, n).values()) for r in refs),
            ),
            "total counts the hypothesis's n-grams (BLEU is a precision), not "
            "the references'.",
        ),
        Mistake(
            lambda hyp, refs, n: _clipped(hyp, refs, 1),
            "count n-grams of length n, not single tokens.",
        ),
    ],
)
check_clipped_matches_multi = CLIPPED_MATCHES_MULTI.checker()


def _closest(hyp_len, ref_lens, prefer_shorter=True):
    sign = 1 if prefer_shorter else -1  # which of two as close wins
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), sign * r))


def _bp(c, r) -> float:
    if c >= r:
        return 1.0
    return math.exp(1 - r / c) if c > 0 else 0.0


def _closest_lengths(hyp_lens, ref_lens) -> list[int]:
    return [_closest(h, rs) for h, rs in zip(hyp_lens, ref_lens, strict=True)]


def _with_r(choose: Callable, formula: Callable = _bp) -> Callable:
    """The corpus BP (or `formula(c, r)`) with each sentence's r from
    `choose(h, ref_lens)`: the right one with `_closest`."""

    def variant(hyp_lens, ref_lens):
        pairs = zip(hyp_lens, ref_lens, strict=True)
        return formula(sum(hyp_lens), sum(choose(h, rs) for h, rs in pairs))

    return variant


_corpus_bp = _with_r(_closest)


def _with_formula(formula: Callable) -> Callable:
    """`formula(c, r)` instead of the BP, on the corpus's c and closest r."""
    return _with_r(_closest, formula)


def _per_sentence(hyp_lens, ref_lens) -> list[float]:
    pairs = zip(hyp_lens, ref_lens, strict=True)
    return [_bp(h, _closest(h, rs)) for h, rs in pairs]


def _explain_bp(hyp_lens, ref_lens) -> str:
    lengths = _closest_lengths(hyp_lens, ref_lens)
    return message(
        "Here c = {c} and r = {lengths} = {r} (the closest reference lengths).",
        c=sum(hyp_lens),
        lengths=" + ".join(map(str, lengths)),
        r=sum(lengths),
    )


def _close_number(a, b) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-5, abs_tol=1e-6)
    except (TypeError, ValueError):
        return False


_CLOSEST = (
    "take the reference length closest to the hypothesis's, shorter or "
    "longer: min(lengths, key=lambda r: (abs(r - h), r))."
)

BREVITY_PENALTY_MULTI = Exercise(
    name="brevity_penalty_multi",
    success="compares the corpus with its closest references.",
    doc="""Check `brevity_penalty_multi(hyp_lens, ref_lens)`: corpus BP, closest refs.""",
    cases=[
        ([4, 6, 3], [[2, 6], [8, 10, 1], [5, 7]]),
        ([5, 8, 3], [[6, 9], [7, 10], [3, 5]]),
        ([4, 10], [[3, 5], [12, 9]]),
        ([6, 6], [[8, 9], [10, 7]]),
        ([2, 7, 7], [[4, 3], [9, 8], [8, 6]]),
        # r = 6 + 6 + 3 (closest), 3 + 6 + 3 (closest not longer),
        # 2 + 6 + 3 (shortest), 6 + 6 + 7 (closest not shorter)
        ([5, 1, 4], [[2, 3, 6], [6, 9], [3, 7]]),
    ],
    reference=_corpus_bp,
    atol=1e-6,
    names=("hyp_lens", "ref_lens"),
    in_place=(
        "changed {what} in place (it is now {now}); leave the inputs as they "
        "were.",
        "hyp_lens[i] must stay paired with ref_lens[i]; sort(), append(), "
        "pop() and x[i] = change the caller's lists; build new ones "
        "(sorted(...), a + [x], a copy).",
    ),
    agree=_close_number,
    explain=_explain_bp,
    mistakes=[
        Mistake(
            _with_r(lambda h, rs: min(rs)),
            "use the reference length closest to each hypothesis's, not the "
            "shortest.",
        ),
        Mistake(
            _with_r(lambda h, rs: max(rs)),
            "use the reference length closest to each hypothesis's, not the "
            "longest.",
        ),
        Mistake(
            _with_r(lambda h, rs: sum(rs) / len(rs)),
            "use the closest reference length, not the average.",
        ),
        Mistake(
            _with_r(lambda h, rs: _closest(h, rs, prefer_shorter=False)),
            "on a tie (one reference as much shorter as another is longer), "
            "take the shorter reference, as sacreBLEU does.",
        ),
        Mistake(
            _with_r(lambda h, rs: min(rs, key=lambda r: abs(r - h))),
            "on a tie, min() with key=abs(r - h) keeps the first in the list; "
            "take the shorter reference, as sacreBLEU does: key=lambda r: "
            "(abs(r - h), r).",
        ),
        Mistake(
            _with_r(lambda h, rs: rs[0]),
            "use the closest of each sentence's reference lengths, not the "
            "first.",
        ),
        Mistake(
            _with_r(lambda h, rs: max([r for r in rs if r <= h] or [min(rs)])),
            _CLOSEST,
        ),
        Mistake(
            _with_r(lambda h, rs: min([r for r in rs if r >= h] or [max(rs)])),
            _CLOSEST,
        ),
        Mistake(
            lambda *args: sum(_per_sentence(*args)) / len(args[0]),
            "the brevity penalty is computed once for the corpus, from the "
            "summed lengths, not averaged over sentences.",
        ),
        Mistake(
            lambda *args: math.prod(_per_sentence(*args)),
            "the brevity penalty is computed once for the corpus, from the "
            "summed lengths, not multiplied over sentences.",
        ),
        Mistake(
            _with_formula(lambda c, r: 1.0 if c >= r else math.exp(1 - c / r)),
            "the exponent is 1 - r / c (reference over hypothesis).",
        ),
        Mistake(
            _with_formula(lambda c, r: 1.0 if c >= r else math.exp(r / c - 1)),
            "the exponent is 1 - r / c, negative when c < r: the penalty is "
            "at most 1.",
        ),
        Mistake(
            _with_formula(lambda c, r: math.exp(1 - r / c)),
            "no penalty when c >= r: BP is 1 then (exp(1 - r / c) would "
            "exceed 1).",
        ),
        Mistake(
            _with_formula(lambda c, r: 1.0 if c >= r else math.exp(1 - r // c)),
            "r // c is integer division: use r / c.",
        ),
        Mistake(
            _with_formula(lambda c, r: min(1.0, c / r)),
            "BP = exp(1 - r / c) when c < r, not c / r.",
        ),
        Mistake(
            _with_formula(lambda c, r: 0.0 if c >= r else 1 - r / c),
            "return the penalty itself, exp(1 - r / c), not its logarithm.",
        ),
        Mistake(
            lambda hyp_lens, ref_lens: _bp(
                len(hyp_lens), sum(_closest_lengths(hyp_lens, ref_lens))
            ),
            "c is the sum of the hypothesis lengths, not the number of "
            "sentences.",
        ),
    ],
)
check_brevity_penalty_multi = BREVITY_PENALTY_MULTI.checker()


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


def _by_new_token(scores, log_probs, k):
    """The k best tokens' log-probs, wherever their beams rank."""
    return log_probs.flatten().topk(k)


def _not_best_first(got, scores, log_probs, k) -> bool:
    """The k best scores in another order."""
    best = _beam_reference(scores, log_probs, k)[0]
    return got.shape == best.shape and bool(
        got.double().sort(descending=True).values.allclose(best, 1e-4, 1e-4)
    )


# known mistakes in the scores, parents and tokens that beam_step returns
_BEAM_SCORES = [
    Mistake(
        lambda scores, log_probs, k: (
            (scores + log_probs.max(dim=-1).values).sort(descending=True).values
        ),
        "each beam kept only its own best token: the k best extensions may "
        "all come from one beam. Rank all k x vocab_size extensions together.",
    ),
    Mistake(
        lambda *args: _by_new_token(*args).values,
        "add each beam's score to its extensions' log-probs: a hypothesis's "
        "score is log P of the whole prefix.",
    ),
    Mistake(
        lambda scores, log_probs, k: (scores[:, None] + log_probs).flatten()[
            _by_new_token(scores, log_probs, k).indices
        ],
        "rank the extensions by their whole score, scores[:, None] + "
        "log_probs, not by the new token's log-prob alone.",
    ),
    Mistake(
        lambda scores, log_probs, k: log_probs.flatten()[
            (scores[:, None] + log_probs).flatten().topk(k).indices
        ],
        "return the extensions' whole scores (the parent's score + the "
        "token's log-prob), not the token's log-prob.",
    ),
    Mistake(
        lambda scores, log_probs, k: (
            (scores[:, None] * log_probs).flatten().topk(k).values
        ),
        "log-probabilities add (probabilities multiply).",
    ),
    Mistake(
        lambda *args: _beam_reference(*args)[0].exp(),
        "return log-probabilities, not probabilities.",
    ),
    Mistake(
        lambda scores, log_probs, k: (
            (scores[:, None] + log_probs)[scores.argmax()].topk(k).values
        ),
        "the k best extensions may come from several beams, not only from the "
        "best one: rank all k x vocab_size.",
    ),
    Mistake(
        None,
        "these are the k best scores, but not best first: topk(k) returns "
        "them sorted, the largest first.",
        when=_not_best_first,
        example=lambda *args: _beam_reference(*args)[0].flip(0),
    ),
]


def _flat_index(scores, log_probs, k):
    _, parents, tokens = _beam_reference(scores, log_probs, k)
    return parents * log_probs.size(1) + tokens


def _token_rank(scores, log_probs, k):
    """Each token's position in its beam's topk(k), not its id."""
    _, parents, tokens = _beam_reference(scores, log_probs, k)
    chosen = log_probs[parents, tokens]
    return (log_probs[parents] > chosen[:, None]).sum(-1).tolist()


_SPLIT = (
    "the flat index i over (k, vocab_size) splits as parent = i // "
    "vocab_size, token = i % vocab_size."
)
_BEAM_PARENTS = [
    Mistake(
        lambda s, lp, k: (_flat_index(s, lp, k) % lp.size(1)).tolist(), _SPLIT
    ),
    Mistake(lambda s, lp, k: (_flat_index(s, lp, k) // k).tolist(), _SPLIT),
    Mistake(lambda s, lp, k: (_flat_index(s, lp, k) % k).tolist(), _SPLIT),
    Mistake(lambda s, lp, k: _flat_index(s, lp, k).tolist(), _SPLIT),
]
# (flat % vocab_size is the token itself: not a mistake here)
_BEAM_TOKENS = _BEAM_PARENTS[1:] + [
    Mistake(
        lambda s, lp, k: (_flat_index(s, lp, k) // lp.size(1)).tolist(), _SPLIT
    ),
    Mistake(
        _token_rank,
        "that is each token's position in its beam's topk(k), not its id: "
        "map it back through the indices that topk returned.",
    ),
]
BEAM_MISTAKES = {"scores": _BEAM_SCORES, "parents": _BEAM_PARENTS}
BEAM_MISTAKES["tokens"] = _BEAM_TOKENS


def _as_three_tensors(name: str, shown, got):
    import torch

    if not isinstance(got, (tuple, list)) or len(got) != 3:
        returned = describe(got, 0)
        if isinstance(got, (tuple, list)):
            kind = type(got).__name__
            returned = message("a {kind} of {n} items", kind=kind, n=len(got))
        problem = (
            "must return three things: (scores, parents, tokens), each of k "
            "entries; it returned {returned}."
        )
        fail(name, problem, shown, returned=returned)
    return tuple(torch.as_tensor(x) for x in got)


def _judge_beam(name, shown, got, expected, *args) -> None:
    """The scores (close), then the parents and tokens (exact integers)."""
    import torch

    def known(what, answer=None):  # (wrong answer, hint) where one applies
        mistakes = BEAM_MISTAKES[what]
        return list(filter(None, (m.on(args, answer) for m in mistakes)))

    scores_known = known("scores", got[0])
    scores = message("scores")
    expect_close(name, shown, got[0], expected[0], scores_known, what=scores)
    indices = list(
        zip(("parents", "tokens"), got[1:], expected[1:], strict=True)
    )
    for what, values, _ in indices:
        if values.dtype.is_floating_point or values.dtype == torch.bool:
            problem = (
                "returned {what} as {dtype} numbers; they are indices: return "
                "integers (an int64 tensor)."
            )
            hint = (
                "i / vocab_size is true division (a float); i // vocab_size "
                "and i % vocab_size keep integers."
            )
            fail(name, problem, shown, hint, what=what, dtype=values.dtype)
    for what, values, right in indices:
        right, values = right.tolist(), values.tolist()
        expect_equal(name, shown, values, right, known(what), what=what)


BEAM_STEP = Exercise(
    name="beam_step",
    success="keeps the k best of all k x vocab_size extensions.",
    doc="""Check `beam_step(scores, log_probs, k)` -> (scores, parents, tokens).""",
    cases=_beam_cases,
    reference=_beam_reference,
    names=("scores", "log_probs", "k"),
    in_place=(
        IN_PLACE_NEEDED,
        "+=, add_() and x[...] = write into the caller's tensor; compute a "
        "new one: scores[:, None] + log_probs.",
    ),
    convert=_as_three_tensors,
    compare=_judge_beam,
)
check_beam_step = BEAM_STEP.checker()
