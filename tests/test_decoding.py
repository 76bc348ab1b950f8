"""Greedy decoding and beam search (chapter 8): batched, stopping at <eos>,
beam_size=1 equal to greedy, batched equal to one sentence at a time."""

import math

import pytest
import torch
from torch import nn

from transformer_course import (
    Transformer,
    TransformerConfig,
    beam_search,
    greedy_decode,
)
from transformer_course.decoding import NoCache, gnmt_length_penalty
from transformer_course.kv_cache import DecoderCache

PAD, BOS, EOS = 0, 1, 2


def random_model(seed: int, vocab_size: int = 20) -> Transformer:
    """An untrained model whose untied output layer says varied things."""
    torch.manual_seed(seed)
    config = TransformerConfig(
        vocab_size, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.1
    )
    model = Transformer(config)
    model.output_proj = nn.Linear(32, vocab_size, bias=False)
    with torch.no_grad():  # make <eos> likely enough to end some sentences
        model.output_proj.weight[EOS] *= 1.5
    return model


def random_sources(seed: int, batch: int = 6, length: int = 7, vocab=20):
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab, (batch, length), generator=generator)
    lengths = torch.randint(1, length + 1, (batch,), generator=generator)
    lengths[0] = length  # at least one row without padding
    for row, n in enumerate(lengths.tolist()):
        src[row, n:] = PAD
    return src


class ScriptedModel(nn.Module):
    """Next-token probabilities from a function of (source token, prefix)."""

    def __init__(self, vocab_size, next_probs):
        super().__init__()
        self.config = TransformerConfig(vocab_size, d_model=2, n_heads=1)
        self.next_probs = next_probs

    def encode(self, src):
        return src[:, :1].float()[..., None], src[:, None, :] != PAD

    def decode(self, tgt, memory, src_mask):
        logits = torch.full((*tgt.shape, self.config.vocab_size), -1e9)
        for b, prefix in enumerate(tgt.tolist()):
            source = int(memory[b, 0, 0])
            for token, p in self.next_probs(source, tuple(prefix[1:])).items():
                logits[b, -1, token] = math.log(p)
        return logits


def count_sevens(source, prefix):
    """Write 7 (source - 3) times, then <eos>."""
    if len(prefix) < source - 3:
        return {7: 0.9, EOS: 0.1}
    return {EOS: 0.8, 7: 0.2}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_size_one_equals_greedy(seed):
    model, src = random_model(seed), random_sources(seed)
    greedy = greedy_decode(model, src, max_len=15)
    for alpha in (0.0, 0.6, 1.0):
        beam = beam_search(
            model, src, beam_size=1, max_len=15, length_penalty=alpha
        )
        assert torch.equal(beam, greedy)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("beam_size", [None, 2, 4])
@pytest.mark.parametrize("cache", [NoCache, DecoderCache])
def test_batched_equals_one_at_a_time(seed, beam_size, cache):
    model, src = random_model(seed), random_sources(seed + 10)

    def decode(x, cache=cache):
        if beam_size is None:
            return greedy_decode(model, x, max_len=12, cache=cache)
        return beam_search(model, x, beam_size, 12, cache=cache)

    together = decode(src)
    if cache is DecoderCache:  # chapter 9's KV cache: the same tokens
        assert torch.equal(together, decode(src, cache=NoCache))
    for row in range(len(src)):
        alone = decode(src[row, src[row] != PAD][None])[0]
        assert torch.equal(together[row, : len(alone)], alone)
        assert (together[row, len(alone) :] == PAD).all()


@pytest.mark.parametrize("beam_size", [None, 1, 3])
def test_stops_each_sentence_at_eos(beam_size):
    model = ScriptedModel(10, count_sevens)
    src = torch.tensor([[5], [3], [6], [4]])
    if beam_size is None:
        out = greedy_decode(model, src, max_len=8)
    else:
        out = beam_search(model, src, beam_size=beam_size, max_len=8)
    assert out.tolist() == [
        [7, 7, EOS, PAD],
        [EOS, PAD, PAD, PAD],
        [7, 7, 7, EOS],
        [7, EOS, PAD, PAD],
    ]


def test_output_layout_without_bos_and_at_most_max_len():
    model, src = random_model(3), random_sources(3)
    for out in (
        greedy_decode(model, src, max_len=5),
        beam_search(model, src, beam_size=3, max_len=5),
    ):
        assert out.dtype == torch.long and out.shape[0] == len(src)
        assert 1 <= out.shape[1] <= 5
        for row in out.tolist():
            if EOS in row:  # only padding after <eos>
                assert set(row[row.index(EOS) + 1 :]) <= {PAD}
    # cut at max_len: no <eos> written
    scripted = ScriptedModel(10, count_sevens)
    assert greedy_decode(scripted, torch.tensor([[9]]), 3).tolist() == [
        [7, 7, 7]
    ]


def test_beam_search_finds_the_more_probable_sentence():
    table = {
        (): {3: 0.5, 4: 0.4, EOS: 0.1},
        (3,): {3: 0.36, 4: 0.34, EOS: 0.30},
        (3, 3): {EOS: 0.5, 3: 0.3, 4: 0.2},
        (4,): {EOS: 0.9, 3: 0.05, 4: 0.05},
    }
    model = ScriptedModel(5, lambda s, p: table.get(p, {EOS: 0.6, 3: 0.4}))
    src = torch.tensor([[3]])
    assert greedy_decode(model, src, 5).tolist() == [[3, 3, EOS]]
    assert beam_search(model, src, beam_size=2, max_len=5).tolist() == [
        [4, EOS]
    ]


