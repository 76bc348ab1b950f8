"""Checkers for chapter 6: the full Transformer."""

from __future__ import annotations

from collections.abc import Callable

from transformer_course.exercises._core import (
    _call,
    _copies,
    _expect_close,
    _expect_equal,
    _expect_unchanged,
    _fail,
    _Label,
    _verdict,
)

__all__ = [
    "check_vocab_break_even",
    "check_pre_ln_encode",
    "check_decoder_layer_forward",
    "check_teacher_forcing",
]


def _numpy(value):
    """A learner's tensor as a float64 NumPy array; anything else unchanged."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().double().numpy()
    return value


def _expect_tensor(name: str, inputs, got, shape) -> None:
    """Reject a list, a NumPy array or a number where a tensor is expected;
    a tuple or None is left to `_expect_close`, which names it."""
    import torch

    if got is None or isinstance(got, (tuple, torch.Tensor)):
        return
    _fail(
        name,
        f"returned a {type(got).__name__}; expected a tensor of shape "
        f"{tuple(shape)}.",
        inputs,
        "keep the result a torch.Tensor: no .tolist(), .numpy() or "
        ".item() at the end.",
    )


def _decoder_variant(
    layer,
    x,
    memory,
    self_mask,
    keys_values,
    cross_mask,
    feed_forward=True,
    queries="y",
):
    """DecoderLayer's computation with other masks, with keys and values (or
    queries) taken from the decoder's states ("y") or the memory ("m"), or
    without its feed-forward sub-layer."""
    y = layer.residual1(x, lambda z: layer.self_attn(z, z, z, self_mask))

    def cross(z):
        query = z if queries == "y" else memory
        keys = z if keys_values[0] == "y" else memory
        values = z if keys_values[1] == "y" else memory
        return layer.cross_attn(query, keys, values, cross_mask)

    y = layer.residual2(y, cross)
    return layer.residual3(y, layer.feed_forward) if feed_forward else y


def _cross_first(layer, x, memory, src_mask):
    """The decoder layer with its two attention sub-layers swapped."""
    y = layer.residual1(
        x, lambda z: layer.cross_attn(z, memory, memory, src_mask)
    )
    y = layer.residual2(y, lambda z: layer.self_attn(z, z, z, is_causal=True))
    return layer.residual3(y, layer.feed_forward)


def check_decoder_layer_forward(decoder_layer_forward: Callable) -> None:
    """Check `decoder_layer_forward(layer, x, memory, src_mask)`."""
    import torch

    from transformer_course.transformer import DecoderLayer

    name = "decoder_layer_forward"

    def run_cases() -> None:
        torch.manual_seed(0)  # _verdict restores the learner's random state
        layer = DecoderLayer(16, 4, 64).eval()
        with torch.no_grad():  # three different LayerNorms, as after training
            for residual in (layer.residual1, layer.residual2, layer.residual3):
                residual.norm.weight.uniform_(0.5, 2.0)
                residual.norm.bias.uniform_(-1.0, 1.0)
        for T_tgt, T_src in [(5, 5), (4, 7)]:
            x = torch.randn(2, T_tgt, 16)
            memory = torch.randn(2, T_src, 16)
            src_mask = torch.ones(2, 1, T_src, dtype=torch.bool)
            src_mask[1, :, T_src - 2 :] = False  # two padded source tokens
            causal = torch.ones(T_tgt, T_tgt, dtype=torch.bool).tril()

            with torch.no_grad():
                expected = layer(x, memory, src_mask)
                mistakes = [
                    (
                        _decoder_variant(layer, x, memory, causal, "yy", None),
                        "the cross-attention takes its keys and values from the "
                        "decoder's states: they must come from the memory.",
                    ),
                    (
                        _decoder_variant(layer, x, memory, causal, "mm", None),
                        "the source's padding is attended to: pass src_mask "
                        "to the cross-attention.",
                    ),
                    (
                        _decoder_variant(
                            layer, x, memory, None, "mm", src_mask
                        ),
                        "the self-attention sees the future: make it causal.",
                    ),
                ]
                mistakes += [
                    (
                        _decoder_variant(
                            layer, x, memory, causal, "mm", ~src_mask
                        ),
                        "the memory mask is inverted: in this book True means "
                        "'may attend' (a real token), False a padded one.",
                    ),
                    (
                        _decoder_variant(
                            layer, x, memory, ~causal, "mm", src_mask
                        ),
                        "the causal mask is inverted: in this book True means "
                        "'may attend', so keep tril(); PyTorch's nn.Transformer "
                        "uses the opposite convention.",
                    ),
                    (
                        _cross_first(layer, x, memory, src_mask),
                        "the sub-layers are in the wrong order: masked "
                        "self-attention first, then cross-attention, then "
                        "the feed-forward network.",
                    ),
                    (
                        _decoder_variant(
                            layer, x, memory, causal, "mm", src_mask, False
                        ),
                        "the feed-forward sub-layer (residual3) is missing.",
                    ),
                ]
                if T_tgt == T_src:
                    mistakes += [
                        (
                            _decoder_variant(
                                layer, x, memory, causal, "my", src_mask
                            ),
                            "the values come from the decoder's states: both keys "
                            "and values must come from the memory.",
                        ),
                        (
                            _decoder_variant(
                                layer,
                                x,
                                memory,
                                causal,
                                "yy",
                                src_mask,
                                queries="m",
                            ),
                            "the cross-attention takes its queries from the "
                            "memory: queries come from the decoder, keys and "
                            "values from the memory.",
                        ),
                        (
                            _decoder_variant(
                                layer, x, memory, src_mask, "mm", src_mask
                            ),
                            "src_mask masks the source: it belongs to the "
                            "cross-attention; the self-attention is causal.",
                        ),
                    ]
                    mistakes.append(
                        (
                            _decoder_variant(
                                layer, x, memory, causal, "yy", src_mask
                            ),
                            "the cross-attention takes its keys and values from "
                            "the decoder's states: they must come from the memory.",
                        )
                    )
                    mistakes.append(
                        (
                            _decoder_variant(
                                layer, x, memory, causal, "ym", src_mask
                            ),
                            "the keys come from the decoder's states: both keys "
                            "and values must come from the memory.",
                        )
                    )
                inputs = [
                    _Label("a DecoderLayer(16, 4, 64)"),
                    _Label(f"x of shape (2, {T_tgt}, 16)"),
                    _Label(f"memory of shape (2, {T_src}, 16)"),
                    _Label(f"src_mask of shape (2, 1, {T_src})"),
                ]
                given = _copies(x, memory, src_mask)
                got = _call(decoder_layer_forward, name, layer, *given)
                _expect_unchanged(
                    name,
                    inputs,
                    given,
                    [x, memory, src_mask],
                    "changed its inputs in place; return a new tensor.",
                    "copy_(), +=, masked_fill_() and x[...] = write into "
                    "the caller's tensor.",
                )
                _expect_tensor(name, inputs, got, expected.shape)
                _expect_close(
                    name, inputs, _numpy(got), expected, mistakes, atol=1e-5
                )

    _verdict(name, "reads the source through the memory.", run_cases)


def _as_id_lists(name: str, inputs, got):
    """A pair of tensors, arrays or tuples of ids as a pair of int lists;
    anything else unchanged, for `_expect_equal` to describe."""
    if not (isinstance(got, tuple) and len(got) == 2):
        return got
    parts = []
    for part in got:
        if getattr(part, "ndim", 1) > 1:
            _fail(
                name,
                f"returned a part of shape {tuple(part.shape)}; expected a "
                "list of ids.",
                inputs,
                "one sentence, no batch dimension: return two flat lists.",
            )
        if isinstance(part, (str, bytes)) or not hasattr(part, "__iter__"):
            return got
        try:
            parts.append([int(i) for i in part])
        except (TypeError, ValueError):
            return got
    return tuple(parts)


def check_teacher_forcing(teacher_forcing: Callable) -> None:
    """Check `teacher_forcing(ids, bos_id, eos_id) -> (decoder_input, target)`."""
    name = "teacher_forcing"

    def run_cases() -> None:
        for ids, bos, eos in [([6, 7, 8], 1, 2), ([10, 11, 12, 13, 14], 3, 4)]:
            expected = ([bos, *ids], [*ids, eos])
            mistakes = [
                (
                    (ids, ids),
                    "nothing is shifted: the decoder would learn to copy its "
                    "input. Put bos_id in front of the input.",
                ),
                (
                    ([bos, *ids[:-1]], ids),
                    "that is the notes' example (<bos> 我 爱 -> 我 爱 你), which "
                    "never teaches the model to stop: end the target with "
                    "eos_id and keep the last word in the input.",
                ),
                (
                    ([bos, *ids, eos], [*ids, eos]),
                    "the input and the target must have the same length: the "
                    "input stops before eos_id.",
                ),
                (
                    ([bos, *ids], ids),
                    "the target must end with eos_id, so that the model learns "
                    "to stop.",
                ),
                (
                    ([*ids, eos], [bos, *ids]),
                    "input and target are swapped: the decoder input starts "
                    "with bos_id.",
                ),
                (
                    ([bos, *ids], [bos, *ids]),
                    "the target is the input shifted left by one position.",
                ),
            ]
            mistakes += [
                (
                    ([bos, *ids[:-1]], [*ids[1:], eos]),
                    "words are lost: the input drops the last word and the "
                    "target the first; input = [bos_id] + ids, target = ids "
                    "+ [eos_id].",
                ),
                (
                    ([bos, *ids], [eos, *ids]),
                    "eos_id goes at the end of the target, after the last word.",
                ),
                (
                    [bos, *ids, eos],
                    "return the two lists (decoder_input, target), not the "
                    "framed sentence: the input drops its last token, the "
                    "target its first.",
                ),
            ]
            given = _copies(ids)
            got = _call(teacher_forcing, name, *given, bos, eos)
            _expect_unchanged(
                name,
                [ids, bos, eos],
                given,
                {"ids": ids},
                "changed {what} in place: it is now {now!r}; return new lists.",
                "append() and insert() change the caller's list; build "
                "new ones: [bos_id] + ids, ids + [eos_id].",
            )
            got = _as_id_lists(name, [ids, bos, eos], got)
            _expect_equal(
                name,
                [ids, bos, eos],
                got,
                expected,
                mistakes,
                what="(decoder_input, target)",
            )

    _verdict(name, "frames the sentence for teacher forcing.", run_cases)


def check_vocab_break_even(vocab_break_even: Callable) -> None:
    """Check `vocab_break_even(d_model, n_layers, d_ff)`: the smallest
    vocabulary whose embedding has more parameters than the whole encoder."""
    name = "vocab_break_even"

    def run_cases() -> None:
        for d, n, d_ff in [(512, 6, 2048), (1024, 6, 4096), (16, 2, 40)]:
            attention = 4 * (d * d + d)
            ffn = 2 * d * d_ff + d_ff + d
            layer = attention + ffn + 2 * 2 * d
            encoder = n * layer
            expected = encoder // d + 1
            decoder = n * (2 * attention + ffn + 3 * 2 * d)
            mistakes = [
                (
                    -(-encoder // d),
                    "the embedding must have MORE parameters than the "
                    "encoder, not as many: vocab * d_model > encoder.",
                ),
                (
                    encoder // d,
                    "the embedding must have MORE parameters than the "
                    "encoder: the smallest vocab with vocab * d_model > "
                    "encoder is encoder // d_model + 1.",
                ),
                (
                    layer // d + 1,
                    "that is one encoder layer: the encoder has n_layers.",
                ),
                (
                    (encoder + decoder) // d + 1,
                    "count the encoder only, not the decoder too.",
                ),
                (
                    decoder // d + 1,
                    "that is the decoder (two attentions, three LayerNorms); "
                    "the encoder layer has one attention and two LayerNorms.",
                ),
                (
                    n * (attention + ffn) // d + 1,
                    "the LayerNorms have parameters too: 2 * d_model each, "
                    "two per encoder layer.",
                ),
                (
                    n * (4 * d * d + 2 * d * d_ff + 4 * d) // d + 1,
                    "every nn.Linear of the layer has a bias.",
                ),
                (
                    (encoder + 2 * d) // d + 1,
                    "the post-LN encoder has no final LayerNorm: its last "
                    "layer's own LayerNorm ends it.",
                ),
                (
                    n * (attention + 2 * d * 4 * d + 5 * d + 4 * d) // d + 1,
                    "use d_ff as given: it is not always 4 * d_model.",
                ),
            ]
            got = _call(vocab_break_even, name, d, n, d_ff)
            _expect_equal(name, [d, n, d_ff], got, expected, mistakes)

    _verdict(
        name,
        "encoder // d_model + 1 tokens outweigh the encoder.",
        run_cases,
    )


def _pre_ln_model(n_layers: int, d_model: int, n_heads: int):
    """A pre-LN model, dropout 0, random LayerNorms, whose Residual modules are
    switched to post-LN: only a computation built from the sub-modules, not
    model.encode or layer(...), is pre-LN here."""
    import torch

    from transformer_course.transformer import Transformer, TransformerConfig

    torch.manual_seed(n_layers * 100 + d_model)  # _verdict restores it
    config = TransformerConfig(
        vocab_size=11,
        d_model=d_model,
        n_heads=n_heads,
        n_layers=n_layers,
        d_ff=2 * d_model,
        dropout=0.0,
        norm_first=True,
    )
    model = Transformer(config).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 2.0)
                module.bias.uniform_(-1.0, 1.0)
    src = torch.randint(3, 11, (3, 6))
    src[0, 4:] = src[2, 2:] = config.pad_id  # right padding
    return model, src


def _encode_variant(model, src, order="pre", final="end", mask=True):
    """The encoder by hand: pre-LN or post-LN sub-layers; the final LayerNorm
    at the end, after every layer, or left out; with or without the mask."""
    import torch

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
    return x if isinstance(x, torch.Tensor) else None


def check_pre_ln_encode(pre_ln_encode: Callable) -> None:
    """Check `pre_ln_encode(model, src)`: the pre-LN encoder's memory."""
    name = "pre_ln_encode"

    def run_cases() -> None:
        import torch

        for n_layers, d_model, n_heads in [(2, 8, 2), (3, 12, 3)]:
            model, src = _pre_ln_model(n_layers, d_model, n_heads)
            for module in model.modules():
                if hasattr(module, "norm_first"):
                    module.norm_first = False
            with torch.no_grad():
                expected = _encode_variant(model, src)
                mistakes = [
                    (
                        _encode_variant(model, src, final=None),
                        "the final LayerNorm is missing: a pre-LN stack ends "
                        "with model.encoder_norm.",
                    ),
                    (
                        _encode_variant(model, src, final="every"),
                        "apply model.encoder_norm once, after the last layer, "
                        "not after every layer.",
                    ),
                    (
                        _encode_variant(model, src, order="post"),
                        "that is post-LN (LayerNorm after the addition); so is "
                        "model.encode or layer(x, mask) here: their Residuals "
                        "are set to post-LN. Build each sub-layer as "
                        "x + sublayer(residualK.norm(x)).",
                    ),
                    (
                        _encode_variant(model, src, order="post", final=None),
                        "that is the post-LN encoder: pre-LN normalises each "
                        "sub-layer's input, adds x, and ends with "
                        "model.encoder_norm.",
                    ),
                    (
                        _encode_variant(model, src, mask=False),
                        "the padding mask is missing: (src != pad_id) of "
                        "shape (B, 1, T_src), passed to self_attn.",
                    ),
                ]
            inputs = [
                _Label(f"a pre-LN model, {n_layers} layers, d_model={d_model}"),
                _Label(f"src of shape {tuple(src.shape)}, right-padded"),
            ]
            given = _copies(src)
            got = _call(pre_ln_encode, name, model, *given)
            problem = "changed src in place; leave it alone."
            _expect_unchanged(name, inputs, given, [src], problem, None)
            _expect_tensor(name, inputs, got, expected.shape)
            _expect_close(
                name, inputs, _numpy(got), expected, mistakes, atol=1e-4
            )

    _verdict(
        name,
        "pre-LN sub-layers, the padding mask, one final LayerNorm.",
        run_cases,
    )
