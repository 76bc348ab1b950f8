"""When may a beam search stop? The rules in use, against the search run to the end.

    python benchmarks/beam_stopping.py [--threads 2] [--repeats 5]
        [--write benchmarks/results]

Chapter 8's beam_search takes a `stopping` rule. "max_len" never stops before
max_len: the reference. "exact" stops a sentence when no live hypothesis can
still end above the best finished one (tensor2tensor's bound, Hugging Face's
early_stopping="never"); it must give the reference's outputs. The others are
the heuristics in use: "current_length" (this book's former rule), "hf_default"
(Hugging Face's early_stopping=False, its default) and "k_finished" (fairseq,
and Hugging Face's early_stopping=True).

On the model that ships with the library and the same seeded sample of 200
test messages as benchmarks/evaluate_gettext.py, beam 4, alpha 0.6 and 1: how
many outputs each rule changes against the reference, BLEU and chrF (sacreBLEU,
tokenize="zh"), mean length in characters, and the time to decode the first
50 messages (the median of --repeats runs, with the fastest and slowest, as a
ratio to "exact" timed in the same run). Every search uses chapter 9's KV
cache (the same tokens; without it, the searches run to max_len take hours). --write DIR writes
DIR/beam_stopping.json (with every output) and a Markdown table beside it.
"""

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import torch
from evaluate_gettext import RESULTS, batches, decode_ids, model_sha256
from results_files import write_results

from transformer_course import DecoderCache, beam_search
from transformer_course.corpus import gettext_corpus
from transformer_course.decoding import STOPPING_RULES
from transformer_course.translation import load_translation_model, scores

ALPHAS, BEAM, SAMPLE, TIMED = (0.6, 1.0), 4, 200, 50


def decode(model, tokenizer, sources, alpha, rule, batch_size=100):
    """Beam search with one stopping rule, on English strings. Chapter 9's
    DecoderCache gives the same tokens as re-reading the prefix in a fraction
    of the time, which the searches run to max_len need."""
    texts = []
    for src, max_len in batches(tokenizer, sources, batch_size):
        out = beam_search(
            model, src, BEAM, max_len, alpha, DecoderCache, stopping=rule
        )
        texts += decode_ids(tokenizer, out.tolist())
    return texts


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tokenizer, _ = load_translation_model()
    test = gettext_corpus()["test"]
    sample = sorted(random.Random(0).sample(range(len(test)), SAMPLE))
    sources = [test[i].source for i in sample]
    references = [test[i].target for i in sample]
    rows = {}
    for alpha in ALPHAS:
        outputs = {
            rule: decode(model, tokenizer, sources, alpha, rule)
            for rule in STOPPING_RULES
        }
        reference = outputs["max_len"]
        times = {rule: [] for rule in STOPPING_RULES}
        for _ in range(args.repeats):  # interleaved: drift hits every rule
            for rule in STOPPING_RULES:
                start = time.perf_counter()
                decode(model, tokenizer, sources[:TIMED], alpha, rule, TIMED)
                times[rule].append(time.perf_counter() - start)
        exact = statistics.median(times["exact"])
        for rule, texts in outputs.items():
            s = scores(sources, texts, references)
            rows[f"alpha {alpha}, {rule}"] = {
                "alpha": alpha,
                "rule": rule,
                "changed": sum(
                    a != b for a, b in zip(texts, reference, strict=True)
                ),
                "BLEU": s["BLEU"],
                "chrF": s["chrF"],
                "mean length": statistics.mean(map(len, texts)),
                "seconds": times[rule],
                "time / exact": statistics.median(times[rule]) / exact,
                "translations": texts,
            }
        assert rows[f"alpha {alpha}, exact"]["changed"] == 0, "exact != max_len"
    committed = json.loads(RESULTS.read_text())["beam"]
    if committed["sample"] == sample:  # evaluate_gettext.py's beam 4 outputs
        same = rows["alpha 0.6, exact"]["translations"]
        assert same == committed["translations"]["beam 4"], "not this model's"
    table = [
        f"Beam {BEAM}; {SAMPLE} test messages of the gettext corpus "
        "(evaluate_gettext.py's sample); outputs compared with the search run "
        f"to max_len; time: {TIMED} messages, median of {args.repeats} runs "
        "[fastest, slowest], as a ratio to the exact rule.",
        "",
        "| alpha | stopping | changed | BLEU | chrF | length | time / exact |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for row in rows.values():
        exact = statistics.median(
            rows[f"alpha {row['alpha']}, exact"]["seconds"]
        )
        low, high = min(row["seconds"]) / exact, max(row["seconds"]) / exact
        table.append(
            f"| {row['alpha']} | {row['rule']} | {row['changed']} "
            f"| {row['BLEU']:.1f} | {row['chrF']:.1f} "
            f"| {row['mean length']:.2f} "
            f"| {row['time / exact']:.2f} [{low:.2f}, {high:.2f}] |"
        )
    print("\n".join(table))
    if args.write:
        path = write_results(
            args.write,
            "beam_stopping",
            "benchmarks/beam_stopping.py",
            {
                "model_sha256": model_sha256(),
                "sample": sample,
                "beam_size": BEAM,
                "timed_messages": TIMED,
                "repeats": args.repeats,
                "rows": rows,
            },
            table,
        )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
