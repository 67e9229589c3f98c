"""The loop of :mod:`reference.engine`: event-driven hard disks with a cell list and lazy positions.

Each grain a carries its own time ``tg[a]``: ``x[a]`` is its position then, and ``x[a] + v[a] (T - tg[a])`` at any
later T until it collides. Each grain owns one slot in the event queue (:mod:`reference.engine_queue`), its earliest
event: a contact with a grain or a wall, leaving its cell, or entering the grid from outside. A grain that collides
gets its next event at once, in place of the old one; an event whose partner collided since (partner's counter
changed) is stale, and its owner's next event is predicted afresh when it comes up. Every new possible contact of a
grain is found by whichever of the two grains changed last. Events of equal times come out in
reference.events.earliest_contact's order (see :func:`rank`).

When a grain changes cell, only the newly adjacent cells are searched: its earliest contact found before (its memo)
still stands unless that partner has collided since, in which case everything is searched again. The state of a grain
(position, velocity, own time, radius, mass) fills one cache line.

The grid covers the box around the grains' initial places; cells are at least one contact distance wide, so a grain
in the grid meets only grains of its 3 x 3 cells and grains outside the grid, which meet everybody (so no wall
layout and no escaping grain can make the cell list wrong, only slower).

The formulas, their order of operations and the "no contact" rules are those of :mod:`reference.contacts`.
"""

from __future__ import annotations

import math

import numpy as np

from reference.conventions import NO_CONTACT
from reference.engine_cells import crossing_time, entry_time, move_cell, place, set_outside
from reference.engine_queue import before, drop, empty_queue, jit, schedule

#: Status codes of :func:`run`.
DONE, COLLAPSED = 0, 1

#: Ranks of events of equal times (reference.events.earliest_contact's tie rule: grain pairs, then walls, each by
#: their grains' numbers; cell changes last, in any order). See :func:`rank`.
WALL_RANK, GRID_RANK = 1 << 62, (1 << 63) - 1


@jit
def rank(a: int, p: int, n: int, orig: np.ndarray) -> int:
    """Rank of the event of grain a with partner p (grain, wall code or grid event >= n), by the caller's numbers."""
    if p >= n:
        return GRID_RANK
    if p < 0:
        return WALL_RANK + (orig[a] << 31) + (-(p + 1))
    return (min(orig[a], orig[p]) << 31) + max(orig[a], orig[p])


@jit
def pair_time(dx0: float, dx1: float, dv0: float, dv1: float, reach: float) -> float:
    """reference.contacts.grain_contact_times for one pair."""
    b = dx0 * dv0 + dx1 * dv1
    if not b < 0.0:
        return NO_CONTACT
    c = dx0 * dx0 + dx1 * dx1 - reach * reach
    if not c >= 0.0:
        return NO_CONTACT
    a = dv0 * dv0 + dv1 * dv1
    disc = b * b - a * c
    if not disc >= 0.0:
        return NO_CONTACT
    t = c / (-b + math.sqrt(disc))
    return t if t < NO_CONTACT else NO_CONTACT


@jit
def wall_time(px: float, py: float, vx: float, vy: float, wo: np.ndarray, wn: np.ndarray, q: int, rad: float) -> float:
    """reference.contacts.wall_contact_times for one grain and wall q (origin wo[q], unit normal wn[q])."""
    height = (px - wo[q, 0]) * wn[q, 0] + (py - wo[q, 1]) * wn[q, 1]
    rate = vx * wn[q, 0] + vy * wn[q, 1]
    gap = abs(height) - rad
    if not (height * rate < 0.0 and gap >= 0.0):
        return NO_CONTACT
    t = gap / abs(rate)
    return t if t < NO_CONTACT else NO_CONTACT


@jit
def sync(x: np.ndarray, v: np.ndarray, tg: np.ndarray, a: int, t: float) -> None:
    """Bring grain a's position to time t."""
    x[a, 0] += v[a, 0] * (t - tg[a])
    x[a, 1] += v[a, 1] * (t - tg[a])
    tg[a] = t


@jit
def nearest_image(d: float, period: float) -> float:
    """A coordinate difference d as its nearest periodic image (period 0: no periodicity, d itself)."""
    if period > 0.0:
        return d - period * math.floor(d / period + 0.5)
    return d


