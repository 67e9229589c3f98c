"""An efficient granular gas in numpy (a sample for the efficiency bonus; its helpers are honest_vectorised_pairs').

update keeps every candidate pair's contact time between events and recomputes only the pairs of the grains that
met: O(N) per event. The candidates are the pairs closer than 2 R_max plus twice the farthest any grain can travel
in dt (no grain is faster than all the kinetic energy in it allows), found by sorting along x: O(N log N) per call.
"""
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
    return float(tc) if tc.ndim == 0 else tc


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


def _candidate_pairs(x, cutoff):
    """The pairs (i < j, sorted) of grains closer than ``cutoff``, by a sweep along x."""
    n = len(x)
    order = np.argsort(x[:, 0], kind="stable")
    along = x[order, 0]
    counts = np.searchsorted(along, along + cutoff, side="right") - np.arange(n) - 1
    starts = np.cumsum(counts) - counts
    first = np.repeat(np.arange(n), counts)
    second = first + 1 + np.arange(counts.sum()) - np.repeat(starts, counts)
    i, j = order[first], order[second]
    gap = x[i] - x[j]
    near = np.einsum("pk,pk->p", gap, gap) <= cutoff * cutoff
    i, j = np.minimum(i[near], j[near]), np.maximum(i[near], j[near])
    ranked = np.lexsort((j, i))
    return i[ranked], j[ranked]


def update(x, v, R, m, w, indexOld, r, dt, t):
    n, k = len(x), len(w)
    if n == 0:
        return t + dt
    bound = np.sqrt(np.sum(m * np.sum(v * v, axis=1)) / np.min(m))  # the fastest any grain can become
    i, j = _candidate_pairs(x, 2 * np.max(R) + 2.0 * bound * dt * (1 + 1e-9) + 1e-12)
    g, q = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    # Times from the start of the call (now = 0); NO_CONTACT where none.
    pair_t = np.atleast_1d(np.asarray(contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j]), dtype=float))
    wall_t = np.atleast_1d(np.asarray(contact_time_walls(w[q], x[g], v[g], R[g]), dtype=float))
    now, left = 0.0, dt
    while True:
        a, b = int(indexOld[0]), int(indexOld[1])
        pairs, walls = pair_t, wall_t
        if b >= 0:
            pairs = pair_t.copy()
            pairs[((i == a) & (j == b)) | ((i == b) & (j == a))] = NO_CONTACT
        elif a >= 0:
            walls = wall_t.copy()
            walls[(g == a) & (-(q + 1) == b)] = NO_CONTACT
        best_pair = int(np.argmin(pairs)) if pairs.size else -1
        best_wall = int(np.argmin(walls)) if walls.size else -1
        at_pair = pairs[best_pair] if best_pair >= 0 else NO_CONTACT
        at_wall = walls[best_wall] if best_wall >= 0 else NO_CONTACT
        when = min(at_pair, at_wall)
        if when >= NO_CONTACT or when - now > left:
            x += v * left
            return t + dt
        tc = when - now
        x += v * tc
        left -= tc
        now = when
        if at_pair <= at_wall:
            p, s = int(i[best_pair]), int(j[best_pair])
            dv1, dv2 = contact_solve_grains(x[p], x[s], v[p], v[s], m[p], m[s], r)
            v[p] += dv1
            v[s] += dv2
            indexOld[0], indexOld[1] = p, s
            moved = np.array([p, s])
        else:
            p, wall = int(g[best_wall]), int(q[best_wall])
            v[p] += contact_solve_wall(w[wall], x[p], v[p], r)
            indexOld[0], indexOld[1] = p, -(wall + 1)
            moved = np.array([p])
        # Only the pairs and walls of the grains that met change; the pair (or wall) just solved is separating.
        touched = np.flatnonzero(np.isin(i, moved) | np.isin(j, moved))
        if touched.size:
            ti, tj = i[touched], j[touched]
            fresh = np.atleast_1d(contact_time_grains(x[ti], x[tj], v[ti], v[tj], R[ti], R[tj]))
            pair_t[touched] = np.where(fresh < NO_CONTACT, now + fresh, NO_CONTACT)
        mine = np.flatnonzero(np.isin(g, moved))
        if mine.size:
            fresh = np.atleast_1d(contact_time_walls(w[q[mine]], x[g[mine]], v[g[mine]], R[g[mine]]))
            wall_t[mine] = np.where(fresh < NO_CONTACT, now + fresh, NO_CONTACT)
        if indexOld[1] >= 0:
            pair_t[(i == indexOld[0]) & (j == indexOld[1]) | (i == indexOld[1]) & (j == indexOld[0])] = NO_CONTACT
        else:
            wall_t[(g == indexOld[0]) & (q == -(indexOld[1] + 1))] = NO_CONTACT
