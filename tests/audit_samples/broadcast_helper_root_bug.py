"""A test sample (tests/test_grader_corpus.py): an honest file whose contact_time_grains takes one grain against an
array of others (broadcasting), called once per grain by minimum_contact_time, with one bug: the later root.
Written by a red team: the audit could not read such calls, so the same bug cost 15 points more than written
pair by pair."""
import sys

import numpy as np

NO = sys.float_info.max


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    dx = np.asarray(x1, float) - np.asarray(x2, float)
    dv = np.asarray(v1, float) - np.asarray(v2, float)
    a = np.sum(dv * dv, axis=-1)
    b = 2 * np.sum(dx * dv, axis=-1)
    c = np.sum(dx * dx, axis=-1) - (np.asarray(R1) + np.asarray(R2)) ** 2
    disc = b * b - 4 * a * c
    ok = (c >= 0) & (b < 0) & (a > 0) & (disc >= 0)
    with np.errstate(all="ignore"):
        tc = np.where(ok, (-b + np.sqrt(np.where(ok, disc, 0.0))) / (2 * np.where(ok, a, 1.0)), NO)  # BUG: + root
    return float(tc) if np.ndim(tc) == 0 else tc


def contact_time_walls(w, x1, v1, R1):
    t = w[1] - w[0]
    s = x1 - w[0]
    n = s - np.dot(s, t) * t / np.dot(t, t)
    d = np.linalg.norm(n)
    if d < R1:
        return NO
    vn = np.dot(v1, n) / d
    if vn >= 0:
        return NO
    return float((R1 - d) / vn)


def minimum_contact_time(x, v, R, w, indexOld):
    best, index = NO, np.array([-1, -1])
    a, b = int(indexOld[0]), int(indexOld[1])
    n = len(x)
    for i in range(n):
        if i + 1 < n:
            times = np.atleast_1d(contact_time_grains(x[i], x[i + 1:], v[i], v[i + 1:], R[i], R[i + 1:]))
            for k, tk in enumerate(times):
                j = i + 1 + k
                if {i, j} == {a, b}:
                    continue
                if tk < best:
                    best, index = float(tk), np.array([i, j])
        for k in range(len(w)):
            if a == i and b == -(k + 1):
                continue
            tk = contact_time_walls(w[k], x[i], v[i], R[i])
            if tk < best:
                best, index = tk, np.array([i, -(k + 1)])
    return best, index


def contact_solve_wall(wall, x1, v1, r):
    t = wall[1] - wall[0]
    n = np.array([-t[1], t[0]]) / np.linalg.norm(t)
    return -(1 + r) * np.dot(v1, n) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x1 - x2) / np.linalg.norm(x1 - x2)
    un = np.dot(v1 - v2, n)
    return -(1 + r) * m2 / (m1 + m2) * un * n, (1 + r) * m1 / (m1 + m2) * un * n


def update(x, v, R, m, w, indexOld, r, dt, t):
    while True:
        tc, index = minimum_contact_time(x, v, R, w, indexOld)
        if tc > dt:
            x += v * dt
            return
        x += v * tc
        i, j = int(index[0]), int(index[1])
        if j < 0:
            v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv1
            v[j] += dv2
        indexOld[:] = index
        dt -= tc
