"""reference.engine_queue: the tournament tree always names the earliest event, ties by rank, whatever was replaced
or dropped before (checked against a plain scan of every grain's slot)."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.engine_queue import drop, empty_queue, schedule

#: Few distinct times, so that ties (broken by rank) and equal ranks come up often.
TIMES = st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.5, math.inf])


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 37), steps=st.lists(st.tuples(st.integers(0, 36), TIMES, st.integers(0, 5)), max_size=80))
def test_the_root_is_the_earliest_event_with_the_lowest_rank(n, steps):
    queue = empty_queue(n)
    nt, nw, ek, ei = queue
    times, ranks = [math.inf] * n, [0] * n
    for grain, t, key in steps:
        a = grain % n
        if t == math.inf:
            drop(queue, a)
        else:
            schedule(queue, a, t, key, a + 1, 7)
            ranks[a] = key
            assert tuple(ei[a]) == (a + 1, 7)
        times[a] = t
        first = min(times)
        assert nt[1] == first
        if first < math.inf:
            winner = int(nw[1])
            assert times[winner] == first
            assert ranks[winner] == min(ranks[b] for b in range(n) if times[b] == first)

def test_an_empty_queue_has_no_event():
    nt, nw, _, _ = empty_queue(5)
    assert nt[1] == math.inf and len(nt) == 16 and list(nw[8:13]) == [0, 1, 2, 3, 4]
    assert np.all(nw[13:] == -1)
