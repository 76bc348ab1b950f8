"""Translate a held-out split of the gettext corpus and judge it against the obvious.

    python benchmarks/evaluate_gettext.py [--split test] [--model PATH]
        [--beam B] [--length-penalty A] [--memory-threshold S] [--threads 2]
        [--device cpu|cuda]
        [--keep-tags 0|1] [--no-repeat-ngram N]
        [--sample 200] [--limit N] [--out FILE.json]

Decodes every message of the split (dev or test) with the model (by default the one
that ships with the library): placeholders go in as tags and are put back. Beside
it, three baselines that need no model: copy the English source; retrieval, the
translation of the most similar training message; and retrieval with the source's
own placeholders put in place of the retrieved message's. The model is judged twice:
its own greedy (or beam) choices, and constrained as the library's translate()
decodes by default (each of the source's placeholder tags exactly as often, no
n-gram of tokens twice; --keep-tags, --no-repeat-ngram). And the translator a
localisation tool would make of the model: a translation memory in front of it
(retrieval with placeholders put in where the nearest training message is at least
--memory-threshold similar, the model elsewhere). For each: BLEU (sacreBLEU,
tokenize="zh"), chrF, chrF of the text between placeholders, placeholder accuracy
and the share of outputs that loop; the difference of the model, and of the memory
with the model, from each baseline in BLEU and chrF with its 95 % paired-bootstrap
interval (1,000 resamples); and the scores per package of the split.

Choices (the number of updates, checkpoint averaging, greedy or beam, the length
penalty, the memory's threshold, the constraints) are made on dev by
choose_gettext.py, which records them in benchmarks/results/gettext_dev_choices.json: they are this script's
defaults. The test split is decoded once, with the choices made; its greedy
translations are kept too (chapter 7 decodes greedily and checks a few of them),
and a seeded sample of --sample messages is decoded greedily and with beam 4
(length penalty 0.6) for chapter 8. --out defaults to
benchmarks/results/gettext_<split>.json (the test file also records the model
file's sha256, which chapter 7 checks); like every benchmark's results, it is
headed by the script, the date, the commit and the machine (results_files.py),
holds the command line, and has a Markdown table of the scores beside it (.md).
"""

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import torch
from results_files import commit, write_results
from torch.nn.utils.rnn import pad_sequence

from transformer_course import beam_search
from transformer_course.corpus import (
    CORPUS_DIGEST,
    EOS_ID,
    PAD_ID,
    gettext_corpus,
    placeholders,
    tag_placeholders,
    untag_placeholders,
)
from transformer_course.translation import (
    BLEU_ZH,
    CHRF,
    GETTEXT_MODEL,
    Retrieval,
    load_translation_model,
    paired_difference,
    scores,
    translate,
)

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "transformer_course" / "data" / GETTEXT_MODEL
DEV_CHOICES = ROOT / "benchmarks" / "results" / "gettext_dev_choices.json"


def dev_choices() -> dict:
    """The decoding and the memory threshold chosen on dev
    (choose_gettext.py), the defaults here; greedy and no memory without."""
    if not DEV_CHOICES.exists():
        return dict(
            beam=1,
            length_penalty=None,
            memory_threshold=1.01,
            keep_tags=False,
            no_repeat_ngram=0,
        )
    chosen = json.loads(DEV_CHOICES.read_text())
    constraints = chosen.get("constraint_choice", {})  # none chosen yet
    return dict(
        beam=chosen["choice"]["beam"],
        length_penalty=chosen["choice"]["length_penalty"],
        memory_threshold=chosen["memory_threshold"],
        keep_tags=constraints.get("keep_tags", False),
        no_repeat_ngram=constraints.get("no_repeat_ngram", 0),
    )


CHOSEN = dev_choices()
MEMORY = "memory, else the model"
CONSTRAINED = "the model, constrained"