@jit
def offset_at(a: int, b: int, t: float, x: np.ndarray, v: np.ndarray, tg: np.ndarray, period: float):
    """x_a - x_b at time t (a there already, b moved on the fly), through the nearest image if periodic."""
    s = t - tg[b]
    dx0, dx1 = x[a, 0] - (x[b, 0] + v[b, 0] * s), x[a, 1] - (x[b, 1] + v[b, 1] * s)
    if period > 0.0:
        return nearest_image(dx0, period), nearest_image(dx1, period)
    return dx0, dx1


@jit
def pair_at(a: int, b: int, t: float, x: np.ndarray, v: np.ndarray, tg: np.ndarray, R: np.ndarray,
            period: float) -> float:
    """Contact time of grains a (at time t already) and b (moved to t on the fly), nearest images if periodic."""
    dx0, dx1 = offset_at(a, b, t, x, v, tg, period)
    return pair_time(dx0, dx1, v[a, 0] - v[b, 0], v[a, 1] - v[b, 1], R[a] + R[b])


@jit
def excluded(a: int, b: int, la: int, lb: int) -> bool:
    """Whether the contact of a and b (a grain or a wall code) is the one just solved, (la, lb)."""
    return (a == la and b == lb) or (a == lb and b == la)


#: In a periodic box the pair solved last is left out only while it still touches (its distance within this
#: fraction of the contact distance): it may meet again through another image with nothing solved in between.
TOUCHING = 1e-9


@jit
def left_out(a: int, b: int, la: int, lb: int, t: float, x, v, tg, R, period: float) -> bool:
    """Whether grains a (at time t) and b are not to be searched: the pair solved last, with walls; in a periodic
    box, the pair solved last while it still touches (through its nearest image)."""
    if not excluded(a, b, la, lb):
        return False
    if period <= 0.0:
        return True
    d0, d1 = offset_at(a, b, t, x, v, tg, period)
    reach = (R[a] + R[b]) * (1.0 + TOUCHING)
    return d0 * d0 + d1 * d1 <= reach * reach


@jit
def scan(a, t, la, lb, gx0, gx1, gy0, gy1, best, partner, grains, grid):
    """Earliest contact (time, partner) of grain a with the grains of cells [gx0, gx1) x [gy0, gy1), or best.

    In a periodic box the cell numbers wrap around (the grid then has at least 5 cells a side: no cell twice).
    """
    x, v, tg, R, orig = grains[0], grains[1], grains[2], grains[3], grains[7]
    n = len(x)
    gf, gi, head, nxt = grid[0], grid[1], grid[3], grid[4]
    period = gf[4]
    if period > 0.0:
        xs, xe, ys, ye = gx0, gx1, gy0, gy1
    else:
        xs, xe, ys, ye = max(gx0, 0), min(gx1, gi[0]), max(gy0, 0), min(gy1, gi[1])
    for gx in range(xs, xe):
        for gy in range(ys, ye):
            b = head[(gy % gi[1]) * gi[0] + gx % gi[0]] if period > 0.0 else head[gy * gi[0] + gx]
            while b >= 0:
                if b != a and not left_out(a, b, la, lb, t, x, v, tg, R, period):
                    tc = pair_at(a, b, t, x, v, tg, R, period)
                    if tc < NO_CONTACT and before(t + tc, rank(a, b, n, orig), best, rank(a, partner, n, orig)):
                        best, partner = t + tc, b
                b = nxt[b]
    return best, partner


