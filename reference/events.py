"""Event-driven dynamics of a system of disks among walls.

``earliest_contact`` is the vectorised O(n^2) search of the next contact;
``advance`` moves a system through a time interval, contact after contact, in
a loop (not recursion, so any number of contacts fits in one interval).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reference.contacts import grain_contact_times, grain_impulse, wall_contact_times, wall_impulse
from reference.conventions import NO_CONTACT, NO_PREVIOUS_CONTACT, wall_code, wall_number

#: Contacts allowed inside one call of ``advance`` before it declares inelastic
#: collapse (infinitely many contacts in finite time) instead of looping on.
MAX_CONTACTS_PER_ADVANCE = 100_000


class InelasticCollapseError(RuntimeError):
    """Contacts piled up without end inside one time interval."""


@dataclass(frozen=True)
class Contact:
    """One solved contact: its absolute time and ``index`` (spec encoding)."""

    t: float
    index: tuple[int, int]


@dataclass
class AdvanceResult:
    """State after ``advance``: new arrays, the last contact and the contact log."""

    x: np.ndarray
    v: np.ndarray
    last: tuple[int, int]
    contacts: list[Contact] = field(default_factory=list)


def earliest_contact(
    x: np.ndarray,
    v: np.ndarray,
    R: np.ndarray,
    w: np.ndarray,
    excluded: tuple[int, int] = NO_PREVIOUS_CONTACT,
) -> tuple[float, tuple[int, int]]:
    """Earliest contact of a system, the ``excluded`` one left out.

    Args:
      x, v: shape (n, 2). R: shape (n,). w: shape (k, 2, 2).
      excluded: an ``index`` (spec encoding) never to return, for instance the
        contact just solved; ``[i, j]`` and ``[j, i]`` are the same contact.

    Returns:
      (tc, index): with no contact at all, (NO_CONTACT, NO_PREVIOUS_CONTACT).
      Ties go to grain pairs before walls, then to the lowest indices.
    """
    x = np.asarray(x, dtype=float)
    v = np.asarray(v, dtype=float)
    R = np.asarray(R, dtype=float)
    w = np.asarray(w, dtype=float).reshape(-1, 2, 2)
    n, k = len(x), len(w)
    i, j = np.triu_indices(n, 1)
    pair_t = grain_contact_times(x[i] - x[j], v[i] - v[j], R[i] + R[j])
    # wall_t[g, q]: grain g against wall q.
    wall_t = wall_contact_times(w[None, :, :, :], x[:, None, :], v[:, None, :], R[:, None])

    a, b = int(excluded[0]), int(excluded[1])
    if b >= 0 and a >= 0 and a != b:
        lo, hi = min(a, b), max(a, b)
        if hi < n:
            # Position of (lo, hi) in the row-major upper triangle.
            pair_t = pair_t.copy()
            pair_t[lo * n - lo * (lo + 1) // 2 + (hi - lo - 1)] = NO_CONTACT
    elif b < 0 <= a:
        q = wall_number(b)
        if 0 <= a < n and q < k:
            wall_t = wall_t.copy()
            wall_t[a, q] = NO_CONTACT

    times = np.concatenate([pair_t, wall_t.ravel()])
    if times.size == 0:
        return NO_CONTACT, NO_PREVIOUS_CONTACT
    best = int(np.argmin(times))
    tc = float(times[best])
    if tc >= NO_CONTACT:
        return NO_CONTACT, NO_PREVIOUS_CONTACT
    if best < len(pair_t):
        return tc, (int(i[best]), int(j[best]))
    g, q = divmod(best - len(pair_t), k)
    return tc, (g, wall_code(q))


def solve_contact(
    x: np.ndarray, v: np.ndarray, m: np.ndarray, w: np.ndarray, index: tuple[int, int], r: float
) -> np.ndarray:
    """New velocities, shape (n, 2), after solving contact ``index``."""
    g, other = index
    v = v.copy()
    if other < 0:
        v[g] += wall_impulse(w[wall_number(other)], v[g], r)
    else:
        dv1, dv2 = grain_impulse(x[g] - x[other], v[g] - v[other], m[g], m[other], r)
        v[g] += dv1
        v[other] += dv2
    return v


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
) -> AdvanceResult:
    """Move the system from time t to t + dt, solving every contact in order.

    Args:
      x, v: shape (n, 2). R, m: shape (n,). w: shape (k, 2, 2).
      last: the contact solved just before t (spec ``index``), never solved
        again first thing. r: restitution. dt: interval >= 0. t: start time,
        used only to stamp the contact log.
      max_contacts: contacts allowed before InelasticCollapseError.

    Returns:
      AdvanceResult with copies of x and v at t + dt, the last contact and the
      log of all contacts solved.

    Raises:
      InelasticCollapseError: more than max_contacts contacts in the interval.
    """
    x = np.array(x, dtype=float)
    v = np.array(v, dtype=float)
    R = np.asarray(R, dtype=float)
    m = np.asarray(m, dtype=float)
    w = np.asarray(w, dtype=float).reshape(-1, 2, 2)
    last = (int(last[0]), int(last[1]))
    log: list[Contact] = []
    elapsed = 0.0
    while True:
        tc, index = earliest_contact(x, v, R, w, last)
        remaining = dt - elapsed
        if tc > remaining:
            x += v * remaining
            return AdvanceResult(x, v, last, log)
        x += v * tc
        elapsed += tc
        v = solve_contact(x, v, m, w, index, r)
        last = index
        log.append(Contact(t + elapsed, index))
        if len(log) > max_contacts:
            raise InelasticCollapseError(
                f"more than {max_contacts} contacts between t={t:g} and t={t + dt:g} "
                f"(the last one at t={t + elapsed:.17g}): contacts are piling up without end, "
                "as in inelastic collapse (infinitely many contacts in finite time) or a grain "
                "trapped in a gap barely wider than itself. Use a larger restitution "
                "coefficient r, give the grains more room, or call update with a smaller dt."
            )
