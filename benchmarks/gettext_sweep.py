"""The GPU dev sweep of the gettext translator: what each run reached on dev.

    python benchmarks/gettext_sweep.py --runs DIR [DIR ...]
        --dev NAME=FILE.json [NAME=FILE.json ...] --reference FILE.json
        --reference-model MODEL.pt
        [--out benchmarks/results]

Each DIR is a results folder of `benchmarks/gpu_run.py --translator` (its
gpu_run.json, and the gettext_zh_N.pt it brought back: the runs of lowest dev
loss). Each FILE.json is `benchmarks/evaluate_gettext.py --split dev --sample 0
--model DIR/gettext_zh_N.pt --out FILE.json`, NAME being DIR's name, "_" and N
(gpu1_4: the fourth run of the folder gpu1); --reference is the same for the
model every run is compared with: the CPU run that shipped with the library
before this sweep, whose file --reference-model gives (its record and dev-loss
history are kept; git show 832ae14:transformer_course/data/gettext_zh.pt
brings it back). The script checks that each FILE.json decoded the file it
names (its sha256).

A run decoded on dev on the device (gpu_run.py --translator-dev) needs no
FILE.json: its gpu_run.json holds the decoding.

Writes gettext_gpu_sweep.json and .md: every run's arguments, updates, time
and dev-loss curve; for each model decoded, its dev scores greedily and
constrained (as the library's translate() decodes: each placeholder tag kept,
no n-gram twice), and the paired difference from the reference in BLEU
and chrF, constrained, with its 95 % bootstrap interval (1,000 resamples).
The test split is not read: these are choices, made on dev.
"""

import argparse
import hashlib
import io
import json
import sys
from pathlib import Path

import torch
from results_files import write_results

from transformer_course.corpus import gettext_corpus
from transformer_course.translation import BLEU_ZH, CHRF, paired_difference

ROOT = Path(__file__).resolve().parent.parent


def sweep_runs(folders: list[Path]) -> tuple[list[dict], dict]:
    """Every translator run of the GPU runs' folders, named FOLDER_N; and
    the dev decodings made on the device (gpu_run.py --translator-dev), by
    name."""
    runs, decoded = [], {}
    for folder in folders:
        document = json.loads((folder / "gpu_run.json").read_text())
        part = document["parts"].get("translator", {})
        if part.get("status") != "ok":
            raise SystemExit(f"{folder}: its translator part did not run")
        for index, run in enumerate(part["result"]["runs"], 1):
            runs.append(
                {
                    "name": f"{folder.name}_{index}",
                    "device": document["environment"]["device"],
                    "date": document["environment"]["date"],
                    "arguments": run["arguments"],
                    "updates": run.get("record", {}).get("updates"),
                    "seconds": run["seconds"],
                    "evaluations": run["evaluations"],  # update, loss, dev
                    "file": run.get("file"),
                    "record": run.get("record"),  # command, commit, torch...
                }
            )
            if "dev" in run:  # decoded on the device after training
                decoded[runs[-1]["name"]] = run["dev"]
    return runs, decoded


def dev_scores(evaluation: dict, reference: dict, references) -> dict:
    """A model's dev scores, and its constrained output's paired difference
    from the reference model's."""
    return {
        "model_sha256": evaluation["model_sha256"],
        "averaged": evaluation["averaged"],  # the weights decoded
        "greedy": evaluation["scores"]["the trained model"],
        "constrained": evaluation["scores"]["the model, constrained"],
        "minus_reference": {
            name: paired_difference(
                reference["constrained"],
                evaluation["constrained"],
                references,
                metric,
            )
            for name, metric in (("BLEU", BLEU_ZH), ("chrF", CHRF))
        },
    }


