# EXPECT 100: honest, an update with its own search loop that never calls minimum_contact_time
"""Granular gas whose update finds the next contact itself, with plain loops over pairs and walls."""
import math
import sys

import numpy as np

NO_CONTACT = sys.float_info.max


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    dx, dy = x1[0] - x2[0], x1[1] - x2[1]
    ux, uy = v1[0] - v2[0], v1[1] - v2[1]
    a = ux * ux + uy * uy
    b = dx * ux + dy * uy
    c = dx * dx + dy * dy - (R1 + R2) ** 2
    if b >= 0 or c < 0 or b * b - a * c < 0:
        return NO_CONTACT
    return float(c / (-b + math.sqrt(b * b - a * c)))


def contact_time_walls(w, x1, v1, R1):
    tx, ty = w[1][0] - w[0][0], w[1][1] - w[0][1]
    length = math.hypot(tx, ty)
    nx, ny = -ty / length, tx / length
    h = (x1[0] - w[0][0]) * nx + (x1[1] - w[0][1]) * ny
    rate = v1[0] * nx + v1[1] * ny
    if h * rate >= 0 or abs(h) < R1:
        return NO_CONTACT
    return float((abs(h) - R1) / abs(rate))


def minimum_contact_time(x, v, R, w, indexOld):
    best, index = NO_CONTACT, [-1, -1]
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if sorted([int(indexOld[0]), int(indexOld[1])]) != [i, j]:
                tc = contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
                if tc < best:
                    best, index = tc, [i, j]
        for k in range(len(w)):
            if not (indexOld[0] == i and indexOld[1] == -(k + 1)):
                tc = contact_time_walls(w[k], x[i], v[i], R[i])
                if tc < best:
                    best, index = tc, [i, -(k + 1)]
    return best, np.array(index, dtype=int)


def contact_solve_wall(wall, x1, v1, r):
    t = wall[1] - wall[0]
    n = np.array([-t[1], t[0]]) / math.hypot(t[0], t[1])
    return -(1.0 + r) * float(np.dot(v1, n)) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x1 - x2) / math.hypot(*(x1 - x2))
    un = float(np.dot(v1 - v2, n))
    return -(1 + r) * m2 / (m1 + m2) * un * n, (1 + r) * m1 / (m1 + m2) * un * n


def update(x, v, R, m, w, indexOld, r, dt, t):
    """Searches for the next contact itself (same rules as minimum_contact_time), in a loop."""
    n = len(x)
    last = (int(indexOld[0]), int(indexOld[1]))
    remaining = dt
    while True:
        best, hit = NO_CONTACT, None
        for i in range(n):
            for j in range(i + 1, n):
                if last in ((i, j), (j, i)):
                    continue
                tc = contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
                if tc < best:
                    best, hit = tc, (i, j)
            for k in range(len(w)):
                if last != (i, -(k + 1)):
                    tc = contact_time_walls(w[k], x[i], v[i], R[i])
                    if tc < best:
                        best, hit = tc, (i, -(k + 1))
        if hit is None or best > remaining:
            x += v * remaining
            return t + dt
        x += v * best
        remaining -= best
        i, j = hit
        if j < 0:
            v[i] += contact_solve_wall(w[-j - 1], x[i], v[i], r)
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv1
            v[j] += dv2
        last = hit
        indexOld[0], indexOld[1] = hit
