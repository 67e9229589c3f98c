"""Event-driven simulation of a 2-D granular gas: the six functions to write.

Keep every name and signature exactly as given: the grader calls them as they
are. Replace each ``raise NotImplementedError`` by your code. You may add
helper functions and import numpy, math, sys and the rest of the standard
library; matplotlib only for plots under ``if __name__ == "__main__":``
(plt.show() does nothing during grading). This file is graded alone: it
cannot import another file of yours.

Shared conventions
------------------
* Points and vectors (x1, v1, ...) are numpy float arrays of shape (2,).
  A system of n grains has positions x and velocities v of shape (n, 2),
  radii R and masses m of shape (n,).
* A wall is the infinite line through its two points wall[0] and wall[1]
  (an array of shape (2, 2)), whatever their order, distance or orientation.
  The walls of the box are w, of shape (4, 2, 2). A grain only meets a wall it
  moves toward.
* "No contact" is the time sys.float_info.max, returned exactly: when the
  bodies never touch (they move apart, in parallel, or miss each other) and
  when the contact time would be negative (they already overlap). Never inf,
  also not for a grain moving exactly along a wall.
* A contact is named by index, an array of two integers (not floats):
  [i, j] with j >= 0 for grains i and j (either order), and
  [i, -(k+1)] for grain i and wall w[k], so that w[-(index[1]+1)] is the wall.
  [-1, -1] means "no previous contact".
* Masses may differ. The restitution coefficient r lies in [0, 1].
* Contact functions return velocity increments and must not modify any of
  their arguments.
"""

import sys

import numpy as np


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    """Time until two grains touch.

    Args:
      x1, x2: centres of the grains, shape (2,).
      v1, v2: velocities of the grains, shape (2,).
      R1, R2: radii of the grains, floats > 0.

    Returns:
      tc: the float tc >= 0 at which |x1 + v1 tc - x2 - v2 tc| = R1 + R2 for
      the first time, or exactly sys.float_info.max if the grains never touch
      or if they already overlap (negative contact time).
    """
    raise NotImplementedError("contact_time_grains is not written yet")


def contact_time_walls(w, x1, v1, R1):
    """Time until a grain touches a wall.

    Args:
      w: the wall, shape (2, 2): two distinct points w[0], w[1] of its line.
      x1, v1: centre and velocity of the grain, shape (2,).
      R1: radius of the grain, float > 0.

    Returns:
      tc: the float tc >= 0 at which the distance from x1 + v1 tc to the line
      equals R1, for a grain moving toward the line; exactly
      sys.float_info.max if the grain moves away from or exactly along the
      line (normal velocity 0: not inf), or already overlaps it.
    """
    raise NotImplementedError("contact_time_walls is not written yet")


def minimum_contact_time(x, v, R, w, indexOld):
    """Earliest contact of the whole system, other than the previous one.

    Args:
      x, v: positions and velocities of the n grains, shape (n, 2).
      R: radii, shape (n,).
      w: walls, shape (k, 2, 2) (k = 4 for the box).
      indexOld: the previous contact, integer array [a, b] in the index
        encoding above, or [-1, -1]. That contact must not be returned again
        (for two grains, in either order).

    Returns:
      (tc, index): the smallest contact time over all grain pairs and all
      grain-wall pairs, and the contact, an integer array of two entries:
      [i, j] for grains i and j, [i, -(k+1)] for grain i and wall w[k].
      With no contact at all, tc is exactly sys.float_info.max.
      Do not modify the arguments.
    """
    raise NotImplementedError("minimum_contact_time is not written yet")


def contact_solve_wall(wall, x1, v1, r):
    """Solve the contact of a grain with a wall (a wall has infinite mass).

    Args:
      wall: shape (2, 2), two distinct points of the wall line.
      x1, v1: centre and velocity of the grain at contact, shape (2,).
      r: restitution coefficient in [0, 1].

    Returns:
      dv1: velocity increment of the grain, shape (2,): after the contact the
      normal velocity is -r times what it was and the tangential one is kept.
      Do not modify the arguments.
    """
    raise NotImplementedError("contact_solve_wall is not written yet")


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    """Solve the contact of two frictionless grains of masses m1 and m2.

    Args:
      x1, x2: centres at contact, shape (2,); the normal is (x1 - x2)/|x1 - x2|.
      v1, v2: velocities before the contact, shape (2,).
      m1, m2: masses, floats > 0 (they may differ).
      r: restitution coefficient in [0, 1].

    Returns:
      (dv1, dv2): velocity increments, each shape (2,), such that momentum is
      conserved (m1 dv1 + m2 dv2 = 0), the normal relative velocity becomes
      -r times what it was, and tangential velocities are kept.
      Do not modify the arguments.
    """
    raise NotImplementedError("contact_solve_grains is not written yet")


def update(x, v, R, m, w, indexOld, r, dt, t):
    """Advance the system by dt, solving every contact in time order.

    Args:
      x, v: positions and velocities, float arrays of shape (n, 2), changed in
        place to their values at time t + dt.
      R, m: radii and masses, shape (n,).
      w: walls, shape (k, 2, 2).
      indexOld: the last contact solved, integer array of two entries, changed
        in place to the last contact solved during this call (unchanged if
        there was none).
      r: restitution coefficient in [0, 1].
      dt: time interval >= 0 (the data-writing interval).
      t: current time (informative).

    Returns:
      Nothing is required (the grader ignores the return value).

    Every contact inside dt must be solved, however many there are (the
    grader uses thousands in one dt): a loop handles any number, a recursive
    call per contact fails past Python's recursion limit (about 1000 contacts
    in one dt), and a loop that stops after a fixed count leaves contacts
    unsolved.
    """
    raise NotImplementedError("update is not written yet")
