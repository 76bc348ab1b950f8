"""Checkers for chapter 6: the full Transformer."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from transformer_course.exercises._core import (
    is_tensor,
    to_array,
    not_a_tensor,
    Exercise,
    Mistake,
    Refusal,
    fail,
    label,
    shape_of,
)

__all__ = [
    "check_vocab_break_even",
    "check_pre_ln_encode",
    "check_decoder_layer_forward",
    "check_teacher_forcing",
]


def _no_grad(fn: Callable) -> Callable:
    """`fn` run without autograd: the checker's own forward passes."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import torch

        with torch.no_grad():
            return fn(*args, **kwargs)

    return wrapper


def _numpy(name: str, shown, value):
    """A learner's tensor as a float64 NumPy array; anything else unchanged."""
    return to_array(value) if is_tensor(value) else value


_TENSOR = Refusal(
    not_a_tensor,
    "returned a {type}; expected a tensor of shape {shape}.",
    "keep the result a torch.Tensor: no .tolist(), .numpy() or .item() at "
    "the end.",
)


@_no_grad
def _cross_first(layer, x, memory, src_mask):
    """The decoder layer with its two attention sub-layers swapped."""
    y = layer.residual1(
        x, lambda z: layer.cross_attn(z, memory, memory, src_mask)
    )
    y = layer.residual2(y, lambda z: layer.self_attn(z, z, z, is_causal=True))
    return layer.residual3(y, layer.feed_forward)


def _decoder_cases():
    """A DecoderLayer with three different LayerNorms (as after training),
    on a square and a rectangular case; the source has two padded tokens."""
    import torch

    from transformer_course.transformer import DecoderLayer

    torch.manual_seed(0)  # the verdict restores the learner's random state
    layer = DecoderLayer(16, 4, 64).eval()
    with torch.no_grad():
        for residual in (layer.residual1, layer.residual2, layer.residual3):
            residual.norm.weight.uniform_(0.5, 2.0)
            residual.norm.bias.uniform_(-1.0, 1.0)
    cases = []
    for T_tgt, T_src in [(5, 5), (4, 7)]:
        x = torch.randn(2, T_tgt, 16)
        memory = torch.randn(2, T_src, 16)
        src_mask = torch.ones(2, 1, T_src, dtype=torch.bool)
        src_mask[1, :, T_src - 2 :] = False  # two padded source tokens
        cases.append((layer, x, memory, src_mask))
    return cases


def _decoder(
    self_mask, sources, cross_mask, square=False, feed_forward=True
) -> Callable:
    """A variant of (layer, x, memory, src_mask): DecoderLayer's computation
    with other masks ("causal", "src_mask", "~" before one for its inverse,
    None for none), with the cross-attention's queries, keys and values
    (`sources`, "ymm" when right) taken from the decoder's states ("y") or
    the memory ("m"), or without its feed-forward sub-layer; None where
    `square` asks for T_tgt == T_src and the case is not."""

    @_no_grad
    def variant(layer, x, memory, src_mask):
        import torch

        if square and x.size(1) != memory.size(1):
            return None
        causal = torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril()
        masks = {"causal": causal, "src_mask": src_mask, None: None}
        masks |= {f"~{name}": ~masks[name] for name in ("causal", "src_mask")}

        def cross(z):
            q, k, v = (z if source == "y" else memory for source in sources)
            return layer.cross_attn(q, k, v, masks[cross_mask])

        y = layer.residual1(
            x, lambda z: layer.self_attn(z, z, z, masks[self_mask])
        )
        y = layer.residual2(y, cross)
        return layer.residual3(y, layer.feed_forward) if feed_forward else y

    return variant


_KEYS_VALUES_FROM_DECODER = (
    "the cross-attention takes its keys and values from the decoder's "
    "states: they must come from the memory."
)

