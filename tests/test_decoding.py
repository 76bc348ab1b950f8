"""Greedy decoding, beam search and sampling (chapter 8): batched, stopping at
<eos>, never choosing <pad> or <bos>, beam_size=1 equal to greedy at alpha 0,
the exact stop equal to the search run to max_len, batched equal to one
sentence at a time, sampling's draws counted against its distribution."""

import itertools
import math
import random
from pathlib import Path

import pytest
import torch
from torch import nn

from transformer_course import (
    Transformer,
    TransformerConfig,
    beam_search,
    greedy_decode,
    sample,
    sampling_distribution,
    sequence_log_prob,
)
from transformer_course.decoding import (
    STOPPING_RULES,
    NoCache,
    check_rows_stay,
    choosable,
    gnmt_length_penalty,
)
from transformer_course.kv_cache import DecoderCache
from transformer_course.translation import greedy_translate

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
def test_beam_size_one_equals_greedy_without_length_penalty(seed):
    model, src = random_model(seed), random_sources(seed)
    greedy = greedy_decode(model, src, max_len=15)
    beam = beam_search(model, src, beam_size=1, max_len=15, length_penalty=0)
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
    assert torch.equal(beam_search(model, src, 1, 5, 0.0), greedy)


def a_long_sentence_behind_an_early_eos(source, prefix):
    """<eos> at once (P = 0.5), or A then nine almost certain tokens."""
    A = 3
    if not prefix:
        return {EOS: 0.5, A: 0.5}
    return {A: 0.99, EOS: 0.01} if len(prefix) < 10 else {EOS: 0.99, A: 0.01}


def test_the_exact_stop_waits_for_a_longer_sentence_that_ranks_higher():
    """At alpha = 1, [<eos>] ranks log 0.5 / 1 = -0.69 and the live A ranks
    the same at its length: the former rule stopped there. Ten tokens later
    A...A <eos> ranks (log 0.5 + 10 log 0.99) / lp(11) = -0.30."""
    model = ScriptedModel(6, a_long_sentence_behind_an_early_eos)
    src, long = torch.tensor([[4]]), [[3] * 10 + [EOS]]
    assert greedy_decode(model, src, 12).tolist() == [[EOS]]
    for k in (1, 2):
        assert beam_search(model, src, k, 12, 1.0).tolist() == long
        assert (
            beam_search(model, src, k, 12, 1.0, stopping="max_len").tolist()
            == long
        )
        early = beam_search(model, src, k, 12, 1.0, stopping="current_length")
        assert early.tolist() == [[EOS]]  # the former rule stops too early
        # without a length penalty nothing can rank higher later: greedy
        assert beam_search(model, src, k, 12, 0.0).tolist() == [[EOS]]
    # a beam of one at alpha > 0 is not greedy decoding


PARTLY_TRAINED = Path(__file__).parent / "data" / "partly_trained.pt"


def train_partly_trained() -> dict:
    """A small model after 100 updates on chapter 7's grammar, and the first
    100 test sources: what tests/data/partly_trained.pt holds (about 10 s of
    training; `python tests/test_decoding.py --write-partly-trained`)."""
    import dataclasses
    import subprocess

    from transformer_course import Run, TrainConfig, fit

    torch.manual_seed(0)
    config = TrainConfig(
        task="grammar", d_model=32, n_heads=4, n_layers=2, d_ff=64, updates=100
    )
    run = fit(Run(config), 100, progress=False)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "made_by": "python tests/test_decoding.py --write-partly-trained",
        "commit": commit,
        "torch": str(torch.__version__),
        "train_config": dataclasses.asdict(config),
        "model_config": dataclasses.asdict(run.model.config),
        "training": run.model.training,
        "weights": run.model.state_dict(),
        "sources": [s for s, _ in run.task.examples("test")[:100]],
    }