def test_length_penalty_prefers_longer_finished_hypotheses():
    # "<eos>" at once (P = 0.4), or four tokens then <eos> (P = 0.304)
    def next_probs(source, prefix):
        if not prefix:
            return {EOS: 0.4, 3: 0.6}
        if len(prefix) < 4:
            return {3: 0.8, EOS: 0.2}
        return {EOS: 0.99, 3: 0.01}

    model, src = ScriptedModel(5, next_probs), torch.tensor([[3]])
    p_long = 0.6 * 0.8**3 * 0.99
    assert math.log(0.4) > math.log(p_long)  # log P prefers the short one
    short_score = math.log(0.4) / gnmt_length_penalty(1, 1.0)
    long_score = math.log(p_long) / gnmt_length_penalty(5, 1.0)
    assert long_score > short_score  # normalised, the long one wins
    out = beam_search(model, src, beam_size=2, max_len=8, length_penalty=1.0)
    assert out.tolist() == [[3, 3, 3, 3, EOS]]
    out = beam_search(model, src, beam_size=2, max_len=8, length_penalty=0.0)
    assert out.tolist() == [[EOS]]


def test_decoding_restores_training_mode_and_needs_no_grad():
    model, src = random_model(0), random_sources(0)
    model.train()
    greedy_decode(model, src, 4)
    beam_search(model, src, beam_size=2, max_len=4)
    assert model.training
    model.eval()
    beam_search(model, src, beam_size=2, max_len=4)
    assert not model.training


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m, s: greedy_decode(m, s[0], 5), ValueError, "(B, T_src)"),
        (lambda m, s: greedy_decode(m, s.float(), 5), TypeError, "integer"),
        (lambda m, s: greedy_decode(m, s.tolist(), 5), ValueError, "tensor"),
        (lambda m, s: greedy_decode(m, s, 0), ValueError, "max_len"),
        (lambda m, s: greedy_decode(m, s, 2.0), TypeError, "max_len"),
        (lambda m, s: greedy_decode(m, s, 10**6), ValueError, "max_len"),
        (lambda m, s: beam_search(m, s, beam_size=0), ValueError, "beam_size"),
        (lambda m, s: beam_search(m, s, beam_size=-3), ValueError, "beam_size"),
        (
            lambda m, s: beam_search(m, s, beam_size=True),
            TypeError,
            "beam_size",
        ),
        (
            lambda m, s: beam_search(m, s, beam_size=99),
            ValueError,
            "vocabulary",
        ),
        (lambda m, s: beam_search(m, s, max_len=0), ValueError, "max_len"),
        (
            lambda m, s: beam_search(m, s, length_penalty=-0.5),
            ValueError,
            "length_penalty",
        ),
        (
            lambda m, s: beam_search(m, s, length_penalty="0.6"),
            TypeError,
            "length_penalty",
        ),
        (lambda m, s: greedy_decode(nn.Linear(2, 2), s, 5), TypeError, "model"),
        (
            lambda m, s: greedy_decode(m, s, 5, cache="yes"),
            TypeError,
            "cache must be a class",
        ),
        (
            lambda m, s: beam_search(
                ScriptedModel(20, count_sevens), s, cache=DecoderCache
            ),
            TypeError,
            "decoder_layers",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, words):
    model, src = random_model(0), random_sources(0)
    with pytest.raises(error, match=None) as raised:
        call(model, src)
    assert words in str(raised.value)


def test_a_finished_hypothesis_is_not_pushed_out_of_the_beam():
    """Live hypotheses that score better at one step must not push out a
    finished one that ends better: finished hypotheses wait in a pool of
    their own (as in GNMT and tensor2tensor) while k live ones go on."""
    A, X, Y = 3, 4, 5

    def next_probs(source, prefix):
        if not prefix:
            return {A: 0.7, EOS: 0.3}
        return {X: 0.5, Y: 0.5} if len(prefix) == 1 else {X: 0.6, EOS: 0.4}

    model = ScriptedModel(8, next_probs)
    for alpha in (0.0, 0.6):
        out = beam_search(model, torch.tensor([[6]]), 2, 8, alpha)
        # [<eos>]: log 0.3 = -1.20; every other ending is below -1.9, and at
        # step 2 the two live extensions (-1.05 each) outrank it
        assert out.tolist() == [[EOS]], alpha


def test_beam_size_one_equals_greedy_on_ties():
    """Equal probabilities: both take the lower token id (argmax's rule)."""
    A, B = 3, 4

    def next_probs(source, prefix):
        return {A: 0.5, B: 0.5} if len(prefix) < 2 else {EOS: 1.0}

    model = ScriptedModel(8, next_probs)
    src = torch.tensor([[6]])
    greedy = greedy_decode(model, src, 5)
    assert greedy.tolist() == [[A, A, EOS]]
    for alpha in (0.0, 0.6):
        assert torch.equal(beam_search(model, src, 1, 5, alpha), greedy)
