"""Choose, on the dev packages, how the trained gettext model is finished and decoded.

    python benchmarks/choose_gettext.py [--runs runs/gettext] [--threads 2]
        [--out benchmarks/results/gettext_dev_choices.json]

A training run (benchmarks/train_gettext.py) leaves the weights of every evaluation
in RUNS/step-NNNNN.pt. This script decodes the dev split (whole packages that
neither the training nor the test split holds) with:

1. the last evaluation's weights, and the average of the last k evaluations'
   weights (k = 2, 3, 4: checkpoint averaging), greedily;
2. the best of those with beam search (beam 4) and each length penalty of
   LENGTH_PENALTIES.

Each candidate is scored like the test split will be (scores() of the library:
BLEU, chrF, chrF of the text between placeholders, placeholders right, loops).
3. a translation memory in front of the chosen model, as translators' tools do:
   where the most similar training message (retrieval's cosine) is at least a
   threshold similar, its translation, with the source's placeholders put in;
   elsewhere the model's translation; for each threshold of THRESHOLDS.
4. the chosen weights decoded greedily with the constraints of the library's
   translate(): each of the source's placeholder tags exactly as often
   (keep_tags), and no n-gram of tokens twice (no_repeat_ngram = n), for each
   setting of CONSTRAINTS; keeping the tags is required (a program breaks on
   a missing or extra placeholder), and the n-gram size is chosen by chrF.

Each choice is the candidate with the highest dev chrF (BLEU breaks a tie); the
file records every candidate, so that chapter 7 can show what the choice rested
on, headed by the script, the date, the commit and the machine
(results_files.py), with the same tables in Markdown beside it (.md). The test
split is not read.
"""

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import torch
from evaluate_gettext import decode
from results_files import commit, write_results
from train_gettext import average_weights

from transformer_course.trained_models import TASK_CONFIGS
from transformer_course.training import Run
from transformer_course.translation import Retrieval, scores

ROOT = Path(__file__).resolve().parent.parent
AVERAGES = (1, 2, 3, 4)
LENGTH_PENALTIES = (0.6, 1.0)
BEAM = 4
# a similarity of 1.01: the memory is never used, the model alone
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.01)
# (keep_tags, no_repeat_ngram); (False, 0) is greedy unconstrained, step 1
CONSTRAINTS = tuple(
    (tags, n) for tags in (False, True) for n in (0, 2, 3, 4) if tags or n
)


def _scores(row) -> str:
    return (
        f"{row['BLEU']:.1f} | {row['chrF']:.1f} | {row['placeholders']:.1f} % "
        f"| {row['loops']:.1f} %"
    )


