"""Pure, vectorised contact kinematics of hard disks and walls in 2-D.

Every function broadcasts over leading axes: a single pair is shape (2,), a
batch of pairs is shape (..., 2). Nothing is modified in place.

Contact times follow the spec's conventions (:mod:`reference.conventions`, equal to grader.spec's): a contact
that never happens, or whose time would be negative because the bodies already
overlap, gets :data:`~reference.conventions.NO_CONTACT`.
"""

from __future__ import annotations

import numpy as np

from reference.conventions import NO_CONTACT


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...i->...", a, b)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """z component of a x b for vectors of shape (..., 2)."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def grain_contact_times(dx: np.ndarray, dv: np.ndarray, reach: np.ndarray | float) -> np.ndarray:
    """Time until two disks touch.

    Args:
      dx: relative position x1 - x2, shape (..., 2).
      dv: relative velocity v1 - v2, shape (..., 2).
      reach: contact distance R1 + R2, shape (...) or scalar.

    Returns:
      Contact times, shape (...): the smaller root of |dx + dv t| = reach,
      NO_CONTACT where the disks recede, move in parallel, miss each other or
      already overlap.
    """
    dx = np.asarray(dx, dtype=float)
    dv = np.asarray(dv, dtype=float)
    a = _dot(dv, dv)
    b = _dot(dx, dv)
    c = _dot(dx, dx) - np.square(reach)
    disc = b * b - a * c
    hit = (b < 0) & (disc >= 0) & (c >= 0)
    # c / (-b + sqrt(disc)) is the smaller root without the cancellation of
    # (-b - sqrt(disc)) / a; -b > 0 wherever it is used, so no division by 0.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = c / (-b + np.sqrt(np.where(hit, disc, 0.0)))
    # A contact later than the largest float (a vanishing approach speed) never happens.
    return np.where(hit & (t < NO_CONTACT), t, NO_CONTACT)


def wall_frame(walls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Origin and unit normal of walls.

    Args:
      walls: shape (..., 2, 2), ``walls[..., 0, :]`` and ``walls[..., 1, :]``
        two distinct points of each wall line.

    Returns:
      (origin, normal), each shape (..., 2). The normal is the tangent turned
      by +90 degrees; its sign depends on the order of the points.
    """
    walls = np.asarray(walls, dtype=float)
    origin = walls[..., 0, :]
    tangent = walls[..., 1, :] - origin
    length = np.hypot(tangent[..., 0], tangent[..., 1])
    normal = np.stack([-tangent[..., 1], tangent[..., 0]], axis=-1) / length[..., None]
    return origin, normal


def wall_contact_times(walls: np.ndarray, x: np.ndarray, v: np.ndarray, radius: np.ndarray | float) -> np.ndarray:
    """Time until disks touch wall lines.

    Args:
      walls: shape (..., 2, 2), two distinct points per wall.
      x, v: disk centres and velocities, shape (..., 2).
      radius: shape (...) or scalar.

    Returns:
      Contact times, shape (...): (distance - radius) / approach speed, and
      NO_CONTACT where the disk moves away from or along the wall, or already
      overlaps it.
    """
    origin, normal = wall_frame(walls)
    # Signed distance and its rate along the unit normal: no projection, so no
    # |t| versus |t|^2 slip is possible.
    height = _dot(np.asarray(x, dtype=float) - origin, normal)
    rate = _dot(np.asarray(v, dtype=float), normal)
    gap = np.abs(height) - radius
    hit = (height * rate < 0) & (gap >= 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = gap / np.abs(rate)
    return np.where(hit & (t < NO_CONTACT), t, NO_CONTACT)


def wall_impulse(walls: np.ndarray, v: np.ndarray, r: float) -> np.ndarray:
    """Velocity increment of a disk bouncing on a wall of infinite mass.

    Args:
      walls: shape (..., 2, 2). v: shape (..., 2). r: restitution in [0, 1].

    Returns:
      dv, shape (..., 2): the normal velocity is reversed and scaled by r, the
      tangential one kept.
    """
    _, normal = wall_frame(walls)
    vn = _dot(np.asarray(v, dtype=float), normal)
    return -(1.0 + r) * vn[..., None] * normal


def grain_impulse(
    dx: np.ndarray, dv: np.ndarray, m1: np.ndarray | float, m2: np.ndarray | float, r: float
) -> tuple[np.ndarray, np.ndarray]:
    """Velocity increments of two frictionless disks in contact.

    Args:
      dx: x1 - x2 at contact, shape (..., 2). dv: v1 - v2, shape (..., 2).
      m1, m2: masses, shape (...) or scalars. r: restitution in [0, 1].

    Returns:
      (dv1, dv2), each shape (..., 2), with m1 dv1 + m2 dv2 = 0 and the normal
      relative velocity after the contact equal to -r times the one before.
    """
    dx = np.asarray(dx, dtype=float)
    n = dx / np.hypot(dx[..., 0], dx[..., 1])[..., None]
    un = _dot(np.asarray(dv, dtype=float), n)
    m1 = np.asarray(m1, dtype=float)
    m2 = np.asarray(m2, dtype=float)
    total = m1 + m2
    dv1 = -((1.0 + r) * m2 / total * un)[..., None] * n
    dv2 = ((1.0 + r) * m1 / total * un)[..., None] * n
    return dv1, dv2
