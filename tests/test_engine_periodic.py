"""reference.engine's periodic box, against an exact search over periodic images.

The oracle below is the O(n^2) event-driven search of reference.events written
for a periodic box: every pair through each of its 25 nearest images (so no
contact through a farther image is missed: free flights are cut into
steps of half a period of relative travel), the pair solved last left out, contacts solved by
reference.contacts' formulas. It shares no code with the engine's cell list.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import engine
from reference.contacts import grain_contact_times, grain_impulse

SHIFTS = np.array([(i, j) for i in range(-2, 3) for j in range(-2, 3)], dtype=float)
NO_WALLS = np.zeros((0, 2, 2))


def exact_periodic(x, v, R, m, r, dt, period, last=(-1, -1)):
    """(x, v, contacts) after dt: the earliest contact over all pairs and images, solved, repeated."""
    x, v = x.copy(), v.copy()
    n, left, contacts = len(x), dt, 0
    while True:
        # Free flights of at most half a period of relative travel: the 25 images hold every contact within.
        horizon = min(left, 0.5 * period / (2.0 * np.max(np.hypot(*v.T)) + 1e-300))
        best, hit = math.inf, None
        for i in range(n):
            for j in range(i + 1, n):
                if (i, j) == tuple(last):
                    continue
                dx = x[i] - x[j] - SHIFTS * period  # grain j seen at each image
                times = grain_contact_times(dx, np.broadcast_to(v[i] - v[j], dx.shape), R[i] + R[j])
                k = int(np.argmin(times))
                if times[k] < best:
                    best, hit = float(times[k]), (i, j, SHIFTS[k])
        if hit is None or best > horizon:
            if horizon == left:
                return np.mod(x + v * left, period), v, contacts
            x += v * horizon
            left -= horizon
            continue
        x += v * best
        left -= best
        i, j, shift = hit
        dv1, dv2 = grain_impulse(x[i] - x[j] - shift * period, v[i] - v[j], m[i], m[j], r)
        v[i] += dv1
        v[j] += dv2
        last, contacts = (i, j), contacts + 1


def periodic_distance(a: np.ndarray, b: np.ndarray, period: float) -> np.ndarray:
    d = a - b
    return np.abs(d - period * np.round(d / period))


@st.composite
def periodic_gases(draw):
    n = draw(st.integers(2, 10))
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
@given(periodic_gases(), st.floats(0.05, 1.0))
def test_the_periodic_engine_agrees_with_the_exact_search_over_images(gas, dt):
    x, v, R, m, r, period = gas
    done = engine.advance(x, v, R, m, NO_WALLS, (-1, -1), r, dt, period=period)
    ex, ev, contacts = exact_periodic(x, v, R, m, r, dt, period)
    assert done.contacts == contacts
    assert np.all((done.x >= 0.0) & (done.x <= period))
    assert np.max(periodic_distance(done.x, ex, period)) < 1e-9
    assert np.max(np.abs(done.v - ev)) < 1e-9


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
    (NO_WALLS, 0.3, "at least 4 contact distances"),
    (NO_WALLS, -1.0, "a number > 0"),
    (NO_WALLS, math.nan, "a number > 0"),
])
def test_a_periodic_box_that_cannot_work_is_refused_with_the_fix(walls, period, message):
    x, v = np.array([[0.1, 0.1], [0.2, 0.2]]), np.zeros((2, 2))
    with pytest.raises(ValueError, match=message):
        engine.advance(x, v, np.full(2, 0.05), np.ones(2), walls, (-1, -1), 1.0, 1.0, period=period)
