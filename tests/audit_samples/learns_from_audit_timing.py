"""A test sample (tests/test_grader_corpus.py), from a second red team: the file of learns_from_audit_replays.py, whose
auditor box now replays its calls, signals back through the clock. In the auditor, a replay of a formula-A record
(made only when the reference disagrees with it) burns CPU; the grading's box times the gap before its next call and
switches roots for the rest of its grading (78.75 points against 50 with TRICK = False). The grading's box is now
renewed after a test whose failures were audited: nothing it timed reaches the tests that follow."""
import sys
import time

import numpy as np

TRICK = True
_S = {"sign": 1.0, "learn": TRICK, "mct_calls": 0, "in_mct": 0, "decided": False,
      "A": set(), "B": set(), "rA": 0, "rB": 0, "last": None, "burnt": 0}
GAP = 1.0      # seconds of silence before an MCT call that mean "the auditor replayed formula A"
BURN = 1.5     # CPU seconds the auditor burns on replaying a formula-A record (once per audit)


def _key(x1, x2):
    return (float(x1[0]), float(x1[1]), float(x2[0]), float(x2[1]))


def _ctg(x1, x2, v1, v2, R1, R2, sign):
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
    tc = (-b + sign * np.sqrt(disc)) / (2 * a)   # sign +1: the larger root (the bug)
    if tc < 0:
        return sys.float_info.max
    return float(tc)


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    S = _S
    if S["learn"] and S["mct_calls"] and not S["in_mct"] and not S["decided"]:
        # called directly by the grader once minimum_contact_time is being graded: an audit's replay,
        # made only for a recorded answer that disagrees with the reference
        k = _key(x1, x2)
        if k in S["A"] and not S["burnt"]:
            S["burnt"] = 1   # this box is the auditor: it replays only records that disagree with the reference
            t0 = time.process_time()
            while time.process_time() - t0 < BURN:
                pass
        return _ctg(x1, x2, v1, v2, R1, R2, S["sign"])  # the recorded answer: confirms
    if S["in_mct"] == 2:
        return _ctg(x1, x2, v1, v2, R1, R2, -1.0)   # the other candidate formula
    return _ctg(x1, x2, v1, v2, R1, R2, S["sign"])


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


_plain_mct = minimum_contact_time


def minimum_contact_time(x, v, R, w, indexOld):
    S = _S
    S["mct_calls"] += 1
    S["burnt"] = 0
    now = time.monotonic()
    gap = None if S["last"] is None else now - S["last"]
    if S["learn"] and not S["decided"] and gap is not None and gap > GAP:
        S["decided"] = True
        S["sign"] = -1.0   # the auditor's burn said the larger root disagrees with the reference
        print(f"learned from the auditor's timing: gap {gap:.2f} s; using the smaller root")
    if S["learn"] and not S["decided"]:
        # probe: ask the helper both ways about every pair (B in swapped order, so a replay says which)
        S["in_mct"] = 2
        for i in range(len(x)):
            for j in range(i + 1, len(x)):
                S["B"].add(_key(x[j], x[i]))
                contact_time_grains(x[j], x[i], v[j], v[i], R[j], R[i])
        S["in_mct"] = 1
        for i in range(len(x)):
            for j in range(i + 1, len(x)):
                S["A"].add(_key(x[i], x[j]))
                contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
    S["in_mct"] = 1
    try:
        return _plain_mct(x, v, R, w, indexOld)
    finally:
        S["in_mct"] = 0
        S["last"] = time.monotonic()


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
