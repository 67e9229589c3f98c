"""A test sample (tests/test_grading_box.py): a correct file but for contact_solve_grains, which starts with the
hand-out's equal-mass collision law and times, on its own clock, how long the grader takes between two of its calls.
The law is wrong only for unequal masses; if the least wait after such a call is 150 us longer than after equal
masses, a failure cost the grader that time, and the file takes the mass-weighted law for the tests after (update's,
which call it). The grader formatted each failure's message between the calls (234-418 us more, measured by this
file): 80.5 points against 60.5 with TRICK = False. Messages nobody reads are no longer formatted
(property.messages_unread): the difference is now -6 to 1 us and the file scores 60.5."""
import sys
import time

import numpy as np

TRICK = True
LONGER = 150e-6  # seconds: how much longer the least wait after unequal masses must be
_S = {"last": None, "gaps": {True: [], False: []}, "right": False, "decided": None}


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


def contact_time_walls(w, x1, v1, R1):
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
        for k in range(len(w)):
            if indexOld[0] == i and indexOld[1] == -(k + 1):
                continue
            t = contact_time_walls(w[k], x[i], v[i], R[i])
            if t < tc:
                tc = t
                index = np.array([i, -(k + 1)])
    return tc, index


def contact_solve_wall(wall, x1, v1, r):
    t = wall[1] - wall[0]
    n = np.array([-t[1], t[0]]) / np.linalg.norm(t)
    return -(1 + r) * np.dot(v1, n) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    # The hand-out's equal-mass law until the grader's time between two calls says it is wrong, then the right one.
    now = time.perf_counter()
    S = _S
    if S["last"] is not None:
        S["gaps"][S["last"][1]].append(now - S["last"][0])
    equal, unequal = S["gaps"][True], S["gaps"][False]
    if TRICK and S["decided"] is None and len(equal) >= 8 and len(unequal) >= 20:
        # Decided once, in the first test that calls it (the grader's, about 60 cases): a failing case cost the
        # grader more time before its next call, and only unequal masses fail this law. The least waits: load
        # only lengthens them.
        S["decided"] = min(unequal) - min(equal)
        S["right"] = S["decided"] > LONGER
    n = (x1 - x2) / np.linalg.norm(x1 - x2)
    un = np.dot(v1 - v2, n)
    share1, share2 = (m2 / (m1 + m2), m1 / (m1 + m2)) if S["right"] else (0.5, 0.5)
    dv1 = -(1 + r) * share1 * un * n
    dv2 = (1 + r) * share2 * un * n
    S["last"] = (time.perf_counter(), bool(m1 == m2))
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
