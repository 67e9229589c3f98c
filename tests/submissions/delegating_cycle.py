# EXPECT <=5: delegating, each function answers through another one, no physics anywhere (a guard stops the cycle)
"""Every function is written in terms of another: none of them computes anything.

contact_time_grains asks minimum_contact_time about a system of two grains;
contact_time_walls asks it about one grain and one wall; minimum_contact_time
asks contact_time_grains about the first two grains; the solvers run update on
a tiny system and return the change of velocity; update asks the solvers about
the contact minimum_contact_time names. A re-entrancy guard turns the cycle
into "no contact" / "no change" instead of a RecursionError.
"""
import sys

import numpy as np

_depth = [0]
NO_CONTACT = sys.float_info.max


def _guarded(fallback):
    def wrap(function):
        def inner(*args, **kwargs):
            if _depth[0] > 2:
                return fallback(*args, **kwargs)
            _depth[0] += 1
            try:
                return function(*args, **kwargs)
            finally:
                _depth[0] -= 1
        inner.__name__ = function.__name__
        return inner
    return wrap


@_guarded(lambda *a, **k: NO_CONTACT)
def contact_time_grains(x1, x2, v1, v2, R1, R2):
    tc, _ = minimum_contact_time(np.array([x1, x2]), np.array([v1, v2]), np.array([R1, R2]), np.zeros((0, 2, 2)),
                                 np.array([-1, -1]))
    return float(tc)


@_guarded(lambda *a, **k: NO_CONTACT)
def contact_time_walls(w, x1, v1, R1):
    tc, _ = minimum_contact_time(np.array([x1]), np.array([v1]), np.array([R1]), np.array([w]), np.array([-1, -1]))
    return float(tc)


@_guarded(lambda *a, **k: (NO_CONTACT, np.array([-1, -1])))
def minimum_contact_time(x, v, R, w, indexOld):
    if len(x) < 2:
        return NO_CONTACT, np.array([-1, -1])
    return contact_time_grains(x[0], x[1], v[0], v[1], R[0], R[1]), np.array([0, 1])


@_guarded(lambda *a, **k: np.zeros(2))
def contact_solve_wall(wall, x1, v1, r):
    x, v = np.array([x1], dtype=float), np.array([v1], dtype=float)
    update(x, v, np.ones(1), np.ones(1), np.array([wall]), np.array([-1, -1]), r, 0.0, 0.0)
    return v[0] - v1


@_guarded(lambda *a, **k: (np.zeros(2), np.zeros(2)))
def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    x, v = np.array([x1, x2], dtype=float), np.array([v1, v2], dtype=float)
    update(x, v, np.ones(2), np.array([m1, m2]), np.zeros((0, 2, 2)), np.array([-1, -1]), r, 0.0, 0.0)
    return v[0] - v1, v[1] - v2


@_guarded(lambda *a, **k: None)
def update(x, v, R, m, w, indexOld, r, dt, t):
    tc, (i, j) = minimum_contact_time(x, v, R, w, indexOld)
    if tc <= dt and j >= 0:
        dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
        v[i] += dv1
        v[j] += dv2
    return t + dt
