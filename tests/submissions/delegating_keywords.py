# EXPECT <=5: delegating, each function passes its arguments on by keyword to another, none computes anything
"""A chain of hand-offs by keyword: the last link gives up with a constant."""
import sys

import numpy as np


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    tc, _ = minimum_contact_time(x=np.stack([x1, x2]), v=np.stack([v1, v2]), R=np.array([R1, R2]),
                                 w=np.zeros((0, 2, 2)), indexOld=np.array([-1, -1]))
    return tc


def contact_time_walls(w, x1, v1, R1):
    return contact_time_grains(x1=x1, x2=w[0], v1=v1, v2=np.zeros(2), R1=R1, R2=0.0)


def minimum_contact_time(x, v, R, w, indexOld):
    return sys.float_info.max, np.array([-1, -1])


def contact_solve_wall(wall, x1, v1, r):
    dv1, _ = contact_solve_grains(x1=x1, x2=wall[0], v1=v1, v2=np.zeros(2), m1=1.0, m2=1.0, r=r)
    return dv1


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    return np.zeros_like(v1), np.zeros_like(v2)


def update(x, v, R, m, w, indexOld, r, dt, t):
    tc, index = minimum_contact_time(x=x, v=v, R=R, w=w, indexOld=indexOld)
    return t + dt
