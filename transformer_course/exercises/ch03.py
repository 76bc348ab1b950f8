"""Checkers for chapter 3: attention in NumPy."""

from __future__ import annotations

import types
from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    _call,
    _copies,
    _expect_array,
    _expect_close,
    _expect_unchanged,
    _fail,
    _rng,
    _verdict,
)

__all__ = [
    "check_softmax",
    "check_attention",
    "check_additive_attention",
    "check_multi_head",
]


def _softmax(x: np.ndarray, axis=-1) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
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


def _global_max_softmax(x: np.ndarray) -> np.ndarray:
    """exp(x - x.max()) normalised per row: the maximum of the whole array."""
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max())
        return e / e.sum(axis=-1, keepdims=True)


def _min_softmax(x: np.ndarray) -> np.ndarray:
    """exp(x - min) normalised per row: the minimum subtracted, not the max."""
    with np.errstate(all="ignore"):
        e = np.exp(x - x.min(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def _naive_softmax(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.exp(x)
        return e / e.sum(axis=-1, keepdims=True)


def _overflow_hint(x: np.ndarray, got) -> str:
    """The hint for an answer with inf or NaN on large inputs."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        got = None
    variants = [
        (
            _global_max_softmax(x),
            "you subtracted the maximum of the whole array: a row far below "
            "it underflows to 0 / 0 = NaN. Subtract each row's own maximum, "
            "x.max(axis=axis, keepdims=True).",
        ),
        (
            _min_softmax(x),
            "subtract the maximum, not the minimum: exp(x - min) overflows "
            "as soon as a row spans more than about 709.",
        ),
    ]
    for wrong, hint in variants:
        if got is not None and got.shape == wrong.shape:
            if np.allclose(got, wrong, rtol=1e-4, atol=1e-4, equal_nan=True):
                return hint
    return (
        "exp(1000) overflows to inf (and exp(-1000) underflows to 0). "
        "Subtract the largest entry of each slice before exponentiating; "
        "softmax does not change."
    )


def check_softmax(softmax: Callable[..., np.ndarray]) -> None:
    """Check `softmax(x, axis=-1)`: normalises along `axis` only, finite for large inputs."""
    name = "softmax"
    matrix = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.0, -2.0, 5.0]])
    cube = np.arange(24, dtype=float).reshape(2, 3, 4) / 5
    # large scores, a row far below the others, and a row that spans 2000
    big = np.array(
        [
            [1000.0, 999.0, 998.0],
            [-1000.0, -1001.0, -1000.5],
            [1000.0, -1000.0, 0.0],
        ]
    )

    def run_cases() -> None:
        given = matrix.copy()
        got = _call(softmax, name, given)
        _expect_unchanged(name, None, [given], [matrix])
        _expect_array(name, [matrix], got)
        mistakes = [
            (
                _softmax(matrix, axis=None),
                "you normalised the whole matrix (softmax without an axis): "
                "each row must sum to 1.",
            ),
            (
                _softmax(matrix, axis=0),
                "each column sums to 1: normalise along the last axis (the keys).",
            ),
            (_without_keepdims(matrix), KEEPDIMS_HINT),
            (_without_keepdims(matrix, stable=False), KEEPDIMS_HINT),
        ]
        _expect_close(name, [matrix], got, _softmax(matrix), mistakes)
        for axis in (0, 1):
            got = _call(softmax, name, cube.copy(), axis)
            mistakes = [
                (
                    _softmax(cube, axis=other),
                    f"with axis={axis} your function normalised axis "
                    f"{other % cube.ndim}: use the `axis` argument in max and "
                    "sum.",
                )
                for other in (-1, 0, 1)
                if other % cube.ndim != axis
            ]
            _expect_close(
                name,
                [cube, f"axis={axis}"],
                got,
                _softmax(cube, axis),
                mistakes,
            )
        with np.errstate(all="ignore"):
            got = _call(softmax, name, big.copy())
        _expect_finite(name, [big], got, _overflow_hint(big, got))
        _expect_close(name, [big], got, _softmax(big))

    _verdict(name, "is stable and normalises along the given axis.", run_cases)


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
        return f"`{name}` ({_FORBIDDEN_NAMES[name]})"
    for name in sorted(names & _FORBIDDEN_MODULES):  # a local import
        return f"`{name}`"
    found = {name: getattr(fn, "__globals__", {}).get(name) for name in names}
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    for name, value in sorted(found.items()):
        library = _library_of(value)
        if library is not None:
            return f"`{name}` (from {library})"
        if getattr(value, "__name__", None) in _FORBIDDEN_NAMES:
            return f"`{name}` ({_FORBIDDEN_NAMES[value.__name__]})"
    return None


def _expect_finite(name: str, inputs, got, hint: str) -> None:
    """Fail with `hint` if the answer holds inf or NaN (an overflowing exp)."""
    try:
        values = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return  # not numbers at all: _expect_close says so
    if not np.isfinite(values).all():
        _fail(name, "returned inf or NaN for large inputs.", inputs, hint)


def _expect_by_hand(name: str, fn: Callable, task: str, inputs) -> None:
    """Fail if `fn` calls a ready-made softmax or attention."""
    use = _forbidden_use(fn)
    if use is not None:
        _fail(
            name,
            f"uses {use}: this exercise asks you to write {task} by hand "
            "(exp, max, sum and @, in NumPy or PyTorch).",
            inputs,
            "a softmax is two lines: e = np.exp(s - s.max(axis=-1, "
            "keepdims=True)); e / e.sum(axis=-1, keepdims=True).",
        )


# ------------------------------------------------------------- attention


def _attention(q, k, v, scale=None, axis=-1, transpose_scores=False):
    scores = q @ k.T
    if transpose_scores:
        scores = scores.T
    scores = scores / (np.sqrt(q.shape[-1]) if scale is None else scale)
    return _softmax(scores, axis=axis) @ v


def _attention_cases():
    rng = _rng(3)
    return [
        # square first: the shape-preserving mistakes show their hint there
        (
            rng.normal(size=(4, 6)) * 2,
            rng.normal(size=(4, 6)),
            rng.normal(size=(4, 2)),
        ),
        # cross-attention: T_q != T_k and d_v != d_k
        (
            rng.normal(size=(3, 4)),
            rng.normal(size=(5, 4)),
            rng.normal(size=(5, 9)),
        ),
        # large scores: a softmax without the max subtracted overflows
        (
            rng.normal(size=(2, 4)) * 40,
            rng.normal(size=(3, 4)) * 40,
            rng.normal(size=(3, 2)),
        ),
    ]


def check_attention(
    attention: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> None:
    """Check `attention(q, k, v)` = softmax(q k^T / sqrt(d_k)) v on 2-D inputs,
    T_q != T_k and d_v != d_k allowed, written by hand (no ready-made softmax)."""
    name = "attention"

    def run_cases() -> None:
        for number, (q, k, v) in enumerate(_attention_cases()):
            given = _copies(q, k, v)
            with np.errstate(all="ignore"):
                got = _call(attention, name, *given)
            _expect_unchanged(name, None, given, [q, k, v])
            _expect_array(name, [q, k, v], got)
            if number == 0:
                _expect_by_hand(name, attention, "attention", [q, k, v])
            d_k, d_v = q.shape[-1], v.shape[-1]
            scores = q @ k.T / np.sqrt(d_k)
            weights = _softmax(scores)
            mistakes = [
                (
                    _attention(q, k, v, scale=1.0),
                    "the scores are not scaled: divide q k^T by sqrt(d_k).",
                ),
                (
                    _attention(q, k, v, scale=d_k),
                    "divide by sqrt(d_k), not by d_k.",
                ),
                (
                    _attention(q, k, v, scale=d_k**2),
                    "divide by sqrt(d_k), not by d_k ** 2.",
                ),
                (
                    _attention(q, k, v, axis=0),
                    "softmax over the wrong axis: each query's row of weights "
                    "(over the keys) must sum to 1, so use axis=-1.",
                ),
                (weights, "you returned the weights: multiply them by v."),
            ]
            for length in {q.shape[0], k.shape[0]} - {d_k}:
                mistakes.append(
                    (
                        _attention(q, k, v, scale=np.sqrt(length)),
                        f"you divided by sqrt({length}), a number of tokens: "
                        "the scale is sqrt(d_k), the width of the queries and "
                        "keys (q.shape[-1]).",
                    )
                )
            if d_v != d_k:
                mistakes.insert(
                    0,
                    (
                        _attention(q, k, v, scale=np.sqrt(d_v)),
                        "you divided by sqrt(d_v): the scale is the square root "
                        "of d_k, the width of the queries and keys (q.shape[-1]).",
                    ),
                )
            if q.shape[0] == k.shape[0]:
                mistakes += [
                    (
                        _attention(q, k, v, transpose_scores=True),
                        "the scores are transposed (k @ q.T): rows must be "
                        "queries, columns keys.",
                    ),
                    (_without_keepdims(scores) @ v, KEEPDIMS_HINT),
                    (_without_keepdims(scores, False) @ v, KEEPDIMS_HINT),
                ]
            if number == 2:
                _expect_finite(
                    name,
                    [q, k, v],
                    got,
                    "exp of large scores overflows: subtract each row's maximum "
                    "before exponentiating; softmax does not change.",
                )
            _expect_close(name, [q, k, v], got, _attention(q, k, v), mistakes)

    _verdict(
        name,
        "computes softmax(q k^T / sqrt(d_k)) v by hand.",
        run_cases,
    )


# ------------------------------------------------------------- additive


def _additive(
    q,
    k,
    v,
    W_q,
    W_k,
    w,
    *,
    tanh=True,
    axis=-1,
    scale=1.0,
    swap=False,
    tanh_last=False,
):
    if swap:  # keys on the first axis: (T_k, T_q) scores, never transposed
        summed = (q @ W_q)[None, :, :] + (k @ W_k)[:, None, :]
    else:
        summed = (q @ W_q)[:, None, :] + (k @ W_k)[None, :, :]
    if tanh_last:
        scores = np.tanh(summed @ w)
    else:
        scores = (np.tanh(summed) if tanh else summed) @ w
    scores = scores / scale
    return _softmax(scores, axis=axis) @ v


def check_additive_attention(
    additive_attention: Callable[..., np.ndarray],
) -> None:
    """Check `additive_attention(q, k, v, W_q, W_k, w)`: softmax over the keys of
    w . tanh(q_i W_q + k_j W_k), times v."""
    name = "additive_attention"
    rng = _rng(5)
    cases = []
    for t_q, t_k, d_q, d_k, d_a, d_v in [
        (4, 4, 3, 3, 5, 2),
        (3, 5, 4, 6, 3, 2),
    ]:
        cases.append(
            (
                rng.normal(size=(t_q, d_q)),
                rng.normal(size=(t_k, d_k)),
                rng.normal(size=(t_k, d_v)),
                rng.normal(size=(d_q, d_a)),
                rng.normal(size=(d_k, d_a)),
                rng.normal(size=d_a) * 2,
            )
        )

    def run_cases() -> None:
        for number, case in enumerate(cases):
            given = _copies(*case)
            got = _call(additive_attention, name, *given)
            _expect_unchanged(name, None, given, case)
            _expect_array(name, list(case), got)
            q, k, v, W_q, W_k, w = case
            if number == 0:
                _expect_by_hand(
                    name, additive_attention, "additive attention", list(case)
                )
            d_a = len(w)
            mistakes = [
                (
                    _additive(*case, tanh=False),
                    "tanh must wrap the sum: s_ij = w . tanh(q_i W_q + k_j "
                    "W_k). Without it (or with tanh on q_i W_q alone) the "
                    "query's term is the same for every key and cancels in "
                    "the softmax.",
                ),
                (
                    _additive(*case, tanh_last=True),
                    "tanh is applied after w: apply it to the sum q_i W_q + k_j W_k, then take the dot product with w.",
                ),
                (
                    _additive(*case, axis=0),
                    "softmax over the wrong axis: each query's weights over the keys must sum to 1 (axis=-1).",
                ),
                (
                    _additive(*case, scale=np.sqrt(d_a)),
                    "additive attention has no 1/sqrt(d) scale: w and the tanh bound the scores already.",
                ),
                (
                    _additive(*case, scale=np.sqrt(k.shape[-1])),
                    "additive attention has no 1/sqrt(d_k) scale: w and the tanh bound the scores already.",
                ),
            ]
            if q.shape[0] == k.shape[0]:
                mistakes.append(
                    (
                        _additive(*case, swap=True),
                        "the scores came out (T_k, T_q): put the queries on the first axis, "
                        "(q @ W_q)[:, None, :] + (k @ W_k)[None, :, :].",
                    )
                )
            _expect_close(name, list(case), got, _additive(*case), mistakes)

    _verdict(name, "scores each key with w . tanh(q W_q + k W_k).", run_cases)


# ------------------------------------------------------------- multi-head


def check_multi_head(multi_head: Callable[..., np.ndarray]) -> None:
    """Check `multi_head(X, W_Q, W_K, W_V, W_O)` with stacked (h, d_model, d_k) weights."""
    name = "multi_head"
    rng = _rng(4)
    cases = []
    for h, d_model, length in [(2, 6, 4), (3, 6, 5)]:
        d_k = d_model // h
        X = rng.normal(size=(length, d_model))
        W_Q, W_K, W_V = rng.normal(size=(3, h, d_model, d_k))
        W_O = rng.normal(size=(d_model, d_model))
        cases.append((X, W_Q, W_K, W_V, W_O))

    def run_cases() -> None:
        for X, W_Q, W_K, W_V, W_O in cases:
            case = (X, W_Q, W_K, W_V, W_O)
            given = _copies(*case)
            got = _call(multi_head, name, *given)
            _expect_unchanged(name, None, given, case)
            _expect_array(name, list(case), got)

            def heads(scale=None, X=X, W_Q=W_Q, W_K=W_K, W_V=W_V):
                return np.stack(
                    [
                        _attention(X @ wq, X @ wk, X @ wv, scale=scale)
                        for wq, wk, wv in zip(W_Q, W_K, W_V, strict=True)
                    ]
                )

            right = heads()  # (h, T, d_k)
            mistakes = [
                (
                    np.concatenate(list(right), axis=-1),
                    "the output projection W_O is missing (step 8).",
                ),
                (
                    right.reshape(len(X), -1) @ W_O,
                    "heads.reshape(T, -1) on the (h, T, d_k) array mixes tokens: its "
                    "row 0 holds head 1's first tokens. Move the head axis first, "
                    "heads.transpose(1, 0, 2).reshape(T, -1), or concatenate the heads "
                    "along the last axis.",
                ),
                (
                    np.concatenate(list(right[::-1]), axis=-1) @ W_O,
                    "the heads are concatenated in reverse order.",
                ),
                (
                    np.concatenate(list(heads(scale=1.0)), axis=-1) @ W_O,
                    "the scores are not divided by sqrt(d_k).",
                ),
                (
                    np.concatenate(
                        list(heads(scale=np.sqrt(X.shape[1]))), axis=-1
                    )
                    @ W_O,
                    "divide by sqrt(d_k), the width of one head "
                    "(W_Q.shape[-1]), not by sqrt(d_model).",
                ),
                (
                    np.concatenate(list(right), axis=-1) @ W_O.T,
                    "W_O is transposed: the concatenated heads (T, d_model) times W_O.",
                ),
            ]
            shown = [X, W_Q, W_K, W_V, W_O]
            _expect_close(
                name,
                shown,
                got,
                np.concatenate(list(right), axis=-1) @ W_O,
                mistakes,
            )

    _verdict(name, "computes multi-head attention.", run_cases)
