"""Chapter 4's exercise checkers accept the reference and reject the wrong
answers learners really give, with the hint they need."""

import numpy as np
import pytest
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_random_state_untouched,
    assert_rejected,
    known_mistakes,
)

from transformer_course import causal_mask, scaled_dot_product_attention
from transformer_course.exercises import ch04
from transformer_course.exercises.ch04 import (
    ADDITIVE_MASK,
    CAUSAL_MASK,
    DECODER_MASK,
    SLIDING_WINDOW_MASK,
    check_additive_mask,
    check_causal_mask,
    check_decoder_mask,
    check_future_leaks,
    check_sliding_window_mask,
)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(
        CAUSAL_MASK, ADDITIVE_MASK, SLIDING_WINDOW_MASK, DECODER_MASK
    ),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _ones(n):
    return np.ones((n, n), dtype=bool)


# ---------------------------------------------------------------- exercise 4.1


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda n: np.triu(_ones(n)), "upper triangle"),
        (lambda n: np.tril(_ones(n), k=-1), "diagonal must be True"),
        (lambda n: np.triu(_ones(n), k=1), "marks the forbidden keys"),
        (lambda n: np.tril(np.ones((n, n))), "boolean"),
        (lambda n: np.triu(np.full((n, n), -np.inf), k=1), "boolean"),
        (lambda n: _ones(n), None),
        (lambda n: np.tril(_ones(n)).tolist(), "not an array"),
        (lambda n: np.tril(_ones(4)), None),
        (lambda n: np.tril(_ones(n))[None], None),
    ],
    ids=[
        "upper",
        "no-diagonal",
        "inverted",
        "float-ones",
        "additive",
        "all-true",
        "list-of-lists",
        "size-hard-coded",
        "extra-axis",
    ],
)
def test_causal_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_causal_mask, wrong_answer, hint)


# ---------------------------------------------------------------- exercise 4.2

NOTES_INF = (
    -10000.0
)  # the notes' "inf", negated once more when the mask is built


def one_minus_mask_times_inf(mask):
    """The usual (1 - mask) * -1e9, with -inf: 0 * -inf is NaN."""
    with np.errstate(invalid="ignore"):
        return (1 - mask.astype(float)) * -np.inf


def additive_mask_overwriting_input(mask):
    additive = np.where(mask, 0.0, -np.inf)
    mask[...] = True  # the caller's mask is gone
    return additive


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda mask: np.where(mask, 0.0, np.inf), "sign is flipped"),
        (lambda mask: np.where(mask, 0.0, -NOTES_INF), "notes' bug"),
        (lambda mask: np.where(mask, -np.inf, 0.0), "inverted"),
        (lambda mask: np.where(mask, 0.0, -1e9), "large finite number"),
        (lambda mask: mask.astype(float), "as 0 and 1"),
        (
            lambda mask: np.where(mask, 0.0, np.finfo(np.float32).min),
            "most negative number",
        ),
        (
            lambda mask: np.where(mask, 0.0, np.finfo(float).min),
            "most negative number",
        ),
        (one_minus_mask_times_inf, "0 * -inf is NaN"),
        (additive_mask_overwriting_input, "changed its input"),
        (lambda mask: np.where(mask, 0.0, -np.inf).tolist(), "not an array"),
    ],
    ids=[
        "plus-inf",
        "notes-plus-10000",
        "inverted",
        "minus-1e9",
        "ones-and-zeros",
        "float32-min",
        "float64-min",
        "one-minus-mask-times-inf",
        "overwrites-input",
        "list",
    ],
)
def test_additive_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_additive_mask, wrong_answer, hint)


# ---------------------------------------------------------------- exercise 4.3


def _window(n, w):
    return np.tril(_ones(n)) & np.triu(_ones(n), k=-(w - 1))


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda n, w: np.tril(_ones(n)) & np.triu(_ones(n), k=-w),
            "window + 1",
        ),
        (
            lambda n, w: np.tril(_ones(n)) & np.triu(_ones(n), k=-(w - 2)),
            "window - 1",
        ),
        (
            lambda n, w: np.triu(_ones(n)) & np.tril(_ones(n), k=w - 1),
            "above the diagonal",
        ),
        (
            lambda n, w: (
                np.triu(_ones(n), k=-(w - 1)) & np.tril(_ones(n), k=w - 1)
            ),
            "symmetric",
        ),
        (lambda n, w: ~_window(n, w), "inverted"),
        (lambda n, w: np.tril(_ones(n)), "plain causal mask"),
        (lambda n, w: _window(n, w).astype(int), "boolean"),
        (lambda n, w: np.where(_window(n, w), 0.0, -np.inf), "boolean"),
    ],
    ids=[
        "window-plus-one",
        "window-minus-one",
        "future-band",
        "symmetric",
        "inverted",
        "no-window",
        "integers",
        "additive",
    ],
)
def test_sliding_window_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_sliding_window_mask, wrong_answer, hint)


# ---------------------------------------------------------------- exercise 4.4


