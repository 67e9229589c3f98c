"""ARGESIM benchmark C12: collision processes in a row of spheres.

Four spheres of diameter d = 1 lie on a line with gaps a = 1 (centres at 0,
2, 4, 6), masses 1. At t = 0 the first moves at v0 = 1 toward the second;
every collision of neighbours i, i+1 with restitution e changes

    v_i   -= (1 + e) m_{i+1} / (m_i + m_{i+1}) (v_i - v_{i+1})
    v_i+1 += (1 + e) m_i     / (m_i + m_{i+1}) (v_i - v_{i+1})

and between collisions every sphere moves at constant speed. Spheres are
numbered 1 to 4 in everything this module returns.

Two solutions: the exact event-oriented one (the next collision is the
smallest gap / closing speed; gaps are the state, as the benchmark advises,
so that no rounding of positions makes a collision vanish), and the
time-oriented one of the TU Wien spreadsheet study (a grid of step dt,
collisions handled at the first grid time a gap is found closed).

Inelastic collapse: for e below a threshold the collisions accumulate
infinitely often in finite time. For four equal spheres the threshold is
e_c = 3 - 2 sqrt(2) = 0.1715729...; the number of collisions grows without
bound as e decreases to e_c, and near it double precision miscounts them
(round-off in gaps of 1e-16 decides the order of collisions). The
high-precision mode repeats the count with mpmath at increasing precision
until it no longer changes.

    python -m reference.c12 --json [--plots DIR [--format svg|pdf|png]] [--samples N]
    python -m reference.c12 --e 0.172 --digits 50 --json

The figures are drawn by reference/c12_plots.py.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

V0, DIAMETER, GAP, T_END = 1.0, 1.0, 1.0, 15.0
MASSES = (1.0, 1.0, 1.0, 1.0)
#: Below this restitution four equal spheres collapse (infinitely many collisions).
CRITICAL_E = 3.0 - 2.0 * math.sqrt(2.0)
#: Quasi-plastic: every final velocity equal to the common one, v0/4, to six
#: decimals (within this fraction of v0).
QUASI_PLASTIC_SPREAD = 5e-7
#: Time-oriented step of the TU Wien spreadsheet.
SPREADSHEET_DT = 0.05


class C12Error(ValueError):
    """An argument outside the benchmark's range; the message names it."""


@dataclass(frozen=True)
class Collision:
    t: Any  # float, or mpmath.mpf in the high-precision mode
    pair: tuple[int, int]  # spheres, numbered from 1


@dataclass
class RowRun:
    """The collisions of one run and the state after the last one."""

    collisions: list[Collision]
    velocities: list  # final velocities, sphere 1 first
    positions: list  # positions at the end of the run (t_end or the last collision)
    settled: bool  # no further collision can happen
    #: (t, positions) at t = 0 and after every collision, for plots.
    history: list[tuple[Any, list]] = field(default_factory=list)


def _check_e(e: float) -> None:
    if not 0.0 <= float(e) <= 1.0:
        raise C12Error(f"e = {e}: the restitution coefficient must lie in [0, 1]")


def start(v0: float = V0, n: int = 4, gap: float = GAP, d: float = DIAMETER, number: Callable = float):
    """Positions and velocities at t = 0: sphere 1 moving, the others at rest."""
    x = [number(k) * (number(gap) + number(d)) for k in range(n)]
    v = [number(v0)] + [number(0)] * (n - 1)
    return x, v


def _collide(v: list, j: int, e, m: tuple) -> None:
    """Velocities after the collision of spheres j and j+1 (0-based), in place."""
    closing = v[j] - v[j + 1]
    v[j] -= (1 + e) * m[j + 1] / (m[j] + m[j + 1]) * closing
    v[j + 1] += (1 + e) * m[j] / (m[j] + m[j + 1]) * closing


