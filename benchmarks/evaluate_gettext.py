"""Translate the gettext corpus's test split with the model that ships with the library.

    python benchmarks/evaluate_gettext.py [--threads 2] [--beam-sample 200]

Greedy decoding of all test messages takes minutes on a CPU, more than the book's CI
allows a chapter, so it is done once, here, and written to
benchmarks/results/gettext_test.json with the sha256 of the model file it used;
chapter 7 reads the file, checks that digest against the model it loads, and
translates a sample again to check that the file is this model's output.

For chapter 8 it also decodes a seeded sample of the test messages with chapter 8's
greedy_decode and beam_search (beam 4, length penalty 0.6), and writes their scores
and outputs under "beam".
"""

import argparse
import hashlib
import json
import random
import time
from importlib import resources
from pathlib import Path

import torch
from torch.nn.utils.rnn import pad_sequence

from transformer_course import beam_search, greedy_decode
from transformer_course.corpus import (
    CORPUS_DIGEST,
    EOS_ID,
    PAD_ID,
    gettext_corpus,
)
from transformer_course.translation import (
    GETTEXT_MODEL,
    Retrieval,
    load_translation_model,
    scores,
    translate,
)

RESULTS = Path(__file__).resolve().parent / "results" / "gettext_test.json"


def model_sha256() -> str:
    path = resources.files("transformer_course") / "data" / GETTEXT_MODEL
    return hashlib.sha256(path.read_bytes()).hexdigest()


def decode_ids(tokenizer, rows) -> list[str]:
    """Output ids (no <bos>, padded after <eos>) -> text."""
    texts = []
    for row in rows:
        row = row[: row.index(EOS_ID)] if EOS_ID in row else row
        texts.append(tokenizer.decode([i for i in row if i != PAD_ID]))
    return texts


def batches(tokenizer, sources, batch_size=100):
    """Padded source batches in the order given, each with its max_len
    (2 T_src + 10): how chapter 8's decoders are run on English strings."""
    for start in range(0, len(sources), batch_size):
        ids = [
            tokenizer.encode(s).ids + [EOS_ID]
            for s in sources[start : start + batch_size]
        ]
        src = pad_sequence(
            [torch.tensor(i) for i in ids],
            batch_first=True,
            padding_value=PAD_ID,
        )
        yield src, 2 * src.size(1) + 10


def chapter8_decoders(model, tokenizer, sources, batch_size=100) -> dict:
    """Greedy and beam search of chapter 8 on English strings."""
    outputs = {"greedy": [], "beam 4": []}
    for src, max_len in batches(tokenizer, sources, batch_size):
        outputs["greedy"] += decode_ids(
            tokenizer, greedy_decode(model, src, max_len).tolist()
        )
        beams = beam_search(
            model, src, beam_size=4, max_len=max_len, length_penalty=0.6
        )
        outputs["beam 4"] += decode_ids(tokenizer, beams.tolist())
    return outputs


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--beam-sample", type=int, default=200)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    splits = gettext_corpus()
    test = splits["test"]
    sources = [p.source for p in test]
    references = [p.target for p in test]
    model, tokenizer, record = load_translation_model()
    start = time.perf_counter()
    outputs = translate(model, tokenizer, sources)
    seconds = time.perf_counter() - start
    retrieved = Retrieval(splits["train"]).translate(sources)
    document = {
        "corpus_digest": CORPUS_DIGEST,
        "model_sha256": model_sha256(),
        "updates": record["train_config"]["updates"],
        "decoding": "greedy, batched by source length, max_len 80",
        "seconds": seconds,
        "threads": args.threads,
        "scores": {
            "copy the source": scores(sources, sources, references),
            "retrieve the nearest": scores(sources, retrieved, references),
            "the trained model": scores(sources, outputs, references),
        },
        "translations": outputs,
    }
    sample = sorted(random.Random(0).sample(range(len(test)), args.beam_sample))
    start = time.perf_counter()
    decoded = chapter8_decoders(model, tokenizer, [sources[i] for i in sample])
    document["beam"] = {
        "sample": sample,  # indices into the test split, seeded
        "seconds": time.perf_counter() - start,
        "scores": {
            name: scores(
                [sources[i] for i in sample],
                out,
                [references[i] for i in sample],
            )
            for name, out in decoded.items()
        },
        "translations": decoded,
    }
    args.out.write_text(
        json.dumps(document, ensure_ascii=False, indent=1) + "\n"
    )
    for name, figures in document["scores"].items():
        print(f"{name:<22}", {k: round(v, 1) for k, v in figures.items()})
    for name, figures in document["beam"]["scores"].items():
        print(
            f"sample, {name:<14}", {k: round(v, 1) for k, v in figures.items()}
        )
    print(f"{len(outputs)} translations in {seconds:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
