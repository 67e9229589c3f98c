"""Hypothesis strategies for well-conditioned contact problems.

Cases are built backwards from their answer: place two bodies in contact at
time T, then move them back by T. The expected contact time is T by
construction, with no reference solution involved, so every strategy here is
usable in the public (student-side) tests. The cases themselves are
grader.properties.inputs; this module, and Hypothesis, are imported only when a
case is drawn (grader.properties.lazy).

Magnitudes stay in ranges where round-off cannot flip a verdict: no grazing
contacts (the normal approach speed is at least a tenth of the speed), no
near-touching misses, no near-zero overlaps.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import hypothesis
import numpy as np
from hypothesis import strategies as st

from grader.properties.inputs import GrainContact, GrainPair, WallCase, WallContact, perp, unit
from grader.spec.scenarios import Scenario, random_gas

COORD = 10.0
MIN_RADIUS, MAX_RADIUS = 0.05, 2.0
MIN_SPEED, MAX_SPEED = 0.1, 5.0
MIN_TIME, MAX_TIME = 0.01, 10.0


# The shrinker draws every candidate case afresh, so drawing is most of the time a failing property takes. Two
# costs went: a strategy object built inside a draw is validated at its first use (the building blocks below are
# built once), and a lazy wrapper is unwrapped at every draw (they are stored unwrapped). Since Hypothesis 6.131.14 a
# draw labels its span by the unwrapped strategy, and a composite is labelled by its code, not its name: the same
# choices give the same cases and spans, and the shrinker takes the same steps (tests/test_cases.py compares them).
# Before that version a lazy wrapper opened a span of its own, so the blocks stay wrapped there.
_DRAWS_UNWRAPPED = (6, 131, 14)


def _built(strategy: st.SearchStrategy) -> st.SearchStrategy:
    """The strategy a draw of ``strategy`` runs, where Hypothesis draws that one alone (else ``strategy``)."""
    if hypothesis.__version_info__ < _DRAWS_UNWRAPPED:
        return strategy
    try:
        from hypothesis.strategies._internal.lazy import unwrap_strategies
    except ImportError:  # pragma: no cover - a Hypothesis that moved it: slower, the same cases
        return strategy
    return unwrap_strategies(strategy)


@functools.cache
def _floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    return _built(st.floats(lo, hi, allow_nan=False, allow_infinity=False))


floats = _floats  # st.floats(lo, hi) with finite bounds: the same strategy, built once


@functools.cache
def stored(make: Callable[[], st.SearchStrategy]) -> st.SearchStrategy:
    """``make()``, built once and kept as a draw runs it: for strategies drawn inside other draws (a composite taking
    no arguments, st.booleans), which a fresh object would make Hypothesis validate and label again at every draw."""
    return _built(make())


def with_arguments(composite: Callable[..., st.SearchStrategy], *args: Any, **kwargs: Any) -> st.SearchStrategy:
    """``composite(*args, **kwargs)`` for a composite taking arguments (arrays among them, so not cached): a copy of
    the first one built, given these arguments. It is what a draw of a fresh one runs (the same class, definition and
    label) without building, validating and labelling a lazy wrapper and its strategy at every draw."""
    first = _first_built.get(composite)
    if first is None:
        first = _first_built[composite] = _built(composite(*args, **kwargs))
    if not hasattr(first, "args") or not hasattr(first, "kwargs"):  # pragma: no cover - a Hypothesis that changed it
        return composite(*args, **kwargs)
    drawn = copy.copy(first)
    drawn.args, drawn.kwargs = args, kwargs
    return drawn


_first_built: dict[Callable[..., st.SearchStrategy], st.SearchStrategy] = {}


signs = _built(st.sampled_from([-1.0, 1.0]))


coords = _floats(-COORD, COORD)
radii = _floats(MIN_RADIUS, MAX_RADIUS)
angles = _floats(0.0, 2 * np.pi)
speeds = _floats(MIN_SPEED, MAX_SPEED)
times = _floats(MIN_TIME, MAX_TIME)
masses = _floats(0.1, 10.0)
restitutions = _floats(0.0, 1.0)


@st.composite
def _vectors(draw, scale: float = COORD) -> np.ndarray:
    return np.array([draw(_floats(-scale, scale)), draw(_floats(-scale, scale))])


@functools.cache
def vectors(scale: float = COORD) -> st.SearchStrategy[np.ndarray]:
    """Two coordinates in [-scale, scale]."""
    return _built(_vectors(scale))


@st.composite
def _relative_velocity(draw, normal: np.ndarray, toward: bool) -> np.ndarray:
    """A relative velocity whose normal part is at least 0.1 of its size."""
    a = draw(speeds)
    b = draw(_floats(-5.0, 5.0)) * a
    return (-a if toward else a) * normal + b * perp(normal)


_sideways = _built(_floats(-1.0, 1.0).filter(lambda s: abs(s) > 0.02))  # a clear sideways speed, either way
_no_contact_kinds = _built(st.sampled_from(["away", "parallel", "overlap"]))
_quarter_turns = _built(st.sampled_from([0.0, 0.5, 1.0, 1.5]))


@st.composite
def colliding_pairs(draw) -> GrainPair:
    """Two grains that touch for the first time at time T, approaching."""
    R1, R2, T = draw(radii), draw(radii), draw(times)
    n = unit(draw(angles))
    dv = draw(with_arguments(_relative_velocity, n, toward=True))
    v2 = draw(vectors(MAX_SPEED))
    v1 = v2 + dv
    x2c = draw(vectors())
    x1c = x2c + (R1 + R2) * n
    return GrainPair(x1c - v1 * T, x2c - v2 * T, v1, v2, R1, R2, T)


@st.composite
def receding_pairs(draw) -> GrainPair:
    """Two grains apart that touched at time -T and now move away."""
    R1, R2, T = draw(radii), draw(radii), draw(times)
    n = unit(draw(angles))
    dv = draw(with_arguments(_relative_velocity, n, toward=False))
    v2 = draw(vectors(MAX_SPEED))
    v1 = v2 + dv
    x2c = draw(vectors())
    x1c = x2c + (R1 + R2) * n
    return GrainPair(x1c + v1 * T, x2c + v2 * T, v1, v2, R1, R2, None, "receding")


@st.composite
def missing_pairs(draw) -> GrainPair:
    """Two grains whose closest approach, at time T, leaves a clear gap."""
    R1, R2, T = draw(radii), draw(radii), draw(times)
    n = unit(draw(angles))
    gap = (R1 + R2) * draw(_floats(1.05, 3.0))
    dv = draw(_sideways) * MAX_SPEED * perp(n)
    v2 = draw(vectors(MAX_SPEED))
    v1 = v2 + dv
    x2c = draw(vectors())
    return GrainPair(x2c + gap * n - v1 * T, x2c - v2 * T, v1, v2, R1, R2, None, "missing")


@st.composite
def overlapping_pairs(draw) -> GrainPair:
    """Two grains that already overlap, moving in any way."""
    R1, R2 = draw(radii), draw(radii)
    n = unit(draw(angles))
    x2 = draw(vectors())
    x1 = x2 + (R1 + R2) * draw(_floats(0.05, 0.95)) * n
    return GrainPair(x1, x2, draw(vectors(MAX_SPEED)), draw(vectors(MAX_SPEED)), R1, R2, None, "overlapping")


@st.composite
def parallel_pairs(draw) -> GrainPair:
    """Two separate grains with the same velocity."""
    R1, R2 = draw(radii), draw(radii)
    n = unit(draw(angles))
    x2 = draw(vectors())
    x1 = x2 + (R1 + R2) * draw(_floats(1.05, 3.0)) * n
    v = draw(vectors(MAX_SPEED))
    return GrainPair(x1, x2, v, v.copy(), R1, R2, None, "parallel")


def no_contact_pairs() -> st.SearchStrategy[GrainPair]:
    return st.one_of(receding_pairs(), missing_pairs(), overlapping_pairs(), parallel_pairs())


@st.composite
def wall_lines(draw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(w, point on the line, unit tangent): any length, orientation, order."""
    p = draw(vectors())
    u = unit(draw(angles))
    s0 = draw(_floats(-COORD, COORD))
    s1 = s0 + draw(signs) * draw(_floats(0.1, 3 * COORD))
    w = np.array([p + s0 * u, p + s1 * u])
    return w, p, u


