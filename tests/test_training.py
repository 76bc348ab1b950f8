"""Chapter 7's training pieces: batching, label smoothing, schedule, loop, checkpoints."""

import dataclasses
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_course.batching import BatchStream, collate, token_batches
from transformer_course.beyond_experiments import BeyondTrainConfig
from transformer_course.checkpoints import load_checkpoint, save_checkpoint
from transformer_course.training import (
    Run,
    TrainConfig,
    choose_precision,
    exact_match,
    fit,
    label_smoothed_loss,
    make_task,
    noam_lr,
)


@pytest.fixture(scope="module")
def grammar():
    return make_task("grammar", n_train=600, n_test=50, n_validation=50)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("pad_id", [0, 2])
def test_label_smoothing_equals_pytorch(smoothing, pad_id):
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 6, 11, generator=generator, dtype=torch.float64)
    target = torch.randint(0, 11, (3, 6), generator=generator)
    target[0, 3:] = pad_id
    expected = F.cross_entropy(
        logits.flatten(0, 1),
        target.flatten(),
        label_smoothing=smoothing,
        ignore_index=pad_id,
    )
    got = label_smoothed_loss(logits, target, smoothing, pad_id=pad_id)
    assert torch.allclose(got.double(), expected, atol=1e-6)
    total = label_smoothed_loss(
        logits, target, smoothing, pad_id, reduction="sum"
    )
    assert torch.allclose(total / (target != pad_id).sum(), got)


def test_noam_lr():
    assert noam_lr(4000, 512, 4000) == pytest.approx(512**-0.5 * 4000**-0.5)
    assert noam_lr(1, 512, 4000) == pytest.approx(512**-0.5 * 4000**-1.5)
    assert noam_lr(16000, 512, 4000) == pytest.approx(
        noam_lr(4000, 512, 4000) / 2
    )
    assert noam_lr(100, 64, 10, factor=0.5) == pytest.approx(
        0.5 * noam_lr(100, 64, 10)
    )
    rates = [noam_lr(s, 64, 200) for s in range(1, 2000)]
    assert int(np.argmax(rates)) + 1 == 200
    with pytest.raises(ValueError, match="from 1"):
        noam_lr(0, 512, 4000)


def test_noam_lr_without_warm_up_holds_the_same_peak_then_decays_alike():
    peak = noam_lr(200, 64, 200, 0.5)
    for step in (1, 2, 50, 199, 200):
        assert noam_lr(step, 64, 200, 0.5, ramp=False) == pytest.approx(peak)
        assert noam_lr(step, 64, 200, 0.5) <= peak
    for step in (201, 500, 5000):
        assert noam_lr(step, 64, 200, 0.5, ramp=False) == noam_lr(
            step, 64, 200, 0.5
        )
    config = TrainConfig(warmup_ramp=False, warmup=4)
    run = Run(config, task=make_task("grammar", n_train=600))
    rates = []
    for _ in range(6):
        rates.append(run.optimizer.param_groups[0]["lr"])
        run.optimizer.step()
        run.scheduler.step()
    assert rates[:4] == [pytest.approx(config.peak_lr)] * 4
    assert rates[4] < rates[3]


@pytest.mark.parametrize("max_tokens", [20, 64, 500])
def test_token_batches_respect_the_budget_and_use_every_example(max_tokens):
    rng = random.Random(max_tokens)
    lengths = [rng.randint(1, 20) for _ in range(1000)]
    batches = token_batches(lengths, max_tokens, seed=3)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert all(
        len(b) * max(lengths[i] for i in b) <= max_tokens for b in batches
    )
    assert batches == token_batches(lengths, max_tokens, seed=3)
    assert batches != token_batches(lengths, max_tokens, seed=4)
    with pytest.raises(ValueError, match="max_tokens"):
        token_batches([5, 30], 20)


def test_batch_stream_resumes_in_the_middle_of_an_epoch():
    lengths = [random.Random(0).randint(1, 9) for _ in range(100)]
    straight = BatchStream(lengths, 40, seed=1)
    first = [next(straight) for _ in range(50)]  # crosses an epoch boundary
    resumed = BatchStream(lengths, 40, seed=1)
    for _ in range(20):
        next(resumed)
    state = resumed.state_dict()
    again = BatchStream(lengths, 40, seed=1)
    again.load_state_dict(state)
    assert [next(again) for _ in range(30)] == first[20:]


def test_collate_shifts_the_target(grammar):
    examples = grammar.examples("train")[:3]
    src, tgt_in, tgt_out = collate(examples)
    assert (
        src.shape[0] == tgt_in.shape[0] == 3 and tgt_in.shape == tgt_out.shape
    )
    assert (tgt_in[:, 0] == 1).all()
    for row, (_, target) in enumerate(examples):
        assert tgt_out[row, : len(target)].tolist() == target
        assert tgt_out[row, len(target)] == 2
        assert tgt_in[row, 1 : len(target) + 1].tolist() == target


def test_precision_on_cpu_is_fp32():
    assert choose_precision("cpu") == "fp32"


