"""Checkers for chapter 3: attention in NumPy."""

from __future__ import annotations

import types
from functools import partial
from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    Exercise,
    Mistake,
    Refusal,
    fail,
    matching_mistake,
    message,
)

__all__ = [
    "check_softmax",
    "check_attention",
    "check_additive_attention",
    "check_multi_head",
]


def _softmax(x: np.ndarray, axis=-1, shift=None) -> np.ndarray:
    """exp(x - shift) normalised along `axis`, overflow ignored: `shift` is
    each slice's maximum unless given (a known mistake's other shift)."""
    shift = np.max(x, axis=axis, keepdims=True) if shift is None else shift
    with np.errstate(all="ignore"):
        e = np.exp(x - shift)
        return e / e.sum(axis=axis, keepdims=True)


def _without_keepdims(x: np.ndarray, stable: bool = True) -> np.ndarray:
    """e / e.sum(axis=-1) on a square matrix: element [i, j] / sum of row j."""
    e = np.exp(x - np.max(x, axis=-1, keepdims=True)) if stable else np.exp(x)
    return e / e.sum(axis=-1)


KEEPDIMS_HINT = (
    "the row sums have shape (n,), and NumPy broadcasts such an array along "
    "the last axis, so element [i, j] was divided by the sum of row j. Keep "
    "the summed axis: e.sum(axis=-1, keepdims=True)."
)


def _overflow_hint(x: np.ndarray, got) -> str:
    """The hint for an answer with inf or NaN on large inputs (one that
    `_not_finite` read as numbers)."""
    variants = [
        (
            _softmax(x, shift=x.max()),
            "you subtracted the maximum of the whole array: a row far below "
            "it underflows to 0 / 0 = NaN. Subtract each row's own maximum, "
            "x.max(axis=axis, keepdims=True).",
        ),
        (
            _softmax(x, shift=x.min(axis=-1, keepdims=True)),
            "subtract the maximum, not the minimum: exp(x - min) overflows "
            "as soon as a row spans more than about 709.",
        ),
    ]
    got = np.asarray(got, dtype=float)
    return matching_mistake(got, variants, 1e-4, 1e-4) or (
        "exp(1000) overflows to inf (and exp(-1000) underflows to 0). "
        "Subtract the largest entry of each slice before exponentiating; "
        "softmax does not change."
    )


_MATRIX = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.0, -2.0, 5.0]])
_CUBE = np.arange(24, dtype=float).reshape(2, 3, 4) / 5
# large scores, a row far below the others, and a row that spans 2000
_BIG = np.array(
    [[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1000.5], [1000, -1000, 0.0]]
)


def _on_matrix(variant: Callable) -> Callable:
    """A mistake of the first case's (the tests call it on copies)."""
    return lambda x, *a: variant(x) if np.array_equal(x, _MATRIX) else None


def _other_axis(other: int) -> Mistake:
    """The cube normalised along `other`, not along the axis given."""
    return Mistake(
        lambda x, *axis: (
            _softmax(x, other) if axis and axis[0] != other else None
        ),
        "with axis={axis} your function normalised axis {other}: use the "
        "`axis` argument in max and sum.",
        fields=lambda x, axis: {"axis": axis, "other": other},
    )


def _not_finite(got) -> bool:
    try:
        values = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False  # not numbers at all: the comparison says so
    return not np.isfinite(values).all()


_INF = "returned inf or NaN for large inputs."

SOFTMAX = Exercise(
    name="softmax",
    success="is stable and normalises along the given axis.",
    doc="""Check `softmax(x, axis=-1)`: normalises along `axis` only, finite for large inputs.""",
    cases=[(_MATRIX,), (_CUBE, 0), (_CUBE, 1), (_BIG,)],
    reference=_softmax,
    shown=lambda x, *axis: [x, *(f"axis={a}" for a in axis)],
    array=True,
    quiet=True,
    refusals=[
        Refusal(
            _not_finite,
            _INF,
            lambda got, x: _overflow_hint(x, got),
            on=lambda x, *axis: x is _BIG,
        )
    ],
    mistakes=[
        Mistake(
            _on_matrix(lambda x: _softmax(x, axis=None)),
            "you normalised the whole matrix (softmax without an axis): each "
            "row must sum to 1.",
        ),
        Mistake(
            _on_matrix(lambda x: _softmax(x, axis=0)),
            "each column sums to 1: normalise along the last axis (the keys).",
        ),
        Mistake(_on_matrix(_without_keepdims), KEEPDIMS_HINT),
        Mistake(
            _on_matrix(lambda x: _without_keepdims(x, stable=False)),
            KEEPDIMS_HINT,
        ),
        _other_axis(2),
        _other_axis(0),
        _other_axis(1),
    ],
)
check_softmax = SOFTMAX.checker()