DECODER_LAYER_FORWARD = Exercise(
    name="decoder_layer_forward",
    success="reads the source through the memory.",
    doc="""Check `decoder_layer_forward(layer, x, memory, src_mask)`.""",
    cases=_decoder_cases,
    reference=_no_grad(lambda layer, *inputs: layer(*inputs)),
    shared=1,
    shown=lambda layer, x, memory, src_mask: [
        label("a DecoderLayer(16, 4, 64)"),
        label("x of shape {shape}", shape=shape_of(x)),
        label("memory of shape {shape}", shape=shape_of(memory)),
        label("src_mask of shape {shape}", shape=shape_of(src_mask)),
    ],
    in_place=(
        "changed its inputs in place; return a new tensor.",
        "copy_(), +=, masked_fill_() and x[...] = write into the caller's "
        "tensor.",
    ),
    refusals=[_TENSOR],
    convert=_numpy,
    atol=1e-5,
    mistakes=[
        Mistake(_decoder("causal", "yyy", None), _KEYS_VALUES_FROM_DECODER),
        Mistake(
            _decoder("causal", "ymm", None),
            "the source's padding is attended to: pass src_mask to the "
            "cross-attention.",
        ),
        Mistake(
            _decoder(None, "ymm", "src_mask"),
            "the self-attention sees the future: make it causal.",
        ),
        Mistake(
            _decoder("causal", "ymm", "~src_mask"),
            "the memory mask is inverted: in this book True means 'may "
            "attend' (a real token), False a padded one.",
        ),
        Mistake(
            _decoder("~causal", "ymm", "src_mask"),
            "the causal mask is inverted: in this book True means 'may "
            "attend', so keep tril(); PyTorch's nn.Transformer uses the "
            "opposite convention.",
        ),
        Mistake(
            _cross_first,
            "the sub-layers are in the wrong order: masked self-attention "
            "first, then cross-attention, then the feed-forward network.",
        ),
        Mistake(
            _decoder("causal", "ymm", "src_mask", feed_forward=False),
            "the feed-forward sub-layer (residual3) is missing.",
        ),
        Mistake(
            _decoder("causal", "ymy", "src_mask", square=True),
            "the values come from the decoder's states: both keys and values "
            "must come from the memory.",
        ),
        Mistake(
            _decoder("causal", "myy", "src_mask", square=True),
            "the cross-attention takes its queries from the memory: queries "
            "come from the decoder, keys and values from the memory.",
        ),
        Mistake(
            _decoder("src_mask", "ymm", "src_mask", square=True),
            "src_mask masks the source: it belongs to the cross-attention; "
            "the self-attention is causal.",
        ),
        Mistake(
            _decoder("causal", "yyy", "src_mask", square=True),
            _KEYS_VALUES_FROM_DECODER,
        ),
        Mistake(
            _decoder("causal", "yym", "src_mask", square=True),
            "the keys come from the decoder's states: both keys and values "
            "must come from the memory.",
        ),
    ],
)
check_decoder_layer_forward = DECODER_LAYER_FORWARD.checker()


def _as_id_lists(name: str, shown, got):
    """A pair of tensors, arrays or tuples of ids as a pair of int lists;
    anything else unchanged, for the comparison to describe."""
    if not (isinstance(got, tuple) and len(got) == 2):
        return got
    parts = []
    for part in got:
        if getattr(part, "ndim", 1) > 1:
            problem = (
                "returned a part of shape {shape}; expected a list of ids."
            )
            hint = "one sentence, no batch dimension: return two flat lists."
            fail(name, problem, shown, hint, shape=shape_of(part))
        if isinstance(part, (str, bytes)) or not hasattr(part, "__iter__"):
            return got
        try:
            parts.append([int(i) for i in part])
        except (TypeError, ValueError):
            return got
    return tuple(parts)


