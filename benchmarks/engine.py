"""Cost per collision of reference.engine (issue #13 target: <= 3 us at N = 10^4, growing no faster than log N).

    python benchmarks/engine.py [--sizes 100 1000 10000 100000] [--runs 3] [--per-grain 10]

For each N, area fraction (0.1, 0.4) and restitution (0.9, 1) it builds a random gas in a unit box
(grader.spec.scenarios.random_gas), lets it run about one collision per grain to lose the lattice start, then
times one call of reference.engine.advance long enough for about ``per-grain`` contacts per grain. It prints the
median over ``runs`` runs of the wall and CPU time per contact (grain-grain and grain-wall), the setup included, and the
anchors of issue #13 measured on this machine class beside it. The machine is shared: the load is printed too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import machine_speed  # noqa: E402 (this folder: the script's own)

from grader.spec.scenarios import random_gas  # noqa: E402
from reference import engine  # noqa: E402

#: Issue #13's figures, microseconds per collision: (pure Python, C with cell list + heap), by N.
ANCHORS: dict[int, tuple[str, str]] = {
    100: ("32-54", "-"),
    1000: ("32-54", "1.5"),
    10_000: ("32-54", "1.9"),
    100_000: ("32-54", "-"),
}
TARGET_US = 3.0


def per_contact_us(n: int, packing: float, r: float, per_grain: float, seed: int) -> tuple[float, float]:
    """Wall and CPU time per contact of one long engine.advance on a fresh gas, in microseconds."""
    s = random_gas(n=n, r=r, seed=seed, packing=packing)
    no_cap = 10**12
    # A short pilot: the collision rate, then about one collision per grain to leave the lattice start.
    pilot = 0.002
    probe = engine.advance(s.x, s.v, s.R, s.m, s.w, (-1, -1), r, pilot, max_contacts=no_cap)
    rate = max(probe.contacts, 1) / pilot
    warm = engine.advance(probe.x, probe.v, s.R, s.m, s.w, probe.last, r, n / rate, max_contacts=no_cap)
    wall, cpu = time.perf_counter(), time.process_time()
    run = engine.advance(warm.x, warm.v, s.R, s.m, s.w, warm.last, r, per_grain * n / rate, max_contacts=no_cap)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    contacts = max(run.contacts, 1)
    return 1e6 * wall / contacts, 1e6 * cpu / contacts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10_000, 100_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--per-grain", type=float, default=10.0)
    args = parser.parse_args(argv)
    if not engine.COMPILED:  # interpreted, N = 10^5 would take hours: say so rather than seem to hang
        raise SystemExit("numba is not installed (or NUMBA_DISABLE_JIT is set), so reference.engine runs as plain "
                         "Python (some 100 times slower): "
                         'install it with pip install -e ".[fast]" and run this again')
    engine.advance([[0.0, 0.0]], [[1.0, 0.0]], [0.1], [1.0], [[[0, -1], [0, 1]]], (-1, -1), 1.0, 1.0)  # compile
    print(f"reference.engine, numba compiled: {engine.COMPILED}; load average before: {os.getloadavg()}", flush=True)
    print(machine_speed.line())
    print(f"{'':>17} {'us per contact':>19}   {'issue #13 anchors (us)':>24}")
    print(f"{'N':>7} {'phi':>4} {'r':>4} {'wall':>9} {'CPU':>9}   {'pure Python':>11} {'C heap+cells':>12}")
    worst_at_target = 0.0
    for n in args.sizes:
        for packing in (0.1, 0.4):
            for r in (0.9, 1.0):
                times = [per_contact_us(n, packing, r, args.per_grain, seed) for seed in range(args.runs)]
                wall = statistics.median(t[0] for t in times)
                cpu = statistics.median(t[1] for t in times)
                if n == 10_000:
                    worst_at_target = max(worst_at_target, cpu)
                python, c = ANCHORS.get(n, ("-", "-"))
                print(f"{n:>7} {packing:>4} {r:>4} {wall:>9.2f} {cpu:>9.2f}   {python:>11} {c:>12}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    print(machine_speed.line())
    if worst_at_target:
        verdict = "meets" if worst_at_target <= TARGET_US else "misses"
        print(f"N = 10^4: worst median CPU time {worst_at_target:.2f} us per contact {verdict} the target "
              f"{TARGET_US} us (CPU time: wall time is inflated when other processes share the cores)")


if __name__ == "__main__":
    main()