@pytest.fixture(scope="module")
def partly_trained():
    """A small model after 100 updates on chapter 7's grammar: unsure enough
    that beam sizes, length penalties and stopping rules disagree (the test
    below checks it). Trained once and kept (train_partly_trained)."""
    record = torch.load(PARTLY_TRAINED, weights_only=True)
    model = Transformer(TransformerConfig(**record["model_config"]))
    model.load_state_dict(record["weights"])
    model.train(record["training"])
    src = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(s) for s in record["sources"]], batch_first=True
    )
    return model, src


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("beam_size", [1, 4])
def test_the_exact_stop_equals_the_search_run_to_max_len(
    partly_trained, alpha, beam_size
):
    model, src = partly_trained
    args = (model, src, beam_size, 24, alpha)
    exact = beam_search(*args)
    assert torch.equal(exact, beam_search(*args, stopping="max_len"))
    if alpha == 0:
        assert torch.equal(exact, beam_search(*args, stopping="current_length"))


def test_the_stopping_rules_are_heuristics_on_a_partly_trained_model(
    partly_trained,
):
    """The comparison is not vacuous: at alpha = 1 the rules others use
    change outputs here (the chapter measures how many)."""
    model, src = partly_trained
    reference = beam_search(model, src, 4, 24, 1.0, stopping="max_len")
    changed = {
        rule: sum(
            a != b
            for a, b in zip(
                beam_search(model, src, 4, 24, 1.0, stopping=rule).tolist(),
                reference.tolist(),
                strict=True,
            )
        )
        for rule in ("current_length", "hf_default", "k_finished")
    }
    assert max(changed.values()) > 0, changed


def biased_towards_pad_and_bos(seed):
    """An untrained model whose most probable tokens are <pad> and <bos>."""
    model = random_model(seed)
    weight = model.output_proj.weight
    model.output_proj = nn.Linear(*weight.shape[::-1])
    with torch.no_grad():
        model.output_proj.weight.copy_(weight)
        model.output_proj.bias.zero_()
        model.output_proj.bias[[PAD, BOS]] = 4.0
    return model


def before_eos(row):
    return row[: row.index(EOS)] if EOS in row else row


@pytest.mark.parametrize("seed", [0, 1])
def test_no_decoder_emits_pad_or_bos(seed):
    model, src = biased_towards_pad_and_bos(seed), random_sources(seed)
    memory, src_mask = model.encode(src)
    first = NoCache(model, memory, src_mask).next_token_log_probs(
        torch.full((len(src), 1), BOS)
    )
    # the model would choose them: the test can fail
    assert set(first.argmax(dim=-1).tolist()) <= {PAD, BOS}
    outputs = [greedy_decode(model, src, 10)]
    outputs += [
        beam_search(model, src, k, 10, alpha, stopping=rule)
        for k in (1, 3)
        for alpha in (0.0, 1.0)
        for rule in STOPPING_RULES
    ]
    generator = torch.Generator().manual_seed(seed)
    outputs += [
        sample(model, src, 10, temperature, generator=generator)
        for temperature in (1.0, 5.0)
    ]
    rows = [row for out in outputs for row in out.tolist()]
    # and chapter 7's greedy translation of the real corpus
    sources = [[t for t in row if t != PAD] for row in src.tolist()]
    rows += greedy_translate(model, sources, max_len=10)
    for row in rows:
        assert not {PAD, BOS} & set(before_eos(row)), row


def slow_sampling_distribution(log_probs, temperature, top_k, top_p):
    """One row at a time, with Python lists: the obvious version."""
    rows = []
    for row in log_probs.double().tolist():
        weights = [math.exp(x / temperature) for x in row]
        probs = [w / sum(weights) for w in weights]
        order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
        kept = order[: top_k or len(order)]
        total = sum(probs[i] for i in kept)
        if top_p is not None:
            nucleus, mass = [], 0.0
            for i in kept:
                if mass / total >= top_p:
                    break
                nucleus.append(i)
                mass += probs[i]
            kept = nucleus
        total = sum(probs[i] for i in kept)
        rows.append(
            [probs[i] / total if i in kept else 0.0 for i in range(len(probs))]
        )
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [
        (1.0, None, None),
        (0.5, None, None),
        (2.0, 5, None),
        (1.0, None, 0.8),
        (0.7, 6, 0.5),
        (1.0, 1, None),
        (1.0, None, 1e-6),
    ],
)
def test_sampling_distribution_equals_the_obvious_version(
    temperature, top_k, top_p
):
    generator = torch.Generator().manual_seed(0)
    log_probs = (torch.randn(4, 12, generator=generator) * 2).log_softmax(-1)
    got = sampling_distribution(log_probs, temperature, top_k, top_p)
    expected = slow_sampling_distribution(log_probs, temperature, top_k, top_p)
    assert torch.allclose(got.double(), expected, atol=1e-6)
    assert torch.allclose(got.sum(-1), torch.ones(4))