# ------------------------------------------------------------- by hand

# ready-made softmax and attention, by name, wherever they come from (the
# chapter's notebook, this library, scipy, PyTorch: torch.softmax,
# F.softmax, nn.Softmax, x.log_softmax(...).exp(), ...); exp, max, sum and @
# are allowed in NumPy or PyTorch alike
_FORBIDDEN_NAMES = {
    "softmax": "a ready-made softmax",
    "log_softmax": "a ready-made (log-)softmax",
    "Softmax": "a ready-made softmax",
    "LogSoftmax": "a ready-made (log-)softmax",
    "scaled_dot_product_attention": "a ready-made attention",
    "MultiheadAttention": "a ready-made attention",
    "attention": "the chapter's attention",
}
# the libraries whose functions are not the learner's own work
_FORBIDDEN_MODULES = {"transformer_course", "scipy"}


def _names_used(code: types.CodeType) -> set[str]:
    """Global and attribute names a function's code refers to, nested code included."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names_used(constant)
    return names


def _library_of(value) -> str | None:
    """The module a function or module comes from, if it is a forbidden one."""
    if isinstance(value, types.ModuleType):
        module = value.__name__
    else:
        module = getattr(value, "__module__", None) or ""
    return module if module.split(".")[0] in _FORBIDDEN_MODULES else None


def _forbidden_use(fn: Callable) -> str | None:
    """How `fn` uses a ready-made softmax or attention, if it does."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    names = _names_used(code)
    for name in sorted(names & _FORBIDDEN_NAMES.keys()):
        what = message(_FORBIDDEN_NAMES[name])
        return message("`{name}` ({what})", name=name, what=what)
    for name in sorted(names & _FORBIDDEN_MODULES):  # a local import
        return message("`{name}`", name=name)
    found = {name: getattr(fn, "__globals__", {}).get(name) for name in names}
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    for name, value in sorted(found.items()):
        library = _library_of(value)
        if library is not None:
            return message(
                "`{name}` (from {library})", name=name, library=library
            )
        if getattr(value, "__name__", None) in _FORBIDDEN_NAMES:
            what = message(_FORBIDDEN_NAMES[value.__name__])
            return message("`{name}` ({what})", name=name, what=what)
    return None


def _by_hand(task: str) -> Callable:
    """The check that the learner's function calls no ready-made softmax or
    attention: `task` is what the exercise asks them to write."""

    def inspect(name: str, fn: Callable, shown) -> None:
        use = _forbidden_use(fn)
        if use is not None:
            problem = (
                "uses {use}: this exercise asks you to write {task} by hand "
                "(exp, max, sum and @, in NumPy or PyTorch)."
            )
            hint = (
                "a softmax is two lines: e = np.exp(s - s.max(axis=-1, "
                "keepdims=True)); e / e.sum(axis=-1, keepdims=True)."
            )
            fail(name, problem, shown, hint, use=use, task=message(task))

    return inspect


# ------------------------------------------------------------- attention


def _attention(q, k, v, scale=None, axis=-1, transpose_scores=False):
    scores = q @ k.T
    if transpose_scores:
        scores = scores.T
    scores = scores / (np.sqrt(q.shape[-1]) if scale is None else scale)
    return _softmax(scores, axis=axis) @ v


def _attention_cases():
    rng = np.random.default_rng(3)
    cases = []
    # square first: the shape-preserving mistakes show their hint there;
    # then cross-attention (T_q != T_k, d_v != d_k); then large scores, where
    # a softmax without the max subtracted overflows
    for T_q, T_k, d_k, d_v, q_scale, k_scale in [
        (4, 4, 6, 2, 2, 1),
        (3, 5, 4, 9, 1, 1),
        (2, 3, 4, 2, 40, 40),
    ]:
        q = rng.normal(size=(T_q, d_k)) * q_scale
        k = rng.normal(size=(T_k, d_k)) * k_scale
        cases.append((q, k, rng.normal(size=(T_k, d_v))))
    return cases


_ATTENTION_CASES = _attention_cases()


def _on_square(variant: Callable) -> Callable:
    """A mistake seen where T_q == T_k (elsewhere its shape tells)."""
    return lambda q, k, v: variant(q, k, v) if len(q) == len(k) else None


