"""The public tests' geometry (grader.properties.geometry): the vectorised overlap search gives, bit for bit, what
the loop over pairs it replaced gives, on any numbers a submission may return (NaN and infinities included)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.properties.geometry import pair_overlap_during


def overlap_by_loop(x: np.ndarray, v: np.ndarray, R: np.ndarray, t_end: float,
                    skip: tuple[int, int] | None = None) -> tuple[float, tuple[int, int]]:
    """The loop over pairs, as it was: the oracle."""
    worst = (-np.inf, (-1, -1))
    with np.errstate(all="ignore"):
        for i in range(len(x)):
            for j in range(i + 1, len(x)):
                if skip is not None and sorted(skip) == [i, j]:
                    continue
                dx, dv = x[i] - x[j], v[i] - v[j]
                a = dv @ dv
                t = 0.0 if a == 0 else min(max(-(dx @ dv) / a, 0.0), t_end)
                reach = R[i] + R[j]
                depth = float((reach - np.linalg.norm(dx + dv * t)) / reach)
                if depth > worst[0]:
                    worst = (depth, (i, j))
    return worst


#: Numbers a gas or a submission's answer may hold: ordinary ones, repeated ones (ties, zero speeds), extremes.
numbers = st.one_of(st.floats(-3, 3), st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-300, 1e300, np.inf, -np.inf, np.nan]),
                    st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=400, deadline=None)
@given(n=st.integers(0, 6), data=st.data())
def test_the_overlap_search_is_the_loop_over_pairs_bit_for_bit(n: int, data: st.DataObject) -> None:
    x = np.array(data.draw(st.lists(st.tuples(numbers, numbers), min_size=n, max_size=n)), dtype=float).reshape(n, 2)
    v = np.array(data.draw(st.lists(st.tuples(numbers, numbers), min_size=n, max_size=n)), dtype=float).reshape(n, 2)
    R = np.array(data.draw(st.lists(st.one_of(st.floats(0.01, 2), numbers), min_size=n, max_size=n)), dtype=float)
    t_end = data.draw(numbers)
    skip = data.draw(st.one_of(st.none(), st.tuples(st.integers(-2, 6), st.integers(-2, 6))))
    got, expected = pair_overlap_during(x, v, R, t_end, skip), overlap_by_loop(x, v, R, t_end, skip)
    assert got[1] == expected[1]
    assert np.array_equal(np.float64(got[0]), np.float64(expected[0]), equal_nan=True)
    assert type(got[0]) is float and all(type(k) is int for k in got[1])


def test_the_overlap_search_on_plain_gases_is_the_loop_over_pairs() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(2, 17))
        x, v = rng.uniform(-1, 1, (n, 2)), rng.normal(size=(n, 2))
        R = rng.uniform(0.02, 0.2, n)
        t_end = float(rng.choice([0.0, rng.uniform(0, 2), 1e300]))
        skip = tuple(int(k) for k in rng.choice(n, 2, replace=False)) if rng.random() < 0.5 else None
        assert pair_overlap_during(x, v, R, t_end, skip) == overlap_by_loop(x, v, R, t_end, skip)