def test_top_p_keeps_the_fewest_tokens_that_reach_p_and_breaks_ties_by_id():
    probs = torch.tensor([[0.1, 0.3, 0.3, 0.2, 0.1]])
    kept = sampling_distribution(probs.log(), top_p=0.5) > 0
    assert kept.tolist() == [[False, True, True, False, False]]  # 0.6 >= 0.5
    kept = sampling_distribution(probs.log(), top_p=0.3) > 0
    assert kept.tolist() == [[False, True, False, False, False]]  # tie: id 1
    kept = sampling_distribution(probs.log(), top_p=0.61) > 0
    assert kept.sum() == 3


@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [
        (1.0, None, None),
        (0.5, None, None),
        (2.0, None, None),
        (1.0, 4, None),
        (1.0, None, 0.7),
    ],
)
def test_counted_draws_follow_the_distribution(temperature, top_k, top_p):
    """20,000 first tokens drawn for one source: a chi-square test against
    the distribution (fixed seed: the test is deterministic), which rejects
    the distribution of another temperature."""
    from scipy.stats import chisquare

    model = random_model(4)
    src = random_sources(4)[:1].repeat(20_000, 1)
    generator = torch.Generator().manual_seed(0)
    draws = sample(model, src, 1, temperature, top_k, top_p, generator)[:, 0]
    counts = torch.bincount(draws, minlength=model.config.vocab_size)

    def expected(temperature):
        model.eval()  # sample() decodes without dropout
        memory, src_mask = model.encode(src[:1])
        with torch.no_grad():
            log_probs = NoCache(model, memory, src_mask).next_token_log_probs(
                torch.full((1, 1), BOS)
            )
        probs = sampling_distribution(
            choosable(log_probs, model.config), temperature, top_k, top_p
        )[0].double()
        return probs / probs.sum()

    def p_value(probs):
        support = probs > 0
        return chisquare(
            counts[support].double().numpy(),
            (probs[support] * counts[support].sum()).numpy(),
        ).pvalue

    probs = expected(temperature)
    assert counts[probs == 0].sum() == 0  # never outside the kept tokens
    assert p_value(probs) > 0.01
    assert p_value(expected(temperature * 1.5)) < 1e-6  # the test has power


def test_sampling_with_top_k_one_is_greedy_and_seeds_repeat():
    model, src = random_model(1), random_sources(1)
    greedy = greedy_decode(model, src, 12)
    assert torch.equal(sample(model, src, 12, top_k=1), greedy)

    def draw(seed, cache=NoCache):
        generator = torch.Generator().manual_seed(seed)
        return sample(model, src, 12, generator=generator, cache=cache)

    assert torch.equal(draw(0), draw(0))
    assert not torch.equal(draw(0), draw(1))
    assert torch.equal(draw(0, cache=DecoderCache), draw(0))  # cache: same


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"temperature": 0}, ValueError, "temperature"),
        ({"temperature": -1.0}, ValueError, "temperature"),
        ({"temperature": float("inf")}, ValueError, "temperature"),
        ({"temperature": "1"}, TypeError, "temperature"),
        ({"top_k": 0}, ValueError, "top_k"),
        ({"top_k": 2.5}, TypeError, "top_k"),
        ({"top_k": 21}, ValueError, "top_k"),
        ({"top_p": 0.0}, ValueError, "top_p"),
        ({"top_p": 1.5}, ValueError, "top_p"),
        ({"top_p": True}, TypeError, "top_p"),
        ({"generator": 0}, TypeError, "generator"),
    ],
)
def test_sampling_refuses_bad_arguments(kwargs, error, words):
    model, src = random_model(0), random_sources(0)
    with pytest.raises(error) as raised:
        sample(model, src, 5, **kwargs)
    assert words in str(raised.value)


def test_unknown_stopping_rule_is_named():
    model, src = random_model(0), random_sources(0)
    with pytest.raises(ValueError, match="stopping must be one of"):
        beam_search(model, src, stopping="early")


