"""Model answer of the homework: the six functions, in one file, with numpy only.

Written the way the statement (assignment/README.md) describes it: contact
times from the stable quadratic root and the wall's unit normal, the
earliest contact found by trying every pair and every grain-wall couple
(O(n^2)), and ``update`` as a loop over contacts, so any number of contacts
fits in one dt. The grader grades it like any submission (``python -m grader
check reference/granularGas.py`` gives 100), so it imports nothing but numpy
and the standard library. The grader's oracle is :mod:`reference.vectorised`,
the same physics vectorised; tests/test_reference_standalone.py keeps the two
in agreement. Instructors only: never give this to students.
"""

import math
import sys

import numpy as np

#: "No contact": exactly the largest float, never inf.
NO_CONTACT = sys.float_info.max

#: Contacts one call of update may solve before it declares inelastic collapse
#: (infinitely many contacts in finite time) instead of looping for ever.
MAX_CONTACTS_PER_UPDATE = 100_000


class InelasticCollapseError(RuntimeError):
    """Contacts piled up without end inside one call of update."""


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    """Time until grains 1 and 2 touch; NO_CONTACT if never or already overlapping."""
    dx = x1 - x2
    dv = v1 - v2
    a = float(dv @ dv)
    b = float(dx @ dv)
    reach = float(R1 + R2)
    c = float(dx @ dx) - reach * reach
    # Receding or parallel (b >= 0), or already overlapping (c < 0): no future contact.
    if b >= 0 or c < 0:
        return NO_CONTACT
    disc = b * b - a * c
    if disc < 0:  # they miss each other
        return NO_CONTACT
    # The smaller root, without the cancellation of (-b - sqrt(disc)) / a.
    tc = c / (-b + math.sqrt(disc))
    # A contact later than the largest float (a vanishing approach speed) never happens.
    return float(tc) if tc < NO_CONTACT else NO_CONTACT


def wall_normal(wall):
    """Unit normal of the line through wall[0] and wall[1] (either side)."""
    tangent = wall[1] - wall[0]
    return np.array([-tangent[1], tangent[0]]) / np.hypot(tangent[0], tangent[1])


def contact_time_walls(w, x1, v1, R1):
    """Time until grain 1 touches the line through w[0] and w[1]; NO_CONTACT if never."""
    normal = wall_normal(w)
    # Signed distance from the line and its rate of change: |height| is the
    # statement's d = |s - s_t|, and height * rate < 0 when the grain moves toward the line.
    height = float((x1 - w[0]) @ normal)
    rate = float(v1 @ normal)
    gap = abs(height) - float(R1)
    # Moving away or along the line (height * rate >= 0), or already overlapping it (gap < 0).
    if height * rate >= 0 or gap < 0:
        return NO_CONTACT
    tc = gap / abs(rate)
    return float(tc) if tc < NO_CONTACT else NO_CONTACT


def minimum_contact_time(x, v, R, w, indexOld):
    """Earliest contact other than indexOld: (tc, index), index = [i, j] or [i, -(k+1)].

    Every pair of grains, then every grain-wall couple; on a tie the first
    one found is kept. With no contact at all: (NO_CONTACT, [-1, -1]).
    """
    old = (int(indexOld[0]), int(indexOld[1]))
    best_tc, best_index = NO_CONTACT, (-1, -1)
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            if old == (i, j) or old == (j, i):
                continue
            tc = contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
            if tc < best_tc:
                best_tc, best_index = tc, (i, j)
    for i in range(n):
        for k in range(len(w)):
            if old == (i, -(k + 1)):
                continue
            tc = contact_time_walls(w[k], x[i], v[i], R[i])
            if tc < best_tc:
                best_tc, best_index = tc, (i, -(k + 1))
    return best_tc, np.array(best_index, dtype=int)


def contact_solve_wall(wall, x1, v1, r):
    """Velocity increment dv1 of a grain bouncing on a wall of infinite mass."""
    normal = wall_normal(wall)
    return -(1.0 + r) * float(v1 @ normal) * normal


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    """Velocity increments (dv1, dv2) of two frictionless grains in contact, any masses."""
    dx = x1 - x2
    n = dx / np.hypot(dx[0], dx[1])
    un = float((v1 - v2) @ n)
    total = m1 + m2
    return -((1.0 + r) * m2 / total * un) * n, ((1.0 + r) * m1 / total * un) * n


def update(x, v, R, m, w, indexOld, r, dt, t):
    """Advance the system by dt in place (x, v, indexOld), solving every contact in time order.

    A loop, not a recursive call per contact: thousands of contacts in one dt
    are fine. Returns t + dt (the grader ignores it).
    """
    elapsed = 0.0
    for _ in range(MAX_CONTACTS_PER_UPDATE + 1):
        tc, index = minimum_contact_time(x, v, R, w, indexOld)
        left = dt - elapsed
        if tc > left:
            x += v * left
            return t + dt
        x += v * tc
        elapsed += tc
        i, j = int(index[0]), int(index[1])
        if j < 0:
            v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv1
            v[j] += dv2
        indexOld[0], indexOld[1] = i, j
    raise InelasticCollapseError(
        f"more than {MAX_CONTACTS_PER_UPDATE} contacts between t={t:g} and t={t + dt:g}: contacts are piling "
        "up without end (inelastic collapse, or a grain trapped in a gap barely wider than itself). Use a "
        "larger restitution coefficient r, give the grains more room, or call update with a smaller dt."
    )
