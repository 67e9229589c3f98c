"""The cell list of :mod:`reference.engine`: a grid of cells with a linked list of grains each, and the grains
outside it (walls) or its wrapping edges (periodic box).

Split from :mod:`reference.engine_core` (the event loop): times to leave a cell or to enter the grid, moving a grain
between cells. ``gf`` holds the grid's origin x, y, its cell sizes and the period (0: none); ``gi`` the cells along
x and y; cell c = cy * gi[0] + cx heads a list through ``nxt``/``prv``.
"""

from __future__ import annotations

import math

import numpy as np

from reference.engine_queue import jit


@jit
def crossing_time(x: float, v: float, lo: float, width: float, c: int) -> float:
    """Time for a point at x in cell c (cells of ``width`` from ``lo``) to reach the cell's edge ahead."""
    if v > 0.0:
        t = (lo + (c + 1) * width - x) / v
    elif v < 0.0:
        t = (lo + c * width - x) / v
    else:
        return math.inf
    return t if t > 0.0 else 0.0


@jit
def entry_time(x: np.ndarray, v: np.ndarray, a: int, gf: np.ndarray, gi: np.ndarray) -> float:
    """Time for grain a, outside the grid, to enter it (inf if it never does or seems inside already)."""
    t_in, t_out = -math.inf, math.inf
    for d in range(2):
        lo, hi = gf[d], gf[d] + gi[d] * gf[2 + d]
        if v[a, d] == 0.0:
            if not lo <= x[a, d] <= hi:
                return math.inf
            continue
        t1, t2 = (lo - x[a, d]) / v[a, d], (hi - x[a, d]) / v[a, d]
        t_in, t_out = max(t_in, min(t1, t2)), min(t_out, max(t1, t2))
    # t_in <= 0: the grain is on the grid's edge moving out (it just left) or inside by round-off; it stays
    # "outside", which is always correct (outside grains meet everybody).
    return t_in if 0.0 < t_in < t_out else math.inf


@jit
def link(a: int, c: int, head: np.ndarray, nxt: np.ndarray, prv: np.ndarray) -> None:
    """Put grain a first in cell c's list."""
    nxt[a] = head[c]
    prv[a] = -1
    if head[c] >= 0:
        prv[head[c]] = a
    head[c] = a


@jit
def unlink(a: int, c: int, head: np.ndarray, nxt: np.ndarray, prv: np.ndarray) -> None:
    """Take grain a out of cell c's list."""
    if prv[a] >= 0:
        nxt[prv[a]] = nxt[a]
    else:
        head[c] = nxt[a]
    if nxt[a] >= 0:
        prv[nxt[a]] = prv[a]


@jit
def set_outside(a: int, outside: bool, out_list: np.ndarray, out_pos: np.ndarray, misc: np.ndarray) -> None:
    """Add grain a to (outside=True) or remove it from the list of grains outside the grid; misc[0] is its length."""
    if outside:
        out_pos[a] = misc[0]
        out_list[misc[0]] = a
        misc[0] += 1
    else:
        misc[0] -= 1
        last = out_list[misc[0]]
        out_list[out_pos[a]] = last
        out_pos[last] = out_pos[a]


@jit
def place(a: int, x: np.ndarray, gf: np.ndarray, gi: np.ndarray, cell: np.ndarray, head, nxt, prv) -> None:
    """Put grain a in the cell that holds its position (clamped into the grid)."""
    for d in range(2):
        c = math.floor((x[a, d] - gf[d]) / gf[2 + d])
        cell[a, d] = min(max(c, 0), gi[d] - 1)
    link(a, cell[a, 1] * gi[0] + cell[a, 0], head, nxt, prv)


@jit
def move_cell(a: int, d: int, x: np.ndarray, v: np.ndarray, gf, gi, cell, head, nxt, prv, out_list, out_pos,
              misc) -> None:
    """Grain a (at the event's time) leaves its cell along axis d: into the next cell, or out of the grid; in a
    periodic box, across the box's edge into the first cell on the other side (its position moved by a period)."""
    unlink(a, cell[a, 1] * gi[0] + cell[a, 0], head, nxt, prv)
    cell[a, d] += 1 if v[a, d] > 0.0 else -1
    if gf[4] > 0.0 and not 0 <= cell[a, d] < gi[d]:
        wrap = 1 if cell[a, d] < 0 else -1
        cell[a, d] += wrap * gi[d]
        x[a, d] += wrap * gf[4]
    if 0 <= cell[a, d] < gi[d]:
        link(a, cell[a, 1] * gi[0] + cell[a, 0], head, nxt, prv)
    else:
        cell[a, 0] = cell[a, 1] = -1
        set_outside(a, True, out_list, out_pos, misc)