def test_top_p_one_keeps_every_token_even_a_tiny_tail():
    """In float32 the running sum reaches 1.0 before the last tokens: top_p=1
    must still keep them all (it is no filter at all)."""
    probs = torch.tensor([[0.5, 0.5 - 1e-8, 1e-8, 1e-9]], dtype=torch.float64)
    kept = sampling_distribution(probs.log(), top_p=1.0) > 0
    assert kept.all()
    generator = torch.Generator().manual_seed(0)
    log_probs = (
        torch.randn(50, 8000, generator=generator).mul(4).log_softmax(-1)
    )
    assert (sampling_distribution(log_probs, top_p=1.0) > 0).all()


def test_reorder_refuses_a_row_from_another_sentence():
    check_rows_stay(torch.tensor([1, 1, 0, 3, 5, 5]), 3, 6)  # 0-2, 3-5
    with pytest.raises(ValueError, match="its own sentence"):
        check_rows_stay(torch.tensor([3, 1, 2, 0, 4, 5]), 3, 6)
    with pytest.raises(ValueError, match="each of the 6 rows"):
        check_rows_stay(torch.tensor([0, 1]), 3, 6)  # too few rows
    with pytest.raises(TypeError, match="torch.long"):
        check_rows_stay([1, 1, 0, 3, 5, 5], 3, 6)
    model = ScriptedModel(10, lambda source, prefix: {EOS: 1.0})
    memory, src_mask = model.encode(torch.tensor([[3], [4]]))
    steps = NoCache(model, memory, src_mask, max_len=4, beam_size=2)
    assert steps.memory.size(0) == 4  # each sentence's memory, once per beam
    with pytest.raises(ValueError, match="its own sentence"):
        steps.reorder(torch.tensor([2, 1, 0, 3]))


def test_sequence_log_prob_equals_summing_one_step_at_a_time():
    torch.manual_seed(0)
    config = TransformerConfig(
        vocab_size=30, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.1
    )
    model = Transformer(config).train()  # scoring switches dropout off
    src = torch.randint(3, 30, (3, 5))
    src[1, 3:] = PAD
    out = greedy_decode(model, src, 6)
    out[2, 2:] = PAD  # a shorter output: its padding counts nothing
    fast = sequence_log_prob(model, src, out)
    assert model.training  # the mode is restored
    with torch.no_grad():
        memory, src_mask = model.eval().encode(src)
        for row in range(3):
            steps = NoCache(
                model, memory[row : row + 1], src_mask[row : row + 1]
            )
            prefix, slow = [BOS], 0.0
            for token in out[row].tolist():
                if token == PAD:
                    break
                slow += steps.next_token_log_probs(torch.tensor([prefix]))[
                    0, token
                ].item()
                prefix.append(token)
            assert abs(fast[row].item() - slow) < 1e-4


def test_sequence_log_prob_refuses_bad_outputs():
    model = Transformer(TransformerConfig(vocab_size=30, d_model=16, n_heads=2))
    src = torch.randint(3, 30, (2, 4))
    with pytest.raises(ValueError, match=r"\(B, T\) tensor"):
        sequence_log_prob(model, src, torch.tensor([5, 6]))
    with pytest.raises(ValueError, match="one output per source"):
        sequence_log_prob(model, src, torch.tensor([[5, 6]]))
    with pytest.raises(ValueError, match="tgt"):
        sequence_log_prob(model, src, torch.tensor([[5, 99], [5, 6]]))


# beam_search's options: n_best, return_scores, min_len, max_len=(a, b)


def rank_of(model, src, out, alpha):
    """The model's own rank of each output row, log P / lp(|y|), from one
    teacher-forced pass (sequence_log_prob), |y| counting <eos>."""
    length = (out != PAD).sum(dim=1)
    return sequence_log_prob(model, src, out) / gnmt_length_penalty(
        length.double(), alpha
    ).float().clamp(min=1e-30)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("beam_size", [2, 4])
