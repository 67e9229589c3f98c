"""Two particles: hard sphere (instantaneous impulse) against soft sphere (DEM).

The case of the DEM coursework report: x1 = (0, 0, 0), x2 = (1.1, 1.3, 0),
diameters 1, masses 0.05, v1 = 0, v2 = (-1, -1, 0); restitution e.

* Hard sphere: the contact time solves |x2 - x1 + (v2 - v1) t| = d; the
  velocities jump by the impulse J = (1 + e) mu (v1 - v2).n n, with mu the
  reduced mass and n the unit vector from 1 to 2. The contact is a point in
  time: the contact point after is the one before.
* Soft sphere: a linear spring on the overlap delta = d - |x2 - x1|, stiffness
  k = 750 N/m while the overlap grows (loading) and k e^2 while it shrinks
  (unloading), so that the exit speed is e times the entry speed. Leapfrog
  (kick-drift-kick: half a velocity step, a position step, half a velocity
  step with the new force), dt = 1e-4 s.

For this force law the contact lasts a quarter period on each branch:
    T = (pi / 2) sqrt(mu / k) (1 + 1 / e).

    python -m reference.dem --json [--plots DIR [--format svg|pdf|png]]

The figures are drawn by reference/dem_plots.py.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

X1, X2 = np.array([0.0, 0.0, 0.0]), np.array([1.1, 1.3, 0.0])
V1, V2 = np.array([0.0, 0.0, 0.0]), np.array([-1.0, -1.0, 0.0])
DIAMETER, MASS = 1.0, 0.05
STIFFNESS, DT = 750.0, 1e-4
RESTITUTIONS = (1.0, 0.75)


class DEMError(ValueError):
    """An argument that makes no sense for this case; the message names it."""


@dataclass(frozen=True)
class Pair:
    """Two spheres: positions, velocities (3-vectors), diameters, masses."""

    x1: np.ndarray = field(default_factory=X1.copy)
    x2: np.ndarray = field(default_factory=X2.copy)
    v1: np.ndarray = field(default_factory=V1.copy)
    v2: np.ndarray = field(default_factory=V2.copy)
    d1: float = DIAMETER
    d2: float = DIAMETER
    m1: float = MASS
    m2: float = MASS

    @property
    def reduced_mass(self) -> float:
        return self.m1 * self.m2 / (self.m1 + self.m2)


def contact_time(pair: Pair = Pair()) -> float:
    """First time the spheres touch (inf if they never do)."""
    dx, dv = pair.x2 - pair.x1, pair.v2 - pair.v1
    reach = (pair.d1 + pair.d2) / 2
    a, b, c = dv @ dv, dx @ dv, dx @ dx - reach**2
    disc = b * b - a * c
    if c < 0:
        raise DEMError("the spheres overlap at t = 0; give positions at least (d1 + d2)/2 apart")
    if b >= 0 or disc < 0:
        return math.inf
    return float(c / (-b + math.sqrt(disc)))  # the stable root


def contact_point(x1: np.ndarray, x2: np.ndarray, d1: float, d2: float) -> np.ndarray:
    """The point of sphere 1's surface toward sphere 2 (the midpoint for equal spheres)."""
    n = (x2 - x1) / np.linalg.norm(x2 - x1)
    return x1 + (d1 / 2) * n


def overlap_and_normal(x1: np.ndarray, x2: np.ndarray, d1: float, d2: float) -> tuple[float, np.ndarray]:
    """(overlap >= 0, unit normal from 1 to 2); the normal is 0 for coincident centres."""
    dx = x2 - x1
    distance = float(np.linalg.norm(dx))
    normal = dx / distance if distance > 1e-12 else np.zeros_like(dx)
    return max(0.0, (d1 + d2) / 2 - distance), normal


def hard_sphere(e: float, pair: Pair = Pair()) -> dict:
    """Velocities after the impulse, and the contact point (before = after)."""
    _check_e(e)
    tc = contact_time(pair)
    if not math.isfinite(tc):
        raise DEMError("the spheres never touch")
    x1, x2 = pair.x1 + pair.v1 * tc, pair.x2 + pair.v2 * tc
    n = (x2 - x1) / np.linalg.norm(x2 - x1)
    impulse = (1 + e) * pair.reduced_mass * float((pair.v1 - pair.v2) @ n)
    point = contact_point(x1, x2, pair.d1, pair.d2)
    return {"v1": pair.v1 - impulse / pair.m1 * n, "v2": pair.v2 + impulse / pair.m2 * n,
            "contact_point_before": point, "contact_point_after": point, "t": tc}


def _check_e(e: float) -> None:
    if not 0.0 < e <= 1.0:
        raise DEMError(f"e = {e}: the restitution coefficient must lie in (0, 1] for the spring model")


@dataclass
class SoftRun:
    t: np.ndarray  # time of every step
    reach: np.ndarray  # (d1 + d2)/2 - distance: the overlap when > 0
    force: np.ndarray  # magnitude of the contact force
    x1: np.ndarray  # (steps, 3)
    x2: np.ndarray
    v1: np.ndarray
    v2: np.ndarray