def event_row(e: float, v0: float = V0, masses: tuple = MASSES, gap: float = GAP, d: float = DIAMETER,
              t_end: float = math.inf, max_collisions: int = 1_000_000, number: Callable = float,
              history: bool = False) -> RowRun:
    """Exact event-oriented solution.

    number: the number type (float, or mpmath.mpf for high precision).
    t_end: stop before the first collision after it (inf: until none can come).
    """
    _check_e(e)
    e = number(e)
    m = tuple(number(mi) for mi in masses)
    x, v = start(v0, len(masses), gap, d, number)
    first = x[0]
    gaps = [x[k + 1] - x[k] - number(d) for k in range(len(x) - 1)]
    t = number(0)
    collisions: list[Collision] = []
    trace = [(t, list(x))] if history else []
    settled = False

    def positions() -> list:
        out = [first]
        for y in gaps:
            out.append(out[-1] + number(d) + y)
        return out

    while len(collisions) < max_collisions:
        closing = [(gaps[k] / (v[k] - v[k + 1]) if gaps[k] > 0 else number(0), k)
                   for k in range(len(gaps)) if v[k] > v[k + 1]]
        if not closing:
            settled = True
            break
        dt, j = min(closing)
        if t + dt > t_end:
            break
        t += dt
        first += v[0] * dt
        for k in range(len(gaps)):
            gaps[k] += (v[k + 1] - v[k]) * dt
        gaps[j] = number(0)  # exactly in contact: no drift into overlap
        _collide(v, j, e, m)
        collisions.append(Collision(t, (j + 1, j + 2)))
        if history:
            trace.append((t, positions()))
    if math.isfinite(t_end) and (settled or t < t_end):
        # Drift to t_end so the positions are those at the end of the window.
        rest = number(t_end) - t
        first += v[0] * rest
        gaps = [gaps[k] + (v[k + 1] - v[k]) * rest for k in range(len(gaps))]
        if history:
            trace.append((number(t_end), positions()))
    return RowRun(collisions, list(v), positions(), settled, trace)


def time_row(e: float, dt: float = SPREADSHEET_DT, t_end: float = T_END, v0: float = V0,
             masses: tuple = MASSES, gap: float = GAP, d: float = DIAMETER) -> RowRun:
    """Time-oriented solution of the spreadsheet study: collisions found on a grid.

    Every step moves the spheres by v dt; a gap that is closed (<= 0) and was
    closing during the step counts as a collision at the end of the step,
    handled with the velocities of the step, pair by pair from the left.
    """
    _check_e(e)
    if not dt > 0:
        raise C12Error(f"dt = {dt}: the time step must be > 0")
    x, v = start(v0, len(masses), gap, d)
    x, v = np.array(x), np.array(v)
    steps = int(round(t_end / dt))
    collisions: list[Collision] = []
    trace = [(0.0, x.tolist())]
    gaps = np.diff(x) - d
    for step in range(1, steps + 1):
        x = x + v * dt
        new_gaps = np.diff(x) - d
        hit = [k for k in range(len(gaps)) if new_gaps[k] <= 0 and gaps[k] - new_gaps[k] > 0]
        velocities = list(v)
        for k in hit:
            _collide(velocities, k, e, masses)
            collisions.append(Collision(round(step * dt, 10), (k + 1, k + 2)))
        v = np.array(velocities)
        gaps = new_gaps
        trace.append((step * dt, x.tolist()))
    return RowRun(collisions, v.tolist(), x.tolist(), False, trace)


# -- the benchmark's tasks -----------------------------------------------------------
# Every task looks at the benchmark's window [0, T_END], as the papers do
# (re-hits after it, e.g. sphere 1 catching sphere 2 again for e > 0.54,
# are not counted).
def final_velocities(e: float) -> list[float]:
    return event_row(e, t_end=T_END).velocities


def spread(velocities: list) -> float:
    """Largest distance of a final velocity from the common one, in units of v0."""
    common = sum(m * u for m, u in zip(MASSES, velocities, strict=True)) / sum(MASSES)
    return max(abs(u - common) for u in velocities) / V0


def quasi_plastic_e(tolerance: float = QUASI_PLASTIC_SPREAD) -> float:
    """The largest e for which the spheres end up quasi-plastic.

    Criterion: every final velocity lies within ``tolerance`` v0 of the common
    velocity v0/4 (spread <= tolerance). The spread vanishes as e decreases
    to the collapse threshold; the largest such e is found on a grid of step
    1e-4 from e_c up, then refined by bisection at the first crossing.
    """
    grid = np.arange(math.ceil(CRITICAL_E * 1e4) / 1e4 + 1e-4, 0.54, 1e-4)
    spreads = [spread(final_velocities(e)) for e in grid]
    above = next(k for k, s in enumerate(spreads) if s > tolerance)
    lo, hi = grid[above - 1], grid[above]
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if spread(final_velocities(mid)) <= tolerance else (lo, mid)
    return float(lo)