def test_n_best_is_sorted_exact_and_its_first_is_the_default(
    partly_trained, alpha, beam_size
):
    model, src = partly_trained
    src = src[:40]
    best = beam_search(model, src, beam_size, 24, alpha)
    for n in range(1, beam_size + 1):
        out, scores = beam_search(
            model, src, beam_size, 24, alpha, n_best=n, return_scores=True
        )
        assert out.shape[:2] == (len(src), n) and scores.shape == (len(src), n)
        assert (scores[:, :-1] >= scores[:, 1:]).all()  # best first
        assert torch.equal(out[:, 0, : best.size(1)], best)
        assert (out[:, 0, best.size(1) :] == PAD).all()
        # the exact stop (waiting for the n-th) = the search run to max_len
        at_max_len = beam_search(
            model,
            src,
            beam_size,
            24,
            alpha,
            stopping="max_len",
            n_best=n,
            return_scores=True,
        )
        assert torch.equal(out, at_max_len[0])
        assert torch.equal(scores, at_max_len[1])


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_scores_are_the_models_rank_of_the_returned_hypotheses(
    partly_trained, alpha
):
    model, src = partly_trained
    src = src[:40]
    out, scores = beam_search(
        model, src, 4, 24, alpha, n_best=4, return_scores=True
    )
    assert (scores > -math.inf).all()
    rows = out.reshape(-1, out.size(-1))  # (B n, width)
    rescored = rank_of(model, src.repeat_interleave(4, dim=0), rows, alpha)
    assert torch.allclose(rescored, scores.reshape(-1), atol=1e-4, rtol=1e-5)
    best, best_scores = beam_search(
        model, src, 4, 24, alpha, return_scores=True
    )
    assert best_scores.shape == (len(src),)
    assert torch.allclose(
        rank_of(model, src, best, alpha), best_scores, 1e-5, 1e-4
    )


def test_n_best_waits_for_the_nth_hypothesis():
    """alpha = 0, beam 2: [<eos>] (P = 0.5) is the best at step 1 and the
    1-best stop would end there; the second best, A ... A <eos>, ends 11
    tokens later: the exact n-best stop waits for it."""
    model = ScriptedModel(6, a_long_sentence_behind_an_early_eos)
    src = torch.tensor([[4]])
    out, scores = beam_search(
        model, src, 2, 12, 0.0, n_best=2, return_scores=True
    )
    assert out[0, 0].tolist()[:1] == [EOS] and (out[0, 0, 1:] == PAD).all()
    assert out[0, 1].tolist() == [3] * 10 + [EOS]
    expected = math.log(0.5) + 10 * math.log(0.99)
    assert scores[0].tolist() == pytest.approx([math.log(0.5), expected])
    to_max_len = beam_search(
        model, src, 2, 12, 0.0, n_best=2, stopping="max_len"
    )
    assert torch.equal(out, to_max_len)


def three_tokens(source, prefix):
    """<eos>, 3 or 4, with probabilities drawn from (source, prefix)."""
    generator = random.Random(f"{source} {prefix}")  # no ties, in practice
    weights = [0.05 + generator.random() for _ in range(3)]
    total = sum(weights)
    return {t: w / total for t, w in zip((EOS, 3, 4), weights, strict=True)}


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("min_len", [0, 2])
def test_n_best_of_a_beam_as_wide_as_the_tree_is_exhaustive_search(
    alpha, min_len
):
    """Three possible tokens, max_len 4: at most 2**4 = 16 live hypotheses,
    so a beam of 16 keeps every one, and its 16 best must be the 16 best of
    all the outputs, each ranked by hand from the script's probabilities."""
    model = ScriptedModel(16, three_tokens)
    max_len, src = 4, torch.tensor([[5], [6]])
    out, scores = beam_search(
        model,
        src,
        16,
        max_len,
        alpha,
        min_len=min_len,
        n_best=16,
        return_scores=True,
    )
    for b, source in enumerate((5, 6)):
        outputs = [  # those ending in <eos>, and those cut at max_len
            (*words, EOS)
            for length in range(min_len + 1, max_len + 1)
            for words in itertools.product((3, 4), repeat=length - 1)
        ] + list(itertools.product((3, 4), repeat=max_len))
        ranked = []
        for output in outputs:
            log_p = sum(
                math.log(three_tokens(source, output[:t])[token])
                for t, token in enumerate(output)
            )
            lp = gnmt_length_penalty(len(output), alpha)
            ranked.append((log_p / lp, output))
        ranked.sort(reverse=True)
        found = [tuple(t for t in row if t != PAD) for row in out[b].tolist()]
        assert found == [output for _, output in ranked[:16]]
        assert scores[b].tolist() == pytest.approx(
            [rank for rank, _ in ranked[:16]], rel=1e-5
        )