TEACHER_FORCING = Exercise(
    name="teacher_forcing",
    success="frames the sentence for teacher forcing.",
    doc="""Check `teacher_forcing(ids, bos_id, eos_id) -> (decoder_input, target)`.""",
    # ids unsorted, <bos> not <eos> - 1: neither order is to be assumed
    cases=[([6, 7, 8], 1, 2), ([10, 11, 12, 13, 14], 3, 4), ([9, 5, 7], 3, 1)],
    reference=lambda ids, bos, eos: ([bos, *ids], [*ids, eos]),
    compare="equal",
    what="(decoder_input, target)",
    names=("ids", "bos_id", "eos_id"),
    in_place=(
        "changed {what} in place: it is now {now!r}; return new lists.",
        "append() and insert() change the caller's list; build new ones: "
        "[bos_id] + ids, ids + [eos_id].",
    ),
    convert=_as_id_lists,
    mistakes=[
        Mistake(
            lambda ids, bos, eos: (ids, ids),
            "nothing is shifted: the decoder would learn to copy its input. "
            "Put bos_id in front of the input.",
        ),
        Mistake(
            lambda ids, bos, eos: ([bos, *ids[:-1]], ids),
            "that is the notes' example (<bos> 我 爱 -> 我 爱 你), which never "
            "teaches the model to stop: end the target with eos_id and keep "
            "the last word in the input.",
        ),
        Mistake(
            lambda ids, bos, eos: ([bos, *ids, eos], [*ids, eos]),
            "the input and the target must have the same length: the input "
            "stops before eos_id.",
        ),
        Mistake(
            lambda ids, bos, eos: ([bos, *ids], ids),
            "the target must end with eos_id, so that the model learns to "
            "stop.",
        ),
        Mistake(
            lambda ids, bos, eos: ([*ids, eos], [bos, *ids]),
            "input and target are swapped: the decoder input starts with "
            "bos_id.",
        ),
        Mistake(
            lambda ids, bos, eos: ([bos, *ids], [bos, *ids]),
            "the target is the input shifted left by one position.",
        ),
        Mistake(
            lambda ids, bos, eos: ([bos, *ids[:-1]], [*ids[1:], eos]),
            "words are lost: the input drops the last word and the target the "
            "first; input = [bos_id] + ids, target = ids + [eos_id].",
        ),
        Mistake(
            lambda ids, bos, eos: ([bos, *ids], [eos, *ids]),
            "eos_id goes at the end of the target, after the last word.",
        ),
        Mistake(
            lambda ids, bos, eos: [bos, *ids, eos],
            "return the two lists (decoder_input, target), not the framed "
            "sentence: the input drops its last token, the target its first.",
        ),
    ],
)
check_teacher_forcing = TEACHER_FORCING.checker()


def _attention(d: int) -> int:
    return 4 * (d * d + d)


def _ffn(d: int, d_ff: int) -> int:
    return 2 * d * d_ff + d_ff + d


def _encoder(d: int, n: int, d_ff: int) -> int:
    return n * (_attention(d) + _ffn(d, d_ff) + 2 * 2 * d)


def _decoder_size(d: int, n: int, d_ff: int) -> int:
    return n * (2 * _attention(d) + _ffn(d, d_ff) + 3 * 2 * d)


VOCAB_BREAK_EVEN = Exercise(
    name="vocab_break_even",
    success="encoder // d_model + 1 tokens outweigh the encoder.",
    doc="""Check `vocab_break_even(d_model, n_layers, d_ff)`: the smallest
    vocabulary whose embedding has more parameters than the whole encoder.""",
    # the first case: encoder // d_model and its ceiling differ
    # (64, 1, 40): a remainder above half of d_model (rounding is not flooring)
    cases=[
        (64, 3, 200),
        (512, 6, 2048),
        (1024, 6, 4096),
        (16, 2, 40),
        (64, 1, 40),
    ],
    reference=lambda d, n, d_ff: _encoder(d, n, d_ff) // d + 1,
    compare="equal",
    mistakes=[
        Mistake(
            lambda d, n, d_ff: -(-_encoder(d, n, d_ff) // d),
            "the embedding must have MORE parameters than the encoder, not as "
            "many: vocab * d_model > encoder.",
        ),
        Mistake(
            lambda d, n, d_ff: _encoder(d, n, d_ff) // d,
            "the embedding must have MORE parameters than the encoder: the "
            "smallest vocab with vocab * d_model > encoder is encoder // "
            "d_model + 1.",
        ),
        Mistake(
            lambda d, n, d_ff: _encoder(d, 1, d_ff) // d + 1,
            "that is one encoder layer: the encoder has n_layers.",
        ),
        Mistake(
            lambda d, n, d_ff: (
                (_encoder(d, n, d_ff) + _decoder_size(d, n, d_ff)) // d + 1
            ),
            "count the encoder only, not the decoder too.",
        ),
        Mistake(
            lambda d, n, d_ff: _decoder_size(d, n, d_ff) // d + 1,
            "that is the decoder (two attentions, three LayerNorms); the "
            "encoder layer has one attention and two LayerNorms.",
        ),
        Mistake(
            lambda d, n, d_ff: n * (_attention(d) + _ffn(d, d_ff)) // d + 1,
            "the LayerNorms have parameters too: 2 * d_model each, two per "
            "encoder layer.",
        ),
        Mistake(
            lambda d, n, d_ff: n * (4 * d * d + 2 * d * d_ff + 4 * d) // d + 1,
            "every nn.Linear of the layer has a bias.",
        ),
        Mistake(
            lambda d, n, d_ff: (_encoder(d, n, d_ff) + 2 * d) // d + 1,
            "the post-LN encoder has no final LayerNorm: its last layer's "
            "own LayerNorm ends it.",
        ),
        Mistake(
            lambda d, n, d_ff: (
                n * (_attention(d) + 2 * d * 4 * d + 5 * d + 4 * d) // d + 1
            ),
            "use d_ff as given: it is not always 4 * d_model.",
        ),
    ],
)
check_vocab_break_even = VOCAB_BREAK_EVEN.checker()


def _pre_ln_model(n_layers: int, d_model: int, n_heads: int, pad_id: int = 0):
    """A pre-LN model, dropout 0, random LayerNorms, whose Residual modules are
    switched to post-LN: only a computation built from the sub-modules, not
    model.encode or layer(...), is pre-LN here."""
    import torch

    from transformer_course.transformer import Transformer, TransformerConfig

    torch.manual_seed(n_layers * 100 + d_model)  # the verdict restores it
    # vocab_size 11, d_ff = 2 d_model
    config = TransformerConfig(
        11, d_model, n_heads, n_layers, 2 * d_model, pad_id=pad_id
    )
    config = dataclasses.replace(config, dropout=0.0, norm_first=True)
    model = Transformer(config).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 2.0)
                module.bias.uniform_(-1.0, 1.0)
            if hasattr(module, "norm_first"):  # a Residual, made post-LN
                module.norm_first = False
    src = torch.randint(max(3, pad_id + 1), 11, (3, 6))  # no real token = pad
    src[0, 4:] = src[2, 2:] = config.pad_id  # right padding
    return model, src


