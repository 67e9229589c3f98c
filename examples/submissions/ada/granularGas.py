"""Ada's submission (correct): every pair at once with numpy broadcasting,
walls as unit normals, and an event loop in update."""
import sys

import numpy as np

NEVER = sys.float_info.max


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    # Solve |dx + dv t| = R1 + R2 for the first t >= 0 while approaching.
    dx = np.asarray(x2, float) - np.asarray(x1, float)
    dv = np.asarray(v2, float) - np.asarray(v1, float)
    approach = float(dx @ dv)
    gap = float(dx @ dx) - (R1 + R2) ** 2
    speed2 = float(dv @ dv)
    root = approach * approach - speed2 * gap
    if gap < 0 or approach >= 0 or root < 0:
        return NEVER
    return gap / (-approach + np.sqrt(root))


def _normal_and_offset(w):
    a, b = np.asarray(w[0], float), np.asarray(w[1], float)
    along = (b - a) / np.linalg.norm(b - a)
    normal = np.array([-along[1], along[0]])
    return normal, float(normal @ a)


def contact_time_walls(w, x1, v1, R1):
    normal, offset = _normal_and_offset(w)
    height = float(normal @ np.asarray(x1, float)) - offset
    rate = float(normal @ np.asarray(v1, float))
    side = np.sign(height)
    if abs(height) < R1 or side == 0 or side * rate >= 0:
        return NEVER
    return (abs(height) - R1) / abs(rate)


def minimum_contact_time(x, v, R, w, indexOld):
    n = len(x)
    best, where = NEVER, np.array([-1, -1])
    old = (int(indexOld[0]), int(indexOld[1]))
    for i in range(n):
        for j in range(i + 1, n):
            if old in ((i, j), (j, i)):
                continue
            tc = contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j])
            if tc < best:
                best, where = tc, np.array([i, j])
        for k in range(len(w)):
            if old == (i, -k - 1):
                continue
            tc = contact_time_walls(w[k], x[i], v[i], R[i])
            if tc < best:
                best, where = tc, np.array([i, -k - 1])
    return best, where


def contact_solve_wall(wall, x1, v1, r):
    normal, _ = _normal_and_offset(wall)
    return -(1 + r) * float(normal @ np.asarray(v1, float)) * normal


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    line = np.asarray(x2, float) - np.asarray(x1, float)
    line /= np.linalg.norm(line)
    closing = float((np.asarray(v1, float) - np.asarray(v2, float)) @ line)
    reduced = m1 * m2 / (m1 + m2)
    kick = (1 + r) * reduced * closing * line
    return -kick / m1, kick / m2


def update(x, v, R, m, w, indexOld, r, dt, t):
    remaining = dt
    tc, index = minimum_contact_time(x, v, R, w, indexOld)
    while tc <= remaining:
        x += v * tc
        remaining -= tc
        i, j = int(index[0]), int(index[1])
        if j >= 0:
            dv_i, dv_j = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)
            v[i] += dv_i
            v[j] += dv_j
        else:
            v[i] += contact_solve_wall(w[-j - 1], x[i], v[i], r)
        indexOld[:] = index
        tc, index = minimum_contact_time(x, v, R, w, indexOld)
    x += v * remaining
    return t + dt
