"""Checkers for chapter 9: beyond the paper (fused attention, RoPE, GQA, KV cache)."""

from __future__ import annotations

import copy
import functools
import itertools
import math
from collections.abc import Callable

import numpy as np

from transformer_course.exercises._core import (
    is_tensor,
    not_a_tensor,
    Exercise,
    Mistake,
    Refusal,
    expect_close,
    expect_equal,
    expect_unchanged,
    same,
    fail,
    label,
    matching_mistake,
    message,
    shape_of,
    to_array,
)

__all__ = [
    "check_merge_partials",
    "check_kv_cache_size",
    "check_repeat_kv_heads",
    "check_rope_half",
    "check_cached_window_mask",
]


# ------------------------------------------------ merging partial softmaxes


def _partial(q, k, v):
    """(m, ell, a) of q's attention over the keys k and values v alone: the
    state online_softmax_attention keeps after its last block."""
    s = q @ k.T / math.sqrt(q.shape[1])
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    return m, p.sum(axis=-1, keepdims=True), p @ v


def _merge_with(first, second, m, r1=None, r2=None):
    """The two states merged at maximum m, each part's sums times its
    factor: exp(m_i - m) unless given."""
    (m1, ell1, a1), (m2, ell2, a2) = first, second
    r1 = np.exp(m1 - m) if r1 is None else r1
    r2 = np.exp(m2 - m) if r2 is None else r2
    return m, ell1 * r1 + ell2 * r2, a1 * r1 + a2 * r2


def _merge_reference(first, second):
    return _merge_with(first, second, np.maximum(first[0], second[0]))


def _merge_inverted(first, second):
    m = np.maximum(first[0], second[0])
    return _merge_with(
        first, second, m, np.exp(m - first[0]), np.exp(m - second[0])
    )


MERGE_MISTAKES = [
    Mistake(
        lambda first, second: _merge_with(
            first, second, np.maximum(first[0], second[0]), 1, 1
        ),
        "each part's ell and a are sums relative to its own maximum m_i: "
        "multiply them by exp(m_i - m) before adding them.",
    ),
    Mistake(
        _merge_inverted,
        "the factor is exp(m_i - m), at most 1, since m is the larger "
        "maximum; exp(m - m_i) grows instead, and overflows.",
    ),
    Mistake(
        lambda first, second: _merge_with(first, second, first[0], r1=1),
        "m must be the larger of the two maxima, np.maximum(m1, m2): the "
        "second part may hold the larger scores.",
    ),
    Mistake(
        lambda first, second: _merge_with(first, second, second[0], r2=1),
        "m must be the larger of the two maxima, np.maximum(m1, m2): the "
        "first part may hold the larger scores.",
    ),
    Mistake(
        lambda first, second: _merge_with(
            first, second, np.minimum(first[0], second[0])
        ),
        "m must be the larger of the two maxima, np.maximum(m1, m2): with "
        "the smaller one, exp(m_i - m) overflows when the scores are large.",
    ),
]


def _merge_states(name, result, shapes, shown) -> list[np.ndarray]:
    """The learner's (m, ell, a) as float arrays of the input's shapes, or an
    ExerciseError that says what is wrong."""
    if not isinstance(result, tuple | list) or len(result) != 3:
        hint = None
        if hasattr(result, "shape") and tuple(result.shape) == shapes[2]:
            hint = (
                "return the state (m, ell, a), not the output a / ell: "
                "another part may still come."
            )
        problem = "should return the tuple (m, ell, a), got {result}"
        fail(name, problem, shown, hint, result=_describe_result(result))
    try:
        states = [np.asarray(r) for r in result]
        # float32 stays float32: expect_close's tolerance follows the dtype
        states = [
            state if state.dtype.kind == "f" else state.astype(np.float64)
            for state in states
        ]
    except (TypeError, ValueError) as error:
        detail = message("NumPy could not read them as arrays: {e}", e=error)
        problem = "should return three arrays (m, ell, a) of numbers"
        fail(name, problem, shown, details=[detail])
    got = [state.shape for state in states]
    if got != list(shapes):
        which = next(i for i in range(3) if got[i] != shapes[i])
        problem = (
            "returned {what} of shape {got}, expected {shape}, the shape of "
            "the parts' {what}."
        )
        hint = "m and ell keep one column per query (keepdims=True)."
        fields = {"what": ("m", "ell", "a")[which], "got": got[which]}
        fields["shape"] = shapes[which]
        fail(name, problem, shown, which < 2 and hint, **fields)
    return states


