"""Every numerical tolerance of the project, in one place.

Tolerances are relative to the natural scale of the quantity compared (a
length to the radii and distances involved, a velocity to the speeds
involved), so that scaling a test case never changes its verdict.
"""

from __future__ import annotations

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