def _decoder_mask(tokens, pad_id):
    length = tokens.shape[1]
    keys = (tokens != pad_id)[:, None, :]  # (B, 1, T_k)
    return (np.tril(_ones(length)) & keys)[:, None]  # (B, 1, T, T)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda t, p: np.broadcast_to(
                np.tril(_ones(t.shape[1])), (len(t), 1, t.shape[1], t.shape[1])
            ),
            "causal mask alone",
        ),
        (
            lambda t, p: np.broadcast_to(
                (t != p)[:, None, None, :], (len(t), 1, t.shape[1], t.shape[1])
            ),
            "padding mask alone",
        ),
        (
            lambda t, p: (np.tril(_ones(t.shape[1])) | (t != p)[:, None, :])[
                :, None
            ],
            "not |",
        ),
        (
            lambda t, p: (np.tril(_ones(t.shape[1])) & (t != p)[:, :, None])[
                :, None
            ],
            "pad *queries*",
        ),
        (
            lambda t, p: (np.triu(_ones(t.shape[1])) & (t != p)[:, None, :])[
                :, None
            ],
            "upper triangle",
        ),
        (lambda t, p: _decoder_mask(t, 0), "hard-coded 0"),
        (lambda t, p: _decoder_mask(t, p)[:, 0], "add the head axis"),
        (lambda t, p: _decoder_mask(t, p).astype(float), "boolean"),
        (
            lambda t, p: _decoder_mask(t, p) & (t != p)[:, None, :, None],
            "also blank the rows",
        ),
        (
            lambda t, p: (np.tril(_ones(t.shape[1])) & (t == p)[:, None, :])[
                :, None
            ],
            "tokens != pad_id",
        ),
        (lambda t, p: _decoder_mask(t, p)[:, 0][:, :, None], "goes second"),
        (lambda t, p: _decoder_mask(t, p)[:, 0][None], "goes second"),
        (lambda t, p: _decoder_mask(t, p).tolist(), "not an array"),
    ],
    ids=[
        "causal-only",
        "padding-only",
        "or",
        "pad-queries",
        "upper",
        "pad-is-zero",
        "no-head-axis",
        "floats",
        "pad-queries-and-keys",
        "pads-marked-true",
        "head-axis-third",
        "head-axis-first",
        "list",
    ],
)
def test_decoder_mask_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_decoder_mask, wrong_answer, hint)


def test_decoder_mask_reference_works_in_attention():
    """The mask the exercise asks for is what the library takes for 4-D arrays."""
    tokens = np.array([[0, 0, 5, 6], [0, 8, 9, 4]])
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 5))  # (B, h, T, d_k)
    _, weights = scaled_dot_product_attention(x, x, x, _decoder_mask(tokens, 0))
    assert (weights[0, :, 2:, :2] == 0).all() and (weights[0, :, :2] == 0).all()


# ---------------------------------------------------------------- exercise 4.5


def _leaks_from(fn, x):
    """Change each position of x in turn: does an earlier output move?"""
    reference = fn(x)
    for position in range(1, len(x)):
        changed = x.copy()
        changed[position] += 1.0
        if not np.allclose(fn(changed)[:position], reference[:position]):
            return True
    return False


def _future_leaks(fn, length=6, width=4):
    return _leaks_from(
        fn, np.random.default_rng(0).normal(size=(length, width))
    )


def last_token_only(fn, length=6, width=4):
    """The chapter's own test: changes the last token only."""
    x = np.random.default_rng(0).normal(size=(length, width))
    changed = x.copy()
    changed[-1] += 1.0
    return not np.allclose(fn(x)[:-1], fn(changed)[:-1])


def includes_own_position(fn, length=6, width=4):
    x = np.random.default_rng(0).normal(size=(length, width))
    for position in range(length):
        changed = x.copy()
        changed[position] += 1.0
        if not np.allclose(fn(changed)[: position + 1], fn(x)[: position + 1]):
            return True
    return False


def looks_at_later_outputs(fn, length=6, width=4):
    x = np.random.default_rng(0).normal(size=(length, width))
    for position in range(length - 1):
        changed = x.copy()
        changed[position] += 1.0
        if not np.allclose(fn(changed)[position + 1 :], fn(x)[position + 1 :]):
            return True
    return False


def zeros_probe(fn, length=6, width=4):
    """Changes each position in turn, but from an input of zeros."""
    return _leaks_from(fn, np.zeros((length, width)))


def coarse_tolerance(fn, length=6, width=4):
    x = np.random.default_rng(0).normal(size=(length, width))
    for position in range(1, length):
        changed = x.copy()
        changed[position] += 1.0
        if not np.allclose(fn(changed)[:position], fn(x)[:position], atol=0.1):
            return True
    return False


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (last_token_only, "not only the last one"),
        (includes_own_position, "outputs *before*"),
        (looks_at_later_outputs, None),
        (coarse_tolerance, "small leak"),
        (zeros_probe, "not zeros"),
        (lambda fn: True, "is causal"),
        (lambda fn: False, "leaks the future"),
        (lambda fn: 1, "True or False"),
        (lambda fn: None, "forget `return`"),
    ],
    ids=[
        "last-only",
        "own-position",
        "later-outputs",
        "coarse",
        "zeros",
        "always-true",
        "always-false",
        "int",
        "none",
    ],
)
def test_future_leaks_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_future_leaks, wrong_answer, hint)


def test_future_leaks_reference_on_the_library():
    def causal(x):
        return scaled_dot_product_attention(x, x, x, causal_mask(len(x)))[0]

    def full(x):
        return scaled_dot_product_attention(x, x, x)[0]

    assert not _future_leaks(causal) and _future_leaks(full)


# ---------------------------------------------------------------- every checker

ACCEPTED = [
    (check_causal_mask, lambda n: np.tril(_ones(n))),
    (check_additive_mask, lambda mask: np.where(mask, 0.0, -np.inf)),
    (check_sliding_window_mask, _window),
    (check_decoder_mask, _decoder_mask),
    (check_future_leaks, _future_leaks),
]

FLOAT32 = [
    (
        check_additive_mask,
        lambda mask: np.where(mask, 0.0, -np.inf).astype(np.float32),
    ),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch04, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED + FLOAT32,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference_and_float32(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def test_future_leaks_checker_restores_a_detector_that_draws_from_np_random():
    def detector(fn, length=6, width=4):
        x = np.random.normal(size=(length, width))  # noqa: NPY002
        return _leaks_from(fn, x)

    assert_random_state_untouched(check_future_leaks, detector)