def _describe_result(result) -> str:
    if result is None:
        return message("None (did you forget `return`?)")
    if hasattr(result, "shape"):
        return message("an array of shape {shape}", shape=shape_of(result))
    kind = type(result).__name__
    if isinstance(result, tuple | list):
        return message("a {kind} of {n} items", kind=kind, n=len(result))
    return message("a {kind}", kind=kind)


class _Part(tuple):
    """The (m, ell, a) of the next part, which knows how the checker shows
    the inputs of its case (`shown`); the learner is given a plain tuple."""

    def __deepcopy__(self, memo) -> tuple:
        return tuple(copy.deepcopy(x, memo) for x in self)


def _merge_cases() -> list[tuple]:
    """(state, part): the parts' states merged in turn, the next part given
    with the state of those before it."""
    rng = np.random.default_rng(9)
    cases = []
    for T_q, T_k, d, cuts, scale in [
        (3, 8, 4, (3,), 1.0),
        (2, 9, 3, (2, 7), 1.0),
        (2, 6, 3, (4,), 300.0),
    ]:
        q, k, v = (rng.normal(size=(n, d)) for n in (T_q, T_k, T_k))
        k[-1] *= 30  # the last part holds the largest score
        q *= scale
        edges = list(itertools.pairwise([0, *cuts, T_k]))
        parts = [_Part(_partial(q, k[a:b], v[a:b])) for a, b in edges]
        text = (
            "{T_q} queries, {T_k} keys of width {d} in parts {parts}; the "
            "last key is large; scores in the thousands"
            if scale > 1
            else "{T_q} queries, {T_k} keys of width {d} in parts {parts}; "
            "the last key is large"
        )
        spans = ", ".join(f"{a}-{b - 1}" for a, b in edges)
        state = parts[0]
        for part in parts[1:]:
            part.shown = [label(text, T_q=T_q, T_k=T_k, d=d, parts=spans)]
            cases.append((state, part))
            state = _merge_reference(state, part)
    return cases


def _judge_merge(name, shown, got, want, state, part) -> None:
    """The learner's (m, ell, a) read, then each compared in turn."""
    got = _merge_states(name, got, tuple(x.shape for x in state), shown)
    with np.errstate(over="ignore", invalid="ignore"):
        wrong = [(m.variant(state, part), m.hint) for m in MERGE_MISTAKES]
    for i, what in enumerate(("an m with", "an ell with", "an a with")):
        mistakes = [(w[i], hint) for w, hint in wrong]
        expect_close(name, shown, got[i], want[i], mistakes, what=message(what))


MERGE_PARTIALS = Exercise(
    name="merge_partials",
    success="rescales each part's sums to the larger maximum.",
    doc="Check `merge_partials(first, second) -> (m, ell, a)`: the softmax "
    "state of two parts of the keys, each (m, ell, a), as one.",
    cases=_merge_cases,
    reference=_merge_reference,
    mistakes=MERGE_MISTAKES,
    compare=_judge_merge,
    shown=lambda state, part: part.shown,
    in_place=(
        "changed a part it was given in place; return new arrays and leave "
        "the parts as they were.",
        "m1 *= ..., a1 += ... and np.maximum(..., out=m1) write into the "
        "caller's arrays; compute new ones.",
    ),
)
check_merge_partials = MERGE_PARTIALS.checker()


# ------------------------------------------------------------ KV cache size


def _cache_bytes(n_layers, d_model, n_heads, n_kv_heads, length, batch, nbytes):
    d_k = d_model // n_heads
    return 2 * n_layers * batch * length * n_kv_heads * d_k * nbytes


def _int32(value: int) -> int:
    """What a 32-bit integer holds of `value`: wrapped around past 2**31."""
    return (value + 2**31) % 2**32 - 2**31


