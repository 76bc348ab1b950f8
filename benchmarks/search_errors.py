"""Search errors or model errors? Beam sizes 1 to 32 at three length penalties.

    python benchmarks/search_errors.py [--threads 2] [--model PATH]
        [--beams 1 2 4 8 16 32] [--write benchmarks/results]

On the model that ships with the library (or --model) and the same seeded
sample of 200 test messages as benchmarks/evaluate_gettext.py, decoded as it
decodes them (placeholders in as tags and put back after; beam_stopping.py's
batches), chapter 8's beam_search (the exact stop, chapter 9's KV cache) with
beam sizes 1, 2, 4, 8, 16 and 32 (or --beams), at alpha 0, 0.6 and 1. For each: BLEU and chrF (sacreBLEU, tokenize="zh"), the
mean length in characters, the share of empty outputs (<eos> first) and of
cut-off ones (no <eos> by max_len), and the model's own score of every output,
log P(y | x) / lp(|y|) at that alpha, computed again from one teacher-forced
pass (|y| counts the <eos>; the output's tokens, tags included). With it, the two kinds of error of Stahlberg and
Byrne (2019):

- a search error: the output scores below another sentence the model rates
  higher. Two witnesses: the best output that any of the six beam sizes found
  for that message at that alpha ("a wider beam does better"), and the
  reference translation itself. Both are lower bounds: an exact search could
  find still better sentences.
- the model prefers its own output to the human translation: the output
  scores above the reference. Where the output is also a worse translation,
  that is a model error: no search, however wide, would fix it.

Scores within 1e-4 of each other count as equal (the cache and the
teacher-forced pass round differently). --write DIR writes
DIR/search_errors.json (with every output and score) and a Markdown table.
"""

import argparse
import hashlib
import statistics
import time
from pathlib import Path

import torch
from beam_stopping import (
    SHIPPED,
    batches,
    check_committed,
    decode_ids,
    test_sample,
)
from results_files import write_results
from torch.nn.utils.rnn import pad_sequence

from transformer_course import (
    DecoderCache,
    NoCache,
    beam_search,
    sequence_log_prob,
)
from transformer_course.corpus import (
    EOS_ID,
    PAD_ID,
    placeholders,
    tag_placeholders,
)
from transformer_course.decoding import gnmt_length_penalty
from transformer_course.translation import load_translation_model, scores

BEAMS, ALPHAS, SAMPLE, TIE = (1, 2, 4, 8, 16, 32), (0.0, 0.6, 1.0), 200, 1e-4


def cut(row: list[int]) -> list[int]:
    """An output row -> its tokens up to and including <eos> (all of them
    when the search was cut off at max_len)."""
    return row[: row.index(EOS_ID) + 1] if EOS_ID in row else row


def log_probs_of(model, src, outputs: list[list[int]]) -> list[float]:
    """log P(y | x) of each output, in one teacher-forced pass (chapter 8's
    sequence_log_prob, on the outputs padded with <pad>)."""
    tgt = pad_sequence(
        [torch.tensor(y, dtype=torch.long) for y in outputs],
        batch_first=True,
        padding_value=PAD_ID,
    )
    return sequence_log_prob(model, src, tgt).tolist()


def check_scoring(model, src, outputs: list[list[int]]) -> None:
    """log_probs_of against the slow obvious way: one token at a time, with
    chapter 8's step interface re-reading the prefix."""
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        for row, y in enumerate(outputs):
            stepper = NoCache(
                model, memory[row : row + 1], src_mask[row : row + 1]
            )
            prefix, total = [model.config.bos_id], 0.0
            for token in y:
                log_probs = stepper.next_token_log_probs(torch.tensor([prefix]))
                total += log_probs[0, token].item()
                prefix.append(token)
            fast = log_probs_of(model, src[row : row + 1], [y])[0]
            assert abs(total - fast) < 1e-4, (row, total, fast)


