"""Initial conditions of the assignment's scenarios (pure data, no physics).

A :class:`Scenario` holds everything ``update`` needs; the builders are
deterministic given their arguments (random gases take a seed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from grader.spec import NO_PREVIOUS_CONTACT


@dataclass(frozen=True)
class Scenario:
    """A system of n grains among k walls.

    Shapes: x, v (n, 2); R, m (n,); w (k, 2, 2). r is the restitution, dt the
    data-writing interval, duration the simulated time.
    """

    name: str
    x: np.ndarray
    v: np.ndarray
    R: np.ndarray
    m: np.ndarray
    w: np.ndarray
    r: float
    dt: float
    duration: float

    @property
    def n(self) -> int:
        return len(self.x)

    def fresh_index(self) -> np.ndarray:
        return np.array(NO_PREVIOUS_CONTACT, dtype=int)

    def with_(self, **changes) -> Scenario:
        return replace(self, **changes)


def box_walls(size: float, origin: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """The four walls of a square box, shape (4, 2, 2): bottom, right, top, left."""
    x0, y0 = origin
    x1, y1 = x0 + size, y0 + size
    corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=float)
    return np.stack([corners, np.roll(corners, -1, axis=0)], axis=1)


def single_grain(r: float = 1.0) -> Scenario:
    """One grain bouncing around a box of side 1."""
    return Scenario(
        "single", np.array([[0.3, 0.6]]), np.array([[0.7, -0.45]]), np.array([0.05]), np.array([1.0]),
        box_walls(1.0), r, 0.02, 5.0,
    )


def head_on(r: float = 1.0) -> Scenario:
    """Two equal grains meeting head on in the middle of the box."""
    return Scenario(
        "head_on", np.array([[0.25, 0.5], [0.75, 0.5]]), np.array([[0.5, 0.0], [-0.5, 0.0]]),
        np.array([0.05, 0.05]), np.array([1.0, 1.0]), box_walls(1.0), r, 0.02, 4.0,
    )


def unequal_masses(r: float = 0.9) -> Scenario:
    """A heavy slow grain hit off-centre by a light fast one."""
    return Scenario(
        "unequal", np.array([[0.3, 0.52], [0.7, 0.5]]), np.array([[0.6, 0.0], [-0.1, 0.05]]),
        np.array([0.04, 0.08]), np.array([1.0, 4.0]), box_walls(1.0), r, 0.02, 5.0,
    )


def c12_row(e: float = 0.2) -> Scenario:
    """ARGESIM C12: four spheres of diameter 1, gaps 1, the first hitting at v0 = 1.

    Embedded in 2-D along y = 0 in a box large enough never to be touched
    within the benchmark's 15 s.
    """
    x = np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0], [6.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    return Scenario("c12", x, v, np.full(4, 0.5), np.ones(4), box_walls(100.0, (-50.0, -50.0)), e, 0.05, 15.0)


def dem_pair(e: float = 1.0) -> Scenario:
    """The two particles of the DEM comparison, in their x-y plane.

    x1 = (0, 0) at rest, x2 = (1.1, 1.3) moving at (-1, -1); diameters 1,
    masses 0.05; they touch at t = 0.5, in a box too large to matter.
    """
    x = np.array([[0.0, 0.0], [1.1, 1.3]])
    v = np.array([[0.0, 0.0], [-1.0, -1.0]])
    return Scenario("dem", x, v, np.full(2, 0.5), np.full(2, 0.05), box_walls(100.0, (-50.0, -50.0)), e, 0.1, 1.0)


def random_gas(
    n: int = 60, r: float = 0.9, seed: int = 0, size: float = 1.0, packing: float = 0.15, speed: float = 1.0
) -> Scenario:
    """n grains of random radii at random non-overlapping places in a box.

    ``packing`` is the fraction of the box area covered by grains. Positions
    are drawn on a shuffled grid of cells, one grain per cell, so they never
    overlap whatever the seed.
    """
    if n < 1:
        raise ValueError(f"n={n}: a gas needs at least one grain")
    if not 0 < packing <= 0.5:
        raise ValueError(f"packing={packing} must lie in (0, 0.5] so that the grains fit in their cells")
    rng = np.random.default_rng(seed)
    cells = int(np.ceil(np.sqrt(n)))
    cell = size / cells
    mean_radius = np.sqrt(packing * size * size / (np.pi * n))
    R = rng.uniform(0.8, 1.2, n) * mean_radius
    R = np.minimum(R, 0.45 * cell)
    chosen = rng.permutation(cells * cells)[:n]
    centre = (np.stack([chosen % cells, chosen // cells], axis=1) + 0.5) * cell
    slack = (0.5 * cell - R)[:, None]
    x = centre + rng.uniform(-1.0, 1.0, (n, 2)) * slack
    angle = rng.uniform(0.0, 2 * np.pi, n)
    v = speed * rng.uniform(0.5, 1.0, n)[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    m = (R / mean_radius) ** 2
    return Scenario("gas", x, v, R, m, box_walls(size), r, 0.01, 2.0)


def channel(n: int = 6, seed: int = 0, gap: float = 0.5, radius: float = 0.05) -> Scenario:
    """n equal grains (r = 1) on the line y = 0 between two walls x = 0 and x = L, moving along x.

    The free length L - 2 n R is ``gap``; the grains sit in order, at least a
    hundredth of ``gap`` apart, with speeds 0.5 to 1.5 either way. ``duration``
    is a time in which thousands of contacts happen (see grader.properties.system).
    """
    if n < 2:
        raise ValueError(f"n={n}: a channel needs at least two grains")
    rng = np.random.default_rng(seed)
    free = np.sort(rng.uniform(0.0, 1.0, n)) * gap * (1 - 0.01 * (n + 1)) + 0.01 * gap * np.arange(1, n + 1)
    x = np.stack([radius + 2 * radius * np.arange(n) + free, np.zeros(n)], axis=1)
    speed = rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n)
    v = np.stack([speed, np.zeros(n)], axis=1)
    length = gap + 2 * radius * n
    w = np.array([[[0.0, -1.0], [0.0, 1.0]], [[length, -1.0], [length, 1.0]]])
    return Scenario("channel", x, v, np.full(n, radius), np.ones(n), w, 1.0, 1.0, 1.0)


SCENARIOS: dict[str, Callable[..., Scenario]] = {
    "single": single_grain,
    "head_on": head_on,
    "unequal": unequal_masses,
    "c12": c12_row,
    "dem": dem_pair,
    "gas": random_gas,
    "channel": channel,
}


def build(name: str, **kwargs) -> Scenario:
    """The scenario called ``name``; a clear error names the known ones."""
    try:
        builder = SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}") from None
    return builder(**kwargs)