def table(document) -> list[str]:
    """The Markdown tables of what was tried on dev, the choices marked."""
    lines = [
        f"The dev split, {document['messages']} messages. Each choice: "
        f"{document['rule']}; the constraints: {document['constraint_rule']}.",
        "",
        "| weights | beam | length penalty | BLEU | chrF | placeholders right "
        "| loops | chosen |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in document["candidates"]:
        lines.append(
            f"| {row['name']} | {row['beam']} | {row['length_penalty'] or '-'}"
            f" | {_scores(row)} | {'yes' if row == document['choice'] else ''} |"
        )
    lines += [
        "",
        "| memory from similarity | messages it answers | BLEU | chrF "
        "| placeholders right | loops | chosen |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in document["memory_thresholds"]:
        chosen = row["threshold"] == document["memory_threshold"]
        lines.append(
            f"| {row['threshold']:.2f} | {100 * row['memory_share']:.0f} % | "
            f"{_scores(row)} | {'yes' if chosen else ''} |"
        )
    lines += [
        "",
        "| keep tags | no repeated n-gram | BLEU | chrF | placeholders right "
        "| loops | chosen |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in document["constraints"]:
        chosen = row == document["constraint_choice"]
        lines.append(
            f"| {'yes' if row['keep_tags'] else 'no'} | "
            f"{row['no_repeat_ngram'] or '-'} | {_scores(row)} | "
            f"{'yes' if chosen else ''} |"
        )
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/gettext"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, help="the first N messages only")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "benchmarks" / "results" / "gettext_dev_choices.json",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    made_at = commit()  # before the run, which may outlast a commit
    run = Run(dataclasses.replace(TASK_CONFIGS["gettext"], device="cpu"))
    model, tokenizer = run.model.eval(), run.task.tokenizer
    pairs = run.task.splits["dev"][: args.limit]
    sources = [p.source for p in pairs]
    references = [p.target for p in pairs]
    steps = sorted(args.runs.glob("step-*.pt"))
    if len(steps) < max(AVERAGES):
        raise SystemExit(
            f"{args.runs} holds {len(steps)} step-*.pt files; "
            f"averaging needs {max(AVERAGES)}"
        )

    candidates, outputs = [], {}

    def judge(name, weights, beam=1, length_penalty=0.6, constraints=None):
        model.load_state_dict(weights)
        start = time.perf_counter()
        keep_tags, no_repeat_ngram = constraints or (False, 0)
        out = decode(
            model,
            tokenizer,
            sources,
            beam,
            length_penalty,
            keep_tags=keep_tags,
            no_repeat_ngram=no_repeat_ngram,
        )
        row = dict(
            name=name,
            checkpoints=[p.name for p in weights_of[name]],
            beam=beam,
            length_penalty=length_penalty if beam > 1 else None,
            seconds=round(time.perf_counter() - start),
            **scores(sources, out, references),
        )
        if constraints:
            row.update(keep_tags=keep_tags, no_repeat_ngram=no_repeat_ngram)
            return row
        candidates.append(row)
        outputs[name, beam, row["length_penalty"]] = out
        print(
            f"{name:<34} beam {beam} lp {row['length_penalty']}: "
            + ", ".join(
                f"{k} {row[k]:.1f}"
                for k in ("BLEU", "chrF", "placeholders", "loops")
            ),
            flush=True,
        )
        return row

    def best(rows):
        return max(rows, key=lambda r: (round(r["chrF"], 1), r["BLEU"]))

    weights_of = {f"{steps[-1].stem} alone": steps[-1:]}
    for k in AVERAGES[1:]:
        weights_of[f"average of the last {k}"] = steps[-k:]
    greedy = [
        judge(name, average_weights(paths))
        for name, paths in weights_of.items()
    ]
    chosen = best(greedy)
    weights = average_weights(weights_of[chosen["name"]])
    beams = [
        judge(chosen["name"], weights, BEAM, penalty)
        for penalty in LENGTH_PENALTIES
    ]
    choice = best([chosen, *beams])
    # a translation memory in front of the model: the nearest training
    # message's translation (its placeholders replaced by the source's) where
    # it is at least `threshold` similar, the model's translation elsewhere
    retrieval = Retrieval(run.task.splits["train"])
    similarity = [s for _, s in retrieval.nearest(sources)]
    memory = retrieval.translate(sources, put_placeholders=True)
    own = outputs[choice["name"], choice["beam"], choice["length_penalty"]]
    thresholds = []
    for threshold in THRESHOLDS:
        mixed = [
            m if s >= threshold else o
            for m, s, o in zip(memory, similarity, own, strict=True)
        ]
        thresholds.append(
            dict(
                threshold=threshold,
                memory_share=sum(s >= threshold for s in similarity)
                / len(sources),
                **scores(sources, mixed, references),
            )
        )
    memory_choice = best(thresholds)
    # the constraints of translate(), greedy, on the chosen weights
    constrained = [dict(chosen, keep_tags=False, no_repeat_ngram=0)]
    constrained += [
        judge(chosen["name"], weights, constraints=setting)
        for setting in CONSTRAINTS
    ]
    # a program breaks on a missing or extra placeholder: tags kept is a
    # requirement, not a trade; among those settings, the highest chrF
    constraint_choice = best([r for r in constrained if r["keep_tags"]])
    document = dict(
        command=" ".join(
            ["python", "benchmarks/choose_gettext.py", *sys.argv[1:]]
        ),
        split="dev",
        messages=len(pairs),
        rule="highest dev chrF, then BLEU",
        constraint_rule="tags kept, then the highest dev chrF",
        candidates=candidates,
        choice=choice,
        memory_thresholds=thresholds,
        memory_threshold=memory_choice["threshold"],
        constraints=constrained,
        constraint_choice=constraint_choice,
    )
    path = write_results(
        args.out.parent,
        args.out.stem,
        "benchmarks/choose_gettext.py",
        document,
        table(document),
        made_at=made_at,
    )
    print(f"wrote {path} and its .md")
    for row in thresholds:
        print(
            f"memory at similarity >= {row['threshold']:.2f} "
            f"({row['memory_share']:.0%} of the messages): "
            f"BLEU {row['BLEU']:.1f}, chrF {row['chrF']:.1f}"
        )
    print(
        "chosen:",
        choice["name"],
        "beam",
        choice["beam"],
        "length penalty",
        choice["length_penalty"],
        "memory threshold",
        memory_choice["threshold"],
        "keep tags",
        constraint_choice["keep_tags"],
        "no repeated n-gram",
        constraint_choice["no_repeat_ngram"],
    )


if __name__ == "__main__":
    main()