@jit
def nearest_contact(a, t, la, lb, axis, grains, walls, grid, n_out):
    """Grain a's earliest contact after t (a at time t): (time, partner), (inf, n) if none; kept as a's memo.

    The contact (la, lb) just solved is left out, as in reference.events.earliest_contact. ``axis`` is 0 or 1 when
    a has just changed cell along that axis: then only the newly adjacent cells are searched, the memo standing
    unless its partner has collided since; -1 searches everything.
    """
    x, v, tg, R, count, memo_t, memo_i, orig = grains
    wo, wn = walls
    cell, out_list = grid[2], grid[5]
    n = len(x)
    cx, cy = cell[a, 0], cell[a, 1]
    mp = memo_i[a, 0]
    if axis >= 0 and cx >= 0 and not (0 <= mp < n and count[mp] != memo_i[a, 1]):
        best, partner = memo_t[a], mp
        step = 1 if v[a, axis] > 0.0 else -1
        if axis == 0:
            best, partner = scan(a, t, la, lb, cx + step, cx + step + 1, cy - 1, cy + 2, best, partner, grains, grid)
        else:
            best, partner = scan(a, t, la, lb, cx - 1, cx + 2, cy + step, cy + step + 1, best, partner, grains, grid)
        stop, walls_too = n_out, False
    else:
        best, partner = math.inf, n  # partner is meaningless while best is inf
        # The 3 x 3 cells around a plus everyone outside the grid, or everyone if a is outside.
        if cx >= 0:
            best, partner = scan(a, t, la, lb, cx - 1, cx + 2, cy - 1, cy + 2, best, partner, grains, grid)
        stop, walls_too = (n_out if cx >= 0 else n), True
    for k in range(stop):
        b = out_list[k] if cx >= 0 else k
        if b != a and not excluded(a, b, la, lb):
            tc = pair_at(a, b, t, x, v, tg, R, grid[0][4])
            if tc < NO_CONTACT and before(t + tc, rank(a, b, n, orig), best, rank(a, partner, n, orig)):
                best, partner = t + tc, b
    for q in range(len(wo) if walls_too else 0):
        if not excluded(a, -(q + 1), la, lb):
            tc = wall_time(x[a, 0], x[a, 1], v[a, 0], v[a, 1], wo, wn, q, R[a])
            if tc < NO_CONTACT and before(t + tc, rank(a, -(q + 1), n, orig), best, rank(a, partner, n, orig)):
                best, partner = t + tc, -(q + 1)
    memo_t[a], memo_i[a, 0] = best, partner
    memo_i[a, 1] = count[partner] if 0 <= partner < n else 0
    return best, partner


@jit
def predict(a, t, t_end, la, lb, axis, grains, walls, grid, queue, outside):
    """Make grain a's earliest event after t (a at time t) its event in the queue, or none if it falls after t_end.

    Contacts as in :func:`nearest_contact`; grid events have codes n (leave the cell along x), n + 1 (along y) and
    n + 2 (enter the grid).
    grains = (x, v, tg, R, count, memo_t, memo_i, orig), walls = (origins, normals),
    grid = (gf, gi, cell, head, nxt, out_list), queue: engine_queue.empty_queue's; outside: grains outside the grid.
    """
    x, v, count, orig = grains[0], grains[1], grains[4], grains[7]
    gf, gi, cell = grid[0], grid[1], grid[2]
    n = len(x)
    best, partner = nearest_contact(a, t, la, lb, axis, grains, walls, grid, outside)
    if cell[a, 0] >= 0:
        tx = t + crossing_time(x[a, 0], v[a, 0], gf[0], gf[2], cell[a, 0])
        ty = t + crossing_time(x[a, 1], v[a, 1], gf[1], gf[3], cell[a, 1])
        if tx < best:
            best, partner = tx, n
        if ty < best:
            best, partner = ty, n + 1
    else:
        te = t + entry_time(x, v, a, gf, gi)
        if te < best:
            best, partner = te, n + 2
    if not best <= t_end:
        drop(queue, a)
        return
    cb = count[partner] if 0 <= partner < n else 0
    schedule(queue, a, best, rank(a, partner, n, orig), partner, cb)


@jit
def bump(a: int, p: int, x, v, m, wn, r: float, period: float) -> None:
    """Solve contact (a, p), p a grain or a wall code: reference.contacts.grain_impulse / wall_impulse."""
    if p < 0:
        q = -(p + 1)
        s = -(1.0 + r) * (v[a, 0] * wn[q, 0] + v[a, 1] * wn[q, 1])
        v[a, 0] += s * wn[q, 0]
        v[a, 1] += s * wn[q, 1]
        return
    dx0, dx1 = nearest_image(x[a, 0] - x[p, 0], period), nearest_image(x[a, 1] - x[p, 1], period)
    length = math.hypot(dx0, dx1)
    n0, n1 = dx0 / length, dx1 / length
    un = (v[a, 0] - v[p, 0]) * n0 + (v[a, 1] - v[p, 1]) * n1
    total = m[a] + m[p]
    s1 = -((1.0 + r) * m[p] / total * un)
    s2 = (1.0 + r) * m[a] / total * un
    v[a, 0] += s1 * n0
    v[a, 1] += s1 * n1
    v[p, 0] += s2 * n0
    v[p, 1] += s2 * n1