def _cache_mistake(wrong: Callable, hint: str, **fields) -> Mistake:
    """The known mistake `wrong(right answer, arguments)` (None: not here)."""
    return Mistake(
        lambda *a: wrong(_cache_bytes(*a), a),
        hint,
        (lambda *a: fields) if fields else None,
    )


def _cache_mistakes(args, passed) -> list[tuple[int, str]]:
    """The known mistakes on `args`, but those a case in `passed` ruled out;
    two that give the same value share it, their hints joined by "Or:"."""
    hints: dict = {}
    for mistake in KV_CACHE_SIZE.mistakes:
        if all(
            mistake.variant(*before) in (None, _cache_bytes(*before))
            for before in passed
        ):
            value, hint = mistake.on(args) or (None, None)
            if value is not None and hint not in hints.get(value, []):
                hints.setdefault(value, []).append(hint)
    return [(value, functools.reduce(_either, h)) for value, h in hints.items()]


def _either(hint: str, other: str) -> str:
    """Two hints that fit the same answer: "first Or: second"."""
    return message("{hint} Or: {other}", hint=hint, other=other)


def _as_bytes(got, want):
    """A float answer as an int where it is one (or right up to round-off)."""
    if isinstance(got, float) and abs(got - want) <= 1e-9 * want:
        return want  # right but for the round-off of float arithmetic
    if isinstance(got, float) and got.is_integer():
        return int(got)  # shown as 1536000, not 1.536e+06
    return got


def _judge_cache(name, shown, got, want, *args) -> None:
    """Exact bytes; a known mistake hinted only where the cases before this
    one (which passed) did not rule it out."""
    got = _as_bytes(got, want)
    passed = _CACHE_CASES[: _CACHE_CASES.index(args)]
    mistakes = _cache_mistakes(args, passed)
    if (
        isinstance(got, float)
        and not got.is_integer()
        and not any(same(got, value) for value, _ in mistakes)
    ):
        problem = (
            "returned {got!r}, not a whole number of bytes; expected {want}."
        )
        hint = "d_model // n_heads is the head width d_k, an integer."
        fail(name, problem, shown, hint, got=got, want=want)
    expect_equal(name, shown, got, want, mistakes)


_CACHE_CASES = [
    (3, 256, 16, 4, 100, 5, 4),
    (80, 8192, 64, 8, 4096, 1, 2),
    (12, 768, 12, 12, 1024, 2, 4),
    (80, 8192, 64, 8, 4096, 8, 2),  # 10 GiB, past 2**32
    (1, 1001, 7, 7, 40961, 1, 1),  # 82,003,922: not exact in float32
]
_CACHE_SHOWN = (
    "n_layers={}, d_model={}, n_heads={}, n_kv_heads={}, length={}, "
    "batch={}, bytes_per_number={}"
)
_GIB_HINT = (
    "return the bytes themselves, not GiB, MiB or GB: divide only to print."
)
_BYTES_HINT = (
    "bytes_per_number is an argument: multiply by it, not by a fixed {n}."
)

KV_CACHE_SIZE = Exercise(
    name="kv_cache_size",
    success="counts keys and values of every layer, head and token.",
    doc="Check `kv_cache_size(n_layers, d_model, n_heads, n_kv_heads, "
    "length, batch, bytes_per_number) -> int` for a decoder-only model.",
    cases=_CACHE_CASES,
    reference=_cache_bytes,
    compare=_judge_cache,
    shown=lambda *a: [label(message(_CACHE_SHOWN).format(*a))],
    # (wrong answer from the right one and the arguments, hint)
    mistakes=[
        _cache_mistake(
            lambda c, a: c // 2, "the cache holds keys AND values: a factor 2."
        ),
        _cache_mistake(
            lambda c, a: c // a[6],
            "that is a count of numbers: multiply by the bytes per number.",
        ),
        _cache_mistake(
            lambda c, a: c // a[5],
            "every sentence of the batch has its own cache: times batch.",
        ),
        _cache_mistake(
            lambda c, a: c // a[0],
            "every layer has its own keys and values: times n_layers.",
        ),
        _cache_mistake(
            lambda c, a: c * a[2] // a[3] if a[2] != a[3] else None,
            "the keys and values have n_kv_heads heads of d_k = d_model / "
            "n_heads each, not n_heads heads (d_model numbers) per token.",
        ),
        _cache_mistake(
            lambda c, a: 2 * c,
            "a decoder-only model has no cross-attention: one key and one "
            "value per layer and token (the factor 2), not two of each.",
        ),
        _cache_mistake(
            lambda c, a: 8 * c,
            "that is bits: bytes_per_number already counts bytes.",
        ),
        _cache_mistake(
            lambda c, a: c // a[6] * 4 if a[6] != 4 else None,
            _BYTES_HINT,
            n=4,
        ),
        _cache_mistake(
            lambda c, a: c // a[6] * 2 if a[6] != 2 else None,
            _BYTES_HINT,
            n=2,
        ),
        _cache_mistake(lambda c, a: c / 2**30, _GIB_HINT),
        _cache_mistake(lambda c, a: c / 2**20, _GIB_HINT),
        _cache_mistake(lambda c, a: c / 1e9, _GIB_HINT),
        _cache_mistake(
            lambda c, a: _int32(c) if c >= 2**31 else None,
            "the product overflowed a 32-bit integer (np.int32 or "
            "torch.int32 wrap around past 2**31): multiply Python ints.",
        ),
    ],
)
check_kv_cache_size = KV_CACHE_SIZE.checker()


