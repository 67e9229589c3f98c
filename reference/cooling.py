"""A freely cooling granular gas of hard disks: Haff's law, then clustering (``python -m reference.cooling``).

N disks of diameter sigma = 1 and mass m = 1 (restitution r = 0.9, area fraction phi = 0.1) in a square periodic
box (``--box walls``: four elastic walls instead, so that only grain-grain collisions lose energy there too),
simulated by :mod:`reference.engine`. In the periodic box the total momentum is zero and stays so. Start: random
sequential placement without overlaps, Maxwellian velocities, then an elastic run of THERMALISE collisions per grain
(so that the pair correlation is the equilibrium one the prediction assumes), velocities rescaled to T0 = 1.
Temperature T = E / N (2-D: E/N = <m v^2 / 2> = T). The laws and fits live in :mod:`reference.cooling_theory`.

Energy lost per collision. Two equal disks with relative velocity g along the unit normal n lose
(m/4)(1 - r^2)(g.n)^2. Collisions happen at a rate proportional to |g.n|, so for a Maxwellian (each component of g
of variance 2T/m) the mean over collisions of (g.n)^2 is the ratio of the integrals of u^3 and u of exp(-u^2 m/4T),
4T/m: each collision costs (1 - r^2) T on average. With C collisions in all and c = 2C/N collisions per grain (each
collision involves two grains), dE = -(1 - r^2)(E/N) dC, hence

    E(c) = E0 exp(-(1 - r^2) c / 2).

Haff's law. Enskog's collision frequency of a 2-D gas of disks (number density n, contact value of the pair
correlation g2(phi) = (1 - 7 phi/16)/(1 - phi)^2): each grain sweeps the length 2 sigma |g| per unit time, and
<|g|> = sqrt(pi T/m), so omega = dc/dt = 2 n sigma g2 sqrt(pi T/m). Then dT/dt = -(1 - r^2) omega T / 2 with
omega = omega0 sqrt(T/T0) integrates to

    T(t) = T0 / (1 + t/tau)^2,    tau = 4 / ((1 - r^2) omega0),

fit-free from T0 and the density (the Sonine correction to the cooling rate is below 1 % at r = 0.9).
Both laws hold while the gas stays homogeneous, up to HOMOGENEOUS_C collisions per grain here (tested within
HAFF_TOLERANCE over an ensemble in tests/test_cooling.py). Later, density and shear modes grow into clusters and
the decay slows toward E ~ 1/t (Nie, Ben-Naim and Chen, Europhys. Lett. 2002, 2-D freely cooling gases): the run
reports where E(t) leaves Haff's law by more than HAFF_TOLERANCE and the exponent -d ln E / d ln t per decade of
t/tau; ``--seeds K`` runs K gases (one per core) and fits the exponent of their mean ln E per decade and over the
clustering window CLUSTERING_WINDOW. Measured (10^4 disks, periodic box, 1000 collisions per grain): E leaves Haff's
law at c = 23 (t = 2.0 tau) for seed 0; the exponent, 2 t/(t + tau) by Haff, turns back at about 1.7 (t ~ 10 tau);
the mean of 6 runs falls to about 1.2 near 10^2 tau (1.33 over 10^2-10^3 tau) and climbs again, 1.67 over
10^3-10^4 tau, as a few clusters fill the 280-sigma box: the 1/t regime is approached, not reached. With 4 x 10^4
disks (560 sigma, 2 runs of 500 collisions per grain) the exponent is 1.16 over 10^2-10^3 tau: closer to 1 as the
box grows. With walls instead, the clusters gather at them (1.2-1.6 over 10^2-10^3 tau).

    python -m reference.cooling [--grains N] [--seed S] [--seeds K] [--collisions-per-grain C] [--box periodic|walls]
                                [--json] [--plots DIR [--format png|svg|pdf]]

The figures are drawn by reference/cooling_plots.py.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reference import engine
from reference.cooling_theory import (  # noqa: F401 - the laws and fits are part of this module's interface
    CLUSTERING_WINDOW,
    DIAMETER,
    HAFF_TOLERANCE,
    HOMOGENEOUS_C,
    MASS,
    T0,
    Trace,
    analyse,
    collision_frequency,
    decade_exponents,
    decay_exponent,
    energy_by_collisions,
    ensemble_exponents,
    haff_energy,
    haff_time,
    pair_correlation,
)

GRAINS, RESTITUTION, AREA_FRACTION = 10_000, 0.9, 0.1
#: Most disks --grains accepts (about 10^5 disks take minutes; the start is placed in plain Python).
MAX_GRAINS = 1_000_000
#: Most runs --seeds accepts.
MAX_SEEDS = 100
#: Default length of a run, in collisions per grain.
COLLISIONS_PER_GRAIN = 1000.0
#: Elastic collisions per grain before cooling starts (equilibrium pair correlation and velocities).
THERMALISE = 4.0
#: Collisions per grain between samples: at least MIN_STEP, else STEP_FRACTION of those so far (log-like spacing).
MIN_STEP, STEP_FRACTION = 0.25, 0.03
#: Collisions per grain of the cluster snapshots drawn besides the last state.
SNAPSHOTS = (100.0, 250.0)


class CoolingError(ValueError):
    """An argument outside the scenario's range; the message names it."""


