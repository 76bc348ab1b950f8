"""Chapter 3's exercise checkers accept the reference (float64 and float32) and
reject the wrong answers learners really give, with the hint they need."""

import numpy as np
import pytest
import torch
from exercise_helpers import (
    assert_accepts,
    assert_every_checker_accepted,
    assert_rejected,
    known_mistakes,
)
from scipy.special import softmax as scipy_softmax
from torch.nn.functional import softmax as normalise

from transformer_course import softmax
from transformer_course.exercises import ch03
from transformer_course.exercises.ch03 import (
    ADDITIVE_ATTENTION,
    ATTENTION,
    MULTI_HEAD,
    SOFTMAX,
    check_additive_attention,
    check_attention,
    check_multi_head,
    check_softmax,
)


@pytest.mark.parametrize(
    ("check", "wrong_answer", "hint"),
    known_mistakes(SOFTMAX, ATTENTION, ADDITIVE_ATTENTION, MULTI_HEAD),
)
def test_every_known_mistake_is_caught_with_its_hint(check, wrong_answer, hint):
    assert_rejected(check, wrong_answer, hint)


def _sm(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------- exercise 3.1


def no_keepdims(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis)


def softmax_in_place(x, axis=-1):
    """Right values, but the caller's array is overwritten."""
    x -= x.max(axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x


def global_max_row_sum(x, axis=-1):
    """Subtracts the maximum of the whole array: a low row underflows."""
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


def subtract_min(x, axis=-1):
    """Right for small inputs; overflows when a row spans more than ~709."""
    e = np.exp(x - x.min(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (no_keepdims, "keepdims=True"),
        (
            lambda x, axis=-1: (
                np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)
            ),
            "overflows",
        ),
        (lambda x, axis=-1: _sm(x), "normalised axis 2"),
        (
            lambda x, axis=-1: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
            "whole matrix",
        ),
        (lambda x, axis=-1: None, "forget `return`"),
        (softmax_in_place, "changed its input"),
        (global_max_row_sum, "maximum of the whole array"),
        (subtract_min, "not the minimum"),
        (lambda x, axis=-1: _sm(x, axis=1 if x.ndim > 1 else -1), "axis 1"),
        (lambda x, axis=-1: _sm(x, axis).tolist(), "not an array"),
    ],
    ids=[
        "no-keepdims",
        "naive-overflow",
        "ignores-axis",
        "global-max-and-sum",
        "no-return",
        "in-place",
        "global-max-row-sum",
        "subtract-min",
        "axis-hard-coded-1",
        "list",
    ],
)
def test_softmax_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_softmax, wrong_answer, hint)


# ---------------------------------------------------------------- exercise 3.2


def _att(q, k, v, scale=None, axis=-1, transpose=False):
    scores = q @ k.T
    scores = scores.T if transpose else scores
    d_k = q.shape[-1]
    return (
        _sm(scores / (np.sqrt(d_k) if scale is None else scale), axis=axis) @ v
    )


def uses_library_softmax(q, k, v):
    return softmax(q @ k.T / np.sqrt(k.shape[-1])) @ v


def uses_scipy(q, k, v):
    return scipy_softmax(q @ k.T / np.sqrt(k.shape[-1]), axis=-1) @ v


def imports_inside(q, k, v):
    from transformer_course import scaled_dot_product_attention

    return scaled_dot_product_attention(q, k, v)[0]


def naive(q, k, v):
    e = np.exp(q @ k.T / np.sqrt(k.shape[-1]))
    return e / e.sum(axis=-1, keepdims=True) @ v


def att_no_keepdims(q, k, v):
    e = np.exp(q @ k.T / np.sqrt(k.shape[-1]))
    return (e / e.sum(axis=-1)) @ v


def torch_log_softmax(q, k, v):
    q, k, v = (torch.as_tensor(a) for a in (q, k, v))
    scores = q @ k.T / k.shape[-1] ** 0.5
    return torch.log_softmax(scores, dim=-1).exp() @ v


def torch_softmax_module(q, k, v):
    q, k, v = (torch.as_tensor(a) for a in (q, k, v))
    return torch.nn.Softmax(dim=-1)(q @ k.T / k.shape[-1] ** 0.5) @ v


