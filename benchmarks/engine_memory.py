"""Why reference.engine's cost per collision steps up from N = 10^4 to 10^5 (issue #13): the memory, not the queue.

    python benchmarks/engine_memory.py [--events 2000000]

Times, in nanoseconds per event, a loop of the engine's own event-queue operations (reference.engine_heap: the
earliest entry replaced by the same grain's next event, a third of the time a partner's new entry pushed and its old
one left stale, as the engine does) on a queue of N grains, with and without ten reads per event of random rows of
an array of 128 bytes per grain (what an event reads: its grains and their neighbours, wherever they lie), and those
reads alone. Medians of 3. If the reads grow from 10^4 to 10^5 as the engine does, the step is the cache's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import machine_speed  # noqa: E402 (this folder: the script's own)

from reference.engine_heap import COMPILED, compact, jit, pop, push, replace_top  # noqa: E402

READS = 10
ROW = 16  # float64s per grain row: 128 bytes


@jit(allocates=True)
def _events(n: int, events: int, queue: bool, reads: int, rows: np.ndarray, seed: int) -> float:
    """Run ``events`` events on a queue of n grains (queue=False: only the reads); returns a sum of what was read."""
    np.random.seed(seed)
    ht, hk, hi = np.empty(2 * n + 16), np.empty(2 * n + 16, np.int64), np.empty((2 * n + 16, 4), np.int32)
    count = np.zeros(n, np.int32)
    size = 0
    for a in range(n):
        size = push(ht, hk, hi, size, np.random.exponential(1.0), a, 0, 0, 0, a)
    total = 0.0
    for k in range(events):
        for _ in range(reads):
            total += rows[np.random.randint(0, n), 0]
        if not queue:
            continue
        t, a = ht[0], hi[0, 0]
        if hi[0, 2] != count[a]:  # stale: its grain met another since
            size = pop(ht, hk, hi, size)
            continue
        replace_top(ht, hk, hi, size, t + np.random.exponential(1.0), a, 0, count[a], 0, a)
        if k % 3 == 0:  # a partner's next event: its entry before goes stale
            b = np.random.randint(0, n)
            count[b] += 1
            if size == len(ht):
                size = compact(ht, hk, hi, size, count)
            size = push(ht, hk, hi, size, t + np.random.exponential(1.0), b, 0, count[b], 0, b)
    return total


def nanoseconds(n: int, events: int, queue: bool, reads: int) -> float:
    rows = np.ones((n, ROW))
    _events(n, 10, queue, reads, rows, 0)  # compiled, and the arrays touched once
    times = []
    for seed in range(3):
        cpu = time.process_time()
        _events(n, events, queue, reads, rows, seed + 1)
        times.append(1e9 * (time.process_time() - cpu) / events)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    args = parser.parse_args(argv)
    if not COMPILED:
        raise SystemExit("numba is not installed (or NUMBA_DISABLE_JIT is set): "
                         'install it with pip install -e ".[fast]"')
    print(machine_speed.line())
    print(f"{'N':>7} {'queue':>8} {f'queue + {READS} reads':>18} {f'{READS} reads alone':>16}   (ns of CPU per event)")
    for n in (10_000, 100_000):
        figures = (nanoseconds(n, args.events, True, 0), nanoseconds(n, args.events, True, READS),
                   nanoseconds(n, args.events, False, READS))
        print(f"{n:>7} {figures[0]:>8.0f} {figures[1]:>18.0f} {figures[2]:>16.0f}", flush=True)
    print(machine_speed.line())


if __name__ == "__main__":
    main()
