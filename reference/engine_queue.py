"""The event queue of :mod:`reference.engine`: a tournament tree over the grains, and the compile switch.

Each grain owns one slot, its earliest event: a time, a rank ``ek[a]`` (events of equal times come out in the order
of their ranks: reference.events.earliest_contact's tie rule) and two integers ``ei[a] = (partner, partner's
collision counter then)``. The times sit in the leaves of a complete binary tree, leaf ``size + a`` for grain a;
each inner node k holds the earlier of its two children (``nt[k]`` its time, ``nw[k]`` its grain; -1 for padding),
so the root is the earliest event. Giving a grain a new event replays the matches on its way up, stopping where
nothing changes.

Why a tree and not a heap (this module held a 4-ary heap until 2026-11): the grains are numbered cell by cell, so
the leaves an event touches (its grains, then their neighbours) share their lower nodes, and the upper ones stay in
the cache; a heap puts each entry wherever its time sorts it, one cache miss per level once the queue outgrows the
cache. A grain's slot is overwritten, never left stale: no entry of a grain that collided since is ever popped
(30 % fewer events than the heap on the same gases, the same collisions to the last bit): 8-12 % less CPU per
collision at N = 10^3 and 10^4; at 10^5 the share of the host's cache we get decides (benchmarks/engine.py, README).

``jit`` compiles with numba when it is installed (``cache=True``: compiled once per machine, not per process) and is
the identity otherwise, so the same source runs as plain Python; ``COMPILED`` says which. numba's cache is keyed on
each source file alone: after editing this file, delete reference/__pycache__/engine_core.* and engine_cells.* (or touch
engine_core.py), or engine_core's cached code keeps the old queue.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

numba: Any
try:  # numba is the optional extra "fast"; without it the engine is the same code, interpreted.
    import numba
except ImportError:  # pragma: no cover - exercised in a subprocess by tests/test_engine.py
    numba = None

#: True when the engine's loop is compiled by numba, False when it runs as plain (slow, correct) Python.
COMPILED: bool = numba is not None and not numba.config.DISABLE_JIT


def jit(func=None, *, allocates: bool = False):
    """numba.njit(cache=True) when numba is available, else the function itself.

    Functions that allocate no array (all but the outermost, ``allocates=True``) are compiled without numba's
    reference counting: it made every call with array arguments pay for dozens of atomic increments, more than
    half the time of a collision. error_model="numpy": no ZeroDivisionError checks (no division here can be by 0).
    """
    if func is None:
        return lambda f: jit(f, allocates=allocates)
    if numba is None:
        return func
    # _nrt is numba's switch for reference counting (a private keyword, hence no static typing of the call).
    return numba.njit(cache=True, error_model="numpy", _nrt=allocates)(func)


@jit
def before(t1: float, key1: int, t2: float, key2: int) -> bool:
    """Whether event (t1, key1) comes before event (t2, key2)."""
    return t1 < t2 or (t1 == t2 and key1 < key2)


@jit(allocates=True)
def empty_queue(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A queue of n grains, none with an event: (nt, nw, ek, ei), the tree's times and grains, the ranks, the rest."""
    size = 1
    while size < n:
        size *= 2
    nt, nw = np.full(2 * size, math.inf), np.full(2 * size, -1, np.int32)
    nw[size:size + n] = np.arange(n, dtype=np.int32)
    return nt, nw, np.zeros(n, np.int64), np.zeros((n, 2), np.int32)


@jit
def set_time(nt: np.ndarray, nw: np.ndarray, ek: np.ndarray, a: int, t: float) -> None:
    """Give grain a's leaf the time t (inf: no event; its rank already in ek[a]) and replay the matches above it."""
    size = len(nw) >> 1
    k = size + a
    nt[k] = t
    while k > 1:
        s = k ^ 1
        w, ws, tk, ts = nw[k], nw[s], nt[k], nt[s]
        if ts < tk or (ts == tk and tk < math.inf and ws >= 0 and w >= 0 and ek[ws] < ek[w]):
            w, tk = ws, ts
        k >>= 1
        if nw[k] == w and w != a:
            break  # the same winner, another grain than a (so at the same time): nothing above changes
        nw[k], nt[k] = w, tk


@jit
def schedule(queue: tuple, a: int, t: float, key: int, partner: int, cb: int) -> None:
    """Make (t, partner) grain a's event of rank key, replacing the one it had; cb: the partner's counter now."""
    nt, nw, ek, ei = queue
    ek[a] = key
    ei[a, 0], ei[a, 1] = partner, cb
    set_time(nt, nw, ek, a, t)


@jit
def drop(queue: tuple, a: int) -> None:
    """Grain a has no event (any it had is forgotten)."""
    set_time(queue[0], queue[1], queue[2], a, math.inf)