# ------------------------------------------------------------ tensors


_TENSOR = Refusal(
    not_a_tensor,
    "returned {kind}; expected a tensor of shape {shape}.",
    "keep the result a torch.Tensor: no .tolist(), .numpy() or NumPy "
    "functions on the way.",
)


def _x_unchanged(hint: str) -> Callable:
    """The check that the input tensor x (the first) kept its shape and
    values; `hint` names the in-place writes of the exercise."""

    def check(name: str, shown, given, originals) -> None:
        x, now = originals[0], given[0]
        if now.shape != x.shape:
            problem = (
                "changed the shape of its input x in place, to {shape}; leave "
                "the caller's tensor as it was."
            )
            hint_shape = (
                "unsqueeze_, squeeze_, resize_ and the like modify x itself: "
                "use x[:, :, None] or x.unsqueeze(2), which give a new view."
            )
            fail(name, problem, shown, hint_shape, shape=shape_of(now))
        problem = (
            "changed its input x in place; return a new tensor and leave x "
            "as it was."
        )
        expect_unchanged(name, shown, [now], [x], problem, hint)

    return check


# ------------------------------------------------------------ GQA heads


def _repeat_cases():
    import torch

    cases = []
    for B, h_kv, T, d_k, n_rep in [
        (2, 2, 3, 4, 3),
        (1, 3, 2, 2, 2),
        (1, 2, 2, 2, 1),
    ]:
        generator = torch.Generator().manual_seed(h_kv)
        cases.append((torch.randn(B, h_kv, T, d_k, generator=generator), n_rep))
    return cases


def _expanded(x, n_rep: int, after: int):
    """x with n_rep copies on a new axis after axis `after`."""
    shape = list(x.shape)
    shape.insert(after + 1, n_rep)
    return x.unsqueeze(after + 1).expand(*shape)


REPEAT_KV_HEADS = Exercise(
    name="repeat_kv_heads",
    success="gives each group of query heads its key/value head.",
    doc="""Check `repeat_kv_heads(x, n_rep)`: (B, h_kv, T, d_k) -> (B, h_kv*n_rep, T, d_k).""",
    cases=_repeat_cases,
    reference=lambda x, n_rep: x.repeat_interleave(n_rep, dim=1),
    shown=lambda x, n_rep: [
        label("x of shape {shape}", shape=shape_of(x)),
        n_rep,
    ],
    in_place=_x_unchanged(
        "x[...] = ... and x.mul_() write into the caller's tensor."
    ),
    refusals=[_TENSOR],
    mistakes=[
        Mistake(
            lambda x, n_rep: x.repeat(1, n_rep, 1, 1),
            "x.repeat tiles the heads (0, 1, 0, 1, ...): consecutive query "
            "heads form a group, so key/value head 0 must come n_rep times "
            "first (0, 0, 0, 1, 1, 1).",
        ),
        Mistake(
            lambda x, n_rep: x.repeat_interleave(n_rep, dim=2),
            "that repeats the tokens (dim 2): repeat the heads (dim 1).",
        ),
        Mistake(
            lambda x, n_rep: _expanded(x, n_rep, 2).reshape(
                x.size(0), -1, x.size(2), x.size(3)
            ),
            "the new axis must come right after the heads, x[:, :, None]: "
            "the reshape then merges (h_kv, n_rep) into the heads; after the "
            "tokens it mixes tokens and heads.",
        ),
        Mistake(
            lambda x, n_rep: _expanded(x, n_rep, 1),
            "the expanded tensor (B, h_kv, n_rep, T, d_k) still needs its "
            "reshape to (B, h_kv * n_rep, T, d_k).",
        ),
    ],
)
check_repeat_kv_heads = REPEAT_KV_HEADS.checker()