def decode(
    model,
    tokenizer,
    sources,
    beam=1,
    length_penalty=0.6,
    batch=100,
    keep_tags=False,
    no_repeat_ngram=0,
):
    """Translations of English strings: greedy (beam 1: the library's
    translate(), as chapter 7 decodes; by default unconstrained, the model's
    own choices) or beam search, in batches of similar length, max_len
    2 T_src + 10 tokens (translate() caps it at 80)."""
    if beam == 1:
        return translate(
            model,
            tokenizer,
            sources,
            keep_tags=keep_tags,
            no_repeat_ngram=no_repeat_ngram,
        )
    if keep_tags or no_repeat_ngram:
        raise ValueError("the constraints are translate()'s: beam 1 only")
    ids = [
        tokenizer.encode(tag_placeholders(s)).ids + [EOS_ID] for s in sources
    ]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    texts = [""] * len(ids)
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        src = pad_sequence(
            [torch.tensor(ids[i]) for i in rows],
            batch_first=True,
            padding_value=PAD_ID,
        )
        max_len = 2 * src.size(1) + 10
        device = next(model.parameters()).device
        with torch.no_grad():
            out = beam_search(
                model,
                src.to(device),
                beam,
                max_len,
                length_penalty=length_penalty,
            ).cpu()
        for i, row in zip(rows, out.tolist(), strict=True):
            row = row[: row.index(EOS_ID)] if EOS_ID in row else row
            text = tokenizer.decode([t for t in row if t != PAD_ID])
            texts[i] = untag_placeholders(text, placeholders(sources[i]))
    return texts


def judge(pairs, systems: dict, model_names) -> dict:
    """Scores of every system, each model's paired differences from each
    baseline, and the scores per package."""
    sources = [p.source for p in pairs]
    references = [p.target for p in pairs]
    result = {
        "scores": {
            name: scores(sources, out, references)
            for name, out in systems.items()
        },
        "differences": {},
        "packages": {},
    }
    for model_name in model_names:
        for name, out in systems.items():
            if name in model_names:
                continue
            result["differences"][f"{model_name} - {name}"] = {
                metric_name: paired_difference(
                    out, systems[model_name], references, metric
                )
                for metric_name, metric in (("BLEU", BLEU_ZH), ("chrF", CHRF))
            }
    for package in sorted({p.package for p in pairs}):
        rows = [i for i, p in enumerate(pairs) if p.package == package]
        result["packages"][package] = {
            name: scores(
                [sources[i] for i in rows],
                [out[i] for i in rows],
                [references[i] for i in rows],
            )
            for name, out in systems.items()
        }
    return result