class FixedStream:
    """A stream that hands out given batches in turn."""

    def __init__(self, batches):
        self.batches, self.position = batches, 0

    def __next__(self):
        self.position += 1
        return self.batches[(self.position - 1) % len(self.batches)]

    def state_dict(self):
        return {"epoch": 0, "position": self.position}


def test_accumulating_micro_batches_equals_one_big_batch(grammar):
    """k micro-batches of different sizes per update train to the same
    parameters as one batch holding them all (dropout off). Plain SGD: Adam
    turns the rounding noise of gradients that should be 0 (the keys' bias,
    which softmax ignores) into steps of size lr, in either direction."""
    torch.set_num_threads(1)
    config = TrainConfig(
        dropout=0.0,
        n_train=600,
        eval_every=1000,
        d_model=32,
        n_heads=2,
        d_ff=64,
    )
    lengths = [len(t) for _, t in grammar.examples("train")]
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    micro = [order[:3], order[100:110], order[-2:]]  # short, medium, long
    accumulated = Run(dataclasses.replace(config, accumulate=3), task=grammar)
    accumulated.stream = FixedStream(micro)
    one_batch = Run(config, task=grammar)
    one_batch.stream = FixedStream([[i for batch in micro for i in batch]])
    for run in (accumulated, one_batch):
        run.optimizer = torch.optim.SGD(run.model.parameters(), lr=0.5)
        run.scheduler = torch.optim.lr_scheduler.LambdaLR(
            run.optimizer, lambda step: 1 / (step + 1)
        )
        fit(run, 4, progress=False)
    for a, b in zip(
        accumulated.model.parameters(),
        one_batch.model.parameters(),
        strict=True,
    ):
        assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()
    assert (
        accumulated.scheduler.last_epoch == one_batch.scheduler.last_epoch == 4
    )


def test_checkpoint_is_atomic_and_weights_only(tmp_path, monkeypatch):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(
        model.parameters(), betas=(0.9, 0.98), eps=1e-9
    )
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    path = save_checkpoint(
        tmp_path / "c.pt",
        model=model,
        optimizer=optimizer,
        step=7,
        data={"epoch": 1, "position": 2},
    )
    state = torch.load(path, weights_only=True)
    assert state["step"] == 7 and state["data"] == {"epoch": 1, "position": 2}
    before = path.read_bytes()

    def broken_save(obj, file):
        file.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, model=model, step=8)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_load_checkpoint_restores_every_generator(tmp_path):
    model = torch.nn.Linear(2, 2)
    random.seed(1)
    np.random.seed(1)  # noqa: NPY002
    torch.manual_seed(1)
    save_checkpoint(tmp_path / "c.pt", model=model)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())  # noqa: NPY002
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)  # noqa: NPY002
    load_checkpoint(tmp_path / "c.pt", model=model)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected  # noqa: NPY002


def test_a_short_run_learns_something(grammar):
    torch.set_num_threads(1)
    run = fit(
        Run(TrainConfig(n_train=600, updates=30, eval_every=15), task=grammar),
        30,
        progress=False,
    )
    evaluated = [
        r["validation_loss"] for r in run.history if "validation_loss" in r
    ]
    assert len(evaluated) == 2 and evaluated[1] < evaluated[0]
    assert run.history[-1]["loss"] < run.history[0]["loss"]
    assert 0.0 <= exact_match(run.model, run.task, "test", limit=20) <= 1.0


def test_chapter_9_options_reach_the_model_and_the_data(grammar):
    config = BeyondTrainConfig(
        n_train=600, n_kv_heads=2, rope=True, max_source_length=6
    )
    run = Run(config, task=grammar)
    assert run.model.config.n_kv_heads == 2 and run.model.config.rope
    assert run.examples  # some pairs are short enough, none is longer
    assert max(len(source) for source, _ in run.examples) == 6 + 1  # <eos>
    assert len(run.examples) < len(
        Run(TrainConfig(n_train=600), grammar).examples
    )


def test_each_configuration_has_its_own_cache_file(tmp_path, monkeypatch):
    from transformer_course.trained_models import TASK_CONFIGS, _cache_path

    monkeypatch.setenv("TRANSFORMER_COURSE_CACHE", str(tmp_path))
    grammar = TASK_CONFIGS["grammar"]
    assert _cache_path(grammar) == tmp_path / "grammar.pt"
    on_cpu = dataclasses.replace(grammar, device="cpu")
    assert _cache_path(on_cpu) == tmp_path / "grammar.pt"  # same model
    paths = {
        _cache_path(BeyondTrainConfig.extend(grammar, rope=True)),
        _cache_path(BeyondTrainConfig.extend(grammar, n_kv_heads=2)),
        _cache_path(dataclasses.replace(grammar, updates=601)),
    }
    assert len(paths) == 3 and tmp_path / "grammar.pt" not in paths
    # chapter 9's configuration with its options off is still another class
    plain = BeyondTrainConfig.extend(grammar)
    assert _cache_path(plain) not in paths | {tmp_path / "grammar.pt"}
    assert all(p.name.startswith("grammar-") for p in paths)