def aliased_torch_softmax(q, k, v):
    q, k, v = (torch.as_tensor(a) for a in (q, k, v))
    return normalise(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v


def attention_in_place(q, k, v):
    q /= np.sqrt(q.shape[-1])  # writes into the caller's q
    scores = q @ k.T
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda q, k, v: _att(q, k, v, scale=1.0), "not scaled"),
        (lambda q, k, v: _att(q, k, v, scale=q.shape[-1]), "not by d_k."),
        (lambda q, k, v: _att(q, k, v, scale=q.shape[-1] ** 2), "d_k ** 2"),
        (
            lambda q, k, v: _att(q, k, v, scale=np.sqrt(v.shape[-1])),
            "sqrt(d_v)",
        ),
        (lambda q, k, v: _att(q, k, v, axis=0), "wrong axis"),
        (
            lambda q, k, v: _att(q, k, v, transpose=True),
            "scores are transposed",
        ),
        (
            lambda q, k, v: _sm(q @ k.T / np.sqrt(q.shape[-1])),
            "multiply them by v",
        ),
        (att_no_keepdims, "keepdims=True"),
        (naive, "subtract each row's maximum"),
        (uses_library_softmax, "by hand"),
        (uses_scipy, "from scipy"),
        (imports_inside, "by hand"),
        (lambda q, k, v: (_att(q, k, v), None), "(output, weights)"),
        (lambda q, k, v: q @ k, "raised ValueError"),
        (torch_log_softmax, "log_softmax"),
        (torch_softmax_module, "ready-made softmax"),
        (aliased_torch_softmax, "ready-made softmax"),
        (attention_in_place, "changed its input"),
        (lambda q, k, v: _att(q, k, v, scale=np.sqrt(len(q))), "tokens"),
        (lambda q, k, v: _att(q, k, v, scale=np.sqrt(len(k))), "tokens"),
        (lambda q, k, v: my_attention(q, k, v).tolist(), "not an array"),
        (lambda q, k, v: my_attention(q, k, v).T, None),
    ],
    ids=[
        "no-scale",
        "d_k",
        "d_k-squared",
        "sqrt-d_v",
        "axis-0",
        "k-q-order",
        "no-v",
        "no-keepdims",
        "overflow",
        "library-softmax",
        "scipy",
        "import-inside",
        "tuple",
        "k-not-transposed",
        "torch-log-softmax",
        "torch-nn-softmax",
        "aliased-torch-softmax",
        "q-scaled-in-place",
        "sqrt-T_q",
        "sqrt-T_k",
        "list",
        "transposed-output",
    ],
)
def test_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_attention, wrong_answer, hint)


# ---------------------------------------------------------------- exercise 3.3


def _additive(q, k, v, W_q, W_k, w, tanh=True, axis=-1, scale=1.0):
    summed = (q @ W_q)[:, None] + (k @ W_k)[None]
    scores = (np.tanh(summed) if tanh else summed) @ w
    return _sm(scores / scale, axis=axis) @ v


def tanh_last(q, k, v, W_q, W_k, w):
    scores = np.tanh(((q @ W_q)[:, None] + (k @ W_k)[None]) @ w)
    return _sm(scores) @ v


def keys_first(q, k, v, W_q, W_k, w):
    """Broadcasts keys along the first axis and forgets to transpose back."""
    scores = np.tanh((q @ W_q)[None] + (k @ W_k)[:, None]) @ w  # (T_k, T_q)
    return _sm(scores) @ v


def tanh_on_query_only(q, k, v, W_q, W_k, w):
    scores = (np.tanh(q @ W_q)[:, None] + (k @ W_k)[None]) @ w
    return _sm(scores) @ v


def additive_in_place(q, k, v, W_q, W_k, w):
    w /= 1.0  # harmless, but writes into the caller's w
    k *= 1.0
    q[0] = 0.0
    return _additive(q, k, v, W_q, W_k, w)


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (lambda *a: _additive(*a, tanh=False), "tanh must wrap the sum"),
        (tanh_last, "tanh is applied after w"),
        (lambda *a: _additive(*a, axis=0), "wrong axis"),
        (
            lambda *a: _additive(*a, scale=np.sqrt(a[1].shape[-1])),
            "no 1/sqrt(d_k)",
        ),
        (lambda *a: _additive(*a, scale=np.sqrt(len(a[5]))), "no 1/sqrt(d)"),
        (keys_first, "(T_k, T_q)"),
        (
            lambda q, k, v, *_: _att(q, k, v),
            None,
        ),  # dot-product attention instead
        (tanh_on_query_only, "cancels in the softmax"),
        (additive_in_place, "changed its input"),
        (lambda *a: _additive(*a).tolist(), "not an array"),
    ],
    ids=[
        "no-tanh",
        "tanh-last",
        "axis-0",
        "scaled-d_k",
        "scaled-d_a",
        "keys-first",
        "dot",
        "tanh-on-query-only",
        "in-place",
        "list",
    ],
)
def test_additive_attention_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_additive_attention, wrong_answer, hint)


# ---------------------------------------------------------------- exercise 3.4


def _heads(X, W_Q, W_K, W_V, scale=True):
    return np.stack(
        [
            _att(X @ wq, X @ wk, X @ wv, scale=None if scale else 1.0)
            for wq, wk, wv in zip(W_Q, W_K, W_V, strict=True)
        ]
    )


def _multi_head(X, W_Q, W_K, W_V, W_O):
    heads = _heads(X, W_Q, W_K, W_V)
    return heads.transpose(1, 0, 2).reshape(len(X), -1) @ W_O