def half_speed_e(v0: float = V0) -> float:
    """c1: the e for which sphere 4 ends with v0/2, by bisection.

    For e above about 0.54 the window holds three collisions, 1-2, 2-3, 3-4
    (sphere 4 is never hit again), so v4 = ((1 + e)/2)^3 v0 and the closed
    form is e = 2^(2/3) - 1.
    """
    lo, hi = 0.54, 1.0  # v4(lo) < v0/2 < v4(hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if event_row(mid, v0, t_end=T_END).velocities[-1] < v0 / 2 else (lo, mid)
    return (lo + hi) / 2


def monte_carlo(n: int = 10_000, mean: float = 0.5, sd: float = 0.05, seed: int = 12) -> dict:
    """c2: final v4 for e ~ N(mean, sd).

    ci95: the 95 % confidence interval of the mean v4 (mean +- 1.96 s / sqrt(n),
    as both papers give it); central95: the interval holding the central 95 %
    of the final v4 themselves, the 2.5th and 97.5th percentiles of the samples.
    """
    if n < 2:
        raise C12Error(f"n = {n}: the Monte Carlo needs at least 2 samples")
    rng = np.random.default_rng(seed)
    es = np.clip(rng.normal(mean, sd, n), 0.0, 1.0)
    v4 = np.array([final_velocities(e)[-1] for e in es])
    m, s = float(v4.mean()), float(v4.std(ddof=1))
    half = 1.959963984540054 * s / math.sqrt(n)
    return {"n": n, "mean": m, "std": s, "ci95": [m - half, m + half],
            "central95": [float(q) for q in np.percentile(v4, [2.5, 97.5])], "samples": v4}


def sweep(es: list[float]) -> tuple[list[int], list[list[float]]]:
    """b1 and b2: number of collisions and final velocities for every e."""
    runs = [event_row(e, t_end=T_END) for e in es]
    return [len(r.collisions) for r in runs], [r.velocities for r in runs]


SWEEP_E = [round(0.175 + 0.005 * k, 3) for k in range(166)]  # 0.175 ... 1.0


def _counts(run: RowRun, number_of_digits: int | None) -> dict:
    """Both counts of a run until no pair approaches: in [0, T_END] and in all, and the last collision's time."""
    window = sum(1 for c in run.collisions if c.t <= T_END)
    last = float(run.collisions[-1].t) if run.collisions else 0.0
    return {"digits": number_of_digits, "window": window, "total": len(run.collisions), "last_t": last,
            "settled": run.settled, "v": [float(u) for u in run.velocities]}


def float_counts(e: float, max_collisions: int = 10_000_000) -> dict:
    """Both counts in double precision (the event-oriented solution, gaps as the state)."""
    _check_e(e)
    return _counts(event_row(e, t_end=math.inf, max_collisions=max_collisions), None)


def high_precision(e: float, digits: int | None = None, max_collisions: int = 10_000_000,
                   max_digits: int | None = None) -> dict:
    """Collisions for one e in mpmath arithmetic, run until no pair approaches.

    Reports ``window`` (collisions in [0, T_END], also as ``n``), ``total``
    and ``last_t`` (the time of the last collision), with the double-precision
    counts beside (``float``). digits: the precision (decimal digits). None:
    start at 30 and double until two successive precisions give the same
    counts (the convergence check), at most ``max_digits`` (default: 16 000
    above e_c, where 14 770 collisions at e = 0.1715729 need 3 840; 240 at or
    below e_c, where the counts grow with the digits without end: collapse).
    """
    import mpmath

    _check_e(e)
    if digits is not None and digits < 15:
        raise C12Error(f"--digits {digits}: give at least 15 (double precision has about 16)")

    def count(d: int) -> dict:
        with mpmath.workdps(d):
            run = event_row(mpmath.mpf(str(e)), t_end=math.inf, number=mpmath.mpf, max_collisions=max_collisions)
        return _counts(run, d)

    if max_digits is None:
        max_digits = 16_000 if e > CRITICAL_E else 240
    if digits is not None:
        out = count(digits)
        tried = [(digits, out["window"], out["total"])]
    else:
        out = count(30)
        tried = [(30, out["window"], out["total"])]
        while 2 * out["digits"] <= max_digits:
            finer = count(2 * out["digits"])
            tried.append((finer["digits"], finer["window"], finer["total"]))
            stable = (finer["window"], finer["total"]) == (out["window"], out["total"])
            out = finer
            if stable:
                break
    converged = len(tried) > 1 and tried[-1][1:] == tried[-2][1:]
    return {"e": float(e), **out, "n": out["window"], "converged": converged, "tried": tried,
            "float": {k: v for k, v in float_counts(e, max_collisions).items() if k in ("window", "total", "last_t")}}


