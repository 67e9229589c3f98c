"""The event queue of :mod:`reference.engine`: a min-heap in plain arrays, and the compile switch.

The heap is 4-ary (children of k: 4k + 1 ... 4k + 4): half the levels of a binary heap, and the four children's
times share a cache line, which matters once the queue outgrows the cache (n = 10^5).

An entry is a time ``ht[k]``, a rank ``hk[k]`` and four integers ``hi[k] = (owner, partner, owner's counter, partner's
counter)``; entries of equal times come out in the order of their ranks (reference.events.earliest_contact's tie
rule). Times, ranks and the rest lie in three arrays so that an entry takes 32 bytes.
Entries are never removed from the middle: an entry whose owner has collided since it was queued is stale and is
dropped when it reaches the top (the per-grain collision counters tell). :func:`compact` throws stale entries away
when the arrays fill up.

``jit`` compiles with numba when it is installed (``cache=True``: compiled once per machine, not per process) and is
the identity otherwise, so the same source runs as plain Python; ``COMPILED`` says which. numba's cache is keyed on
each source file alone: after editing this file, delete reference/__pycache__/engine_core.* and engine_cells.* (or touch
engine_core.py), or engine_core's cached code keeps the old heap.
"""

from __future__ import annotations

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


@jit
def copy_row(ht: np.ndarray, hk: np.ndarray, hi: np.ndarray, dst: int, src: int) -> None:
    ht[dst], hk[dst] = ht[src], hk[src]
    for j in range(4):
        hi[dst, j] = hi[src, j]


@jit
def sift_down(ht: np.ndarray, hk: np.ndarray, hi: np.ndarray, k: int, size: int) -> None:
    """Move entry k down to its place in the heap of ``size`` entries."""
    t, key = ht[k], hk[k]
    a, p, ca, cb = hi[k, 0], hi[k, 1], hi[k, 2], hi[k, 3]
    while True:
        first = 4 * k + 1
        if first >= size:
            break
        child = first
        for c in range(first + 1, min(first + 4, size)):
            if before(ht[c], hk[c], ht[child], hk[child]):
                child = c
        if not before(ht[child], hk[child], t, key):
            break
        copy_row(ht, hk, hi, k, child)
        k = child
    ht[k], hk[k] = t, key
    hi[k, 0], hi[k, 1], hi[k, 2], hi[k, 3] = a, p, ca, cb


@jit
def push(ht, hk, hi, size: int, t: float, a: int, p: int, ca: int, cb: int, key: int) -> int:
    """Queue event (t, a, p, ca, cb) of rank key; return the new size. The caller makes room first (compact)."""
    k = size
    while k > 0:
        parent = (k - 1) >> 2
        if not before(t, key, ht[parent], hk[parent]):
            break
        copy_row(ht, hk, hi, k, parent)
        k = parent
    ht[k], hk[k] = t, key
    hi[k, 0], hi[k, 1], hi[k, 2], hi[k, 3] = a, p, ca, cb
    return size + 1


@jit
def replace_top(ht, hk, hi, size: int, t: float, a: int, p: int, ca: int, cb: int, key: int) -> None:
    """Pop the earliest entry and push (t, a, p, ca, cb, key) in one pass (half the work of pop then push)."""
    ht[0], hk[0] = t, key
    hi[0, 0], hi[0, 1], hi[0, 2], hi[0, 3] = a, p, ca, cb
    sift_down(ht, hk, hi, 0, size)


@jit
def pop(ht: np.ndarray, hk: np.ndarray, hi: np.ndarray, size: int) -> int:
    """Remove the earliest entry (read it before); return the new size."""
    size -= 1
    if size > 0:
        copy_row(ht, hk, hi, 0, size)
        sift_down(ht, hk, hi, 0, size)
    return size


@jit
def compact(ht: np.ndarray, hk: np.ndarray, hi: np.ndarray, size: int, count: np.ndarray) -> int:
    """Drop the entries whose owner has collided since they were queued; return the new size.

    Each grain owns at most one live entry, so at most n entries remain.
    """
    keep = 0
    for k in range(size):
        if hi[k, 2] == count[hi[k, 0]]:
            copy_row(ht, hk, hi, keep, k)
            keep += 1
    for k in range(keep // 2 - 1, -1, -1):
        sift_down(ht, hk, hi, k, keep)
    return keep
