"""What training does, over seeds: the claims of chapters 7-9, measured.

    python benchmarks/training_seeds.py EXPERIMENT [EXPERIMENT ...]
        [--seeds 0 1 2 3 4] [--jobs 2] [--write benchmarks/results]

One run of a claim on one machine can flip on another: another CPU sums in
another order, trains other weights, and a model at the edge of generalising
falls on the other side. So each claim is measured here over several seeds
(the seed draws the data split, the weights, the batches and the dropout
masks), and the chapters print these tables and state only what the spread
allows. Every run uses one CPU thread; --jobs runs that many seeds at once.

Experiments (the chapter that reads each in brackets):
  tasks      [7, 8] the grammar and numbers tasks of chapter 7 at their
             configuration: test and compositional exact match, BLEU, chrF,
             greedy against beam 4; best cross-attention head's alignment
  recipe     [7] the grammar task with the recipe changed one thing at a time:
             no warm-up (the same peak from step 1), a peak 8 times higher,
             no label smoothing
  early_beam [8] greedy against beam search on a checkpoint of 100 updates
  gqa        [9] the trained grammar model pooled to 2 and 1 key/value heads,
             then 100 updates; MQA from scratch for 100 updates
  rope       [9] RoPE against the added encoding: the lag task by length,
             and the grammar model trained on short sentences, by length
  layernorm  [9] pre-LN against post-LN, with and without warm-up
  gettext_recipe
             [7] a small model (d_model 64, 2 + 2 layers) on the real
             corpus, 500 updates, with the recipe changed one thing at a
             time: no warm-up, no label smoothing, no dropout, random
             batches of the same padded size; dev loss, and the greedy
             translations of the whole test split scored. One job per
             setting and seed (the corpus fixes the split: a seed draws
             the weights, the batches and the dropout masks)

--kernels default runs PyTorch's CPU kernels for a CPU without AVX2 or AVX-512
(ATEN_CPU_CAPABILITY=default), which sum in another order: a stand-in for
another machine. Its files are named seeds_<experiment>_default.*.

--machine NAME names a run on another machine than the one that made the
unsuffixed files (its processor and its math libraries sum in yet another
order): its files are named seeds_<experiment>_<NAME>.*, and the document
records the processor's model and its AVX-512 and AMX extensions.

--write DIR writes DIR/seeds_<experiment>.json (the seeds, every run's
figures, and mean, min and max of each) and a Markdown table beside it.
"""

import argparse
import dataclasses
import datetime
import json
import multiprocessing
import os
import platform
import statistics
import sys
from pathlib import Path

from results_files import processor

EXPERIMENTS = (
    "tasks",
    "recipe",
    "early_beam",
    "gqa",
    "rope",
    "layernorm",
    "gettext_recipe",
)
BEAM_SUBSET, EARLY_SENTENCES, EARLY_UPDATES = 200, 100, 100


def _setup():
    import torch

    torch.set_num_threads(1)
    # the trained models of these runs, apart from the chapters' own cache
    # and apart for each set of kernels (they train other models)
    kernels = os.environ.get("ATEN_CPU_CAPABILITY", "native")
    os.environ.setdefault(
        "TRANSFORMER_COURSE_CACHE",
        str(Path.home() / ".cache" / "transformer_course" / f"seeds_{kernels}"),
    )


def _grammar_config(seed, **changes):
    from transformer_course.trained_models import TASK_CONFIGS

    config = dataclasses.replace(TASK_CONFIGS["grammar"], seed=seed)
    if {"n_kv_heads", "rope"} & set(changes):  # chapter 9's options
        from transformer_course.beyond_experiments import BeyondTrainConfig

        return BeyondTrainConfig.extend(config, **changes)
    return dataclasses.replace(config, **changes)


def _decode_split(model, task, split, beam_size=None, limit=None):
    """Token lists of a split: greedy (None) or beam search, max 40 tokens."""
    from transformer_course.batching import collate
    from transformer_course.decoding import beam_search, greedy_decode

    sources = task.examples(split)[:limit]
    outputs = []
    for first in range(0, len(sources), 200):
        src = collate(sources[first : first + 200])[0]
        if beam_size is None:
            out = greedy_decode(model, src, 40)
        else:
            out = beam_search(model, src, beam_size, 40)
        outputs += [task.vocab.decode(row) for row in out.tolist()]
    return outputs


