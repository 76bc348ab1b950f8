"""The Transformer of chapter 6: counts, equality with nn.Transformer, behaviour."""

import dataclasses
import io

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course import (
    DecoderLayer,
    EncoderLayer,
    Transformer,
    TransformerConfig,
    count_parameters,
    padding_mask,
)
from transformer_course.transformer import to_torch_transformer

SMALL = TransformerConfig(
    vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64
)
SRC = torch.tensor([[5, 6, 7, 8, 9, 10], [11, 12, 13, 0, 0, 0]])
TGT = torch.tensor([[1, 14, 15, 16, 17], [1, 18, 19, 0, 0]])


def small_model(config=SMALL, seed=0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(config).eval()


def randomise_norms_and_biases(model: nn.Module) -> None:
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                start = 1.0 if name.endswith("norm.weight") else 0.0
                p.copy_(start + 0.3 * torch.randn(p.shape, generator=generator))


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, 63_082_496),
        ({"d_model": 1024, "n_heads": 16, "d_ff": 4096}, 214_245_376),
    ],
    ids=["base", "big"],
)
def test_parameter_counts_of_table_3(overrides, expected):
    with torch.device("meta"):
        model = Transformer(TransformerConfig(vocab_size=37000, **overrides))
    assert count_parameters(model) == expected


def test_torch_transformer_has_two_final_layer_norms_more():
    with torch.device("meta"):
        theirs = nn.Transformer(512, 8, 6, 6, 2048, batch_first=True)
    assert (
        count_parameters(theirs)
        == 44_140_544
        == 63_082_496 - 37000 * 512 + 2048
    )


def test_tied_weights_are_one_tensor_counted_once():
    model = small_model()
    assert model.output_proj.weight is model.embedding.weight
    assert model.output_proj.bias is None
    untied = sum(t.numel() for t in model.state_dict().values())
    assert untied - count_parameters(model) == 50 * 32


def test_embedding_initialisation():
    model = Transformer(TransformerConfig(vocab_size=2000))
    std = model.embedding.weight.std().item()
    assert abs(std - 512**-0.5) < 0.02 * 512**-0.5