def table(document) -> list[str]:
    """The Markdown tables of every system's scores and of each model's
    differences from the others, with their 95 % intervals."""
    lines = [
        "| system | BLEU | chrF | chrF of the text | placeholders right "
        "| loops |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s in document["scores"].items():
        lines.append(
            f"| {name} | {s['BLEU']:.1f} | {s['chrF']:.1f} | "
            f"{s['chrF of the text']:.1f} | {s['placeholders']:.1f} % | "
            f"{s['loops']:.1f} % |"
        )
    lines += [
        "",
        "| difference | BLEU (95 % interval) | chrF (95 % interval) |",
        "|---|---:|---:|",
    ]
    for name, metrics in document["differences"].items():
        cells = [
            f"{x:+.1f} ({lo:+.1f} to {hi:+.1f})"
            for x, lo, hi in metrics.values()
        ]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument("--model", type=Path, default=SHIPPED)
    parser.add_argument("--beam", type=int, default=CHOSEN["beam"])
    parser.add_argument(
        "--length-penalty",
        type=float,
        default=CHOSEN["length_penalty"] or 0.6,
    )
    parser.add_argument(
        "--memory-threshold",
        type=float,
        default=CHOSEN["memory_threshold"],
        help="the similarity from which the translation memory answers "
        "instead of the model (above 1: never)",
    )
    parser.add_argument(
        "--keep-tags",
        type=int,
        choices=(0, 1),
        default=int(CHOSEN["keep_tags"]),
        help="the constrained translation: 1 keeps each of the source's tags "
        "exactly as often",
    )
    parser.add_argument(
        "--no-repeat-ngram",
        type=int,
        default=CHOSEN["no_repeat_ngram"],
        help="the constrained translation: no n-gram of tokens twice (0: off)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--device",
        default="cpu",
        help="where the model decodes (cuda on a GPU: the dev sweep of "
        "gpu_run.py judges its runs there); scoring stays on the CPU",
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--limit", type=int, help="the first N messages only")
    parser.add_argument(
        "--sample",
        type=int,
        default=200,
        help="also decode a seeded sample of N messages greedily and with "
        "beam 4 (chapter 8 compares them); 0: none",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    made_at = commit()  # before the run, which may outlast a commit
    out = (
        args.out
        or ROOT / "benchmarks" / "results" / f"gettext_{args.split}.json"
    )
    splits = gettext_corpus()
    pairs = splits[args.split][: args.limit]
    sources = [p.source for p in pairs]
    model, tokenizer, record = load_translation_model(args.model)
    model.to(args.device)
    start = time.perf_counter()
    translations = decode(
        model, tokenizer, sources, args.beam, args.length_penalty
    )
    seconds = time.perf_counter() - start
    greedy = (
        translations
        if args.beam == 1
        else decode(model, tokenizer, sources, 1, args.length_penalty)
    )
    constrained = decode(
        model,
        tokenizer,
        sources,
        keep_tags=bool(args.keep_tags),
        no_repeat_ngram=args.no_repeat_ngram,
    )
    sample = {}
    if args.sample:
        n = min(args.sample, len(pairs))
        ids = sorted(random.Random(0).sample(range(len(pairs)), n))
        sample["ids"] = ids
        for name, beam in (("greedy", 1), ("beam 4", 4)):
            if beam == 1:
                sample[name] = [greedy[i] for i in ids]
            elif beam == args.beam and args.length_penalty == 0.6:
                sample[name] = [translations[i] for i in ids]
            else:
                sample[name] = decode(
                    model, tokenizer, [sources[i] for i in ids], beam, 0.6
                )
    retrieval = Retrieval(splits["train"])
    similarity = [s for _, s in retrieval.nearest(sources)]
    memory = retrieval.translate(sources, put_placeholders=True)
    systems = {
        "the trained model": translations,
        CONSTRAINED: constrained,
        MEMORY: [
            m if s >= args.memory_threshold else t
            for m, s, t in zip(memory, similarity, translations, strict=True)
        ],
        "copy the source": sources,
        "retrieve the nearest": retrieval.translate(sources),
        "retrieve, placeholders put in": memory,
    }
    models = ("the trained model", CONSTRAINED, MEMORY)
    if args.memory_threshold > 1:  # never used: the model alone
        del systems[MEMORY]
    if not (args.keep_tags or args.no_repeat_ngram):  # no constraint
        del systems[CONSTRAINED]
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}"
    if args.beam > 1:
        decoding += f", length penalty {args.length_penalty}"
    command = ["python", "benchmarks/evaluate_gettext.py", *sys.argv[1:]]
    document = {
        "command": " ".join(command),
        "split": args.split,
        "corpus_digest": CORPUS_DIGEST,
        "model_sha256": hashlib.sha256(args.model.read_bytes()).hexdigest(),
        "record": record.get("record"),
        "averaged": record.get("averaged"),
        "decoding": decoding + ", max_len 2 T_src + 10",
        "constraints": dict(
            keep_tags=bool(args.keep_tags),
            no_repeat_ngram=args.no_repeat_ngram,
        ),
        "seconds": round(seconds),
        "threads": args.threads,
        "device": args.device,
        "memory_threshold": args.memory_threshold,
        "memory_share": sum(s >= args.memory_threshold for s in similarity)
        / len(sources),
        **judge(pairs, systems, [n for n in models if n in systems]),
        "translations": translations,
        "greedy": greedy,  # the same as translations when greedy was chosen
        "constrained": constrained,  # greedy with the constraints
        "sample": sample,  # beam 4 with length penalty 0.6
    }
    lines = [
        f"The {args.split} split, {len(pairs)} messages; the trained model "
        f"decoded {decoding}, in {seconds:.0f} s with {args.threads} "
        "thread(s)" + ("." if args.device == "cpu" else f" on {args.device}."),
        "",
        *table(document),
    ]
    path = write_results(
        out.parent,
        out.stem,
        "benchmarks/evaluate_gettext.py",
        document,
        lines,
        made_at=made_at,
    )
    print("\n".join(lines))
    print(f"wrote {path} and its .md")


if __name__ == "__main__":
    main()