def _scores(hyps, refs):
    import sacrebleu

    from transformer_course.evaluation import bleu, exact_match_score

    chrf = sacrebleu.corpus_chrf(
        ["".join(h) for h in hyps], [["".join(r) for r in refs]]
    )
    return {
        "BLEU": bleu(hyps, refs),
        "chrF": chrf.score,
        "exact match": exact_match_score(hyps, refs),
    }


def _best_alignment_head(run):
    """The best cross-attention head's share of target tokens whose largest
    weight lands on an aligned source word (chapter 8), on the test split."""
    import torch

    from transformer_course import MultiHeadAttention
    from transformer_course.batching import collate

    pairs, examples = run.task.splits["test"], run.task.examples("test")
    src, tgt_in, _ = collate(examples)
    aligned = torch.zeros(len(pairs), tgt_in.size(1), src.size(1), dtype=bool)
    for b, pair in enumerate(pairs):
        for j, words in enumerate(pair.alignment):
            aligned[b, j, list(words)] = True
    real = aligned.any(dim=-1)  # (B, T_tgt): target tokens with an alignment
    assert all(
        isinstance(layer.cross_attn, MultiHeadAttention)
        for layer in run.model.decoder_layers
    )
    best, weights = 0.0, []

    def hook(module, args, kwargs, output):
        weights.append(module.forward(*args, **kwargs, return_weights=True)[1])

    handles = [
        layer.cross_attn.register_forward_hook(hook, with_kwargs=True)
        for layer in run.model.decoder_layers
    ]
    try:
        with torch.no_grad():
            run.model.eval()(src, tgt_in)
    finally:
        for handle in handles:
            handle.remove()
    layers = {}
    for layer, w in enumerate(weights):  # (B, h, T_tgt, T_src)
        top = w.argmax(dim=-1)
        for head in range(w.size(1)):
            hit = aligned.gather(-1, top[:, head, :, None])[..., 0]
            share = (hit & real).sum().item() / real.sum().item()
            layers[layer, head] = share
            best = max(best, share)
    last = len(weights) - 1
    return {
        "best head's alignment accuracy": best,
        "best head in the last layer": float(
            max(layers, key=layers.get)[0] == last
        ),
    }


def run_tasks(seed):
    from transformer_course.trained_models import TASK_CONFIGS, train_or_load

    figures = {}
    for name in ("grammar", "numbers"):
        config = dataclasses.replace(TASK_CONFIGS[name], seed=seed)
        run = train_or_load(config, progress=False, shipped=False)
        model = run.model.eval()
        figures[f"{name}: validation loss"] = run.history[-1]["validation_loss"]
        for split in ("test", "compositional"):
            refs = [list(p.target) for p in run.task.splits[split]]
            greedy = _decode_split(model, run.task, split)
            beam = _decode_split(model, run.task, split, 4, BEAM_SUBSET)
            for metric, value in _scores(greedy, refs).items():
                figures[f"{name} {split}: greedy {metric}"] = value
            subset = refs[:BEAM_SUBSET]
            greedy_subset = _scores(greedy[:BEAM_SUBSET], subset)
            beam_subset = _scores(beam, subset)
            figures[f"{name} {split}: beam 4 - greedy, exact match on 200"] = (
                beam_subset["exact match"] - greedy_subset["exact match"]
            )
        if name == "grammar":
            figures |= {
                f"grammar: {k}": v for k, v in _best_alignment_head(run).items()
            }
    return figures


def run_recipe(seed):
    from transformer_course.training import Run, exact_match, fit

    variants = {
        "baseline": {},
        "no warm-up, same peak": {"warmup_ramp": False},
        "peak 8x higher (factor 4)": {"lr_factor": 4.0},
        "no label smoothing": {"label_smoothing": 0.0},
    }
    figures = {}
    for name, changes in variants.items():
        config = _grammar_config(seed, eval_every=50, **changes)
        run = Run(config)
        for updates in (150, config.updates):
            fit(run, updates, progress=False)
            loss = run.history[-1]["validation_loss"]
            figures[f"{name}: validation loss at {updates}"] = loss
            figures[f"{name}: test exact match at {updates}"] = exact_match(
                run.model, run.task
            )
    return figures


# the recipe on the real corpus: chapter 7's grammar recipe (d_model 64,
# 2 + 2 layers, warm-up over 200 updates to 4.4e-3, label smoothing 0.1,
# dropout 0.1) on batches of 2,048 padded tokens, about 3 epochs in 500
# updates; each setting changes one thing
GETTEXT_SMALL = dict(
    d_model=64,
    n_heads=4,
    n_layers=2,
    d_ff=256,
    dropout=0.1,
    max_tokens=2048,
    warmup=200,
    lr_factor=0.5,
    updates=500,
    eval_every=250,
)
GETTEXT_SETTINGS = {
    "recipe": {},
    "no warm-up, same peak": {"warmup_ramp": False},
    "no label smoothing": {"label_smoothing": 0.0},
    "no dropout": {"dropout": 0.0},
    "random batches, same padded size": {},  # the stream below
}


