# EXPECT <=5: trivial, every function returns (some of) its inputs unchanged
"""Each function hands back what it was given."""
import numpy as np


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return float(R1 + R2)


def contact_time_walls(w, x1, v1, R1):
    return float(R1)


def minimum_contact_time(x, v, R, w, indexOld):
    return float(R[0]), np.array(indexOld)


def contact_solve_wall(wall, x1, v1, r):
    return v1.copy()


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    return v1.copy(), v2.copy()


def update(x, v, R, m, w, indexOld, r, dt, t):
    return t
