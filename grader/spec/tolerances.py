"""Every numerical tolerance of the project, in one place.

Tolerances are relative to the natural scale of the quantity compared (a
length to the radii and distances involved, a velocity to the speeds
involved), so that scaling a test case never changes its verdict.
"""

from __future__ import annotations

import functools

import numpy as np

#: Relative error allowed on a distance (contact distance, grain-wall gap).
DISTANCE_RTOL = 1e-8

#: Relative error allowed on a velocity, momentum or energy.
VELOCITY_RTOL = 1e-8

#: Relative error allowed on a contact time.
TIME_RTOL = 1e-8

#: Overlap tolerated between grains after long runs, relative to the radii:
#: event-driven codes land on contacts only up to round-off.
OVERLAP_RTOL = 1e-8

#: Physics scenarios (C12 row, DEM pair) against their benchmark solutions:
#: collision times, velocities and positions, relative to the benchmark's
#: scale (its times up to 15, speeds up to 1). Loose enough for any correct
#: order of floating-point operations, tight enough for any physics slip.
SCENARIO_RTOL = 1e-6

#: State of ``update`` against the reference after a short run, relative to
#: the box size (positions) and the speeds (velocities).
STATE_RTOL = 1e-6


#: Relative nudge of a case's inputs to test its conditioning: a case whose
#: reference answer moves beyond the tolerance when nudged (grazing contacts,
#: near ties, chaotic runs) cannot fairly be held against anyone.
NUDGE = 1e-10

#: Conditioning of a hidden update case: the reference's end state, nudged,
#: must stay this close (tighter than STATE_RTOL, so a fair case has margin).
CONDITIONING_RTOL = STATE_RTOL / 10

#: Conditioning of a helper's recorded call in the audit: tighter still, since
#: it blames a helper rather than the function under test.
AUDIT_CONDITIONING_RTOL = STATE_RTOL / 100

#: Kinetic energy after update against before: relative error allowed for an
#: elastic gas (a long run accumulates round-off over many collisions).
ENERGY_RTOL = VELOCITY_RTOL * 100

#: Grains "touch" at a contact when their distance is within this fraction of
#: R1 + R2 (checked on the student's contact positions).
TOUCH_RTOL = 1e-6

#: A grain moving along a wall may report a contact no sooner than this time:
#: further than the grain travels in any test, so "no contact" is not required.
ALONG_WALL_MIN_TIME = 1e12

#: Times at or beyond this are "no contact" sentinels, never compared as numbers.
HUGE_TIME = 1e300


def nudged(args: tuple, seed: int = 0) -> tuple:
    """``args`` with every float array scaled by 1 + NUDGE * u, u uniform in [-1, 1] (seeded: reproducible)."""
    floats = [isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in args]
    factors = iter(nudge_factors(tuple(a.shape for a, f in zip(args, floats) if f), seed))
    return tuple(a * next(factors) if f else a for a, f in zip(args, floats))


@functools.lru_cache(maxsize=256)
def nudge_factors(shapes: tuple[tuple[int, ...], ...], seed: int = 0) -> tuple[np.ndarray, ...]:
    """The factors 1 + NUDGE * u that :func:`nudged` applies to float arrays of these shapes, in order (read-only:
    kept, since a generator is slow to seed and the same few shapes come again and again)."""
    rng = np.random.default_rng(seed)
    factors = tuple(np.asarray(1 + NUDGE * rng.uniform(-1, 1, shape)) for shape in shapes)  # 0-d: an array too
    for factor in factors:
        factor.flags.writeable = False
    return factors


def close(a: object, b: object, scale: float, rtol: float) -> bool:
    """True when every entry of a and b differs by at most rtol * scale.

    ``scale`` is the magnitude of the quantity (never 0: callers add the
    natural unit of the problem), so the check is relative yet defined at 0.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    return bool(np.all(np.abs(a - b) <= rtol * scale))