# ------------------------------------------------------------ RoPE, half split


def _rope_half(x, positions, base=10000.0, sign=1.0, exponent=2.0, split=True):
    import torch

    T, d = x.shape[-2:]
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = base ** (-exponent * i / d)
    angle = (
        torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta * sign
    )
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    if split:
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    pairs = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)
    return pairs.flatten(-2)


def _rope_cases():
    import torch

    cases = []
    for T, d, start in [(4, 8, 0), (3, 6, 5)]:
        generator = torch.Generator().manual_seed(d)
        x = torch.randn(T, d, generator=generator, dtype=torch.float64)
        cases.append((x, torch.arange(start, start + T)))
    # positions as given, not counted from the first (a cache's, a batch's)
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(3))
    cases.append((x.double(), torch.tensor([3, 0, 7])))
    return cases


def _positions_shown(positions):
    """'positions 5 .. 7' for consecutive positions, else all of them."""
    values = [int(p) for p in positions]
    if values == list(range(values[0], values[0] + len(values))):
        return label(
            "positions {first} .. {last}", first=values[0], last=values[-1]
        )
    return label("positions {values}", values=values)


_OFF_BY_ONE = (
    "the positions are off by one: the angle is p theta_i with p as given "
    "(position 0 is not rotated)."
)

