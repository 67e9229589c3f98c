"""Ben's submission (buggy, unfinished): it follows the hand-out too
literally (the wall projection divides by |t|, the collision assumes equal
masses) and update is not written yet."""
import sys

import numpy as np


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    r12, v12 = x1 - x2, v1 - v2
    A, B, C = v12 @ v12, 2 * (r12 @ v12), r12 @ r12 - (R1 + R2) ** 2
    D = B**2 - 4 * A * C
    if A == 0 or B >= 0 or C < 0 or D < 0:
        return sys.float_info.max
    return (-B - np.sqrt(D)) / (2 * A)


def contact_time_walls(w, x1, v1, R1):
    t = w[1] - w[0]
    p = w[0] + (x1 - w[0]) @ t * t / np.linalg.norm(t)  # should be |t|^2
    d = x1 - p
    dist = np.linalg.norm(d)
    speed = v1 @ d / dist
    if dist < R1 or speed >= 0:
        return sys.float_info.max
    return (dist - R1) / -speed


def minimum_contact_time(x, v, R, w, indexOld):
    candidates = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if {i, j} != {indexOld[0], indexOld[1]}:
                candidates.append((contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j]), i, j))
        for k in range(len(w)):
            if (indexOld[0], indexOld[1]) != (i, -(k + 1)):
                candidates.append((contact_time_walls(w[k], x[i], v[i], R[i]), i, -(k + 1)))
    tc, i, j = min(candidates)
    return tc, np.array([i, j])


def contact_solve_wall(wall, x1, v1, r):
    t = wall[1] - wall[0]
    n = np.array([t[1], -t[0]]) / np.linalg.norm(t)
    return -(1 + r) * (v1 @ n) * n


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    n = (x2 - x1) / np.linalg.norm(x2 - x1)
    dv = (1 + r) / 2 * ((v1 - v2) @ n) * n  # equal masses only
    return -dv, dv


def update(x, v, R, m, w, indexOld, r, dt, t):
    raise NotImplementedError("update is not written yet")