def table(collisions: list[Collision]) -> list[dict]:
    """A collision table as JSON: time and pair (spheres numbered from 1)."""
    return [{"t": float(c.t), "pair": list(c.pair)} for c in collisions]


def results(monte_carlo_n: int = 10_000) -> dict:
    """Every task's result, as printed by ``--json``.

    a1 holds both collision tables for e = 0.2: the exact event-oriented one
    ("collisions") and the time-oriented one of the spreadsheet ("time_grid").
    """
    e_qp = quasi_plastic_e()
    n, v = sweep(SWEEP_E)
    mc = monte_carlo(monte_carlo_n)
    return {
        "a1": {"e": 0.2, "collisions": table(event_row(0.2, t_end=T_END).collisions),
               "time_grid": {"dt": SPREADSHEET_DT, "collisions": table(time_row(0.2).collisions)}},
        "a2": {"elastic": final_velocities(1.0), "quasi_plastic_e": e_qp, "quasi_plastic": final_velocities(e_qp)},
        "b1": {"e": SWEEP_E, "n": n},
        "b2": {"e": SWEEP_E, "v": v},
        "c1": {"e": half_speed_e()},
        "c2": {k: mc[k] for k in ("n", "mean", "std", "ci95", "central95")},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference.c12", description="ARGESIM benchmark C12")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--plots", metavar="DIR", help="write the figures into DIR")
    parser.add_argument("--format", default="png", help="figure format: png (default), svg or pdf")
    parser.add_argument("--samples", type=int, default=10_000, help="Monte Carlo samples for c2 (default 10000)")
    parser.add_argument("--e", type=float, help="one restitution coefficient, in high precision (mpmath)")
    parser.add_argument("--digits", type=int, help="decimal digits for --e (default: until the count is stable)")
    args = parser.parse_args(argv)
    try:
        if args.e is not None:
            out = high_precision(args.e, args.digits)
            keys = ("e", "digits", "converged", "window", "total", "last_t", "float", "v")
            print(json.dumps({k: out[k] for k in keys}) if args.json else
                  f"e = {out['e']}: {out['window']} collisions in [0, {T_END:g}], {out['total']} in all (the last at "
                  f"t = {out['last_t']:.6g}) with {out['digits']} digits (window and total counts by digits: "
                  f"{out['tried']}); in double precision {out['float']['window']} and {out['float']['total']}; "
                  f"final velocities {out['v']}")
            return 0
        if args.digits is not None:
            raise C12Error("--digits goes with --e VALUE")
        plots = _plotting(args.plots, args.format)
        data = results(args.samples)
        if plots is not None:
            for path in plots.write_plots(Path(args.plots), data, args.format):
                print(f"wrote {path}", file=sys.stderr)
        if args.json or not args.plots:
            print(json.dumps(data))
        return 0
    except C12Error as exc:
        print(f"reference.c12: {exc}", file=sys.stderr)
        return 2


def _plotting(folder: str | None, fmt: str) -> Any:
    """The plotting module if figures were asked for, after checking --format (before any work)."""
    from reference import figures

    return figures.plotting(folder, fmt, "c12_plots", C12Error)


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: the plotting module raises
    # reference.c12's error class, which this copy's except clause would not know.
    from reference.c12 import main as imported_main

    sys.exit(imported_main())
