"""Why reference.engine's cost per collision steps up from N = 10^4 to 10^5 (issue #13): the memory, not the queue.

    python benchmarks/engine_memory.py [--events 2000000]

Times, in nanoseconds per event, a loop of the engine's own event-queue operations (reference.engine_queue: the
earliest grain given its next event, a third of the time a partner too, as the engine does) on a queue of N grains,
with and without ten reads per event of random rows of an array of 128 bytes per grain (what an event reads: its
grains and their neighbours, wherever they lie), and those reads alone. Medians of 3. Then the cache this process
really gets: the time of a load that waits for the one before, over working sets of 1 to 64 MB visited in a random
order. Where that time jumps (from about 18 ns to over 100 here, between 6 and 8 MB: the host shares its 32 MB L3) is
where the engine's arrays stop fitting, between N = 10^4 and 10^5.
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

from reference.engine_queue import COMPILED, empty_queue, jit, set_time  # noqa: E402

READS = 10
#: Working sets of the latency table (MB): the engine's arrays take about 2.5 MB at N = 10^4, 25 MB at 10^5.
CHASED_MB = (1, 2, 4, 6, 8, 16, 32, 64)
ROW = 16  # float64s per grain row: 128 bytes


@jit(allocates=True)
def _events(n: int, events: int, queue: bool, reads: int, rows: np.ndarray, seed: int) -> float:
    """Run ``events`` events on a queue of n grains (queue=False: only the reads); returns a sum of what was read.

    As in the engine: the earliest grain gets its next event, and a third of the time a partner does too. The
    partner here is any grain, not a neighbour (numbered near it, as the engine's are): the tree's worst case.
    """
    np.random.seed(seed)
    q = empty_queue(n)
    for a in range(n):
        q[2][a] = a
        set_time(q[0], q[1], q[2], a, np.random.exponential(1.0))
    total = 0.0
    for k in range(events):
        for _ in range(reads):
            total += rows[np.random.randint(0, n), 0]
        if not queue:
            continue
        t, a = q[0][1], q[1][1]
        set_time(q[0], q[1], q[2], a, t + np.random.exponential(1.0))
        if k % 3 == 0:
            b = np.random.randint(0, n)
            set_time(q[0], q[1], q[2], b, t + np.random.exponential(1.0))
    return total


@jit(allocates=True)
def _chase(following: np.ndarray, steps: int) -> int:
    """Follow ``steps`` links of a cycle through the array: each load waits for the one before (no overlap)."""
    k = 0
    for _ in range(steps):
        k = following[k]
    return k


def load_nanoseconds(megabytes: float, steps: int = 2_000_000) -> float:
    """Nanoseconds per dependent load of one cache line, the lines of ``megabytes`` visited in a random cycle."""
    lines = max(2, int(megabytes * 2**20 / 64))
    order = np.random.default_rng(0).permutation(lines) * 8  # one int64 in every 64-byte line
    following = np.zeros(lines * 8, np.int64)
    following[order] = np.roll(order, -1)
    _chase(following, steps)  # compiled, and every line touched once
    times = []
    for _ in range(3):
        cpu = time.process_time()
        _chase(following, steps)
        times.append(1e9 * (time.process_time() - cpu) / steps)
    return statistics.median(times)


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
    print("\nthe cache this process gets: ns per dependent load, by the memory visited at random")
    for megabytes in CHASED_MB:
        print(f"{megabytes:>7g} MB {load_nanoseconds(megabytes):>8.1f} ns", flush=True)
    print(machine_speed.line())


if __name__ == "__main__":
    main()