@st.composite
def colliding_walls(draw) -> WallCase:
    """A grain that reaches a wall line at time T, moving toward it."""
    w, p, u = draw(stored(wall_lines))
    side = draw(signs)
    R, T = draw(radii), draw(times)
    normal = side * perp(u)  # from the wall toward the grain
    xc = p + draw(_floats(-COORD, COORD)) * u + R * normal
    v = draw(with_arguments(_relative_velocity, normal, toward=True))
    return WallCase(w, xc - v * T, v, R, T)


@st.composite
def no_contact_walls(draw) -> WallCase:
    """A grain moving away from or along a wall line, or overlapping it.

    The "along" case uses an axis-aligned wall so that the normal speed is
    exactly 0; along a rotated line it would be round-off, not 0.
    """
    kind = draw(_no_contact_kinds)
    if kind == "parallel":
        u = unit(draw(_quarter_turns) * np.pi).round()
        p = draw(vectors())
        w = np.array([p, p + draw(_floats(0.1, 3 * COORD)) * draw(signs) * u])
    else:
        w, p, u = draw(stored(wall_lines))
    side = draw(signs)
    normal = side * perp(u)
    R = draw(radii)
    along = p + draw(_floats(-COORD, COORD)) * u
    if kind == "overlap":
        x = along + R * draw(_floats(-0.95, 0.95)) * normal
        v = draw(vectors(MAX_SPEED))
    else:
        x = along + R * draw(_floats(1.05, 5.0)) * normal
        v = draw(with_arguments(_relative_velocity, normal, toward=False)) if kind == "away" else draw(speeds) * u
    return WallCase(w, x, v, R, None, kind)


@st.composite
def grain_contacts(draw) -> GrainContact:
    pair = draw(stored(colliding_pairs))
    T = pair.expected
    return GrainContact(
        pair.x1 + pair.v1 * T, pair.x2 + pair.v2 * T, pair.v1, pair.v2, draw(masses), draw(masses), draw(restitutions)
    )


@st.composite
def wall_contacts(draw) -> WallContact:
    case = draw(stored(colliding_walls))
    return WallContact(case.w, case.x1 + case.v1 * case.expected, case.v1, draw(restitutions))


def gases(n_max: int = 12, speed: float = 1.0, r: st.SearchStrategy[float] = restitutions,
          ) -> st.SearchStrategy[Scenario]:
    """Random gases of 2..n_max grains in a box (grader.spec.scenarios.random_gas)."""
    return st.builds(random_gas, n=st.integers(2, n_max), seed=st.integers(0, 2**16),
                     packing=st.floats(0.05, 0.3), r=r, speed=st.just(speed))