def test_embed_from_a_start_position_equals_the_slice():
    model = small_model().eval()
    tokens = torch.randint(3, 50, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(
            model.embed(tokens[:, 4:], start=4), model.embed(tokens)[:, 4:]
        )


@pytest.mark.parametrize("norm_first", [False, True])
def test_equal_to_torch_transformer(norm_first):
    model = small_model(dataclasses.replace(SMALL, norm_first=norm_first))
    randomise_norms_and_biases(model)
    theirs = to_torch_transformer(model).eval()
    T = TGT.size(1)
    with torch.no_grad():
        out = theirs(
            model.embed(SRC),
            model.embed(TGT),
            tgt_mask=torch.ones(T, T, dtype=torch.bool).triu(1),
            src_key_padding_mask=SRC == 0,
            memory_key_padding_mask=SRC == 0,
        )
        expected = model.output_proj(out)
        assert (model(SRC, TGT) - expected).abs().max() < 1e-5


def test_pre_ln_has_final_norms_and_post_ln_has_none():
    post = small_model()
    pre = small_model(dataclasses.replace(SMALL, norm_first=True))
    assert count_parameters(pre) - count_parameters(post) == 2 * 2 * 32
    assert isinstance(post.encoder_norm, nn.Identity)


def test_padding_does_not_change_real_positions():
    model = small_model()
    with torch.no_grad():
        batch = model(SRC, TGT)
        alone = model(SRC[1:, :3], TGT[1:, :3])
    assert torch.allclose(alone, batch[1:, :3], atol=1e-5)


def test_decoder_does_not_see_the_future():
    model = small_model()
    for t in range(TGT.size(1)):
        changed = TGT.clone()
        changed[:, t + 1 :] = 33
        with torch.no_grad():
            assert torch.allclose(
                model(SRC, changed)[:, : t + 1],
                model(SRC, TGT)[:, : t + 1],
                atol=1e-5,
            )


def test_batch_independence():
    model = small_model()
    with torch.no_grad():
        batch = model(SRC, TGT)
        rows = torch.cat(
            [model(SRC[i : i + 1], TGT[i : i + 1]) for i in (0, 1)]
        )
    assert torch.allclose(rows, batch, atol=1e-5)


def test_encode_decode_is_forward_and_decodes_step_by_step():
    model = small_model()
    with torch.no_grad():
        memory, src_mask = model.encode(SRC)
        assert memory.shape == (2, 6, 32)
        assert src_mask.dtype == torch.bool and src_mask.shape == (2, 1, 6)
        assert (src_mask.numpy() == padding_mask(SRC.numpy(), 0)).all()
        full = model.decode(TGT, memory, src_mask)
        assert torch.equal(full, model(SRC, TGT))
        for t in range(1, TGT.size(1) + 1):  # a prefix gives the same logits
            prefix = model.decode(TGT[:, :t], memory, src_mask)
            assert torch.allclose(prefix, full[:, :t], atol=1e-5)


def test_causal_fast_path_is_exact_for_right_padding():
    torch.manual_seed(0)
    layer = DecoderLayer(16, 4, 64).eval()
    tokens = torch.tensor([[1, 5, 6, 7, 0, 0], [1, 8, 0, 0, 0, 0]])
    x, memory = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    full = torch.ones(6, 6, dtype=torch.bool).tril() & (tokens != 0)[:, None, :]
    with torch.no_grad():
        fast, masked = layer(x, memory), layer(x, memory, tgt_mask=full)
    real = tokens != 0
    assert torch.allclose(fast[real], masked[real], atol=1e-6)


def test_encoder_layer_ignores_padding():
    torch.manual_seed(0)
    layer = EncoderLayer(16, 4, 64).eval()
    x = torch.randn(1, 3, 16)
    padded = torch.cat([x, torch.randn(1, 2, 16)], dim=1)
    mask = torch.tensor([[[True, True, True, False, False]]])
    with torch.no_grad():
        assert torch.allclose(layer(x), layer(padded, mask)[:, :3], atol=1e-6)


def test_every_parameter_gets_a_gradient():
    model = small_model().train()
    target = F.pad(TGT[:, 1:], (0, 1), value=0)
    loss = F.cross_entropy(
        model(SRC, TGT).flatten(0, 1), target.flatten(), ignore_index=0
    )
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_state_dict_round_trips_and_keeps_the_tie():
    model = small_model()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    restored = small_model(seed=1)
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    assert restored.output_proj.weight is restored.embedding.weight
    with torch.no_grad():
        assert torch.equal(restored(SRC, TGT), model(SRC, TGT))


def test_config_is_frozen_with_the_papers_defaults():
    config = TransformerConfig(vocab_size=100)
    assert (config.d_model, config.n_heads, config.n_layers, config.d_ff) == (
        512,
        8,
        6,
        2048,
    )
    assert config.dropout == 0.1 and config.norm_first is False
    assert (config.pad_id, config.bos_id, config.eos_id) == (0, 1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 256


def decode_with_first_mask_only():
    model = small_model()
    memory, src_mask = model.encode(SRC)
    return model.decode(TGT, memory, src_mask[:1])  # would broadcast


def test_numpy_integers_are_accepted_as_sizes():
    np = pytest.importorskip("numpy")
    config = TransformerConfig(50, d_model=np.int64(32), n_heads=np.int64(4))
    assert config.d_model == 32


def test_explicit_tgt_mask():
    """A causal (B, T, T) tgt_mask equals the default; with a left-padded
    target, its own mask keeps the padding out of the real positions."""
    model = small_model()
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    with torch.no_grad():
        default = model(SRC, TGT)
        explicit = model(SRC, TGT, tgt_mask=causal.expand(2, 5, 5))
        torch.testing.assert_close(explicit, default)
        # the second target, left-padded: [0, 0, 1, 18, 19]
        left = torch.tensor([[0, 0, 1, 18, 19]])
        mask = causal & (left != 0)[:, None, :]
        mask |= torch.eye(5, dtype=torch.bool)  # a pad query attends to itself
        memory, src_mask = model.encode(SRC[1:])
        # the mask keeps the real queries off the padding: changing the
        # padding's ids moves only the padded rows
        out = model.decode(left, memory, src_mask, tgt_mask=mask)
        changed = left.clone()
        changed[0, :2] = 7  # other padding ids: the real rows must not move
        out2 = model.decode(changed, memory, src_mask, tgt_mask=mask)
        torch.testing.assert_close(out[:, 2:], out2[:, 2:])
        assert not torch.allclose(out[:, :2], out2[:, :2])


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (
            lambda: TransformerConfig(50, d_model=30, n_heads=4),
            "d_model % n_heads",
        ),
        (lambda: TransformerConfig(2), "eos_id=2"),
        (lambda: small_model()(SRC, TGT + 40), "outside the vocabulary"),
        (lambda: small_model()(SRC - 20, TGT), "outside the vocabulary"),
        (lambda: small_model()(SRC, TGT[:1]), "batch sizes differ"),
        (
            lambda: small_model(dataclasses.replace(SMALL, max_len=4))(
                SRC, TGT
            ),
            "max_len",
        ),
        (lambda: small_model()(SRC.float(), TGT), "integer ids"),
        (lambda: small_model()(SRC[0], TGT[0]), "(B, T)"),
        (
            lambda: small_model().decode(TGT, torch.zeros(1, 6, 32), None),
            "batch sizes differ",
        ),
        (lambda: TransformerConfig(50, n_heads=0), "n_heads must be positive"),
        (lambda: TransformerConfig(50, n_layers=0), "n_layers must be"),
        (lambda: TransformerConfig(50, d_ff=0), "d_ff must be positive"),
        (lambda: TransformerConfig(50, d_model=-8), "d_model must be"),
        (lambda: TransformerConfig(50, max_len=0), "max_len must be"),
        (lambda: TransformerConfig(50, d_ff=2048.0), "d_ff must be an int"),
        (lambda: small_model()(SRC.tolist(), TGT), "src must be a (B, T)"),
        (lambda: small_model()(SRC, TGT.tolist()), "tgt must be a (B, T)"),
        (decode_with_first_mask_only, "src_mask must be (B, 1, T_src)"),
    ],
    ids=[
        "heads",
        "special-ids",
        "too-large-id",
        "negative-id",
        "batch",
        "max_len",
        "float",
        "1-d",
        "decode-batch",
        "no-heads",
        "no-layers",
        "no-d_ff",
        "negative-d_model",
        "no-max_len",
        "float-d_ff",
        "src-list",
        "tgt-list",
        "src_mask-broadcast",
    ],
)
def test_bad_input_is_a_value_error_that_names_it(make, words):
    with pytest.raises(ValueError) as error:
        make()
    assert words in str(error.value)


@pytest.mark.parametrize("training", [True, False])
def test_forward_never_waits_for_the_device(training):
    """On the meta device a tensor has a shape but no values: anything that
    reads values back to the CPU (`if mask.any()`, `.item()`, `int(t)`), a
    host-device synchronisation on a GPU, raises there. The whole forward
    pass, masks and checks included, runs without one."""
    model = small_model().to("meta").train(training)
    src = torch.empty(2, 6, dtype=torch.long, device="meta")
    tgt = torch.empty(2, 5, dtype=torch.long, device="meta")
    assert model(src, tgt).shape == (2, 5, SMALL.vocab_size)
    # the check it skips there is the one that reads values: on the CPU it runs
    bad = torch.full((2, 5), SMALL.vocab_size)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        small_model()(torch.ones(2, 6, dtype=torch.long), bad)
    with pytest.raises(RuntimeError, match="meta"):
        bool((src < 0).any())  # what the test would catch
