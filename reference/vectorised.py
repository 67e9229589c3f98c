"""The grader's oracle: the six functions of fixed signature over the vectorised core.

A thin layer over :mod:`reference.contacts` and :mod:`reference.events`: it
checks the arguments, calls the vectorised core and returns what the spec
promises. It answers the hidden tests in the grader's own process (fast on
large gases, clear errors on bad arguments). :mod:`reference.granularGas` is
the same physics as a single-file model answer; the tests keep the two in
agreement. Instructors only: never give this to students.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from reference import validation as validate
from reference.contacts import grain_contact_times, grain_impulse, wall_contact_times, wall_impulse
from reference.conventions import NO_CONTACT
from reference.events import InelasticCollapseError, advance, earliest_contact


def contact_time_grains(x1, x2, v1, v2, R1, R2) -> float:
    """Time until grains 1 and 2 touch; NO_CONTACT if never or already overlapping."""
    x1, x2 = validate.float_array("x1", x1, (2,)), validate.float_array("x2", x2, (2,))
    v1, v2 = validate.float_array("v1", v1, (2,)), validate.float_array("v2", v2, (2,))
    reach = validate.positive("R1", R1) + validate.positive("R2", R2)
    return float(grain_contact_times(x1 - x2, v1 - v2, reach))


def contact_time_walls(w, x1, v1, R1) -> float:
    """Time until grain 1 touches the line through w[0] and w[1]; NO_CONTACT if never."""
    wall = validate.walls("w", w, many=False)
    x1, v1 = validate.float_array("x1", x1, (2,)), validate.float_array("v1", v1, (2,))
    return float(wall_contact_times(wall, x1, v1, validate.positive("R1", R1)))


def minimum_contact_time(x, v, R, w, indexOld) -> tuple[float, np.ndarray]:
    """Earliest contact other than indexOld: (tc, index), index as in the spec."""
    x = validate.float_array("x", x, (None, 2))
    n = len(x)
    v = validate.float_array("v", v, (n, 2))
    R = validate.positive("R", R, (n,))
    w = validate.walls("w", w, many=True)
    old = validate.index_pair("indexOld", indexOld, n, len(w))
    tc, index = earliest_contact(x, v, R, w, old)
    return tc, np.array(index, dtype=int)


def contact_solve_wall(wall, x1, v1, r) -> np.ndarray:
    """Velocity increment dv1, shape (2,), of a grain bouncing on ``wall``."""
    wall = validate.walls("wall", wall, many=False)
    validate.float_array("x1", x1, (2,))
    v1 = validate.float_array("v1", v1, (2,))
    return wall_impulse(wall, v1, validate.restitution("r", r))


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r) -> tuple[np.ndarray, np.ndarray]:
    """Velocity increments (dv1, dv2), each shape (2,), of two colliding grains."""
    x1, x2 = validate.float_array("x1", x1, (2,)), validate.float_array("x2", x2, (2,))
    if np.all(x1 == x2):
        raise validate.InvalidArgument(f"x1 and x2 are the same point {x1.tolist()}: the contact normal is undefined")
    v1, v2 = validate.float_array("v1", v1, (2,)), validate.float_array("v2", v2, (2,))
    m1, m2 = validate.positive("m1", m1), validate.positive("m2", m2)
    return grain_impulse(x1 - x2, v1 - v2, m1, m2, validate.restitution("r", r))


def update(x, v, R, m, w, indexOld, r, dt, t) -> float:
    """Advance the grains by dt in place (x, v and indexOld); return t + dt.

    Every contact inside dt is solved in time order, in a loop, so any number
    of contacts fits in one dt. Raises InelasticCollapseError when contacts
    pile up without end.
    """
    return update_with(advance, x, v, R, m, w, indexOld, r, dt, t)


def update_with(move: Callable[..., Any], x, v, R, m, w, indexOld, r, dt, t) -> float:
    """``update`` through ``move`` (an ``advance``: events.advance, or the engine's): the homework's argument
    checks, then the new x, v and indexOld written into the caller's arrays; t + dt."""
    args = validate.update_arguments(x, v, R, m, w, indexOld, r, dt, t)
    result = move(*args)
    x[...] = result.x
    v[...] = result.v
    indexOld[0], indexOld[1] = result.last
    return args.t + args.dt


__all__ = [
    "InelasticCollapseError",
    "NO_CONTACT",
    "contact_time_grains",
    "contact_time_walls",
    "minimum_contact_time",
    "contact_solve_wall",
    "contact_solve_grains",
    "update",
]