def rank(log_p: float, length: int, alpha: float) -> float:
    """What the search maximises: log P / lp(|y|)."""
    return log_p / gnmt_length_penalty(length, alpha)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write", type=Path)
    parser.add_argument("--model", type=Path, default=SHIPPED)
    parser.add_argument("--beams", type=int, nargs="+", default=BEAMS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    began = time.perf_counter()
    beams = tuple(args.beams)
    model, tokenizer, _ = load_translation_model(args.model)
    model.eval()
    sample, sources, references = test_sample()
    src_batches = list(batches(tokenizer, sources))
    first_rows, first, max_len = src_batches[0]
    check_scoring(  # on ten outputs of beam 4 and their references
        model,
        first[:10],
        [cut(r) for r in beam_search(model, first[:10], 4, max_len).tolist()],
    )
    # the references as the model would write them (placeholders tagged as
    # in their sources), and their log P
    ref_ids = [
        tokenizer.encode(tag_placeholders(t, placeholders(s))).ids + [EOS_ID]
        for s, t in zip(sources, references, strict=True)
    ]
    check_scoring(model, first[:10], [ref_ids[i] for i in first_rows[:10]])
    ref_log_p, max_lens = [0.0] * SAMPLE, [0] * SAMPLE
    for rows, src, max_len in src_batches:
        scored = log_probs_of(model, src, [ref_ids[i] for i in rows])
        for i, p in zip(rows, scored, strict=True):
            ref_log_p[i], max_lens[i] = p, max_len
    runs = {}
    for alpha in ALPHAS:
        for beam in beams:
            start = time.perf_counter()
            ids, log_p = [None] * SAMPLE, [0.0] * SAMPLE
            for rows, src, max_len in src_batches:
                out = beam_search(
                    model, src, beam, max_len, alpha, DecoderCache
                )
                outputs = [cut(row) for row in out.tolist()]
                scored = log_probs_of(model, src, outputs)
                for i, y, p in zip(rows, outputs, scored, strict=True):
                    ids[i], log_p[i] = y, p
            runs[alpha, beam] = {
                "seconds": time.perf_counter() - start,
                "ids": ids,
                "log P": log_p,
                "rank": [
                    rank(p, len(y), alpha)
                    for p, y in zip(log_p, ids, strict=True)
                ],
            }
            print(
                f"alpha {alpha}, beam {beam}: "
                f"{runs[alpha, beam]['seconds']:.0f} s",
                flush=True,
            )
    rows = {}
    for alpha in ALPHAS:
        best = [
            max(runs[alpha, beam]["rank"][i] for beam in beams)
            for i in range(SAMPLE)
        ]
        ref_rank = [
            rank(p, len(y), alpha)
            for p, y in zip(ref_log_p, ref_ids, strict=True)
        ]
        for beam in beams:
            run = runs[alpha, beam]
            texts = [
                decode_ids(tokenizer, y, source)
                for y, source in zip(run["ids"], sources, strict=True)
            ]
            s = scores(sources, texts, references)
            mine = run["rank"]
            rows[f"alpha {alpha}, beam {beam}"] = {
                "alpha": alpha,
                "beam": beam,
                "BLEU": s["BLEU"],
                "chrF": s["chrF"],
                "mean length": statistics.mean(map(len, texts)),
                "empty": sum(y == [EOS_ID] for y in run["ids"]) / SAMPLE,
                "cut off": sum(EOS_ID not in y for y in run["ids"]) / SAMPLE,
                "below best found": sum(
                    m < b - TIE for m, b in zip(mine, best, strict=True)
                )
                / SAMPLE,
                "below reference": sum(
                    m < r - TIE for m, r in zip(mine, ref_rank, strict=True)
                )
                / SAMPLE,
                "above reference": sum(
                    m > r + TIE for m, r in zip(mine, ref_rank, strict=True)
                )
                / SAMPLE,
                "mean rank": statistics.mean(mine),
                "seconds": run["seconds"],
                "translations": texts,
                "log P": run["log P"],
                "lengths": [len(y) for y in run["ids"]],
            }
    reference_fits = sum(
        len(y) <= m for y, m in zip(ref_ids, max_lens, strict=True)
    )
    checked = (
        check_committed(
            args.model, sample, rows["alpha 0.6, beam 4"]["translations"]
        )
        if 4 in beams
        else None
    )
    table = [
        f"{SAMPLE} test messages of the gettext corpus (evaluate_gettext.py's "
        "sample); beam_search with the exact stop. Shares of the messages: "
        "empty output, cut off at max_len, output ranked below the best any "
        "beam size found, below the reference, above the reference (rank: "
        f"log P / lp at that alpha; ties within {TIE}).",
        "",
        "| alpha | beam | BLEU | chrF | length | empty | cut off "
        "| below best found | below reference | above reference |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows.values():
        table.append(
            f"| {row['alpha']} | {row['beam']} | {row['BLEU']:.1f} "
            f"| {row['chrF']:.1f} | {row['mean length']:.2f} "
            + " ".join(
                f"| {row[key]:.1%}"
                for key in (
                    "empty",
                    "cut off",
                    "below best found",
                    "below reference",
                    "above reference",
                )
            )
            + " |"
        )
    table += [
        "",
        f"References that fit in max_len: {reference_fits} of {SAMPLE}; "
        f"mean length {statistics.mean(map(len, references)):.2f} characters.",
    ]
    print("\n".join(table))
    if args.write:
        write_results(
            args.write,
            "search_errors",
            "benchmarks/search_errors.py",
            {
                "model_sha256": hashlib.sha256(
                    args.model.read_bytes()
                ).hexdigest(),
                "same as gettext_test.json": checked,
                "sample": sample,
                "beams": beams,
                "tie": TIE,
                "references": {
                    "log P": ref_log_p,
                    "lengths": [len(y) for y in ref_ids],
                    "fit in max_len": reference_fits,
                },
                "rows": rows,
            },
            table,
        )
    print(f"{time.perf_counter() - began:.0f} s in all")


if __name__ == "__main__":
    main()
