"""reference.engine's periodic box, against an exact search over periodic images.

The oracle below is the O(n^2) event-driven search of reference.events written
for a periodic box: every pair through every image it can reach in the time
left, the pair solved last left out while it still touches (it may meet again
through another image with nothing in between), contacts solved by
reference.contacts' formulas. It shares no code with the engine's cell list.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import engine, engine_core
from reference.contacts import grain_contact_times, grain_impulse

NO_WALLS = np.zeros((0, 2, 2))


def exact_periodic(x, v, R, m, r, dt, period, last=(-1, -1), touching=1.0 + engine_core.TOUCHING):
    """(x, v, contacts) after dt: the earliest contact over all pairs and images, solved, repeated.

    Positions are never wrapped (as a grain's own does not change when the engine moves it by a period): each pair
    is seen through every image within reach of the time left, around its nearest one.
    """
    x, v = x.copy(), v.copy()
    n, left, contacts = len(x), dt, 0
    while True:
        k = int(np.ceil(2.0 * np.max(np.hypot(*v.T)) * left / period)) + 1
        shifts = np.array([(i, j) for i in range(-k, k + 1) for j in range(-k, k + 1)], dtype=float)
        best, hit = math.inf, None
        for i in range(n):
            for j in range(i + 1, n):
                d = x[i] - x[j]
                dx = d - (np.round(d / period) + shifts) * period  # grain j seen at each image
                times = grain_contact_times(dx, np.broadcast_to(v[i] - v[j], dx.shape), R[i] + R[j])
                if (i, j) == tuple(last) and np.hypot(*(d - period * np.round(d / period))) <= touching * (R[i] + R[j]):
                    times[len(shifts) // 2] = math.inf  # the pair solved last, through the image where it touches
                best_here = float(np.min(times))
                if best_here < best:
                    best, hit = best_here, (i, j)
        if hit is None or best > left:
            return np.mod(x + v * left, period), v, contacts
        x += v * best
        left -= best
        i, j = hit
        d = x[i] - x[j]
        dv1, dv2 = grain_impulse(d - period * np.round(d / period), v[i] - v[j], m[i], m[j], r)
        v[i] += dv1
        v[j] += dv2
        last, contacts = (i, j), contacts + 1


def periodic_distance(a: np.ndarray, b: np.ndarray, period: float) -> np.ndarray:
    d = a - b
    return np.abs(d - period * np.round(d / period))


@st.composite
def periodic_gases(draw):
    n = draw(st.integers(2, 8))
    radius = 0.05
    period = draw(st.floats(0.6, 1.5))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = np.empty((n, 2))
    placed = 0
    while placed < n:  # random sequential placement without overlaps (through the box's edges too)
        p = rng.uniform(0.0, period, 2)
        if placed and np.min(np.hypot(*periodic_distance(x[:placed], p, period).T)) < 2.0 * radius * 1.001:
            continue
        x[placed] = p
        placed += 1
    v = rng.normal(0.0, 1.0, (n, 2))
    m = rng.uniform(0.5, 2.0, n)
    r = draw(st.sampled_from([1.0, 0.9, 0.5]))
    return x, v, np.full(n, radius), m, r, period


@settings(max_examples=40, deadline=None)
@given(periodic_gases(), st.floats(0.05, 0.5))
def test_the_periodic_engine_agrees_with_the_exact_search_over_images(gas, dt):
    """Same contacts, same end state up to round-off amplified by the contacts (hard disks are chaotic: the two
    codes' round-off differs, as they compute the images differently)."""
    x, v, R, m, r, period = gas
    done = engine.advance(x, v, R, m, NO_WALLS, (-1, -1), r, dt, period=period)
    ex, ev, contacts = exact_periodic(x, v, R, m, r, dt, period)
    assert done.contacts == contacts
    assert np.all((done.x >= 0.0) & (done.x <= period))
    assert np.max(periodic_distance(done.x, ex, period)) < 1e-6
    assert np.max(np.abs(done.v - ev)) < 1e-6


def test_a_grain_crosses_the_edge_and_meets_a_grain_through_it():
    """Two grains 0.3 apart through the box's edge, 0.7 apart inside it: they meet across the edge."""
    x = np.array([[0.05, 0.5], [0.75, 0.5]])
    v = np.array([[-1.0, 0.0], [1.0, 0.0]])
    done = engine.advance(x, v, np.full(2, 0.05), np.ones(2), NO_WALLS, (-1, -1), 1.0, 0.2, period=1.0)
    # They touch at t = 0.1 (gap 0.3 - 0.1 closed at speed 2), swap velocities, and go back: at t = 0.2 each is
    # where it started.
    assert done.contacts == 1 and done.last == (0, 1)
    assert np.allclose(done.x, x, atol=1e-12) and np.allclose(done.v, -v, atol=1e-12)


def test_momentum_is_kept_and_energy_for_r_1_in_a_large_periodic_gas():
    rng = np.random.default_rng(3)
    side = 40.0
    grid = np.stack(np.meshgrid(np.arange(20), np.arange(20)), -1).reshape(-1, 2) * 2.0 + 0.5  # 400 grains
    x = np.mod(grid + rng.uniform(-0.3, 0.3, grid.shape), side)
    v = rng.normal(0.0, 1.0, x.shape)
    R, m = np.full(len(x), 0.5), rng.uniform(0.5, 2.0, len(x))
    for r in (1.0, 0.9):
        done = engine.advance(x, v, R, m, NO_WALLS, (-1, -1), r, 20.0, period=side)
        assert done.contacts > 2000
        momentum0, momentum = (m[:, None] * v).sum(axis=0), (m[:, None] * done.v).sum(axis=0)
        assert np.max(np.abs(momentum - momentum0)) < 1e-9 * np.sum(m * np.hypot(*v.T))
        energy0, energy = np.sum(m * (v**2).sum(1)), np.sum(m * (done.v**2).sum(1))
        if r == 1.0:
            assert abs(energy - energy0) < 1e-9 * energy0
        else:
            assert energy < 0.9 * energy0
        # Nothing overlaps at the end, through the edges either.
        d = periodic_distance(done.x[:, None, :], done.x[None, :, :], side)
        gaps = np.hypot(d[..., 0], d[..., 1]) + np.eye(len(x)) * side
        assert gaps.min() > 1.0 * (1 - 1e-9)


@pytest.mark.parametrize("walls, period, message", [
    (np.array([[[0.0, 0.0], [1.0, 0.0]]]), 1.0, "a periodic box has none"),
    (NO_WALLS, 0.5, "more than 5 contact distances"),
    (NO_WALLS, -1.0, "a number > 0"),
    (NO_WALLS, math.nan, "a number > 0"),
])
def test_a_periodic_box_that_cannot_work_is_refused_with_the_fix(walls, period, message):
    x, v = np.array([[0.1, 0.1], [0.2, 0.2]]), np.zeros((2, 2))
    with pytest.raises(ValueError, match=message):
        engine.advance(x, v, np.full(2, 0.05), np.ones(2), walls, (-1, -1), 1.0, 1.0, period=period)


def test_a_pair_meets_again_through_another_image_after_a_contact_elsewhere():
    """Grains 3 and 5 collide, then, after a contact elsewhere only, meet again across the box's edges (found by
    Hypothesis: the engine once let them pass through each other)."""
    x = np.array([[0.39866453, 0.29823249], [0.16546199, 0.08118047], [0.25450955, 0.2257829],
                  [0.15931859, 0.29366739], [0.4233117, 0.0759243], [0.09965167, 0.43520883],
                  [0.41318275, 0.42659426]])
    v = np.array([[1.75306449, 0.28672726], [-1.02320257, 0.33004953], [-1.22640624, 0.70670794],
                  [1.31424917, -1.07077333], [0.51763575, 0.45278475], [0.27229865, -0.68545732],
                  [-0.07442633, 0.86042733]])
    m = np.array([1.41053605, 0.526243, 0.58371264, 0.86897827, 1.37815069, 1.3320596, 1.00423803])
    R, period = np.full(7, 0.05), 0.6
    done = engine.advance(x, v, R, m, NO_WALLS, (-1, -1), 1.0, 0.8, period=period)
    ex, ev, contacts = exact_periodic(x, v, R, m, 1.0, 0.8, period)
    assert done.contacts == contacts
    d = periodic_distance(done.x[:, None, :], done.x[None, :, :], period)
    assert (np.hypot(d[..., 0], d[..., 1]) + np.eye(7)).min() > 0.1 * (1 - 1e-9)


def no_overlap(x: np.ndarray, R: np.ndarray, period: float) -> bool:
    d = periodic_distance(x[:, None, :], x[None, :, :], period)
    gaps = np.hypot(d[..., 0], d[..., 1]) - (R[:, None] + R[None, :]) + np.eye(len(x)) * period
    return bool(gaps.min() > -1e-9)


# Found by a review of the periodic box (L = 1, R = 0.05, r = 1): each once ended with grains through each other.
REVIEW_CASES = {
    "two grains meet again with nothing in between": (
        [[0.3, 0.5], [0.7, 0.5]], [[1.0, 0.0], [-1.0, 0.0]], [1.0, 1.0], 0.7),
    "a pair half a period apart (4 cells a side)": (
        [[0.1, 0.1], [0.9, 0.1]], [[0.5, 0.0], [-0.5, 0.0]], [1.0, 1.0], 1.0),
    "a grain at rest half a period from another": (
        [[0.25, 0.5], [0.875, 0.5]], [[0.0, 0.0], [-1.0, 0.0]], [1.0, 1.0], 0.6),
    "a queued meeting whose partner collided since": (
        [[0.30, 0.5], [0.70, 0.5], [0.31, 0.1], [0.71, 0.1], [0.87, 0.42], [0.6855419844806947, 0.6504592762678163]],
        [[1, 0], [-1, 0], [0.375, 0], [-0.375, 0], [0, 2], [-0.7067327284771151, -0.14642290241019915]],
        [1, 1, 1, 1, 3, 1], 1.6),
}


@pytest.mark.parametrize("name", REVIEW_CASES)
def test_the_cases_a_review_found_agree_with_the_exact_search(name):
    x, v, m, dt = (np.array(a, dtype=float) if k < 3 else a for k, a in enumerate(REVIEW_CASES[name]))
    R = np.full(len(x), 0.05)
    done = engine.advance(x, v, R, m, NO_WALLS, (-1, -1), 1.0, dt, period=1.0)
    ex, ev, contacts = exact_periodic(x, v, R, m, 1.0, dt, 1.0)
    assert contacts > 0 and done.contacts == contacts
    assert np.max(periodic_distance(done.x, ex, 1.0)) < 1e-9 and np.max(np.abs(done.v - ev)) < 1e-9
    assert no_overlap(done.x, R, 1.0)
    # The same in short calls, the last contact passed on.
    xs, vs, last = x, v, (-1, -1)
    for _ in range(10):
        step = engine.advance(xs, vs, R, m, NO_WALLS, last, 1.0, dt / 10, period=1.0)
        xs, vs, last = step.x, step.v, step.last
        assert no_overlap(xs, R, 1.0)
    assert np.max(periodic_distance(xs, ex, 1.0)) < 1e-9