class RandomBatchStream:
    """Batches as most loaders cut them: the examples shuffled, each batch
    filled in that order while its padded size (members times the longest)
    stays within max_tokens; a new shuffle every epoch. The token batches'
    budget, without their sorting by length."""

    def __init__(self, lengths, max_tokens: int, seed: int = 0):
        import random

        self.lengths, self.max_tokens = lengths, max_tokens
        self.rng, self.batches = random.Random(seed), []

    def __iter__(self):
        return self

    def __next__(self) -> list[int]:
        if not self.batches:
            order = list(range(len(self.lengths)))
            self.rng.shuffle(order)
            batch, longest = [], 0
            for i in order:
                wider = max(longest, self.lengths[i])
                if batch and (len(batch) + 1) * wider > self.max_tokens:
                    self.batches.append(batch)
                    batch, wider = [], self.lengths[i]
                batch.append(i)
                longest = wider
            self.batches.append(batch)
            self.batches.reverse()  # pop() from the end: the shuffled order
        return self.batches.pop()


def run_gettext_recipe(seed, setting):
    from transformer_course.batching import example_length
    from transformer_course.trained_models import TASK_CONFIGS
    from transformer_course.training import Run, fit
    from transformer_course.translation import scores, translate

    changes = GETTEXT_SETTINGS[setting]
    config = dataclasses.replace(
        TASK_CONFIGS["gettext"], seed=seed, **{**GETTEXT_SMALL, **changes}
    )
    run = Run(config)
    if setting.startswith("random batches"):
        lengths = [example_length(e) for e in run.examples]
        run.stream = RandomBatchStream(lengths, config.max_tokens, seed)
    real, padded = [], []  # target tokens and padded positions per update
    run.stream = _Counting(run.stream, run.examples, real, padded)
    figures = {}
    for updates in (config.updates // 2, config.updates):
        fit(run, updates, progress=False)
        loss = run.history[-1]["validation_loss"]
        figures[f"{setting}: dev loss at {updates}"] = loss
    test = run.task.splits["test"]
    sources = [p.source for p in test]
    outputs = translate(run.model.eval(), run.task.tokenizer, sources)
    found = scores(sources, outputs, [p.target for p in test])
    for metric, value in found.items():
        figures[f"{setting}: test {metric}"] = value
    figures[f"{setting}: test exact"] = sum(
        o == p.target for o, p in zip(outputs, test, strict=True)
    ) / len(test)
    figures[f"{setting}: target tokens per update"] = statistics.fmean(real)
    figures[f"{setting}: padding share"] = 1 - sum(real) / sum(padded)
    return figures


class _Counting:
    """A batch stream that also records, per batch, its target tokens (with
    <eos>) and its padded positions on the target side."""

    def __init__(self, stream, examples, real, padded):
        self.stream, self.examples = stream, examples
        self.real, self.padded = real, padded

    def __iter__(self):
        return self

    def __next__(self):
        batch = next(self.stream)
        targets = [len(self.examples[i][1]) + 1 for i in batch]
        self.real.append(sum(targets))
        self.padded.append(len(batch) * max(targets))
        return batch


def run_early_beam(seed):
    from transformer_course.batching import collate
    from transformer_course.decoding import (
        beam_search,
        greedy_decode,
        sequence_log_prob,
    )
    from transformer_course.evaluation import bleu
    from transformer_course.training import Run, fit

    run = fit(Run(_grammar_config(seed)), EARLY_UPDATES, progress=False)
    model, vocab = run.model.eval(), run.task.vocab
    src = collate(run.task.examples("test")[:EARLY_SENTENCES])[0]
    refs = [list(p.target) for p in run.task.splits["test"]][:EARLY_SENTENCES]
    figures = {}

    def mean_length(out):
        return sum(len(vocab.decode(row)) for row in out.tolist()) / len(out)

    greedy = greedy_decode(model, src, 24)
    figures["greedy: mean length"] = mean_length(greedy)
    texts = {}
    for k in (1, 4, 8):  # beam 1 at alpha 0.6 is not greedy: greedy_decode
        out = greedy if k == 1 else beam_search(model, src, k, max_len=24)
        name = "greedy" if k == 1 else f"beam {k}"
        hyps = [vocab.decode(row) for row in out.tolist()]
        texts[name] = ["".join(h) for h in hyps]
        log_p = sequence_log_prob(model, src, out).mean().item()
        figures[f"{name}: mean log P"] = log_p
        figures[f"{name}: BLEU"] = bleu(hyps, refs)
    # is beam 8's BLEU gain on this seed's 100 sentences more than chance?
    # sacreBLEU's paired bootstrap (Koehn, 2004), 1,000 resamples; on
    # characters, tokenize="zh" scores the same BLEU as chapter 8's bleu
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    _, tested = PairedTest(
        [(name, texts[name]) for name in ("greedy", "beam 8")],
        {"BLEU": BLEU(tokenize="zh")},
        [["".join(r) for r in refs]],
        test_type="bs",
        n_samples=1000,
    )()
    figures["beam 8 - greedy: BLEU, paired bootstrap p"] = tested["BLEU"][
        1
    ].p_value
    for alpha in (0.0, 0.6, 1.0):
        out = beam_search(model, src, 8, max_len=24, length_penalty=alpha)
        figures[f"beam 8, alpha {alpha}: mean length"] = mean_length(out)
    figures["references: mean length"] = sum(map(len, refs)) / len(refs)
    return figures


def run_gqa(seed):
    from transformer_course.batching import collate
    from transformer_course.beyond import grouped_query_transformer
    from transformer_course.decoding import greedy_decode
    from transformer_course.kv_cache import DecoderCache
    from transformer_course.trained_models import train_or_load
    from transformer_course.training import Run, exact_match, fit

    trained = train_or_load(
        _grammar_config(seed), progress=False, shipped=False
    )
    task, model = trained.task, trained.model.eval()
    src = collate(task.examples("test"))[0]

    def tuned(n_kv_heads, weights=None):
        run = Run(_grammar_config(seed, n_kv_heads=n_kv_heads, updates=100))
        if weights is not None:
            run.model.load_state_dict(weights.state_dict())
        return fit(run, 100, progress=False).model.eval()

    variants = {"multi-head, h_kv = 4": model}
    for n_kv, name in ((2, "GQA, h_kv = 2"), (1, "MQA, h_kv = 1")):
        pooled = grouped_query_transformer(model, n_kv).eval()
        variants[f"{name}, pooled"] = pooled
        variants[f"{name}, + 100 updates"] = tuned(n_kv, pooled)
    variants["MQA, 100 updates from scratch"] = tuned(1)
    figures = {}
    for name, variant in variants.items():
        figures[f"{name}: test exact match"] = exact_match(variant, task)
        steps = greedy_decode(variant, src, 40, cache=DecoderCache).size(1)
        figures[f"{name}: greedy steps (40 = limit)"] = steps
    return figures


def run_rope(seed):
    from transformer_course.beyond_experiments import train_lag
    from transformer_course.toy_tasks import TranslationTask
    from transformer_course.trained_models import train_or_load
    from transformer_course.training import exact_match

    figures = {}
    for name in ("sinusoidal", "RoPE"):
        for T, accuracy in train_lag(name == "RoPE", seed=seed).items():
            figures[f"lag task, {name}: accuracy at length {T}"] = accuracy
    # nn.Embedding's N(0, 1) instead of chapter 6's N(0, 1/d_model)
    accuracy = train_lag(False, seed=seed, std=1.0)[16]
    figures["lag task, sinusoidal, N(0, 1) embeddings: accuracy at 16"] = (
        accuracy
    )
    groups = {"3-7": (3, 7), "8-9": (8, 9), "10-13": (10, 13)}
    for name in ("sinusoidal", "RoPE"):
        config = _grammar_config(seed, rope=name == "RoPE", max_source_length=7)
        run = train_or_load(config, progress=False, shipped=False)
        test = run.task.splits["test"]
        by_length = TranslationTask(
            "grammar",
            run.task.vocab,
            {
                group: [p for p in test if low <= len(p.source) <= high]
                for group, (low, high) in groups.items()
            },
        )
        for group in groups:
            accuracy = exact_match(run.model, by_length, group)
            figures[f"grammar, {name}: exact match, {group} words"] = accuracy
    return figures


def run_layernorm(seed):
    import torch

    from transformer_course.beyond_experiments import (
        layer_gradient_norms,
        reversal_batch,
        train_reversal,
    )
    from transformer_course.decoding import greedy_decode

    figures = {}
    for norm_first, name in ((False, "post-LN"), (True, "pre-LN")):
        norms = layer_gradient_norms(norm_first, seed=seed)
        figures[f"{name}: last / first decoder layer's gradient"] = (
            norms[-1] / norms[6]
        )
        for warmup in (0, 50):
            model, losses = train_reversal(norm_first, warmup, seed=seed)
            figures[f"{name}, warm-up {warmup}: mean of the last 40 losses"] = (
                sum(losses[-40:]) / 40
            )
            # chapter 9 decodes 200 new sequences with the pre-LN model
            src, tgt = reversal_batch(torch.Generator().manual_seed(7), B=200)
            out = greedy_decode(model, src, 10)
            right = (out == tgt[:, 1:]).all(dim=1).float().mean().item()
            figures[f"{name}, warm-up {warmup}: reversed exactly"] = right
    return figures


# experiments run as one job per setting and seed (the others: per seed)
PARTS = {"gettext_recipe": tuple(GETTEXT_SETTINGS)}


def _job(arguments):
    experiment, seed, part = arguments
    _setup()
    run = globals()[f"run_{experiment}"]
    return experiment, seed, run(seed) if part is None else run(seed, part)


def summarise(experiment, seeds, per_seed) -> dict:
    """The JSON document: every run's figure and its mean, min and max."""
    import torch

    metrics = {}
    for name in per_seed[0]:
        values = [figures[name] for figures in per_seed]
        metrics[name] = {
            "runs": values,
            "mean": statistics.fmean(values),
            "min": min(values),
            "max": max(values),
        }
    return {
        "experiment": experiment,
        "script": "benchmarks/training_seeds.py",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, 1 thread "
        f"a run, CPU kernels {torch.backends.cpu.get_cpu_capability()}"
        + processor_note(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "seeds": seeds,
        "metrics": metrics,
    }


def processor_note() -> str:
    """ ", model (extensions)" of the processor, for the machine field."""
    model, extensions = processor()
    return f", {model} ({' '.join(extensions) or 'no AVX-512'})"


def markdown(document) -> str:
    seeds = document["seeds"]
    lines = [
        f"# {document['experiment']}: {len(seeds)} seeds",
        "",
        f"`{document['script']} {document['command']}`, "
        f"{document['date']}, {document['machine']}, torch "
        f"{document['torch']}.",
        "",
        "| figure | "
        + " | ".join(f"seed {s}" for s in seeds)
        + " | mean | min | max |",
        "|---|" + "---:|" * (len(seeds) + 3),
    ]
    for name, m in document["metrics"].items():
        cells = [
            f"{v:.4g}" for v in (*m["runs"], m["mean"], m["min"], m["max"])
        ]
        if name.endswith(" p"):  # a mean of p-values means nothing
            cells[len(seeds)] = "-"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="+", choices=EXPERIMENTS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", type=Path)
    parser.add_argument(
        "--kernels", choices=["default"], help="ATEN_CPU_CAPABILITY"
    )
    parser.add_argument(
        "--machine", help="a name for another machine's run (file suffix)"
    )
    args = parser.parse_args(argv)
    if args.kernels:  # read by torch when the workers import it
        os.environ["ATEN_CPU_CAPABILITY"] = args.kernels
    jobs = [
        (e, s, part)
        for e in args.experiments
        for part in PARTS.get(e, (None,))
        for s in args.seeds
    ]
    results = {}
    context = multiprocessing.get_context("spawn")  # fresh interpreters
    with context.Pool(args.jobs, maxtasksperchild=1) as pool:
        for experiment, seed, figures in pool.imap_unordered(_job, jobs):
            results.setdefault((experiment, seed), {}).update(figures)
            print(f"{experiment}, seed {seed}: done", file=sys.stderr)
    for experiment in args.experiments:
        per_seed = [results[experiment, s] for s in args.seeds]
        if experiment in PARTS:  # the parts in their order, not as finished
            rank = {part: i for i, part in enumerate(PARTS[experiment])}
            per_seed = [
                dict(
                    sorted(f.items(), key=lambda kv: rank[kv[0].split(":")[0]])
                )
                for f in per_seed
            ]
        document = summarise(experiment, args.seeds, per_seed)
        document["command"] = experiment
        for option, value in (
            ("kernels", args.kernels),
            ("machine", args.machine),
        ):
            if value:
                document["experiment"] += f"_{value}"
                document["command"] += f" --{option} {value}"
        print(markdown(document))
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            stem = args.write / f"seeds_{document['experiment']}"
            stem.with_suffix(".json").write_text(
                json.dumps(document, indent=1) + "\n"
            )
            stem.with_suffix(".md").write_text(markdown(document))


if __name__ == "__main__":
    main()
