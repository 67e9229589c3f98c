"""Geometry derived from the statement (not from the reference), for the public tests."""

from __future__ import annotations

import numpy as np


def pair_overlap_during(x: np.ndarray, v: np.ndarray, R: np.ndarray, t_end: float,
                        skip: tuple[int, int] | None = None) -> tuple[float, tuple[int, int]]:
    """Deepest overlap of any two grains over [0, t_end] of free flight.

    Returns (depth relative to R_i + R_j, pair); depth <= 0 means none.
    """
    worst = (-np.inf, (-1, -1))
    with np.errstate(all="ignore"):
        for i in range(len(x)):
            for j in range(i + 1, len(x)):
                if skip is not None and sorted(skip) == [i, j]:
                    continue
                dx, dv = x[i] - x[j], v[i] - v[j]
                a = dv @ dv
                t = 0.0 if a == 0 else min(max(-(dx @ dv) / a, 0.0), t_end)
                reach = R[i] + R[j]
                depth = float((reach - np.linalg.norm(dx + dv * t)) / reach)
                if depth > worst[0]:
                    worst = (depth, (i, j))
    return worst


def wall_tangent(wall: np.ndarray) -> np.ndarray:
    """Unit vector along the wall line, from its first point to its second."""
    t = wall[1] - wall[0]
    return t / np.hypot(*t)


def wall_height(wall: np.ndarray, point: np.ndarray) -> float:
    """Signed distance from the wall line to a point (the sign tells the side)."""
    t = wall[1] - wall[0]
    s = point - wall[0]
    return float((t[0] * s[1] - t[1] * s[0]) / np.hypot(*t))


def wall_heights(w: np.ndarray, points: np.ndarray) -> np.ndarray:
    """wall_height of every point from every wall, as an (n, k) array: w (k, 2, 2), points (n, 2)."""
    t = w[:, 1] - w[:, 0]
    s = points[:, None, :] - w[None, :, 0]
    return (t[:, 0] * s[..., 1] - t[:, 1] * s[..., 0]) / np.hypot(t[:, 0], t[:, 1])


def rotation(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])
