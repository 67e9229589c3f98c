# EXPECT bug update: a loop that silently stops solving contacts after 1000 in one dt; all else right
"""Granular gas, hand-out style, with an update capped at 1000 contacts."""
import sys

import numpy as np

NO_CONTACT = sys.float_info.max


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    dx = x1 - x2
    dv = v1 - v2
    a = np.dot(dv, dv)
    b = np.dot(dx, dv)
    c = np.dot(dx, dx) - (R1 + R2) ** 2
    if b >= 0 or c < 0:
        return NO_CONTACT
    disc = b * b - a * c
    if disc < 0:
        return NO_CONTACT
    tc = (-b - np.sqrt(disc)) / a
    if tc < 0:
        return NO_CONTACT
    return float(tc)


def contact_time_walls(w, x1, v1, R1):
    t = w[1] - w[0]
    s = x1 - w[0]
    st = np.dot(s, t) / np.dot(t, t) * t
    n = s - st
    d = np.linalg.norm(n)
    if d < R1 or d == 0:
        return NO_CONTACT
    vn = np.dot(v1, n / d)
    if vn >= 0:
        return NO_CONTACT
    return float((d - R1) / -vn)


def minimum_contact_time(x, v, R, w, indexOld):
    tmin = NO_CONTACT
    index = np.array([-1, -1])
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            if (indexOld[0] == i and indexOld[1] == j) or (indexOld[0] == j and indexOld[1] == i):
                continue
            tc = contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
            if tc < tmin:
                tmin = tc
                index = np.array([i, j])
    for i in range(n):
        for k in range(len(w)):
            if indexOld[0] == i and indexOld[1] == -(k + 1):
                continue
            tc = contact_time_walls(w[k], x[i], v[i], R[i])
            if tc < tmin:
                tmin = tc
                index = np.array([i, -(k + 1)])
    return tmin, index


def wall_unit_normal(wall):
    t = wall[1] - wall[0]
    n = np.array([-t[1], t[0]])
    return n / np.linalg.norm(n)


def contact_solve_wall(wall, x1, v1, r):
    n = wall_unit_normal(wall)
    return -(1 + r) * np.dot(v1, n) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x1 - x2) / np.linalg.norm(x1 - x2)
    un = np.dot(v1 - v2, n)
    dv1 = -(1 + r) * m2 / (m1 + m2) * un * n
    dv2 = (1 + r) * m1 / (m1 + m2) * un * n
    return dv1, dv2


def update(x, v, R, m, w, indexOld, r, dt, t):
    delta = dt
    for _ in range(1000):
        tc, index = minimum_contact_time(x, v, R, w, indexOld)
        if tc > delta:
            x += v * delta
            return t + dt
        x += v * tc
        i, j = index
        if j < 0:
            v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv1
            v[j] += dv2
        indexOld[:] = index
        delta -= tc
    # "Enough contacts": the rest of the interval in free flight, without a word.
    x += v * delta
    return t + dt