def multi_head_sqrt_d_model(X, W_Q, W_K, W_V, W_O):
    """Scales by the model's width instead of one head's."""
    heads = np.stack(
        [
            _att(X @ wq, X @ wk, X @ wv, scale=np.sqrt(X.shape[1]))
            for wq, wk, wv in zip(W_Q, W_K, W_V, strict=True)
        ]
    )
    return heads.transpose(1, 0, 2).reshape(len(X), -1) @ W_O


def multi_head_two_heads_only(X, W_Q, W_K, W_V, W_O):
    outputs = [_att(X @ W_Q[i], X @ W_K[i], X @ W_V[i]) for i in range(2)]
    return np.concatenate(outputs, axis=1) @ W_O


@pytest.mark.parametrize(
    ("wrong_answer", "hint"),
    [
        (
            lambda X, *w: np.concatenate(list(_heads(X, *w[:3])), axis=-1),
            "W_O is missing",
        ),
        (
            lambda X, *w: _heads(X, *w[:3]).reshape(len(X), -1) @ w[3],
            "heads.reshape(T, -1)",
        ),
        (
            lambda X, *w: (
                np.concatenate(list(_heads(X, *w[:3])[::-1]), -1) @ w[3]
            ),
            "reverse order",
        ),
        (
            lambda X, *w: (
                np.concatenate(list(_heads(X, *w[:3], scale=False)), -1) @ w[3]
            ),
            "sqrt(d_k)",
        ),
        (
            lambda X, W_Q, W_K, W_V, W_O: _multi_head(X, W_Q, W_K, W_V, W_O.T),
            "transposed",
        ),
        (multi_head_sqrt_d_model, "the width of one head"),
        (multi_head_two_heads_only, "raised"),
        (lambda *a: _multi_head(*a).tolist(), "not an array"),
    ],
    ids=[
        "no-output-projection",
        "reshape-heads",
        "reversed-heads",
        "unscaled",
        "W_O-transposed",
        "sqrt-d_model",
        "two-heads-hard-coded",
        "list",
    ],
)
def test_multi_head_rejects_known_mistakes(wrong_answer, hint):
    assert_rejected(check_multi_head, wrong_answer, hint)


# ---------------------------------------------------------------- every checker


def my_attention(q, k, v):
    scores = q @ k.T / np.sqrt(k.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


def my_additive_attention(q, k, v, W_q, W_k, w):
    return _additive(q, k, v, W_q, W_k, w)


ACCEPTED = [
    (check_softmax, _sm),
    (check_attention, my_attention),
    (check_additive_attention, my_additive_attention),
    (check_multi_head, _multi_head),
]


def _float32(function):
    def answer(*args):
        args = [
            a.astype(np.float32) if isinstance(a, np.ndarray) else a
            for a in args
        ]
        return function(*args)

    return answer


def float32_attention(q, k, v):
    return my_attention(*(a.astype(np.float32) for a in (q, k, v)))


def float32_additive_attention(q, k, v, W_q, W_k, w):
    return my_additive_attention(
        *(a.astype(np.float32) for a in (q, k, v, W_q, W_k, w))
    )


def torch_float32_attention(q, k, v):
    """Written by hand in PyTorch float32: exp, max, sum and @ are allowed."""
    q, k, v = (torch.as_tensor(a, dtype=torch.float32) for a in (q, k, v))
    scores = q @ k.T / k.shape[-1] ** 0.5
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True) @ v


def torch_float32_additive_attention(q, k, v, W_q, W_k, w):
    q, k, v, W_q, W_k, w = (
        torch.as_tensor(a, dtype=torch.float32) for a in (q, k, v, W_q, W_k, w)
    )
    scores = torch.tanh((q @ W_q)[:, None] + (k @ W_k)[None]) @ w
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True) @ v


FLOAT32 = [
    (check_softmax, _float32(_sm)),
    (check_attention, float32_attention),
    (check_additive_attention, float32_additive_attention),
    (check_multi_head, _float32(_multi_head)),
    (check_attention, torch_float32_attention),
    (check_additive_attention, torch_float32_additive_attention),
]


def test_every_checker_is_tested():
    assert_every_checker_accepted(ch03, ACCEPTED)


@pytest.mark.parametrize(
    ("check", "reference"),
    ACCEPTED + FLOAT32,
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_checker_accepts_reference_and_float32(check, reference, capsys):
    assert_accepts(check, reference, capsys)


def test_own_softmax_helper_is_allowed(capsys):
    """A learner's own helper (from exercise 3.1) is NumPy: accepted."""

    def my_softmax(x, axis=-1):
        return _sm(x, axis)

    def my_attention_with_helper(q, k, v):
        return my_softmax(q @ k.T / np.sqrt(k.shape[-1])) @ v

    check_attention(my_attention_with_helper)
    assert capsys.readouterr().out.startswith("Correct: attention")
