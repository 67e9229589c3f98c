"""A red team's file (2026-11-25): it remembers the inputs of every contact_time_grains call (always answering 1.0,
so every test of it fails and is searched) and puts the last ones in the error its contact_time_walls raises. The
hidden tests' searches ran in the public ones' box, before the later public tests' searches, so the error of a
public contact_time_walls test, shown on Gradescope before the hidden tests are published, quoted a hidden test's
smallest failing input. Graded with and without the hidden tests, every public test must read the same."""

import numpy as np  # noqa: F401 - as a submission imports it

_SEEN = []


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    _SEEN.append(f"{len(_SEEN)}:" + ",".join(f"{value:.6g}" for value in (*x1, *x2, *v1, *v2, R1, R2)))
    return 1.0


def contact_time_walls(w, x1, v1, R1):
    raise ValueError("SEEN " + " ; ".join(_SEEN[-2:]))