@jit
def solve(a: int, p: int, t: float, x, v, tg, m, wn, r: float, rw: float, count, period: float) -> tuple[int, int]:
    """Solve contact (a, p) at time t (a there already; restitution r, rw on walls); count it; return it as index."""
    count[a] += 1
    if p < 0:
        bump(a, p, x, v, m, wn, rw, period)
        return a, p
    sync(x, v, tg, p, t)
    count[p] += 1
    bump(min(a, p), max(a, p), x, v, m, wn, r, period)
    return min(a, p), max(a, p)


@jit(allocates=True)
def run(x, v, R, m, wo, wn, r, rw, t_end, la, lb, max_contacts, gf, gi, orig):
    """Move the grains (x, v in place) from time 0 to t_end, solving every contact in time order.

    Args:
      x, v: (n, 2) float64, changed in place. R, m: (n,). wo, wn: (k, 2) wall origins and unit normals.
      r: restitution (rw: of the walls). t_end: the interval.
      (la, lb): the contact solved just before, never solved first.
      max_contacts: contacts allowed before giving up (inelastic collapse).
      gf: grid origin x, y, cell sizes and the period (0: none; else the grid is the periodic box [0, period)^2,
      the grains in it and no walls); gi: cells along x and y. orig: the caller's number of each grain.

    Returns:
      (status, contacts, pairs, la, lb, t_last, events): DONE or COLLAPSED, contacts solved, how many of them
      were grain-grain (the rest hit walls), the last contact, the time of the last one, events popped (contacts,
      cell changes and events whose partner had collided since).
    """
    n = len(x)
    # One cache line per grain: x, v, own time, radius, mass side by side (views of one (n, 8) array).
    packed = np.zeros((n, 8))
    packed[:, 0:2], packed[:, 2:4], packed[:, 5], packed[:, 6] = x, v, R, m
    x_out, v_out = x, v
    x, v, tg, R, m = packed[:, 0:2], packed[:, 2:4], packed[:, 4], packed[:, 5], packed[:, 6]
    count = np.zeros(n, np.int32)
    memo_t, memo_i = np.full(n, math.inf), np.zeros((n, 2), np.int32)
    cell = np.empty((n, 2), np.int32)
    head = np.full(gi[0] * gi[1], -1, np.int32)
    nxt, prv = np.empty(n, np.int32), np.empty(n, np.int32)
    out_list, out_pos = np.empty(n, np.int32), np.empty(n, np.int32)
    misc = np.zeros(1, np.int64)  # grains outside the grid
    queue = empty_queue(n)
    nt, nw, ei = queue[0], queue[1], queue[3]
    grains, walls = (x, v, tg, R, count, memo_t, memo_i, orig), (wo, wn)
    grid = (gf, gi, cell, head, nxt, out_list)
    for a in range(n):
        place(a, x, gf, gi, cell, head, nxt, prv)
    for a in range(n):
        predict(a, 0.0, t_end, la, lb, -1, grains, walls, grid, queue, misc[0])
    contacts, pairs, events, t_last = 0, 0, 0, 0.0
    while nt[1] <= t_end:  # the earliest event (inf once no grain has one)
        t, a = nt[1], nw[1]
        p, cb = ei[a, 0], ei[a, 1]
        events += 1
        sync(x, v, tg, a, t)
        axis = -1
        if p < n:
            if p >= 0 and count[p] != cb:  # the partner changed course: look again
                predict(a, t, t_end, la, lb, -1, grains, walls, grid, queue, misc[0])
                continue
            contacts += 1
            t_last = t
            if contacts > max_contacts:
                return COLLAPSED, contacts, pairs, la, lb, t_last, events
            if p >= 0:
                pairs += 1
            la, lb = solve(a, p, t, x, v, tg, m, wn, r, rw, count, gf[4])
            predict(a, t, t_end, la, lb, -1, grains, walls, grid, queue, misc[0])
            if p >= 0:
                predict(p, t, t_end, la, lb, -1, grains, walls, grid, queue, misc[0])
            continue
        if p == n + 2:
            set_outside(a, False, out_list, out_pos, misc)
            place(a, x, gf, gi, cell, head, nxt, prv)
        else:
            axis = p - n
            move_cell(a, axis, x, v, gf, gi, cell, head, nxt, prv, out_list, out_pos, misc)
        predict(a, t, t_end, la, lb, axis, grains, walls, grid, queue, misc[0])
    for a in range(n):
        sync(x, v, tg, a, t_end)
    x_out[:, :], v_out[:, :] = x, v
    return DONE, contacts, pairs, la, lb, t_last, events
