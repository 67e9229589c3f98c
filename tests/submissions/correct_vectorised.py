"""A correct submission written with numpy: the stable root, the distance to
the wall from a cross product, the impulse form, a loop in update, and the
grains of index in decreasing order."""
import math
import sys

import numpy as np

BIG = sys.float_info.max


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    dx, dv = np.subtract(x1, x2), np.subtract(v1, v2)
    b = dx @ dv
    c = dx @ dx - (R1 + R2) ** 2
    disc = b * b - (dv @ dv) * c
    if b >= 0 or c < 0 or disc < 0:
        return BIG
    return c / (-b + math.sqrt(disc))


def contact_time_walls(w, x1, v1, R1):
    t = w[1] - w[0]
    L = math.hypot(t[0], t[1])
    h = (t[0] * (x1[1] - w[0][1]) - t[1] * (x1[0] - w[0][0])) / L
    rate = (t[0] * v1[1] - t[1] * v1[0]) / L
    if abs(h) < R1 or h * rate >= 0:
        return BIG
    return (abs(h) - R1) / abs(rate)


def _all_times(x, v, R, w):
    n = len(x)
    times = np.full((n, n + len(w)), BIG)
    for i in range(n):
        for j in range(i):
            times[i, j] = contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
        for k in range(len(w)):
            times[i, n + k] = contact_time_walls(w[k], x[i], v[i], R[i])
    return times


def minimum_contact_time(x, v, R, w, indexOld):
    n = len(x)
    times = _all_times(x, v, R, w)
    a, b = int(indexOld[0]), int(indexOld[1])
    if a >= 0 and b >= 0:
        times[max(a, b), min(a, b)] = BIG
    elif a >= 0 and b < 0:
        times[a, n - b - 1] = BIG
    flat = int(np.argmin(times))
    i, j = divmod(flat, n + len(w))
    tc = float(times[i, j])
    if j >= n:
        j = -(j - n + 1)
    return tc, np.array([i, j])


def contact_solve_wall(wall, x1, v1, r):
    t = np.asarray(wall[1], float) - np.asarray(wall[0], float)
    normal = np.array([t[1], -t[0]]) / np.hypot(*t)
    return -(1.0 + r) * (v1 @ normal) * normal


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x2 - x1) / np.linalg.norm(x2 - x1)
    impulse = (1 + r) * (v1 - v2) @ n / (1 / m1 + 1 / m2)
    return -impulse / m1 * n, impulse / m2 * n


def update(x, v, R, m, w, indexOld, r, dt, t):
    left = dt
    while True:
        tc, index = minimum_contact_time(x, v, R, w, indexOld)
        if tc > left:
            x += v * left
            return
        x += v * tc
        left -= tc
        i, j = index
        if j < 0:
            v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv1
            v[j] += dv2
        indexOld[0], indexOld[1] = i, j