def table(document: dict) -> list[str]:
    """The Markdown table of a sweep's document (the JSON this writes)."""
    g, c = document["reference"]["greedy"], document["reference"]["constrained"]
    lines = [
        "The reference (the CPU model that shipped before) on dev: BLEU "
        f"{g['BLEU']:.1f}, chrF {g['chrF']:.1f} greedily; constrained BLEU "
        f"{c['BLEU']:.1f}, chrF {c['chrF']:.1f}. Every run was ended by its "
        "time (--seconds), so the runs differ in updates: compare their "
        "curves at equal updates (the JSON's evaluations).",
        "",
        "| run | arguments | updates | lowest dev loss (update) | "
        "BLEU, chrF greedy | BLEU, chrF constrained | "
        "constrained - reference: BLEU | chrF |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in document["runs"]:
        step, _, dev = min(run["evaluations"], key=lambda e: e[2])
        cells = ["", "", "", ""]
        if "dev" in run:
            d = run["dev"]
            cells[0] = f"{d['greedy']['BLEU']:.1f}, {d['greedy']['chrF']:.1f}"
            cells[1] = (
                f"{d['constrained']['BLEU']:.1f}, {d['constrained']['chrF']:.1f}"
            )
            for i, metric in ((2, "BLEU"), (3, "chrF")):
                diff, low, high = d["minus_reference"][metric]
                cells[i] = f"{diff:+.1f} ({low:+.1f} to {high:+.1f})"
        lines.append(
            f"| {run['name']} | `{run['arguments']}` | {run['updates']} | "
            f"{dev:.3f} ({step}) | " + " | ".join(cells) + " |"
        )
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=Path, nargs="+", required=True)
    parser.add_argument("--dev", nargs="*", default=[], metavar="NAME=FILE")
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--reference-model", type=Path, required=True)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results"
    )
    args = parser.parse_args(argv)
    runs, decoded = sweep_runs(args.runs)
    folders = {folder.name: folder for folder in args.runs}
    by_name = {run["name"]: run for run in runs}
    reference = json.loads(args.reference.read_text())
    model = args.reference_model.read_bytes()
    if hashlib.sha256(model).hexdigest() != reference["model_sha256"]:
        raise SystemExit(
            f"{args.reference}: not a decoding of {args.reference_model}"
        )
    saved = torch.load(io.BytesIO(model), map_location="cpu", weights_only=True)
    references = [p.target for p in gettext_corpus()["dev"]]
    if reference["split"] != "dev" or len(reference["constrained"]) != len(
        references
    ):
        raise SystemExit(f"{args.reference}: not the whole dev split")
    for item in args.dev:
        name, equals, file = item.partition("=")
        run = by_name.get(name)
        if not equals or run is None or not run["file"]:
            raise SystemExit(f"--dev {item!r}: NAME=FILE, NAME a returned run")
        evaluation = json.loads(Path(file).read_text())
        weights = folders[name.rsplit("_", 1)[0]] / run["file"]
        digest = hashlib.sha256(weights.read_bytes()).hexdigest()
        if evaluation["model_sha256"] != digest or evaluation["split"] != "dev":
            raise SystemExit(f"{file}: not the dev split of {weights}")
        run["dev"] = dev_scores(evaluation, reference, references)
    for name, evaluation in decoded.items():
        if "error" in evaluation:
            by_name[name]["dev_error"] = evaluation["error"]
        elif "dev" not in by_name[name]:  # a --dev file decoded it here
            if len(evaluation["constrained"]) != len(references):
                raise SystemExit(f"{name}: its dev decoding is not whole")
            by_name[name]["dev"] = dev_scores(evaluation, reference, references)
            by_name[name]["dev"]["decoded_on"] = evaluation["device"]
    fields = {
        "command": " ".join(["python", *sys.argv]),
        "reference": {
            "model_sha256": reference["model_sha256"],
            "record": saved["record"],
            "evaluations": [  # update, training loss, dev loss, as the runs'
                [h["step"], h.get("loss"), h["validation_loss"]]
                for h in saved["history"]
            ],
            "greedy": reference["scores"]["the trained model"],
            "constrained": reference["scores"]["the model, constrained"],
        },
        "runs": runs,
    }
    path = write_results(
        args.out, "gettext_gpu_sweep", "benchmarks/gettext_sweep.py", fields,
        table(fields),
    )  # fmt: skip
    print(f"wrote {path} and its .md")


if __name__ == "__main__":
    main()
