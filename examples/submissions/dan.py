"""Dan's submission (hangs): update forgets to use up dt, so its loop never
ends; the grader stops it and grades the rest."""
import sys

import numpy as np


def contact_solve_wall(wall, x1, v1, r):
    t = wall[1] - wall[0]
    n = np.array([-t[1], t[0]]) / np.hypot(t[0], t[1])
    return -(1 + r) * np.dot(v1, n) * n


def update(x, v, R, m, w, indexOld, r, dt, t):
    elapsed = 0.0
    while elapsed < dt:
        print("step", t)  # never advances elapsed
    return t + dt
