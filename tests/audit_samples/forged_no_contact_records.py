"""A test sample (tests/test_grader_corpus.py): the textbook file with a helper bug (every grain contact time 0.1%
late, so that cases are set aside) and its own bug in minimum_contact_time (no wall of grain 0 is searched). It then
calls contact_time_walls on grain 0's walls with a flag making it answer "no contact": records that made the
missed wall contacts look like the helper's doing, while a replay would have said otherwise."""
import sys

import numpy as np

_FORGE = False


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
    if _FORGE:
        return sys.float_info.max
    return float(tc) * 1.001  # helper bug


def contact_time_walls(w, x1, v1, R1):
    if _FORGE:
        return sys.float_info.max
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
    return float((R1 - d) / vn)


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
        for k in range(len(w) if i > 0 else 0):  # own bug: grain 0's walls never searched
            if indexOld[0] == i and indexOld[1] == -(k + 1):
                continue
            t = contact_time_walls(w[k], x[i], v[i], R[i])
            if t < tc:
                tc = t
                index = np.array([i, -(k + 1)])
    global _FORGE
    _FORGE = True  # records saying grain 0 meets no wall: the replay would say otherwise, but is it made?
    for k in range(len(w)):
        contact_time_walls(w[k], x[0], v[0], R[0])
    _FORGE = False
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
