"""BLEU and exact match (chapter 8): the notes' worked example, and equality
with sacreBLEU on the same tokens."""

import math
import random

import pytest
import sacrebleu

from transformer_course import bleu, exact_match_score
from transformer_course.evaluation import (
    brevity_penalty,
    clipped_matches,
    ngram_counts,
)

REFERENCE = "A B C D E F".split()
HYPOTHESIS = "A B B C D".split()


def sacre_bleu(hypotheses, references, smooth_method="none"):
    metric = sacrebleu.BLEU(
        tokenize="none", force=True, smooth_method=smooth_method
    )
    return metric.corpus_score(
        [" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]]
    ).score


def test_ngram_counts():
    assert ngram_counts("A B B".split(), 1) == {("A",): 1, ("B",): 2}
    assert ngram_counts("A B B".split(), 2) == {("A", "B"): 1, ("B", "B"): 1}
    assert ngram_counts("A B".split(), 3) == {}


@pytest.mark.parametrize(
    ("n", "expected"), [(1, (4, 5)), (2, (3, 4)), (3, (1, 3)), (4, (0, 2))]
)
def test_the_notes_clipped_precisions(n, expected):
    assert clipped_matches(HYPOTHESIS, REFERENCE, n) == expected


def test_clipping_counts_a_repeated_word_once():
    assert clipped_matches("B B B B".split(), REFERENCE, 1) == (1, 4)


def test_brevity_penalty():
    assert brevity_penalty(5, 6) == pytest.approx(math.exp(-0.2))
    assert brevity_penalty(6, 6) == brevity_penalty(9, 6) == 1.0
    assert brevity_penalty(0, 6) == 0.0


def test_the_notes_example_scores_zero_without_smoothing():
    assert bleu([HYPOTHESIS], [REFERENCE]) == 0.0
    assert bleu([HYPOTHESIS], [REFERENCE], smooth_method="exp") == (
        pytest.approx(sacre_bleu([HYPOTHESIS], [REFERENCE], "exp"))
    )


def test_perfect_and_short_sentences():
    assert bleu([REFERENCE], [REFERENCE]) == pytest.approx(100.0)
    assert bleu([["a", "b", "c"]], [["a", "b", "c"]]) == 0.0  # no 4-gram


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("smooth_method", ["none", "exp"])
def test_equal_to_sacrebleu(seed, smooth_method):
    rng = random.Random(seed)
    vocab = rng.choice([3, 5, 10, 50])
    n = rng.randint(1, 40)
    hyps = [
        [str(rng.randrange(vocab)) for _ in range(rng.randint(0, 15))]
        for _ in range(n)
    ]
    refs = [
        [str(rng.randrange(vocab)) for _ in range(rng.randint(1, 15))]
        for _ in range(n)
    ]
    ours = bleu(hyps, refs, smooth_method=smooth_method)
    assert ours == pytest.approx(
        sacre_bleu(hyps, refs, smooth_method), abs=1e-9
    )


def test_chinese_characters_equal_sacrebleu_zh():
    refs = ["我昨天在车站等你", "他们每天在学校喝茶", "医生不喜欢咖啡"]
    hyps = ["我昨天在车站等了你", "他们每天在学校喝水", "医生不喜欢咖啡"]
    zh = sacrebleu.corpus_bleu(hyps, [refs], tokenize="zh").score
    ours = bleu([list(h) for h in hyps], [list(r) for r in refs])
    assert ours == pytest.approx(zh, abs=0.01)
    assert sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a").score < 1.0


def test_exact_match_score():
    assert exact_match_score([["a"], ["b", "c"]], [["a"], ["b"]]) == 50.0
    assert exact_match_score([], []) == 0.0


@pytest.mark.parametrize(
    ("hyps", "refs", "error", "words"),
    [
        (["a b"], [["a", "b"]], TypeError, "token lists"),
        ("a b", [["a", "b"]], TypeError, "list of token lists"),
        ([["a"]], [["a"], ["b"]], ValueError, "one reference per hypothesis"),
    ],
)
def test_bad_input_gets_a_clear_error(hyps, refs, error, words):
    with pytest.raises(error) as raised:
        bleu(hyps, refs)
    assert words in str(raised.value)


def test_unknown_smoothing_is_refused():
    with pytest.raises(ValueError, match="smooth_method"):
        bleu([["a"]], [["a"]], smooth_method="floor")
