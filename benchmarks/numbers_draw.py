"""The numbers task's draws, by the loop and by NumPy, timed.

    python benchmarks/numbers_draw.py [--repeats 7] [--seed 0]
        [--write benchmarks/results]

make_task("numbers") draws its numbers with two calls in turn: 31,500 that
are not 17,000 to 17,999, then all 1,000 that are. Each draw is
`rng.randint(1, 5)` then `rng.randrange(...)` on a seeded random.Random, and
the second call needs millions of them. Section 7.2's `_numbers` is that
loop; `_numbers_fast`, which make_task calls, computes the same numbers from
the generator's 32-bit words with NumPy. For each, the seconds of the two
calls from a fresh random.Random(seed) (CPU seconds of this process:
time.process_time, less disturbed than the clock by other work on a shared
machine; both run in one thread), --repeats times, the two ways
alternating so that drift on a shared machine hits both: the median, the
fastest and the slowest, and the ratio of the medians (loop / NumPy); and
whether they gave the same numbers and left the generator in the same state,
and how many draws and 32-bit words the loop took. --write DIR writes
DIR/numbers_draw.json and a Markdown table beside it.
"""

import argparse
import random
import statistics
import time
from pathlib import Path

from results_files import write_results

from transformer_course.toy_tasks import _numbers, _numbers_fast


def seventeen_thousand(n):
    return n // 1000 == 17


CALLS = [  # as make_task("numbers") with its defaults makes them
    (30000 + 1000 + 500, lambda n: not seventeen_thousand(n)),
    (1000, seventeen_thousand),
]


def draw(numbers, seed):
    """(CPU seconds, the numbers of each call, the generator's state after)."""
    rng = random.Random(seed)
    start = time.process_time()
    drawn = [numbers(rng, count, keep) for count, keep in CALLS]
    return time.process_time() - start, drawn, rng.getstate()


class Counting(random.Random):
    """A random.Random that counts getrandbits calls (each reads one word
    for these widths); _numbers_fast leaves any subclass to the loop."""

    words = 0

    def getrandbits(self, k):
        self.words += 1
        return super().getrandbits(k)


def counted(seed) -> dict:
    """How many draws and words the loop takes for make_task's calls."""
    rng, draws = Counting(seed), 0
    randint = rng.randint

    def counting_randint(a, b):
        nonlocal draws
        draws += 1
        return randint(a, b)

    rng.randint = counting_randint
    for count, keep in CALLS:
        _numbers(rng, count, keep)
    return {"draws": draws, "words": rng.words}


def summary(seconds: list[float]) -> dict:
    return {
        "seconds": seconds,
        "median": statistics.median(seconds),
        "fastest": min(seconds),
        "slowest": max(seconds),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5 (a median and a spread)")
    seconds = {"loop": [], "numpy": []}
    same = True
    for _ in range(args.repeats):
        loop_time, loop_drawn, loop_state = draw(_numbers, args.seed)
        fast_time, fast_drawn, fast_state = draw(_numbers_fast, args.seed)
        same &= loop_drawn == fast_drawn and loop_state == fast_state
        seconds["loop"].append(loop_time)
        seconds["numpy"].append(fast_time)
    rows = {name: summary(times) for name, times in seconds.items()}
    ratio = rows["loop"]["median"] / rows["numpy"]["median"]
    fields = {
        "seed": args.seed,
        "repeats": args.repeats,
        "same numbers and state": same,
        **counted(args.seed),
        "loop": rows["loop"],
        "numpy": rows["numpy"],
        "loop / numpy": ratio,
    }
    table = [
        "| draw | median CPU s | fastest | slowest |",
        "|---|---|---|---|",
        *(
            f"| {name} | {row['median']:.3f} | {row['fastest']:.3f} "
            f"| {row['slowest']:.3f} |"
            for name, row in rows.items()
        ),
        "",
        f"Loop / NumPy (medians): {ratio:.1f}. The same numbers and state: "
        f"{same}. The loop's draws: {fields['draws']:,}, its 32-bit words: "
        f"{fields['words']:,} (seed {args.seed}, {args.repeats} repeats).",
    ]
    print("\n".join(table))
    if not same:
        raise SystemExit("the two ways drew differently")
    if args.write:
        path = write_results(
            args.write,
            "numbers_draw",
            "benchmarks/numbers_draw.py",
            fields,
            table,
        )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