ROPE_HALF = Exercise(
    name="rope_half",
    success="rotates dimension i with dimension i + d/2.",
    doc="""Check `rope_half(x, positions)`: RoPE pairing dimension i with i + d/2.""",
    cases=_rope_cases,
    reference=_rope_half,
    shown=lambda x, positions: [
        label("x of shape {shape}", shape=shape_of(x)),
        _positions_shown(positions),
    ],
    in_place=_x_unchanged(
        "x[:, :d//2] = ... writes into x (and into x1, a view of it, before "
        "x2's half is computed): build the result with torch.cat."
    ),
    refusals=[_TENSOR],
    mistakes=[
        Mistake(
            functools.partial(_rope_half, split=False),
            "those are the chapter's pairs (2i, 2i + 1); here dimension i "
            "pairs with i + d/2.",
        ),
        Mistake(
            functools.partial(_rope_half, sign=-1.0),
            "the rotation goes the other way: the first half gets x1 cos - x2 "
            "sin, the second x2 cos + x1 sin.",
        ),
        Mistake(
            functools.partial(_rope_half, exponent=1.0),
            "theta_i = base ** (-2 i / d) for i = 0 .. d/2 - 1 (the factor 2 "
            "of chapter 2).",
        ),
        Mistake(
            functools.partial(_rope_half, exponent=-2.0),
            "theta_i = base ** (-2 i / d) shrinks with i: mind the minus sign "
            "of the exponent.",
        ),
        Mistake(
            lambda x, positions: _rope_half(x, positions - positions[0]),
            "rotate by the positions given ({first} .. {last} here), not by "
            "torch.arange(T).",
            fields=lambda x, positions: {
                "first": int(positions[0]),
                "last": int(positions[-1]),
            },
        ),
        Mistake(lambda x, p: _rope_half(x, p + 1), _OFF_BY_ONE),
        Mistake(lambda x, p: _rope_half(x, p - 1), _OFF_BY_ONE),
        Mistake(
            lambda x, p: _rope_half(x, p).roll(x.size(-1) // 2, dims=-1),
            "the halves of the output are swapped: first x1 cos - x2 sin, "
            "then x2 cos + x1 sin.",
        ),
    ],
)
check_rope_half = ROPE_HALF.checker()


# ------------------------------------------------------- sliding-window mask


def _window_masks(n_new: int, length: int, window: int) -> dict:
    """The right mask and the wrong ones learners write, by name: (n_new,
    length + n_new) booleans, True = may attend."""
    import torch

    key = torch.arange(length + n_new)[None, :]
    query = torch.arange(length, length + n_new)[:, None]  # true positions
    j = torch.arange(n_new)[:, None]  # positions among the new tokens only
    causal = key <= query
    return {
        "right": causal & (key > query - window),
        "upper left": (key <= j) & (key > j - window),
        "window + 1": causal & (key >= query - window),
        "no causal": key > query - window,
        "window from j": causal & (key > j - window),
        "no window": causal,
        "one window": causal & (key > length + n_new - 1 - window),
    }


_WINDOW_HINTS = {
    "upper left": "new token j is token length + j: align the mask to the "
    "bottom right (the keys it sees end at position length + j), as "
    "DecoderCache's tril(diagonal=length) does.",
    "window + 1": "that lets each token see window + 1 keys: the window "
    "counts the token itself, so key > query - window, not >=.",
    "no causal": "a token must not see the tokens after it: key <= query, "
    "as well as the window.",
    "window from j": "the window ends at the token's own position, length + "
    "j: it reaches window - 1 keys back from there, not from j.",
    "no window": "that is the causal mask alone: a key more than window - 1 "
    "positions back is out of the window.",
    "one window": "the window moves with each new token: each one sees the "
    "window keys ending at its own position, not those ending at the last.",
}


def _judge_mask(name, shown, got, expected, n_new, length, window) -> None:
    """The shape and dtype, then the first row that differs, with the hint
    of the known wrong mask that `got` is, if any."""
    import torch

    if got.shape != expected.shape:
        problem = (
            "returned a tensor of shape {got}; expected {shape}: one row per "
            "new token, one column per key, cached and new."
        )
        fail(name, problem, shown, got=shape_of(got), shape=shape_of(expected))
    if got.dtype != torch.bool:
        hint = (
            "F.scaled_dot_product_attention adds a float mask to the scores "
            "instead of reading it as allowed/not allowed: return booleans, "
            "True = may attend."
            if got.is_floating_point()
            else "PyTorch reads only torch.bool as allowed/not allowed: return "
            "booleans (a comparison gives them), not 0 and 1."
        )
        problem = "returned a {dtype} tensor; expected torch.bool."
        fail(name, problem, shown, hint, dtype=got.dtype)
    if torch.equal(got, expected):
        return
    masks = _window_masks(n_new, length, window)
    known = [(masks[wrong], hint) for wrong, hint in _WINDOW_HINTS.items()]
    hint = matching_mistake(to_array(got), known, atol=0.0)
    row = next(i for i in range(n_new) if not torch.equal(got[i], expected[i]))
    problem = (
        "new token {row} (position {position}) may attend to keys {seen}; "
        "expected {right}."
    )
    fields = {"row": row, "position": length + row}
    fields["seen"] = got[row].nonzero().flatten().tolist()
    fields["right"] = expected[row].nonzero().flatten().tolist()
    fail(name, problem, shown, hint, **fields)


CACHED_WINDOW_MASK = Exercise(
    name="cached_window_mask",
    success="lets each token see itself and window - 1 before it.",
    doc="""Check `cached_window_mask(n_new, length, window)` -> (n_new, length +
    n_new) bool tensor: new token j (position length + j) may attend to the
    keys at positions length + j - window + 1 .. length + j.""",
    cases=[(4, 5, 3), (1, 7, 3), (5, 0, 2), (3, 2, 10), (2, 6, 1)],
    reference=lambda *args: _window_masks(*args)["right"],
    shown=lambda *case: [
        label(message("n_new={}, length={}, window={}").format(*case))
    ],
    refusals=[
        Refusal(
            lambda got: not is_tensor(got),
            "returned {kind}; expected a bool tensor of shape {shape}.",
            _TENSOR.hint,
        )
    ],
    compare=_judge_mask,
)
check_cached_window_mask = CACHED_WINDOW_MASK.checker()