@pytest.mark.parametrize("min_len", [1, 3, 6])
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_min_len_keeps_eos_back_and_the_stop_stays_exact(
    partly_trained, min_len, alpha
):
    model, src = partly_trained
    src = src[:40]
    out = beam_search(model, src, 4, 24, alpha, min_len=min_len)
    for row in out.tolist():
        before = row.index(EOS) if EOS in row else len(row)
        assert before >= min_len, row  # at least min_len tokens before <eos>
    to_max_len = beam_search(
        model, src, 4, 24, alpha, min_len=min_len, stopping="max_len"
    )
    assert torch.equal(out, to_max_len)
    # count_sevens writes 7 (source - 3) times: min_len makes it write more
    scripted = ScriptedModel(10, count_sevens)
    short = beam_search(scripted, torch.tensor([[3]]), 2, 8, alpha)
    assert short.tolist() == [[EOS]]
    longer = beam_search(
        scripted, torch.tensor([[3]]), 2, 8, alpha, min_len=min_len
    )
    assert len(longer[0]) == min_len + 1 and longer[0, -1] == EOS


@pytest.mark.parametrize("cache", [NoCache, DecoderCache])
def test_max_len_a_t_src_plus_b_is_each_sentences_own_limit(cache):
    model = random_model(3).eval()
    with torch.no_grad():  # <eos> rare: most sentences reach their limit
        model.output_proj.weight[EOS] -= 2.0
    src = random_sources(4)
    t_src = (src != PAD).sum(dim=1)
    for a, b in ((1.0, 2), (0.5, 3), (2.0, 0)):
        limit = (a * t_src + b).floor().long()
        out = beam_search(model, src, 3, (a, b), cache=cache)
        assert torch.equal(
            out, beam_search(model, src, 3, (a, b), stopping="max_len")
        )
        for row in range(len(src)):
            # the same as that sentence decoded alone with its own max_len
            alone = beam_search(
                model,
                src[row : row + 1, : int(t_src[row])],
                3,
                int(limit[row]),
                cache=cache,
            )[0]
            assert torch.equal(out[row, : len(alone)], alone)
            assert (out[row, len(alone) :] == PAD).all()
        assert ((out != PAD).sum(dim=1) == limit).any()  # some were cut


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"min_len": -1}, ValueError, "min_len"),
        ({"min_len": 8}, ValueError, "less than max_len"),
        ({"min_len": 1.5}, TypeError, "min_len"),
        ({"n_best": 0}, ValueError, "n_best"),
        ({"n_best": 5}, ValueError, "beam_size=4"),
        ({"n_best": True}, TypeError, "n_best"),
        ({"return_scores": 1}, TypeError, "return_scores"),
        ({"max_len": (1.0,)}, TypeError, "(a, b)"),
        ({"max_len": (1.0, "50")}, TypeError, "(a, b)"),
        ({"max_len": (0.0, 0)}, ValueError, "at least 1"),
        ({"max_len": (1.0, 5000)}, ValueError, "positional encoding"),
    ],
)
def test_beam_search_options_refuse_bad_values(kwargs, error, words):
    model, src = random_model(0), random_sources(0)
    kwargs = {"max_len": 8, **kwargs}
    with pytest.raises(
        error, match=words.replace("(", r"\(").replace(")", r"\)")
    ):
        beam_search(model, src, 4, **kwargs)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="tests/data of this module")
    parser.add_argument(
        "--write-partly-trained",
        action="store_true",
        help=f"train and write {PARTLY_TRAINED.name}",
    )
    if parser.parse_args().write_partly_trained:
        torch.set_num_threads(1)  # as the tests run
        PARTLY_TRAINED.parent.mkdir(exist_ok=True)
        torch.save(train_partly_trained(), PARTLY_TRAINED)
        print(f"wrote {PARTLY_TRAINED}")