def soft_sphere_run(e: float, pair: Pair = Pair(), k: float = STIFFNESS, dt: float = DT,
                    after: float = 0.01) -> SoftRun:
    """Leapfrog until ``after`` seconds past the end of the contact."""
    _check_e(e)
    if not (k > 0 and dt > 0):
        raise DEMError(f"k = {k}, dt = {dt}: both must be > 0")
    x1, x2, v1, v2 = (np.array(a, dtype=float) for a in (pair.x1, pair.x2, pair.v1, pair.v2))

    def force_on_2(x1, x2, v1, v2) -> tuple[np.ndarray, float]:
        delta, n = overlap_and_normal(x1, x2, pair.d1, pair.d2)
        if delta <= 0:
            return np.zeros(3), 0.0
        growing = float((v2 - v1) @ n) < 0  # approaching: the overlap grows
        stiffness = k if growing else k * e * e
        return stiffness * delta * n, stiffness * delta

    def reach(x1, x2) -> float:
        return (pair.d1 + pair.d2) / 2 - float(np.linalg.norm(x2 - x1))

    record: list[tuple] = []
    f2, magnitude = force_on_2(x1, x2, v1, v2)
    t, ended_at = 0.0, None
    limit = contact_time(pair) + 10 * math.pi * math.sqrt(pair.reduced_mass / (k * e * e)) + after
    while t < limit:
        signed = reach(x1, x2)
        record.append((t, signed, magnitude, x1.copy(), x2.copy(), v1.copy(), v2.copy()))
        if ended_at is None and signed <= 0 and len(record) > 1 and record[-2][1] > 0:
            ended_at = t
        if ended_at is not None and t >= ended_at + after:
            break
        v1_half, v2_half = v1 - f2 / pair.m1 * dt / 2, v2 + f2 / pair.m2 * dt / 2
        x1, x2 = x1 + v1_half * dt, x2 + v2_half * dt
        f2, magnitude = force_on_2(x1, x2, v1_half, v2_half)
        v1, v2 = v1_half - f2 / pair.m1 * dt / 2, v2_half + f2 / pair.m2 * dt / 2
        t += dt
    columns = list(zip(*record, strict=True))
    return SoftRun(*(np.array(c) for c in columns))


def _crossing(run: SoftRun, before: int) -> float:
    """Time the overlap crosses zero between steps ``before`` and ``before + 1`` (linear)."""
    a, b = run.reach[before], run.reach[before + 1]
    return float(run.t[before] + (run.t[before + 1] - run.t[before]) * a / (a - b))


def soft_sphere(e: float, pair: Pair = Pair(), k: float = STIFFNESS, dt: float = DT) -> dict:
    """Velocities after the contact, its duration and the contact points (first and last overlap).

    The duration runs from the first to the last zero of the overlap, each
    interpolated between the two steps around it (counting whole steps, as
    the report does, would be up to 2 dt short).
    """
    run = soft_sphere_run(e, pair, k, dt)
    touching = np.flatnonzero(run.reach > 0)
    if touching.size == 0:
        raise DEMError("the spheres never touch")
    first, last = int(touching[0]), int(touching[-1])
    return {
        "v1": run.v1[-1], "v2": run.v2[-1],
        "duration": _crossing(run, last) - _crossing(run, first - 1),
        "contact_point_before": contact_point(run.x1[first], run.x2[first], pair.d1, pair.d2),
        "contact_point_after": contact_point(run.x1[last], run.x2[last], pair.d1, pair.d2),
    }


def contact_duration(e: float, pair: Pair = Pair(), k: float = STIFFNESS) -> float:
    """Closed form: a quarter period of loading at k and one of unloading at k e^2."""
    _check_e(e)
    return math.pi / 2 * math.sqrt(pair.reduced_mass / k) * (1 + 1 / e)


def results() -> dict:
    """The comparison, as printed by ``--json``."""
    hard = {e: hard_sphere(e) for e in RESTITUTIONS}
    soft = {e: soft_sphere(e) for e in RESTITUTIONS}

    def plain(v: np.ndarray) -> list[float]:
        return [round(float(c), 12) + 0.0 for c in v]

    return {
        "contact_time": contact_time(),
        "contact_point_before": plain(hard[1.0]["contact_point_before"]),
        "hard_sphere": {str(e): {"v1": plain(h["v1"]), "v2": plain(h["v2"]),
                                 "contact_point_after": plain(h["contact_point_after"])} for e, h in hard.items()},
        "soft_sphere": {str(e): {"v1": plain(s["v1"]), "v2": plain(s["v2"]), "duration": s["duration"],
                                 "contact_point_after": plain(s["contact_point_after"])} for e, s in soft.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference.dem", description="Hard vs soft sphere, two particles")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--plots", metavar="DIR", help="write the figures into DIR")
    parser.add_argument("--format", default="png", help="figure format: png (default), svg or pdf")
    args = parser.parse_args(argv)
    try:
        from reference import figures

        dem_plots = figures.plotting(args.plots, args.format, "dem_plots", DEMError)
        if dem_plots is not None:
            for path in dem_plots.write_plots(Path(args.plots), args.format):
                print(f"wrote {path}", file=sys.stderr)
        if args.json or not args.plots:
            print(json.dumps(results()))
        return 0
    except DEMError as exc:
        print(f"reference.dem: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: the plotting module raises
    # reference.dem's error class, which this copy's except clause would not know.
    from reference.dem import main as imported_main

    sys.exit(imported_main())
