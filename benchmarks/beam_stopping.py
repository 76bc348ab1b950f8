"""When may a beam search stop? The rules in use, against the search run to the end.

    python benchmarks/beam_stopping.py [--threads 2] [--repeats 5]
        [--model PATH] [--write benchmarks/results]

Chapter 8's beam_search takes a `stopping` rule. "max_len" never stops before
max_len: the reference. "exact" stops a sentence when no live hypothesis can
still end above the best finished one (tensor2tensor's bound, Hugging Face's
early_stopping="never"); it must give the reference's outputs. The others are
the heuristics in use: "current_length" (this book's former rule), "hf_default"
(Hugging Face's early_stopping=False, its default) and "k_finished" (fairseq,
and Hugging Face's early_stopping=True).

On the model that ships with the library (or --model) and the same seeded
sample of 200 test messages as benchmarks/evaluate_gettext.py, decoded as it
decodes them (placeholders in as tags and put back after, sources sorted by
length in batches of 100), beam 4, alpha 0.6 and 1: how
many outputs each rule changes against the reference, BLEU and chrF (sacreBLEU,
tokenize="zh"), mean length in characters, and the time to decode the first
50 messages (the median of --repeats runs, with the fastest and slowest, as a
ratio to "exact" timed in the same run). Every search uses chapter 9's KV
cache (the same tokens; without it, the searches run to max_len take hours).
When benchmarks/results/gettext_test.json is this model's, the outputs of
alpha 0.6 must be its sample's beam 4 outputs. --write DIR writes
DIR/beam_stopping.json (with every output) and a Markdown table beside it.
"""

import argparse
import hashlib
import json
import random
import statistics
import time
from pathlib import Path

import torch
from results_files import write_results
from torch.nn.utils.rnn import pad_sequence

from transformer_course import DecoderCache, beam_search
from transformer_course.corpus import (
    EOS_ID,
    PAD_ID,
    gettext_corpus,
    placeholders,
    tag_placeholders,
    untag_placeholders,
)
from transformer_course.decoding import STOPPING_RULES
from transformer_course.translation import (
    GETTEXT_MODEL,
    load_translation_model,
    scores,
)

ALPHAS, BEAM, SAMPLE, TIMED = (0.6, 1.0), 4, 200, 50
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "transformer_course" / "data" / GETTEXT_MODEL
RESULTS = ROOT / "benchmarks" / "results" / "gettext_test.json"


def test_sample() -> tuple[list[int], list[str], list[str]]:
    """evaluate_gettext.py's seeded sample of the test split: indices,
    sources, references."""
    test = gettext_corpus()["test"]
    sample = sorted(random.Random(0).sample(range(len(test)), SAMPLE))
    return (
        sample,
        [test[i].source for i in sample],
        [test[i].target for i in sample],
    )


def batches(tokenizer, sources, batch_size=100):
    """(indices, src, max_len) for batches of the sources as
    evaluate_gettext.py decodes them: placeholders tagged, sorted by length,
    right-padded, max_len 2 T_src + 10; indices into sources."""
    ids = [
        tokenizer.encode(tag_placeholders(s)).ids + [EOS_ID] for s in sources
    ]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        src = pad_sequence(
            [torch.tensor(ids[i]) for i in rows],
            batch_first=True,
            padding_value=PAD_ID,
        )
        yield rows, src, 2 * src.size(1) + 10


def decode_ids(tokenizer, row: list[int], source: str) -> str:
    """Output ids (no <bos>, padded after <eos>) -> text, with the source's
    placeholders put back in place of their tags."""
    row = row[: row.index(EOS_ID)] if EOS_ID in row else row
    text = tokenizer.decode([i for i in row if i != PAD_ID])
    return untag_placeholders(text, placeholders(source))


def check_committed(model_path: Path, sample, outputs: list[str]):
    """None if gettext_test.json is not this model's; else how many of
    outputs (beam 4, alpha 0.6) are its sample's beam 4 outputs, which must
    be nearly all (it may have decoded them in other batches, with another
    max_len)."""
    if not RESULTS.exists():
        return None
    committed = json.loads(RESULTS.read_text())
    digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
    if committed["model_sha256"] != digest:
        return None
    assert committed["sample"]["ids"] == sample, "another sample"
    same = sum(
        a == b
        for a, b in zip(outputs, committed["sample"]["beam 4"], strict=True)
    )
    assert same >= 0.95 * len(outputs), f"{same} the same: not this model's"
    return same


def decode(model, tokenizer, sources, alpha, rule, batch_size=100):
    """Beam search with one stopping rule, on English strings. Chapter 9's
    DecoderCache gives the same tokens as re-reading the prefix in a fraction
    of the time, which the searches run to max_len need."""
    texts = [""] * len(sources)
    for rows, src, max_len in batches(tokenizer, sources, batch_size):
        out = beam_search(
            model, src, BEAM, max_len, alpha, DecoderCache, stopping=rule
        )
        for i, row in zip(rows, out.tolist(), strict=True):
            texts[i] = decode_ids(tokenizer, row, sources[i])
    return texts


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", type=Path)
    parser.add_argument("--model", type=Path, default=SHIPPED)
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5 (a median and a spread)")
    torch.set_num_threads(args.threads)
    began = time.perf_counter()
    model, tokenizer, _ = load_translation_model(args.model)
    sample, sources, references = test_sample()
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
    checked = check_committed(
        args.model, sample, rows["alpha 0.6, exact"]["translations"]
    )
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
                "model_sha256": hashlib.sha256(
                    args.model.read_bytes()
                ).hexdigest(),
                "same as gettext_test.json": checked,
                "sample": sample,
                "beam_size": BEAM,
                "timed_messages": TIMED,
                "repeats": args.repeats,
                "rows": rows,
            },
            table,
        )
        print(f"wrote {path}")
    print(f"{time.perf_counter() - began:.0f} s in all")


if __name__ == "__main__":
    main()
