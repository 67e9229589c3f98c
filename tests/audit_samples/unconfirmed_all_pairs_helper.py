"""A test sample (tests/test_grader_corpus.py), from a red team: a wrong contact_time_grains that never gives the
same answers twice (no replay confirms it), called by minimum_contact_time once on all pairs and once more on 512
pairs (the real ones, repeated). Each wrong pair replayed the whole call: some 11 800 replays, 52 s of grading
instead of 7."""
import sys

import numpy as np

NO_CONTACT = sys.float_info.max


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    """One pair (shape (2,)) gives a float; arrays of pairs (shape (p, 2)) give an array of p times."""
    dx = np.asarray(x1, dtype=float) - np.asarray(x2, dtype=float)
    dv = np.asarray(v1, dtype=float) - np.asarray(v2, dtype=float)
    a = np.sum(dv * dv, axis=-1)
    b = np.sum(dx * dv, axis=-1)
    c = np.sum(dx * dx, axis=-1) - (np.asarray(R1) + np.asarray(R2)) ** 2
    disc = b * b - a * c
    ok = (b < 0) & (c >= 0) & (disc >= 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tc = np.where(ok, c / (-b + np.sqrt(np.where(ok, disc, 0.0))), NO_CONTACT)
    tc = np.where(tc < NO_CONTACT, tc, NO_CONTACT)
    global _N
    _N += 1
    tc = np.where(tc < NO_CONTACT, tc * 1.01 + _N * 1e-9, tc)  # wrong, and never twice the same: no replay confirms
    return float(tc) if tc.ndim == 0 else tc


_N = 0


def contact_time_walls(w, x1, v1, R1):
    """One grain and wall gives a float; arrays (walls (p, 2, 2), grains (p, 2)) give p times."""
    w = np.asarray(w, dtype=float)
    t = w[..., 1, :] - w[..., 0, :]
    normal = np.stack([-t[..., 1], t[..., 0]], axis=-1) / np.hypot(t[..., 0], t[..., 1])[..., None]
    h = np.sum((np.asarray(x1, dtype=float) - w[..., 0, :]) * normal, axis=-1)
    rate = np.sum(np.asarray(v1, dtype=float) * normal, axis=-1)
    gap = np.abs(h) - R1
    ok = (h * rate < 0) & (gap >= 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tc = np.where(ok, gap / np.abs(rate), NO_CONTACT)
    tc = np.where(tc < NO_CONTACT, tc, NO_CONTACT)
    return float(tc) if tc.ndim == 0 else tc


def minimum_contact_time(x, v, R, w, indexOld):
    n, k = len(x), len(w)
    i, j = np.triu_indices(n, 1)
    if len(i):  # pad the one call to 512 pairs (the real pairs, repeated): read in full, each piece replayed
        p = np.resize(np.arange(len(i)), 512)
        contact_time_grains(x[i[p]], x[j[p]], v[i[p]], v[j[p]], R[i[p]], R[j[p]])
    pair_t = np.atleast_1d(contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j]))
    g, q = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    wall_t = np.atleast_1d(contact_time_walls(w[q], x[g], v[g], R[g]))
    a, b = int(indexOld[0]), int(indexOld[1])
    pair_t[((i == a) & (j == b)) | ((i == b) & (j == a))] = NO_CONTACT
    wall_t[(g == a) & (-(q + 1) == b)] = NO_CONTACT
    times = np.concatenate([pair_t, wall_t])
    if times.size == 0 or times.min() >= NO_CONTACT:
        return NO_CONTACT, np.array([-1, -1])
    best = int(np.argmin(times))
    if best < len(pair_t):
        return float(times[best]), np.array([i[best], j[best]])
    best -= len(pair_t)
    return float(times[best + len(pair_t)]), np.array([g[best], -(q[best] + 1)])


def contact_solve_wall(wall, x1, v1, r):
    t = wall[1] - wall[0]
    n = np.array([-t[1], t[0]]) / np.hypot(t[0], t[1])
    return -(1 + r) * (v1 @ n) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x1 - x2) / np.linalg.norm(x1 - x2)
    impulse = (1 + r) * (v1 - v2) @ n / (1 / m1 + 1 / m2)
    return -impulse / m1 * n, impulse / m2 * n


def update(x, v, R, m, w, indexOld, r, dt, t):
    left = dt
    while True:
        tc, (i, j) = minimum_contact_time(x, v, R, w, indexOld)
        if tc > left:
            x += v * left
            return t + dt
        x += v * tc
        left -= tc
        if j < 0:
            v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv1
            v[j] += dv2
        indexOld[0], indexOld[1] = i, j
