# EXPECT <=5: trivial, free flight only: update moves every grain in a straight line, no contact is ever found or solved
"""Grains that never meet anything."""
import sys

import numpy as np


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return sys.float_info.max


def contact_time_walls(w, x1, v1, R1):
    return sys.float_info.max


def minimum_contact_time(x, v, R, w, indexOld):
    return sys.float_info.max, np.array([0, 1])


def contact_solve_wall(wall, x1, v1, r):
    return 0.0 * v1


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    return 0.0 * v1, 0.0 * v2


def update(x, v, R, m, w, indexOld, r, dt, t):
    x += v * dt
    return t + dt
