"""Greedy decoding and beam search on chapter 7's grammar model, timed.

    python benchmarks/decoding_speed.py [--repeats 7] [--write benchmarks/results]

Section 8.2 asks what beam search costs. The shipped grammar run (chapter 7,
`train_or_load("grammar")`) translates the first 100 sentences of its test
split in one batch, up to 24 tokens, with greedy decoding and with beam search
of 4 and 8 (the exact stopping rule, alpha 0.6: beam_search's defaults), on one
thread. Each decoder runs --repeats times, the three in turn, so that a slow
moment of the machine slows all three alike; the first round is a warm-up and
is not counted. Each run is timed in CPU seconds of this process
(time.process_time: on one thread, the work done, less disturbed than the
clock by other work on a shared machine). For each: the median, the fastest
and slowest run, and the median's multiple of greedy decoding's median in the
same run (a ratio carries over to another machine better than seconds do).
--write DIR writes DIR/decoding_speed.json and a Markdown table beside it,
which section 8.2 prints.
"""

import argparse
import statistics
import time
from pathlib import Path

import torch
from results_files import write_results
from torch.nn.utils.rnn import pad_sequence

from transformer_course import beam_search, greedy_decode
from transformer_course.corpus import PAD_ID
from transformer_course.trained_models import train_or_load

SENTENCES, MAX_LEN, BEAMS = 100, 24, (4, 8)


def decoders(model, src) -> dict:
    """name -> a call that decodes src with it."""
    found = {"greedy": lambda: greedy_decode(model, src, MAX_LEN)}
    for k in BEAMS:
        found[f"beam {k}"] = lambda k=k: beam_search(
            model, src, beam_size=k, max_len=MAX_LEN
        )
    return found


def timed_in_turn(calls: dict, repeats: int) -> dict:
    """name -> the CPU seconds of each of `repeats` runs, the calls in
    turn, after one warm-up round."""
    seconds = {name: [] for name in calls}
    for round_ in range(repeats + 1):
        for name, call in calls.items():
            start = time.process_time()
            call()
            if round_:  # round 0 warms up
                seconds[name].append(time.process_time() - start)
    return seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5 (a median and a spread)")
    torch.set_num_threads(1)
    run = train_or_load("grammar", progress=False, device="cpu")
    sources = [s for s, _ in run.task.examples("test")[:SENTENCES]]
    src = pad_sequence(
        [torch.tensor(s) for s in sources],
        batch_first=True,
        padding_value=PAD_ID,
    )
    with torch.no_grad():
        seconds = timed_in_turn(decoders(run.model.eval(), src), args.repeats)
    greedy = statistics.median(seconds["greedy"])
    rows = {
        name: {
            "seconds": times,
            "median": statistics.median(times),
            "fastest": min(times),
            "slowest": max(times),
            "median / greedy": statistics.median(times) / greedy,
        }
        for name, times in seconds.items()
    }
    fields = {
        "sentences": len(sources),
        "max_len": MAX_LEN,
        "repeats": args.repeats,
        "rows": rows,
    }
    table = [
        "| decoder | median CPU s | fastest | slowest | median / greedy |",
        "|---|---|---|---|---|",
        *(
            f"| {name} | {row['median']:.3f} | {row['fastest']:.3f} "
            f"| {row['slowest']:.3f} | {row['median / greedy']:.1f} |"
            for name, row in rows.items()
        ),
        "",
        f"{len(sources)} test sentences of the grammar task in one batch, up "
        f"to {MAX_LEN} tokens; {args.repeats} runs each after a warm-up, "
        "the decoders in turn; one thread.",
    ]
    print("\n".join(table))
    if args.write:
        path = write_results(
            args.write,
            "decoding_speed",
            "benchmarks/decoding_speed.py",
            fields,
            table,
        )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