#: The boxes: periodic (the default; no walls for the clusters to gather at) or four elastic walls.
BOXES = ("periodic", "walls")


@dataclass(frozen=True)
class Gas:
    """Disks in the square [0, side]^2: a periodic box (w holds no wall) or one with four elastic walls."""

    x: np.ndarray
    v: np.ndarray
    R: np.ndarray
    m: np.ndarray
    w: np.ndarray
    side: float
    periodic: bool = False

    @property
    def period(self) -> float | None:
        """The engine's period: the side if the box is periodic, else None."""
        return self.side if self.periodic else None


@dataclass(frozen=True)
class Snapshot:
    """The gas after c collisions per grain, at time t."""

    c: float
    t: float
    gas: Gas


def box_walls(side: float) -> np.ndarray:
    """The four walls of [0, side]^2, shape (4, 2, 2)."""
    corners = [(0.0, 0.0), (side, 0.0), (side, side), (0.0, side)]
    return np.array([[corners[k], corners[(k + 1) % 4]] for k in range(4)])


def place(n: int, side: float, radius: float, rng: np.random.Generator) -> np.ndarray:
    """n disk centres in [radius, side - radius]^2 without overlaps (random sequential addition, cell hashed)."""
    cell = 2.0 * radius
    cells: dict[tuple[int, int], list[int]] = {}
    x = np.empty((n, 2))
    placed, tries = 0, 0
    while placed < n:
        tries += 1
        if tries > 1000 * n:
            raise CoolingError(f"cannot place {n} disks without overlaps; lower the area fraction")
        p = rng.uniform(radius, side - radius, 2)
        i, j = int(p[0] // cell), int(p[1] // cell)
        near = [k for a in (i - 1, i, i + 1) for b in (j - 1, j, j + 1) for k in cells.get((a, b), ())]
        if near and np.min(np.hypot(*(x[near] - p).T)) < 2.0 * radius:
            continue
        x[placed] = p
        cells.setdefault((i, j), []).append(placed)
        placed += 1
    return x


def initial_gas(n: int, seed: int, phi: float = AREA_FRACTION, box: str = "periodic") -> Gas:
    """Random non-overlapping disks, thermalised elastically, velocities rescaled to temperature T0.

    In a periodic box the total momentum is set to zero first (it is kept, and would be a flow that never cools).
    CoolingError for a box not in BOXES.
    """
    if box not in BOXES:
        raise CoolingError(f"box={box!r}: choose one of {', '.join(BOXES)}")
    radius = DIAMETER / 2.0
    side = math.sqrt(n * math.pi * radius**2 / phi)
    rng = np.random.default_rng(seed)
    x = place(n, side, radius, rng)
    v = rng.normal(0.0, math.sqrt(T0 / MASS), (n, 2))
    periodic = box == "periodic"
    if periodic:
        v -= v.mean(axis=0)
    R, m = np.full(n, radius), np.full(n, MASS)
    w = np.zeros((0, 2, 2)) if periodic else box_walls(side)
    omega = collision_frequency(n / side**2, phi, T0)
    warm = engine.advance(x, v, R, m, w, (-1, -1), 1.0, THERMALISE / omega, max_contacts=1 << 40,
                          period=side if periodic else None)
    v = warm.v * math.sqrt(T0 / temperature(warm.v, m))
    return Gas(warm.x, v, R, m, w, side, periodic)


def temperature(v: np.ndarray, m: np.ndarray) -> float:
    """Kinetic energy per grain, E/N = T in 2-D."""
    return float(0.5 * np.sum(m * np.sum(v * v, axis=1)) / len(v))


def cool(gas: Gas, r: float, collisions_per_grain: float, snapshots: tuple[float, ...] = ()
         ) -> tuple[Trace, list[Snapshot]]:
    """Run the gas with restitution r until ``collisions_per_grain`` grain-grain collisions per grain.

    Steps aim at MIN_STEP or STEP_FRACTION more collisions per grain each (dt from the last step's rate); a step
    whose contacts pile up (InelasticCollapseError) is retried with a quarter of dt, and the run stops (collapsed)
    if that keeps failing. Returns the trace and the gas on the first step past each of ``snapshots`` (collisions
    per grain) and at the end, last.
    """
    n = len(gas.x)
    x, v, last = gas.x, gas.v, (-1, -1)
    rate = collision_frequency(n / gas.side**2, math.pi * n / (4 * gas.side**2), temperature(v, gas.m))
    t, c, times, counts, energies = 0.0, 0.0, [0.0], [0.0], [temperature(v, gas.m)]
    collapsed, kept, pending = False, [], sorted(snapshots)
    while c < collisions_per_grain and not collapsed:
        step = min(max(MIN_STEP, STEP_FRACTION * c), collisions_per_grain - c)
        dt, cap = step / rate, int(n * max(50.0, 4.0 * step))  # cap: many times the contacts aimed at
        for _ in range(4):
            try:
                run = engine.advance(x, v, gas.R, gas.m, gas.w, last, r, dt, t, max_contacts=cap, wall_restitution=1.0,
                                     period=gas.period)
                break
            except engine.InelasticCollapseError:
                dt /= 4.0
        else:
            collapsed = True
            break
        x, v, last = run.x, run.v, run.last
        t += dt
        c += 2.0 * run.grain_contacts / n
        # The next step's dt from this step's collision rate (halved guess if nothing collided).
        rate = 2.0 * run.grain_contacts / n / dt if run.grain_contacts else rate / 2.0
        times.append(t)
        counts.append(c)
        energies.append(temperature(v, gas.m))
        while pending and c >= pending[0]:
            kept.append(Snapshot(c, t, Gas(x, v, gas.R, gas.m, gas.w, gas.side, gas.periodic)))
            pending.pop(0)
    kept.append(Snapshot(c, t, Gas(x, v, gas.R, gas.m, gas.w, gas.side, gas.periodic)))
    return Trace(np.array(times), np.array(counts), np.array(energies), collapsed), kept


def predictions(gas: Gas, r: float) -> tuple[float, float, float]:
    """(E0, omega0, tau): the fit-free inputs of Haff's law for this gas."""
    n = len(gas.x)
    density = n / gas.side**2
    phi = density * math.pi * DIAMETER**2 / 4.0
    e0 = temperature(gas.v, gas.m)
    omega0 = collision_frequency(density, phi, e0)
    return e0, omega0, haff_time(r, omega0)


def results(grains: int = GRAINS, seed: int = 0, collisions_per_grain: float = COLLISIONS_PER_GRAIN,
            r: float = RESTITUTION, box: str = "periodic", seeds: int = 1) -> tuple[dict[str, Any], list[Snapshot]]:
    """The numbers printed by ``--json``, and snapshots of the gas (SNAPSHOTS and the end) for the figures.

    seeds > 1: also an ensemble of that many runs (seeds seed, seed + 1, ...), the first being the one reported
    in full; "ensemble" holds the exponents of their mean ln E.
    """
    jobs = [(grains, other, collisions_per_grain, r, box, SNAPSHOTS if other == seed else ())
            for other in range(seed, seed + seeds)]
    if seeds == 1:
        runs = [_one_run(jobs[0])]
    else:  # one run per core
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(seeds, os.cpu_count() or 1)) as pool:
            runs = list(pool.map(_one_run, jobs))
    gas, trace, snapshots = runs[0]
    traces = [run[1] for run in runs]
    e0, omega0, tau = predictions(gas, r)
    data = {
        "grains": grains, "seed": seed, "restitution": r, "area_fraction": AREA_FRACTION,
        "box": "square, periodic" if gas.periodic else "square, elastic walls", "side": gas.side, "T0": e0,
        "omega0": omega0, "tau": tau,
        "homogeneous_collisions_per_grain": HOMOGENEOUS_C, "tolerance": HAFF_TOLERANCE,
        "collapsed": trace.collapsed, **analyse(trace, e0, tau, r),
        "ensemble": ensemble_exponents(traces, tau),
        "snapshots": [{"collisions_per_grain": s.c, "t_over_tau": s.t / tau} for s in snapshots],
        "trace": {"t": trace.t.tolist(), "collisions_per_grain": trace.c.tolist(), "energy": trace.energy.tolist()},
    }
    return data, snapshots


