"""A red-team sample: a file that makes its grading last as long as it can, to reach a batch's wall-clock backstop,
where the batch reports "grader error" (no grade) instead of its 0.

Every import spends just under the import limit (20 s of CPU) and every call just under the call limit (5 s), then
ends the process: each test restarts the box and imports the file again. update, asked in more tests, first spends
its function's whole budget (120 s) on calls that return. Before Limits.grading_seconds this came to 776 s of CPU
(check took 12:56; a batch's backstop was 15 minutes). tests/test_hostile.py runs it with the constants made
small.
"""

import os
import time

IMPORT_BURN = 19.0
CALL_BURN = 4.8


def _burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


_burn(IMPORT_BURN)


def _crash():
    _burn(CALL_BURN)
    os._exit(1)


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    _crash()


def contact_time_walls(w, x1, v1, R1):
    _crash()


def minimum_contact_time(x, v, R, w, indexOld):
    _crash()


def contact_solve_wall(wall, x1, v1, r):
    _crash()


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    _crash()


def update(x, v, R, m, w, indexOld, r, dt, t):
    _burn(CALL_BURN)
    return x, v, indexOld, t + dt
