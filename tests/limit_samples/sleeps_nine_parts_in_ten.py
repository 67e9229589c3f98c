"""A red-team sample: a file that stretched its grading's wall-clock time to ten times its CPU time, past a batch's
backstop ("grader error", no grade), without ever being seen idle.

Each call computes one part in ten and sleeps the rest, in slices short enough that the idle detector (under 1 % of
a core for 3 s) never fires, until it has used just under the call's CPU limit; then it answers (a constant
here). While ten seconds of any waiting were allowed per CPU second (beside a minute in all), this went on for as
long as the CPU budgets lasted: some 240 s of CPU and 2 200 s of sleep. Now only time asleep is charged (no task of
the box running or ready to run), 30 s in all and 0.25 s per CPU second: its `check` takes 37 to 41 s, 0 points.
tests/test_asleep.py runs it with its constants made small.
"""

import time

SLICE = 0.01
CALL_CPU = 4.5


def _stretch():
    start = time.process_time()
    while time.process_time() - start < CALL_CPU:
        slice_start = time.process_time()
        while time.process_time() - slice_start < SLICE:
            pass
        time.sleep(9 * SLICE)


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    _stretch()
    return 1.0


def contact_time_walls(w, x1, v1, R1):
    _stretch()
    return 1.0


def minimum_contact_time(x, v, R, w, indexOld):
    _stretch()
    return 1.0, [0, 1]


def contact_solve_wall(wall, x1, v1, r):
    _stretch()
    return v1


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    _stretch()
    return v1, v2


def update(x, v, R, m, w, indexOld, r, dt, t):
    _stretch()
    return x, v, indexOld, t + dt
