"""A test sample (tests/test_grader_corpus.py), from a red team: the textbook file with two bugs. Its
contact_time_walls gives late wall contacts a bit early (a helper bug); its minimum_contact_time names the next wall
for late wall contacts (its own bug), and then calls contact_time_walls once more, on the pair that wrong index
names, with a global making it answer exactly the least time: a tie that made the wrong index look traced, the
record never replayed (15 points against 3.75)."""
import sys

import numpy as np


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    dx = x1 - x2
    dv = v1 - v2
    a = np.dot(dv, dv)
    b = 2 * np.dot(dx, dv)
    c = np.dot(dx, dx) - (R1 + R2) ** 2
    if c < 0 or b >= 0 or a == 0:
        return sys.float_info.max
    disc = b * b - 4 * a * c
    if disc < 0:
        return sys.float_info.max
    tc = (-b - np.sqrt(disc)) / (2 * a)
    if tc < 0:
        return sys.float_info.max
    return float(tc)


_ECHO = None


def contact_time_walls(w, x1, v1, R1):
    if _ECHO is not None:
        return _ECHO
    t = w[1] - w[0]
    s = x1 - w[0]
    st = np.dot(s, t) * t / np.dot(t, t)
    n = s - st
    d = np.linalg.norm(n)
    if d < R1:
        return sys.float_info.max
    vn = np.dot(v1, n) / d
    if vn >= 0:
        return sys.float_info.max
    tc = float((R1 - d) / vn)
    return tc * (1 - 1e-3) if tc > 0.5 else tc  # helper bug: late wall contacts a bit early


def minimum_contact_time(x, v, R, w, indexOld):
    tc = sys.float_info.max
    index = np.array([-1, -1])
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if (indexOld[0] == i and indexOld[1] == j) or (indexOld[0] == j and indexOld[1] == i):
                continue
            t = contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
            if t < tc:
                tc = t
                index = np.array([i, j])
        for k in range(len(w)):
            if indexOld[0] == i and indexOld[1] == -(k + 1):
                continue
            t = contact_time_walls(w[k], x[i], v[i], R[i])
            if t < tc:
                tc = t
                index = np.array([i, -(k + 1)])
    if index[1] < 0 and 0.5 < tc < sys.float_info.max:  # own bug: late wall contacts name the next wall
        index = np.array([index[0], -((-(index[1] + 1) + 1) % len(w) + 1)])
        global _ECHO
        _ECHO = tc
        contact_time_walls(w[-(index[1] + 1)], x[index[0]], v[index[0]], R[index[0]])  # recorded, tied, never replayed
        _ECHO = None
    return tc, index


def contact_solve_wall(wall, x1, v1, r):
    t = wall[1] - wall[0]
    n = np.array([-t[1], t[0]]) / np.linalg.norm(t)
    return -(1 + r) * np.dot(v1, n) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x1 - x2) / np.linalg.norm(x1 - x2)
    un = np.dot(v1 - v2, n)
    dv1 = -(1 + r) * m2 / (m1 + m2) * un * n
    dv2 = (1 + r) * m1 / (m1 + m2) * un * n
    return dv1, dv2


def update(x, v, R, m, w, indexOld, r, dt, t):
    # The hand-out's recursion, written as a loop: thousands of contacts in one dt.
    while True:
        tc, index = minimum_contact_time(x, v, R, w, indexOld)
        if tc > dt:
            x += v * dt
            t += dt
            return
        x += v * tc
        t += tc
        if index[1] < 0:
            dv1 = contact_solve_wall(w[-(index[1] + 1)], x[index[0], :], v[index[0], :], r)
        else:
            dv1, dv2 = contact_solve_grains(x[index[0], :], x[index[1], :], v[index[0], :],
                                            v[index[1], :], m[index[0]], m[index[1]], r)
            v[index[1], :] += dv2
        v[index[0], :] += dv1
        indexOld[:] = index
        dt = dt - tc