def _by_length(which: int) -> Mistake:
    """The scores divided by sqrt of a number of tokens (of q or of k)."""

    def variant(q, k, v):
        length = (len(q), len(k))[which]
        if length == q.shape[-1] or (which == 1 and length == len(q)):
            return None
        return _attention(q, k, v, scale=np.sqrt(length))

    return Mistake(
        variant,
        "you divided by sqrt({length}), a number of tokens: the scale is "
        "sqrt(d_k), the width of the queries and keys (q.shape[-1]).",
        fields=lambda q, k, v: {"length": (len(q), len(k))[which]},
    )


ATTENTION = Exercise(
    name="attention",
    success="computes softmax(q k^T / sqrt(d_k)) v by hand.",
    doc="""Check `attention(q, k, v)` = softmax(q k^T / sqrt(d_k)) v on 2-D inputs,
    T_q != T_k and d_v != d_k allowed, written by hand (no ready-made softmax).""",
    cases=_ATTENTION_CASES,
    reference=_attention,
    array=True,
    quiet=True,
    inspect=_by_hand("attention"),
    refusals=[
        Refusal(
            _not_finite,
            _INF,
            "exp of large scores overflows: subtract each row's maximum "
            "before exponentiating; softmax does not change.",
            on=lambda q, k, v: q is _ATTENTION_CASES[2][0],
        )
    ],
    mistakes=[
        Mistake(
            lambda q, k, v: (
                _attention(q, k, v, scale=np.sqrt(v.shape[-1]))
                if v.shape[-1] != q.shape[-1]
                else None
            ),
            "you divided by sqrt(d_v): the scale is the square root of d_k, "
            "the width of the queries and keys (q.shape[-1]).",
        ),
        Mistake(
            lambda q, k, v: _attention(q, k, v, scale=1.0),
            "the scores are not scaled: divide q k^T by sqrt(d_k).",
        ),
        Mistake(
            lambda q, k, v: _attention(q, k, v, scale=q.shape[-1]),
            "divide by sqrt(d_k), not by d_k.",
        ),
        Mistake(
            lambda q, k, v: _attention(q, k, v, scale=q.shape[-1] ** 2),
            "divide by sqrt(d_k), not by d_k ** 2.",
        ),
        Mistake(
            lambda q, k, v: _attention(q, k, v, axis=0),
            "softmax over the wrong axis: each query's row of weights (over "
            "the keys) must sum to 1, so use axis=-1.",
        ),
        Mistake(
            lambda q, k, v: _softmax(q @ k.T / np.sqrt(q.shape[-1])),
            "you returned the weights: multiply them by v.",
        ),
        _by_length(0),
        _by_length(1),
        Mistake(
            _on_square(lambda *qkv: _attention(*qkv, transpose_scores=True)),
            "the scores are transposed (k @ q.T): rows must be queries, "
            "columns keys.",
        ),
        Mistake(
            _on_square(
                lambda q, k, v: (
                    _without_keepdims(q @ k.T / np.sqrt(q.shape[-1])) @ v
                )
            ),
            KEEPDIMS_HINT,
        ),
        Mistake(
            _on_square(
                lambda q, k, v: (
                    _without_keepdims(q @ k.T / np.sqrt(q.shape[-1]), False) @ v
                )
            ),
            KEEPDIMS_HINT,
        ),
    ],
)
check_attention = ATTENTION.checker()


# ------------------------------------------------------------- additive


def _additive(
    q, k, v, W_q, W_k, w, *, tanh="sum", axis=-1, scale=1.0, swap=False
):
    """Additive attention, or a variant (`tanh`: "sum", "last" or None)."""
    if swap:  # keys on the first axis: (T_k, T_q) scores, never transposed
        summed = (q @ W_q)[None, :, :] + (k @ W_k)[:, None, :]
    else:
        summed = (q @ W_q)[:, None, :] + (k @ W_k)[None, :, :]
    if tanh == "last":
        scores = np.tanh(summed @ w)
    else:
        scores = (np.tanh(summed) if tanh else summed) @ w
    scores = scores / scale
    return _softmax(scores, axis=axis) @ v


def _additive_cases():
    rng = np.random.default_rng(5)
    cases = []
    for t_q, t_k, d_q, d_k, d_a, d_v in [
        (4, 4, 3, 3, 5, 2),
        (3, 5, 4, 6, 3, 2),
    ]:
        sizes = [(t_q, d_q), (t_k, d_k), (t_k, d_v), (d_q, d_a), (d_k, d_a)]
        cases.append(
            (*(rng.normal(size=s) for s in sizes), rng.normal(size=d_a) * 2)
        )
    return cases


_NO_SCALE = (
    "additive attention has no 1/sqrt({d}) scale: w and the tanh bound the "
    "scores already."
)

