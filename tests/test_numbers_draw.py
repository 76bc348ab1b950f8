"""_numbers_fast (NumPy over the Mersenne Twister's words) against _numbers,
the readable loop of section 7.2 that defines the draws: the same numbers,
and the generator left in the same state, since make_task goes on to shuffle
and sample with it (the shipped numbers model and the seed results depend on
the exact splits)."""

import random

import numpy as np
import pytest

from transformer_course import training
from transformer_course.toy_tasks import (
    Pair,
    _chain,
    _numbers,
    _numbers_fast,
    _walk,
)


def seventeen_thousand(n):
    return n // 1000 == 17


KEEPS = {  # (count, keep): a few draws, the short lengths, most draws
    "one": (1, lambda n: True),
    "none": (0, lambda n: True),
    "one digit": (10, lambda n: n < 10),
    "sevens": (300, lambda n: n % 7 == 3),
    "odd": (2000, lambda n: n % 2 == 1),
    "some of 17,000": (200, seventeen_thousand),
    "not 17,000": (31500, lambda n: not seventeen_thousand(n)),
}


def generator(seed):
    rng = random.Random(seed)
    rng.random()  # a state part-way through the 624 words
    return rng


@pytest.mark.parametrize("name", KEEPS)
@pytest.mark.parametrize("seed", [0, 1, 2, 12345])
def test_same_numbers_and_state_as_the_loop(seed, name):
    count, keep = KEEPS[name]
    slow, fast = generator(seed), generator(seed)
    assert _numbers_fast(fast, count, keep) == _numbers(slow, count, keep)
    assert fast.getstate() == slow.getstate()
    assert fast.random() == slow.random()


@pytest.mark.parametrize("window", [1, 7, 100, 4096])
@pytest.mark.parametrize("seed", [3, 4])
def test_small_windows_cut_draws_anywhere(seed, window):
    # words read a few at a time: draws, and chains, cross every boundary
    for count, keep in [(40, lambda n: n % 3 == 0), (10, lambda n: n < 10)]:
        slow, fast = generator(seed), generator(seed)
        got = _numbers_fast(fast, count, keep, window=window)
        assert got == _numbers(slow, count, keep)
        assert fast.getstate() == slow.getstate()


def by_number(n):
    """A stand-in for number_pair, which make_task calls on each number
    drawn: the number itself, without the 3 s of num2words for the 32,500
    numbers of a task (number_pair is a function of the number, the same in
    both tasks: equal splits of numbers are equal splits of pairs)."""
    return Pair((str(n),), (str(n),), ((0,),))


def test_make_task_splits_are_the_loops(monkeypatch):
    # both draws in turn, then the shuffle and the sample that read the state
    # they leave (slow: the loop takes millions of draws to find all of
    # 17,000 to 17,999)
    monkeypatch.setattr(training, "number_pair", by_number)
    fast = training.make_task.__wrapped__("numbers")
    monkeypatch.setattr(training, "_numbers_fast", _numbers)
    slow = training.make_task.__wrapped__("numbers")
    assert [len(fast.splits[name]) for name in fast.splits] == [
        30000,
        500,
        1000,
        1000,
    ]
    assert fast.splits == slow.splits
    assert fast.vocab.tokens == slow.vocab.tokens


def test_other_generators_take_the_loop():
    class Shifted(random.Random):  # its own words: the loop must read them
        def getrandbits(self, k):
            return super().getrandbits(k) ^ 1

    slow, fast = Shifted(5), Shifted(5)
    assert _numbers_fast(fast, 50, lambda n: True) == _numbers(
        slow, 50, lambda n: True
    )
    assert fast.getstate() == slow.getstate()


def test_too_many_wanted_is_an_error():
    # the loop would never end: 17,000 to 17,999 are only 1,000 numbers
    with pytest.raises(ValueError, match="only 1000 numbers pass keep"):
        _numbers_fast(random.Random(0), 1001, seventeen_thousand)


def test_chain_is_the_walk_even_where_chains_never_meet():
    rng = np.random.default_rng(0)
    for size in [1, 5, 63, 64, 65, 1000, 5000]:
        merging = np.minimum(
            np.arange(size) + rng.integers(1, 4, size), size
        )  # chains from different nodes soon meet
        apart = np.minimum(np.arange(size) + 2, size)  # odd and even: never
        for following in (merging, apart):
            assert np.array_equal(_chain(following), _walk(following, size))
