"""A fast event-driven engine: the homework's ``update`` in O(log n) per collision instead of O(n^2).

:func:`update` has the homework's signature and semantics (x, v and indexOld changed in place, every contact inside
dt solved in time order, t + dt returned) and agrees with :func:`reference.vectorised.update` to round-off.
:func:`advance` is the same without the argument checks, for callers that count contacts (benchmarks/engine.py).

How it works, as in the event-driven codes of the literature (Rapaport, Lubachevsky, Pöschel and Schwager):

- **Lazy positions.** Each grain carries its own time; only the grains in an event are moved to it.
- **Event queue.** A tournament tree over the grains (:mod:`reference.engine_queue`): each grain owns one slot, its
  earliest event, replaced when it collides; per-grain collision counters mark the events whose partner collided
  since (stale: the owner's next event is predicted again).
- **Cell list.** A grid of cells at least one contact distance wide over the box around the grains' initial places:
  a grain meets only grains of its 3 x 3 cells (plus grains outside the grid, which meet everybody), and leaving a
  cell is an event of its own. Walls are any lines (any orientation, any number), checked for every grain.
- **Periodic box** (``period``, for reference.cooling): the grid is the box, cells wrap around at its edges, and
  grains meet through their nearest periodic image. The pair solved last is left out only while it still touches:
  it may meet again through another image with nothing solved in between.
- **Same physics.** The formulas and the "no contact" rules of :mod:`reference.contacts`; the contact solved last
  is left out of the next search (as in :func:`reference.events.earliest_contact`; one difference, at round-off
  level only: a pair left out stays left out for its two grains' queued events even after another contact, where
  the exact search would look at it again); simultaneous contacts are solved in the exact search's order; more
  than MAX_CONTACTS_PER_ADVANCE contacts in one call raise the same
  :class:`~reference.events.InelasticCollapseError` as :func:`reference.events.advance` (never a hang).

No state is kept between calls: each call builds its grid and queue afresh (O(n) work, small beside the contacts
of any dt worth simulating), so nothing can go stale between calls.

Grains are renumbered cell by cell inside a call (neighbours close in memory); what the caller sees keeps its numbers.

Compilation: the loop (:mod:`reference.engine_core`) is compiled by numba, the optional extra ``fast``
(``pip install "granular-grader[fast]"``), and cached on disk the first time (about 30 s of CPU; then a fraction of
a second per process). Without numba, or with NUMBA_DISABLE_JIT=1, the very same code runs as plain Python: correct,
about a hundred times slower (some 250 us per contact at n = 200, still faster than the O(n^2) search there).
:data:`COMPILED` says which. Instructors only: never give this to students.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from reference.contacts import wall_frame
from reference.engine_core import COLLAPSED, run
from reference.engine_queue import COMPILED
from reference.events import MAX_CONTACTS_PER_ADVANCE, InelasticCollapseError

# The other five functions of the homework, so that this module can stand in for reference.vectorised as the
# grader's oracle (only update differs).
from reference.vectorised import (
    NO_CONTACT,
    contact_solve_grains,
    contact_solve_wall,
    contact_time_grains,
    contact_time_walls,
    minimum_contact_time,
    update_with,
)

#: Cells are this much (relative) wider than the largest contact distance, so that round-off in a grain's cell
#: never hides a contact.
CELL_MARGIN = 1e-9

#: Cells per grain aimed at: about one grain per cell when the grains fill the box.
CELLS_PER_GRAIN = 1.0


@dataclass(frozen=True)
class EngineRun:
    """State after :func:`advance`: new arrays, the last contact, and counts (benchmarks, reference.cooling).

    ``contacts`` counts every contact solved, ``grain_contacts`` those between two grains (the rest are wall hits).
    """

    x: np.ndarray
    v: np.ndarray
    last: tuple[int, int]
    contacts: int
    events: int
    grain_contacts: int = 0


def grid_for(x: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grid over the grains' bounding box (widened by a contact distance): (origin_x, origin_y, Lx, Ly, 0), (Mx, My).

    Cells are wider than 2 max(R) by CELL_MARGIN, relative to it and to the grid's coordinates (round-off in the
    positions must never put two grains in contact two cells apart; grains that leave the grid are checked against
    everybody), and number at most about n / CELLS_PER_GRAIN + 2 n + 2.
    """
    n = len(x)
    diameter = 2.0 * float(R.max())
    reach = diameter * (1.0 + CELL_MARGIN) + CELL_MARGIN * (float(np.abs(x).max()) + 2 * diameter)
    lo = x.min(axis=0) - reach
    extent = x.max(axis=0) + reach - lo
    side = max(reach, math.sqrt(float(extent[0] * extent[1]) / (n * CELLS_PER_GRAIN)))
    cells = np.clip(np.floor(extent / side), 1, 2 * n + 2).astype(np.int64)
    return np.array([lo[0], lo[1], extent[0] / cells[0], extent[1] / cells[1], 0.0]), cells


#: Fewest cells along a side of a periodic box: with 5 or more, a grain's 3 x 3 cells are distinct and every grain
#: there is less than half a period away, so its nearest image is the one it can touch (with 4, a pair exactly half
#: a period apart could be taken through the image where it recedes, and pass through each other).
MIN_PERIODIC_CELLS = 5


