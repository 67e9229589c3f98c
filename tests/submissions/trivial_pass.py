# EXPECT <=5: trivial, `pass` in every function (each returns None)
"""Nothing written yet."""


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    pass


def contact_time_walls(w, x1, v1, R1):
    pass


def minimum_contact_time(x, v, R, w, indexOld):
    pass


def contact_solve_wall(wall, x1, v1, r):
    pass


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    pass


def update(x, v, R, m, w, indexOld, r, dt, t):
    pass