def test_a_run_checks_its_token_ids_once_where_they_enter(grammar):
    """The model reads no ids back from a GPU at each forward pass, so the
    run checks its examples once, when it is made."""

    class Outside:
        name, vocab, splits = grammar.name, grammar.vocab, grammar.splits

        def examples(self, split):
            source, target = grammar.examples(split)[0]
            return [(list(source), [*target, len(grammar.vocab)])]

    with pytest.raises(ValueError, match="outside the vocabulary"):
        Run(TrainConfig(n_train=600), task=Outside())


def test_the_shipped_small_models_are_the_recorded_runs_of_task_configs():
    """data/toy_*.pt are what benchmarks/train_toy_models.py wrote: the
    SHA-256 of its record, TASK_CONFIGS' configuration trained to the end, and
    the test exact match the record gives (greedy, on this machine)."""
    import hashlib
    import json

    from transformer_course.trained_models import (
        EARLY_UPDATES,
        SHIPPED_TASKS,
        TASK_CONFIGS,
        shipped_path,
    )

    record = json.loads(
        (shipped_path("grammar").parent / "toy_models.json").read_text()
    )
    assert SHIPPED_TASKS == ("grammar", "numbers")
    assert EARLY_UPDATES == {"grammar": 100}
    shipped = {task: (task, None) for task in SHIPPED_TASKS}
    shipped |= {f"{t}_{u}": (t, u) for t, u in EARLY_UPDATES.items()}
    assert set(record["runs"]) == set(shipped)
    for name, (task, updates) in shipped.items():
        path, made = shipped_path(task, updates), record["runs"][name]
        assert path.name == f"toy_{name}.pt"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == made["sha256"]
        state = torch.load(path, map_location="cpu", weights_only=True)
        config = TASK_CONFIGS[task]
        if updates is not None:  # the same configuration, stopped early
            config = dataclasses.replace(config, updates=updates)
        expected = dataclasses.asdict(config)
        assert state["config"] == made["config"] == expected
        assert state["step"] == made["updates"] == expected["updates"]
    with pytest.raises(ValueError, match="no trained run of 'gettext'"):
        shipped_path("gettext")
    with pytest.raises(ValueError, match="stopped after 200 updates"):
        shipped_path("grammar", 200)
    with pytest.raises(ValueError, match="stopped after 100 updates"):
        shipped_path("numbers", 100)


def test_train_or_load_takes_the_shipped_run_before_the_cache_and_training(
    tmp_path, monkeypatch
):
    """The default configuration loads the shipped run without training,
    whatever the cache holds; shipped=False (the benchmarks) and another
    configuration never take it."""
    from transformer_course import trained_models
    from transformer_course.trained_models import TASK_CONFIGS, train_or_load

    monkeypatch.setenv("TRANSFORMER_COURSE_CACHE", str(tmp_path))

    def no_training(run, updates, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(trained_models, "fit", no_training)
    run = train_or_load("numbers", progress=False, device="cpu")
    assert run.step == TASK_CONFIGS["numbers"].updates and run.history
    assert exact_match(run.model, run.task, "test", limit=40) >= 0.95
    with pytest.raises(AssertionError, match="trained"):
        train_or_load("numbers", shipped=False, device="cpu")
    longer = dataclasses.replace(TASK_CONFIGS["numbers"], updates=801)
    with pytest.raises(AssertionError, match="trained"):
        train_or_load(longer, device="cpu")
    with pytest.raises(AssertionError, match="trained"):
        train_or_load("numbers", retrain=True, device="cpu")


def test_the_early_grammar_run_ships_and_is_the_full_runs_first_updates(
    tmp_path, monkeypatch
):
    """TASK_CONFIGS["grammar"] with EARLY_UPDATES' 100 updates loads the
    shipped early run without training (other lengths and other changes
    train), and it is the first 100 updates of the full configuration's run
    as recorded: the schedule ignores the number of updates, so the losses of
    its updates are the full run's first, to the last bit."""
    from transformer_course import trained_models
    from transformer_course.trained_models import (
        EARLY_UPDATES,
        TASK_CONFIGS,
        train_or_load,
    )

    monkeypatch.setenv("TRANSFORMER_COURSE_CACHE", str(tmp_path))
    grammar, updates = TASK_CONFIGS["grammar"], EARLY_UPDATES["grammar"]
    early = dataclasses.replace(grammar, updates=updates)

    def no_training(run, n, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(trained_models, "fit", no_training)
    shipped = train_or_load(early, progress=False, device="cpu")
    assert shipped.step == updates
    for other in (
        dataclasses.replace(grammar, updates=updates + 1),
        dataclasses.replace(early, seed=1),
    ):
        with pytest.raises(AssertionError, match="trained"):
            train_or_load(other, device="cpu")
    # the same losses, update by update, as the full run's first updates
    full = train_or_load("grammar", progress=False, device="cpu")
    assert full.step > updates
    assert shipped.history == full.history[: len(shipped.history)]
    assert shipped.history[-1]["step"] == updates