def periodic_grid(period: float, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grid of the periodic box [0, period)^2: (0, 0, Lx, Ly, period), (M, M); ValueError if it is too small."""
    n = len(R)
    reach = 2.0 * float(R.max()) * (1.0 + CELL_MARGIN) + CELL_MARGIN * period
    # About one grain per cell, but MIN_PERIODIC_CELLS wherever cells a contact distance wide allow as many.
    cells = max(int(period // max(reach, period / math.sqrt(n * CELLS_PER_GRAIN))),
                min(MIN_PERIODIC_CELLS, int(period // reach)))
    if cells < MIN_PERIODIC_CELLS:
        raise ValueError(f"period={period:g}: a periodic box must be more than {MIN_PERIODIC_CELLS} contact "
                         f"distances (2 max(R) = {2.0 * float(R.max()):g}) wide; make it larger or the grains smaller")
    return np.array([0.0, 0.0, period / cells, period / cells, period]), np.array([cells, cells], dtype=np.int64)


def collapse_message(max_contacts: int, t: float, dt: float, t_last: float) -> str:
    """The message of reference.events.advance's InelasticCollapseError, word for word."""
    return (
        f"more than {max_contacts} contacts between t={t:g} and t={t + dt:g} "
        f"(the last one at t={t_last:.17g}): contacts are piling up without end, "
        "as in inelastic collapse (infinitely many contacts in finite time) or a grain "
        "trapped in a gap barely wider than itself. Use a larger restitution "
        "coefficient r, give the grains more room, or call update with a smaller dt."
    )


def advance(
    x: np.ndarray,
    v: np.ndarray,
    R: np.ndarray,
    m: np.ndarray,
    w: np.ndarray,
    last: tuple[int, int],
    r: float,
    dt: float,
    t: float = 0.0,
    max_contacts: int = MAX_CONTACTS_PER_ADVANCE,
    wall_restitution: float | None = None,
    period: float | None = None,
) -> EngineRun:
    """Move the system from t to t + dt, solving every contact in order (reference.events.advance's contract).

    Args:
      x, v: shape (n, 2), not modified. R, m: shape (n,). w: shape (k, 2, 2). last: the contact solved just
      before t (spec ``index``). r: restitution. dt >= 0. t: start time (only for the error message).
      max_contacts: contacts allowed before InelasticCollapseError. wall_restitution: restitution of the walls,
      r if None (the homework's rule); reference.cooling's box with walls uses 1, elastic walls.
      period: None, or the side of a periodic box [0, period)^2 (no walls then: w must hold none): a grain leaving
      it on one side comes back on the other, and grains meet through the nearest periodic image. Positions are
      returned in the box.

    Returns:
      EngineRun with new x and v at t + dt, the last contact, contacts solved (all, and grain-grain only) and
      events processed.

    Raises:
      InelasticCollapseError: more than max_contacts contacts in the interval.
    """
    x = np.array(x, dtype=np.float64).reshape(-1, 2)
    v = np.array(v, dtype=np.float64).reshape(-1, 2)
    last = (int(last[0]), int(last[1]))
    if len(x) == 0:
        return EngineRun(x, v, last, 0, 0, 0)
    R = np.ascontiguousarray(R, dtype=np.float64)
    m = np.ascontiguousarray(m, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64).reshape(-1, 2, 2)
    origin, normal = wall_frame(w)
    if period is None:
        gf, gi = grid_for(x, R)
    else:
        if len(w):
            raise ValueError(f"w holds {len(w)} walls: a periodic box has none (pass w of shape (0, 2, 2))")
        if not (math.isfinite(period) and period > 0):
            raise ValueError(f"period={period!r}: give the side of the box, a number > 0")
        gf, gi = periodic_grid(float(period), R)
        x = np.mod(x, period)
    # Number the grains cell by cell, so that neighbours sit together in memory (the cache, not the physics).
    cells = np.clip(np.floor((x - gf[:2]) / gf[2:4]), 0, gi - 1).astype(np.int64)
    order = np.argsort(cells[:, 1] * gi[0] + cells[:, 0], kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    start = tuple(int(rank[e]) if e >= 0 else e for e in last)
    xs, vs = x[order], v[order]
    rw = float(r if wall_restitution is None else wall_restitution)
    status, contacts, pairs, la, lb, t_last, events = run(
        xs, vs, R[order], m[order], np.ascontiguousarray(origin), np.ascontiguousarray(normal),
        float(r), rw, float(dt), start[0], start[1], int(max_contacts), gf, gi, order,
    )
    if status == COLLAPSED:
        raise InelasticCollapseError(collapse_message(max_contacts, t, dt, t + t_last))
    x[order], v[order] = xs, vs
    if period is not None:
        x = np.mod(x, period)
    if contacts:
        a, b = int(order[la]), (int(order[lb]) if lb >= 0 else int(lb))
        last = (min(a, b), max(a, b)) if b >= 0 else (a, b)
    return EngineRun(x, v, last, int(contacts), int(events), int(pairs))


def update(x, v, R, m, w, indexOld, r, dt, t) -> float:
    """Advance the grains by dt in place (x, v and indexOld); return t + dt. As reference.vectorised.update.

    Raises InelasticCollapseError (x, v and indexOld untouched) when contacts pile up without end.
    """
    return update_with(advance, x, v, R, m, w, indexOld, r, dt, t)


__all__ = [
    "COMPILED",
    "EngineRun",
    "InelasticCollapseError",
    "MAX_CONTACTS_PER_ADVANCE",
    "NO_CONTACT",
    "advance",
    "contact_solve_grains",
    "contact_solve_wall",
    "contact_time_grains",
    "contact_time_walls",
    "minimum_contact_time",
    "update",
]