ADDITIVE_ATTENTION = Exercise(
    name="additive_attention",
    success="scores each key with w . tanh(q W_q + k W_k).",
    doc="""Check `additive_attention(q, k, v, W_q, W_k, w)`: softmax over the keys of
    w . tanh(q_i W_q + k_j W_k), times v.""",
    cases=_additive_cases(),
    reference=_additive,
    array=True,
    inspect=_by_hand("additive attention"),
    mistakes=[
        Mistake(
            partial(_additive, tanh=None),
            "tanh must wrap the sum: s_ij = w . tanh(q_i W_q + k_j W_k). "
            "Without it (or with tanh on q_i W_q alone) the query's term is "
            "the same for every key and cancels in the softmax.",
        ),
        Mistake(
            partial(_additive, tanh="last"),
            "tanh is applied after w: apply it to the sum q_i W_q + k_j W_k, "
            "then take the dot product with w.",
        ),
        Mistake(
            partial(_additive, axis=0),
            "softmax over the wrong axis: each query's weights over the keys "
            "must sum to 1 (axis=-1).",
        ),
        Mistake(
            lambda *case: _additive(*case, scale=np.sqrt(len(case[5]))),
            _NO_SCALE,
            fields=lambda *case: {"d": "d"},
        ),
        Mistake(
            lambda *case: _additive(*case, scale=np.sqrt(case[1].shape[-1])),
            _NO_SCALE,
            fields=lambda *case: {"d": "d_k"},
        ),
        Mistake(
            lambda *case: (
                _additive(*case, swap=True)
                if len(case[0]) == len(case[1])
                else None
            ),
            "the scores came out (T_k, T_q): put the queries on the first "
            "axis, (q @ W_q)[:, None, :] + (k @ W_k)[None, :, :].",
        ),
    ],
)
check_additive_attention = ADDITIVE_ATTENTION.checker()


# ------------------------------------------------------------- multi-head


def _multi_head_cases():
    rng = np.random.default_rng(4)
    cases = []
    for h, d_model, length in [(2, 6, 4), (3, 6, 5)]:
        d_k = d_model // h
        X = rng.normal(size=(length, d_model))
        W_Q, W_K, W_V = rng.normal(size=(3, h, d_model, d_k))
        W_O = rng.normal(size=(d_model, d_model))
        cases.append((X, W_Q, W_K, W_V, W_O))
    return cases


def _heads(X, W_Q, W_K, W_V, scale=None) -> np.ndarray:
    """Every head's attention, (h, T, d_k)."""
    return np.stack(
        [
            _attention(X @ wq, X @ wk, X @ wv, scale=scale)
            for wq, wk, wv in zip(W_Q, W_K, W_V, strict=True)
        ]
    )


def _joined(heads: np.ndarray) -> np.ndarray:
    return np.concatenate(list(heads), axis=-1)  # (T, h * d_k)


MULTI_HEAD = Exercise(
    name="multi_head",
    success="computes multi-head attention.",
    doc="""Check `multi_head(X, W_Q, W_K, W_V, W_O)` with stacked (h, d_model, d_k) weights.""",
    cases=_multi_head_cases(),
    reference=lambda X, *W: _joined(_heads(X, *W[:3])) @ W[3],
    array=True,
    mistakes=[
        Mistake(
            lambda X, *W: _joined(_heads(X, *W[:3])),
            "the output projection W_O is missing (step 8).",
        ),
        Mistake(
            lambda X, *W: _heads(X, *W[:3]).reshape(len(X), -1) @ W[3],
            "heads.reshape(T, -1) on the (h, T, d_k) array mixes tokens: its "
            "row 0 holds head 1's first tokens. Move the head axis first, "
            "heads.transpose(1, 0, 2).reshape(T, -1), or concatenate the "
            "heads along the last axis.",
        ),
        Mistake(
            lambda X, *W: _joined(_heads(X, *W[:3])[::-1]) @ W[3],
            "the heads are concatenated in reverse order.",
        ),
        Mistake(
            lambda X, *W: _joined(_heads(X, *W[:3], scale=1.0)) @ W[3],
            "the scores are not divided by sqrt(d_k).",
        ),
        Mistake(
            lambda X, *W: (
                _joined(_heads(X, *W[:3], scale=np.sqrt(X.shape[1]))) @ W[3]
            ),
            "divide by sqrt(d_k), the width of one head (W_Q.shape[-1]), not "
            "by sqrt(d_model).",
        ),
        Mistake(
            lambda X, *W: _joined(_heads(X, *W[:3])) @ W[3].T,
            "W_O is transposed: the concatenated heads (T, d_model) times W_O.",
        ),
    ],
)
check_multi_head = MULTI_HEAD.checker()
