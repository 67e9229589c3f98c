"""How fast this machine's CPUs run right now: a fixed pure-Python loop, timed on each CPU in turn.

The benchmarks print it before and after their figures. On the machine these figures were measured on (a VM with
2 vCPUs), a CPU runs at about half speed for seconds at a time (host contention): the same loop takes 8 ms or
15 ms by spells, one CPU slow while the other is not, and CPU time doubles with it. Figures taken in a slow spell
are not comparable with those of a quiet one; this line says which one a run met.

    python benchmarks/machine_speed.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

#: Iterations of the fixed loop (about 8 ms on a quiet CPU here).
LOOP = 150_000
REPEATS = 7


def _loop() -> int:
    total = 0
    for i in range(LOOP):
        total += i * i
    return total


def loop_ms(cpu: int | None = None) -> float:
    """The median CPU milliseconds of the fixed loop, on ``cpu`` if given (and settable), else where it runs."""
    kept = os.sched_getaffinity(0)
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        spent = []
        for _ in range(REPEATS):
            started = time.process_time()
            _loop()
            spent.append(time.process_time() - started)
        return 1e3 * statistics.median(spent)
    finally:
        os.sched_setaffinity(0, kept)


def line() -> str:
    """One line: the fixed loop's median on every CPU this process may use."""
    figures = ", ".join(f"cpu{cpu} {loop_ms(cpu):.1f} ms" for cpu in sorted(os.sched_getaffinity(0)))
    return f"machine speed now (fixed loop, median of {REPEATS}; about 8 ms when quiet here): {figures}"


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print(line())