@_no_grad
def _encode_variant(model, src, order="pre", final="end", mask=True):
    """The encoder by hand: pre-LN or post-LN sub-layers; the final LayerNorm
    at the end, after every layer, or left out; with or without the mask."""
    src_mask = (src != model.config.pad_id)[:, None, :] if mask else None
    x = model.embed(src)
    for layer in model.encoder_layers:
        r1, r2 = layer.residual1, layer.residual2
        if order == "pre":
            y = r1.norm(x)
            x = x + layer.self_attn(y, y, y, src_mask)
            x = x + layer.feed_forward(r2.norm(x))
        else:
            x = r1.norm(x + layer.self_attn(x, x, x, src_mask))
            x = r2.norm(x + layer.feed_forward(x))
        if final == "every":
            x = model.encoder_norm(x)
    if final == "end":
        x = model.encoder_norm(x)
    return x


PRE_LN_ENCODE = Exercise(
    name="pre_ln_encode",
    success="pre-LN sub-layers, the padding mask, one final LayerNorm.",
    doc="""Check `pre_ln_encode(model, src)`: the pre-LN encoder's memory.""",
    # pad_id 3: the model's own pad id, not 0, marks the padding
    cases=lambda: [
        _pre_ln_model(2, 8, 2),
        _pre_ln_model(3, 12, 3),
        _pre_ln_model(2, 8, 2, pad_id=3),
    ],
    reference=_encode_variant,
    shared=1,
    shown=lambda model, src: [
        label(
            "a pre-LN model, {n_layers} layers, d_model={d_model}",
            n_layers=model.config.n_layers,
            d_model=model.config.d_model,
        ),
        label(
            "src of shape {shape}, right-padded with pad_id {pad_id}",
            shape=shape_of(src),
            pad_id=model.config.pad_id,
        ),
    ],
    in_place=("changed src in place; leave it alone.", None),
    refusals=[_TENSOR],
    convert=_numpy,
    atol=1e-4,
    mistakes=[
        Mistake(
            functools.partial(_encode_variant, final=None),
            "the final LayerNorm is missing: a pre-LN stack ends with "
            "model.encoder_norm.",
        ),
        Mistake(
            functools.partial(_encode_variant, final="every"),
            "apply model.encoder_norm once, after the last layer, not after "
            "every layer.",
        ),
        Mistake(
            functools.partial(_encode_variant, order="post"),
            "that is post-LN (LayerNorm after the addition); so is "
            "model.encode or layer(x, mask) here: their Residuals are set to "
            "post-LN. Build each sub-layer as x + sublayer(residualK.norm(x)).",
        ),
        Mistake(
            functools.partial(_encode_variant, order="post", final=None),
            "that is the post-LN encoder: pre-LN normalises each sub-layer's "
            "input, adds x, and ends with model.encoder_norm.",
        ),
        Mistake(
            functools.partial(_encode_variant, mask=False),
            "the padding mask is missing: (src != pad_id) of shape (B, 1, "
            "T_src), passed to self_attn.",
        ),
    ],
)
check_pre_ln_encode = PRE_LN_ENCODE.checker()