def _one_run(job: tuple[int, int, float, float, str, tuple[float, ...]]) -> tuple[Gas, Trace, list[Snapshot]]:
    """The start, the trace and the snapshots of one run: (grains, seed, collisions per grain, r, box, snapshots)."""
    grains, seed, collisions_per_grain, r, box, snapshots = job
    gas = initial_gas(grains, seed, box=box)
    trace, kept = cool(gas, r, collisions_per_grain, snapshots)
    return gas, trace, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference.cooling", description="A freely cooling granular gas")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--plots", metavar="DIR", help="write the figures into DIR")
    parser.add_argument("--format", default="png", help="figure format: png (default), svg or pdf")
    parser.add_argument("--grains", type=int, default=GRAINS, help=f"number of disks (default {GRAINS})")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the start (default 0)")
    parser.add_argument("--seeds", type=int, default=1,
                        help="runs in the ensemble whose mean gives the clustering exponent (default 1)")
    parser.add_argument("--box", choices=BOXES, default="periodic",
                        help="a periodic box (default) or one with four elastic walls")
    parser.add_argument("--collisions-per-grain", type=float, default=COLLISIONS_PER_GRAIN,
                        help=f"length of the run (default {COLLISIONS_PER_GRAIN:g})")
    args = parser.parse_args(argv)
    if not engine.COMPILED:  # the same code, interpreted: some 100 times slower, so say so before it seems to hang
        print('reference.cooling: numba is not installed (or NUMBA_DISABLE_JIT is set), so the engine runs as plain '
              'Python, some 100 times slower (the default run would take about an hour): '
              'pip install -e ".[fast]" for the compiled engine', file=sys.stderr)
    try:
        check_arguments(args.grains, args.collisions_per_grain, args.seeds)
        plots = _plotting(args.plots, args.format)
        data, snapshots = results(args.grains, args.seed, args.collisions_per_grain, box=args.box, seeds=args.seeds)
        if plots is not None:
            for path in plots.write_plots(Path(args.plots), data, snapshots, args.format):
                print(f"wrote {path}", file=sys.stderr)
        if args.json or not args.plots:
            print(json.dumps(data))
        return 0
    except CoolingError as exc:
        print(f"reference.cooling: {exc}", file=sys.stderr)
        return 2


def check_arguments(grains: int, collisions_per_grain: float, seeds: int = 1) -> None:
    """CoolingError naming the argument if it is outside the scenario's range."""
    if not 1 <= seeds <= MAX_SEEDS:
        raise CoolingError(f"--seeds {seeds}: give between 1 and {MAX_SEEDS} runs")
    if not 2 <= grains <= MAX_GRAINS:
        raise CoolingError(f"--grains {grains}: give between 2 and {MAX_GRAINS} disks")
    if not 0 < collisions_per_grain < 1e6:
        raise CoolingError(f"--collisions-per-grain {collisions_per_grain:g}: give a number between 0 and 1e6")


def _plotting(folder: str | None, fmt: str) -> Any:
    """The plotting module if figures were asked for, after checking --format (before any work)."""
    from reference import figures

    return figures.plotting(folder, fmt, "cooling_plots", CoolingError)


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: the plotting module raises
    # reference.cooling's error class, which this copy's except clause would not know.
    from reference.cooling import main as imported_main

    sys.exit(imported_main())
