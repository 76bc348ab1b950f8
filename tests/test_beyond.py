"""Chapter 9's library: online softmax, RoPE, grouped-query attention, KV cache."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_course import (
    MultiHeadAttention,
    Transformer,
    beam_search,
    count_parameters,
    greedy_decode,
    scaled_dot_product_attention,
)
from transformer_course.beyond import (
    CPU_KERNEL_READS_SHARED_HEADS,
    BeyondConfig,
    GroupedQueryAttention,
    explicit_attention,
    grouped_query_transformer,
    online_softmax_attention,
    repeat_kv,
    rope,
    saved_tensor_bytes,
)
from transformer_course.kv_cache import DecoderCache, kv_cache_bytes
from transformer_course.transformer import (
    TransformerConfig,
    to_torch_transformer,
)


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 6, 3), (1, 1, 3)])
@pytest.mark.parametrize("block_size", [1, 2, 5, 100])
def test_online_softmax_equals_chapter_3(shape, block_size):
    rng = np.random.default_rng(0)
    q = rng.normal(size=shape) * 50
    k, v = rng.normal(size=shape), rng.normal(size=shape[:-1] + (2,))
    expected, _ = scaled_dot_product_attention(q, k, v)
    got = online_softmax_attention(q, k, v, block_size)
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_online_softmax_rejects_bad_block_size():
    q = np.ones((2, 2))
    with pytest.raises(ValueError, match="positive"):
        online_softmax_attention(q, q, q, 0)
    with pytest.raises(TypeError, match="int"):
        online_softmax_attention(q, q, q, 2.0)


def test_fused_keeps_no_t_by_t_tensor():
    q, k, v = (torch.randn(1, 2, 64, 8, requires_grad=True) for _ in range(3))
    fused = saved_tensor_bytes(
        lambda *a: F.scaled_dot_product_attention(*a, is_causal=True), q, k, v
    )
    explicit = saved_tensor_bytes(
        lambda *a: explicit_attention(*a, is_causal=True), q, k, v
    )
    assert explicit >= 2 * 64 * 64 * 4 > fused
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, explicit_attention(q, k, v, True))


@pytest.mark.parametrize("offset", [1, 7, 300])
def test_rope_scores_depend_only_on_the_offset(offset):
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 3, 12, 8, generator=g, dtype=torch.float64)
    scores = rope(q) @ rope(k).transpose(-1, -2)
    positions = torch.arange(12) + offset
    shifted = rope(q, positions) @ rope(k, positions).transpose(-1, -2)
    torch.testing.assert_close(scores, shifted, rtol=0, atol=1e-10)
    torch.testing.assert_close(rope(q).norm(dim=-1), q.norm(dim=-1))


def test_rope_rotates_one_pair_by_the_angle():
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0]]).repeat(3, 1)
    out = rope(x, torch.tensor([0, 1, 2]), base=100.0)
    # pair 0 turns by p, pair 1 by p / 100 ** 0.5 = p / 10
    for p in range(3):
        assert torch.allclose(
            out[p, :2], torch.tensor([np.cos(p), np.sin(p)]).float()
        )
        angle = p / 10
        assert torch.allclose(
            out[p, 2:], torch.tensor([np.cos(angle), np.sin(angle)]).float()
        )
    with pytest.raises(ValueError, match="even"):
        rope(torch.ones(2, 3))


def test_repeat_kv_groups_consecutive_heads():
    x = torch.arange(2.0).view(1, 2, 1, 1)
    assert repeat_kv(x, 3).flatten().tolist() == [0, 0, 0, 1, 1, 1]


def test_repeat_kv_of_one_is_the_tensor_itself():
    x = torch.randn(2, 4, 3, 8)
    assert repeat_kv(x, 1) is x  # no copy for multi-head attention


@pytest.mark.skipif(
    not CPU_KERNEL_READS_SHARED_HEADS,
    reason="this PyTorch's CPU kernel takes no shared heads: attend copies",
)
@pytest.mark.parametrize(
    "mask_kind", [None, "causal mask", "is_causal", "padding", "one query"]
)
@pytest.mark.parametrize("n_kv_heads", [1, 2])
def test_gqa_reads_shared_heads_in_place_without_gradients(
    monkeypatch, n_kv_heads, mask_kind
):
    """Without gradients, on a CPU, attend lets the kernel read the shared
    heads (enable_gqa=True): the same output, bit for bit, as the copies
    that a pass with gradients makes, and no copy at all. "one query": a
    decoding step, one query against six cached keys, padded."""
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(32, 4, n_kv_heads).eval()
    x = torch.randn(3, 6, 32)
    padding = torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]])
    query, mask, is_causal = x, None, False
    if mask_kind == "causal mask":
        mask = torch.ones(6, 6, dtype=torch.bool).tril()
    elif mask_kind == "is_causal":
        is_causal = True
    elif mask_kind == "padding":
        mask = padding.bool()[:, None]
    elif mask_kind == "one query":
        query, mask = x[:, -1:], padding.bool()[:, None]

    def attention():
        return gqa(query, x, x, mask, is_causal=is_causal)

    with_copies = attention()  # gradients on: repeat_kv's copies
    assert with_copies.requires_grad

    def no_copy(*args):
        raise AssertionError("repeat_kv called")

    monkeypatch.setattr("transformer_course.beyond.repeat_kv", no_copy)
    with torch.no_grad():
        in_place = attention()
    assert torch.equal(in_place, with_copies.detach())
    with pytest.raises(AssertionError, match="repeat_kv called"):
        attention()  # with gradients the copy is still made


@pytest.mark.parametrize("mask_kind", [None, "causal", "padding"])
def test_gqa_with_all_heads_equals_multi_head_attention(mask_kind):
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4).eval()
    gqa = GroupedQueryAttention(32, 4).eval()
    gqa.load_state_dict(mha.state_dict())
    x = torch.randn(2, 5, 32)
    mask = {
        None: None,
        "causal": torch.ones(5, 5, dtype=torch.bool).tril(),
        "padding": torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]).bool()[
            :, None
        ],
    }[mask_kind]
    torch.testing.assert_close(gqa(x, x, x, mask), mha(x, x, x, mask))


def test_gqa_fully_masked_query_gives_zero():
    gqa = GroupedQueryAttention(16, 4, 2).eval()
    x = torch.randn(1, 3, 16)
    mask = torch.tensor([[True, False, False], [False] * 3, [True] * 3])
    out = gqa(x, x, x, mask)
    assert not out.isnan().any()
    torch.testing.assert_close(out[0, 1], gqa.out_proj.bias)


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_gqa_shapes_and_sizes(n_kv_heads):
    gqa = GroupedQueryAttention(32, 4, n_kv_heads, rope=True)
    x = torch.randn(2, 5, 32)
    assert gqa(x, x, x, is_causal=True).shape == (2, 5, 32)
    assert gqa.k_proj.out_features == n_kv_heads * 8


@pytest.mark.parametrize("n_kv_heads", [3, 0, 2.0])
def test_gqa_rejects_bad_n_kv_heads(n_kv_heads):
    with pytest.raises((ValueError, TypeError), match="n_kv_heads"):
        GroupedQueryAttention(32, 4, n_kv_heads)


def test_from_multi_head_keeps_identical_groups():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    with torch.no_grad():
        for proj in (mha.k_proj, mha.v_proj):
            w = proj.weight.view(2, 2, 4, 16)
            w.copy_(w[:, :1].expand_as(w))
            b = proj.bias.view(2, 2, 4)
            b.copy_(b[:, :1].expand_as(b))
    gqa = GroupedQueryAttention.from_multi_head(mha, 2).eval()
    x = torch.randn(1, 4, 16)
    torch.testing.assert_close(gqa(x, x, x), mha(x, x, x))


VARIANTS = [
    {},
    {"n_kv_heads": 2},
    {"n_kv_heads": 1},
    {"rope": True},
    {"rope": True, "n_kv_heads": 2, "norm_first": True},
]


def _model(seed=0, **options):
    torch.manual_seed(seed)
    config = BeyondConfig(
        vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64, **options
    )
    return Transformer(config).eval()


@pytest.mark.parametrize("options", VARIANTS)
def test_cached_decoding_equals_uncached(options):
    model = _model(**options)
    src = torch.randint(3, 50, (3, 7))
    src[0, 4:] = 0
    cached = greedy_decode(model, src, 20, cache=DecoderCache)
    assert torch.equal(cached, greedy_decode(model, src, 20))
    beams = beam_search(model, src, 3, 20, cache=DecoderCache)
    assert torch.equal(beams, beam_search(model, src, 3, 20))


def test_cache_is_not_carried_between_sentences():
    model = _model(1)
    first, second = torch.randint(3, 50, (2, 1, 6))
    alone = greedy_decode(model, second, 12, cache=DecoderCache)
    greedy_decode(model, first, 12, cache=DecoderCache)
    assert torch.equal(
        greedy_decode(model, second, 12, cache=DecoderCache), alone
    )
    with torch.no_grad():
        memory, mask = model.encode(first)
        cache = DecoderCache(model, memory, mask, max_len=12)
        cache.next_token_log_probs(torch.ones(1, 3, dtype=torch.long))
        with pytest.raises(ValueError, match="new DecoderCache"):
            cache.next_token_log_probs(torch.ones(1, 2, dtype=torch.long))


@pytest.mark.parametrize("options", VARIANTS)
def test_cache_with_several_new_tokens_and_reorder(options):
    model = _model(2, **options)
    src = torch.randint(3, 50, (2, 5))  # 2 sentences, 2 hypotheses each
    tgt = torch.randint(3, 50, (4, 6))
    with torch.no_grad():
        memory, mask = model.encode(src)
        full = model.decode(
            tgt, memory.repeat_interleave(2, 0), mask.repeat_interleave(2, 0)
        ).log_softmax(-1)
        cache = DecoderCache(model, memory, mask, max_len=6, beam_size=2)
        cache.next_token_log_probs(tgt[:, :3])  # 3 tokens in one call
        swap = torch.tensor([1, 0, 3, 2])  # within each sentence's rows
        cache.reorder(swap)
        got = cache.next_token_log_probs(tgt[swap])  # then 3 more
    torch.testing.assert_close(got, full[swap, -1], atol=1e-5, rtol=1e-5)


def test_cache_writes_in_place_and_embeds_only_new_tokens():
    model = _model(2)
    src = torch.randint(3, 50, (2, 5))
    embedded = []
    hook = model.embedding.register_forward_hook(
        lambda module, args, out: embedded.append(tuple(args[0].shape))
    )
    with torch.no_grad():
        memory, mask = model.encode(src)
        embedded.clear()  # the encoder's
        cache = DecoderCache(model, memory, mask, max_len=8, beam_size=3)
        cross = [kv for pair in cache.cross for kv in pair]
        tokens = torch.ones(6, 1, dtype=torch.long)
        rooms = []
        for step in range(7):
            cache.next_token_log_probs(tokens)
            rooms.append([kv.data_ptr() for kv in cache.self_kv])
            if step >= 4:  # beam search's reorder moves the filled part
                cache.reorder(torch.tensor([2, 0, 0, 5, 3, 4]))
            tokens = torch.cat([tokens, torch.full((6, 1), 7)], 1)
    hook.remove()
    assert embedded == [(6, 1)] * 7  # one new token per row and step
    assert rooms[0] == rooms[1] == rooms[4]  # written in place, no new room
    assert all(
        a is b
        for a, b in zip(
            cross, [kv for p in cache.cross for kv in p], strict=True
        )
    )
    assert cache.cross[0][0].size(0) == 2  # one row per sentence, not per beam
    assert cache.self_kv[0].shape == (2, 6, 4, 8, 8)  # K/V, rows, h, max_len


def test_cache_follows_the_keys_dtype_and_the_model_max_len():
    model = _model(2).to(torch.bfloat16)
    src = torch.randint(3, 50, (2, 5))
    with torch.no_grad():
        memory, mask = model.encode(src)
        cache = DecoderCache(model, memory, mask, max_len=4)
        cache.next_token_log_probs(torch.ones(2, 2, dtype=torch.long))
        assert cache.self_kv[0].dtype == torch.bfloat16
        with pytest.raises(ValueError, match="model's max_len=5000"):
            DecoderCache(model, memory, mask, max_len=5001)


def test_cache_refuses_what_it_has_no_room_for():
    model = _model(2)
    src = torch.randint(3, 50, (2, 5))
    with torch.no_grad():
        memory, mask = model.encode(src)
        cache = DecoderCache(model, memory, mask, max_len=3, beam_size=2)
        with pytest.raises(ValueError, match="room for 4 rows of max_len=3"):
            cache.next_token_log_probs(torch.ones(4, 4, dtype=torch.long))
        with pytest.raises(ValueError, match="room for 4 rows"):
            cache.next_token_log_probs(torch.ones(2, 2, dtype=torch.long))
        cache.next_token_log_probs(torch.ones(4, 2, dtype=torch.long))
        with pytest.raises(ValueError, match="its own sentence"):
            cache.reorder(torch.tensor([2, 1, 0, 3]))  # rows 0 and 2 swapped
        with pytest.raises(ValueError, match="each of the 4 rows"):
            cache.reorder(torch.tensor([1, 0]))


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_cache_bytes_formula_matches_the_cache(n_kv_heads):
    model = _model(n_kv_heads=n_kv_heads)
    src = torch.randint(3, 50, (2, 5))
    with torch.no_grad():
        memory, mask = model.encode(src)
        cache = DecoderCache(model, memory, mask, max_len=4)
        cache.next_token_log_probs(torch.ones(2, 4, dtype=torch.long))
    expected = kv_cache_bytes(2, n_kv_heads, 8, 4, batch=2) + kv_cache_bytes(
        2, n_kv_heads, 8, 5, 2
    )
    assert cache.nbytes == expected


def test_config_options_build_the_right_attention():
    plain, mqa, rotary = _model(), _model(n_kv_heads=1), _model(rope=True)
    # GQA in the decoder only (the GQA paper); the encoder keeps h heads
    assert type(mqa.encoder_layers[0].self_attn) is MultiHeadAttention
    for attention in (
        mqa.decoder_layers[0].self_attn,
        mqa.decoder_layers[0].cross_attn,
    ):
        assert attention.k_proj.out_features == 8  # one head of d_k = 8
        assert not attention.rope
    saved = 2 * 2 * 2 * (32 * 24 + 24)  # 2 layers x 2 attentions x k, v
    assert count_parameters(plain) - count_parameters(mqa) == saved
    # RoPE in self-attention only, and no sines added to the embeddings
    assert rotary.encoder_layers[0].self_attn.rope
    assert rotary.decoder_layers[0].self_attn.rope
    assert type(rotary.decoder_layers[0].cross_attn) is MultiHeadAttention
    assert not any("pe" in name for name, _ in rotary.named_buffers())
    assert count_parameters(rotary) == count_parameters(plain)


def test_rope_model_sees_order_without_added_sines():
    model = _model(3, rope=True)
    src = torch.randint(3, 50, (1, 6))
    tgt = torch.randint(3, 50, (1, 4))
    swapped = src[:, [1, 0, 2, 3, 4, 5]]
    with torch.no_grad():
        assert not torch.allclose(model(src, tgt), model(swapped, tgt))


@pytest.mark.parametrize(
    "options, match",
    [
        ({"n_kv_heads": 3}, "n_kv_heads"),
        ({"n_kv_heads": 0}, "n_kv_heads"),
        ({"n_kv_heads": 2.0}, "n_kv_heads"),
        ({"n_kv_heads": True}, "n_kv_heads"),
        ({"rope": True, "d_model": 36}, "odd"),  # d_k = 9
    ],
)
def test_config_rejects_bad_options(options, match):
    arguments = {"vocab_size": 50, "d_model": 32, "n_heads": 4, **options}
    with pytest.raises(ValueError, match=match):
        BeyondConfig(**arguments)


def test_grouped_query_transformer_conversion():
    model = _model(4)
    src, tgt = torch.randint(3, 50, (2, 5)), torch.randint(3, 50, (2, 6))
    same = grouped_query_transformer(model, 4)  # groups of one head: a copy
    with torch.no_grad():
        torch.testing.assert_close(same(src, tgt), model(src, tgt))
    mqa = grouped_query_transformer(model, 1)
    assert mqa.config.n_kv_heads == 1
    pooled = mqa.decoder_layers[1].cross_attn.v_proj.weight
    original = model.decoder_layers[1].cross_attn.v_proj.weight
    torch.testing.assert_close(pooled, original.view(4, 8, 32).mean(dim=0))
    encoder_k = mqa.encoder_layers[0].self_attn.k_proj.weight
    assert torch.equal(
        encoder_k, model.encoder_layers[0].self_attn.k_proj.weight
    )
    with pytest.raises(ValueError, match="already shares"):
        grouped_query_transformer(mqa, 1)


def test_gqa_refuses_what_it_cannot_do():
    gqa = GroupedQueryAttention(16, 4, 2)
    x = torch.randn(2, 3, 16)
    with pytest.raises(TypeError, match="return_weights"):
        gqa(x, x, x, return_weights=True)
    with pytest.raises(ValueError, match="mask must have shape"):
        gqa(x, x, x, torch.ones(2, 3, dtype=torch.bool))  # (B, T_k)
    with pytest.raises(ValueError, match="is_causal"):
        gqa(x, x[:, :2], x[:, :2], is_causal=True)
    with pytest.raises(ValueError, match=r"\(B, T, 16\)"):
        gqa(x[0], x, x)


def test_from_multi_head_keeps_rope_and_refuses_a_grouped_module():
    torch.manual_seed(0)
    rotary = GroupedQueryAttention(16, 4, rope=True).eval()
    converted = GroupedQueryAttention.from_multi_head(rotary, 4).eval()
    assert converted.rope
    x = torch.randn(1, 5, 16)
    torch.testing.assert_close(converted(x, x, x), rotary(x, x, x))
    with pytest.raises(ValueError, match="already shares"):
        GroupedQueryAttention.from_multi_head(
            GroupedQueryAttention(16, 4, 2), 1
        )


def test_nn_transformer_holds_only_the_papers_parts():
    for options, named in [
        ({"n_kv_heads": 2}, "GroupedQueryAttention"),
        ({"rope": True}, "no added sines"),
    ]:
        with pytest.raises(ValueError, match=named):
            to_torch_transformer(_model(**options))
    to_torch_transformer(_model())  # BeyondConfig with its options off


def test_an_unknown_kind_of_attention_is_refused():
    for config in (
        TransformerConfig(50, 32, 4, 2, 64),
        BeyondConfig(50, 32, 4, 2, 64, rope=True, n_kv_heads=2),
    ):
        with pytest.raises(ValueError, match="kind must be one of"):
            config.attention("decodr")


class _Recorded(DecoderCache):
    """A DecoderCache that keeps every instance and the addresses of its
    self-attention rooms after each reorder."""

    made: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rooms_after_reorder = []
        _Recorded.made.append(self)

    def reorder(self, rows):
        super().reorder(rows)
        self.rooms_after_reorder.append(
            [kv.data_ptr() for kv in self.self_kv if kv is not None]
        )


def test_reorder_allocates_nothing_for_the_identity_and_at_beam_one():
    model = _model(5)
    src = torch.randint(3, 50, (3, 7))
    _Recorded.made.clear()
    out = beam_search(model, src, 1, 15, 0.0, cache=_Recorded)
    assert torch.equal(out, beam_search(model, src, 1, 15, 0.0))
    (cache,) = _Recorded.made
    assert len(cache.rooms_after_reorder) > 3  # reorder was called
    assert all(room is None for room in cache.spare)  # no second room
    assert all(  # and the rooms never moved
        rooms == cache.rooms_after_reorder[0]
        for rooms in cache.rooms_after_reorder
    )
    with torch.no_grad():  # the identity at beam 3 too
        memory, mask = model.encode(src)
        cache = DecoderCache(model, memory, mask, max_len=6, beam_size=3)
        cache.next_token_log_probs(torch.ones(9, 2, dtype=torch.long))
        before = [kv.data_ptr() for kv in cache.self_kv]
        cache.reorder(torch.arange(9))
        assert [kv.data_ptr() for kv in cache.self_kv] == before
        assert cache.spare == [None] * len(cache.self_kv)


@pytest.mark.parametrize("options", VARIANTS)
def test_reorder_swaps_two_rooms_and_gives_the_recomputed_tokens(options):
    model = _model(6, **options)
    src = torch.randint(3, 50, (4, 8))
    src[2, 5:] = 0
    _Recorded.made.clear()
    out, scores = beam_search(
        model, src, 4, 16, 0.6, cache=_Recorded, n_best=4, return_scores=True
    )
    plain, plain_scores = beam_search(
        model, src, 4, 16, 0.6, n_best=4, return_scores=True
    )
    assert torch.equal(out, plain)  # the recomputing path's tokens
    torch.testing.assert_close(scores, plain_scores, atol=1e-5, rtol=1e-5)
    (cache,) = _Recorded.made
    n_layers = len(cache.self_kv)
    per_layer = [
        {rooms[i] for rooms in cache.rooms_after_reorder}
        for i in range(n_layers)
    ]
    assert all(len(addresses) == 2 for addresses in per_layer)  # two rooms
    assert cache.nbytes == 2 * sum(kv.nbytes for kv in cache.self_kv) + sum(
        t.nbytes for kv in cache.cross for t in kv
    )
