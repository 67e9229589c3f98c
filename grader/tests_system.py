"""Public properties of minimum_contact_time and update.

They need no reference: the contact returned must be one where the named
bodies touch with nothing overlapping before it, and update must keep the
physics (free flight, the collision law, no overlap, energy).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from grader import strategies as S
from grader import wire
from grader.checks import (Property, fail, fmt, pair_overlap_during, state_after_update, time_and_index,
                           wall_height)
from grader.sandbox import Returned, Sandbox
from grader.scenarios import Scenario, box_walls, random_gas
from grader.spec import NO_CONTACT, wall_number
from grader.tests_contacts import no_mutation
from grader.tolerances import OVERLAP_RTOL, STATE_RTOL, VELOCITY_RTOL, close

MCT, UPDATE = "minimum_contact_time", "update"

#: Touching, for contacts found by minimum_contact_time (relative to the radii).
TOUCH_RTOL = 1e-6


def gases(n_max: int = 12, speed: float = 1.0, r=S.restitutions) -> st.SearchStrategy[Scenario]:
    return st.builds(random_gas, n=st.integers(2, n_max), seed=st.integers(0, 2**16),
                     packing=st.floats(0.05, 0.3), r=r, speed=st.just(speed))


def args_of(gas: Scenario, index_old=(-1, -1)) -> tuple:
    return (gas.x, gas.v, gas.R, gas.w, np.array(index_old, dtype=int))


def check_is_earliest(gas: Scenario, tc: float, index, excluded=None) -> None:
    """index touches at tc, and no other contact (but excluded) happens before."""
    x, v, R, w = gas.x, gas.v, gas.R, gas.w
    if index is None:
        fail(f"{MCT}: expected a contact (the grains move in a closed box); got tc = sys.float_info.max")
    if tc < 0:
        fail(f"{MCT}: returned a negative contact time {tc!r}")
    i, j = index
    at = x + v * tc
    if j >= 0:
        gap = np.linalg.norm(at[i] - at[j]) - (R[i] + R[j])
        if abs(gap) > TOUCH_RTOL * (R[i] + R[j]):
            fail(f"{MCT}: returned tc = {tc!r}, index = [{i}, {j}], but at that time grains {i} and {j} are "
                 f"{gap!r} away from touching")
    else:
        k = wall_number(j)
        gap = abs(wall_height(w[k], at[i])) - R[i]
        if abs(gap) > TOUCH_RTOL * R[i]:
            fail(f"{MCT}: returned tc = {tc!r}, index = [{i}, {j}] (grain {i}, wall w[{k}] since "
                 f"w[-(index[1]+1)] = w[{k}]), but then grain {i} is {gap!r} away from touching w[{k}]")
    skip = tuple(excluded) if excluded is not None and excluded[1] >= 0 else None
    depth, pair = pair_overlap_during(x, v, R, tc, skip)
    if depth > TOUCH_RTOL:
        fail(f"{MCT}: returned tc = {tc!r}, index = [{i}, {j}], but grains {pair[0]} and {pair[1]} touch "
             "earlier (they overlap before tc)")
    for g in range(len(x)):
        for k in range(len(w)):
            if excluded is not None and excluded[1] < 0 and (g, k) == (excluded[0], wall_number(excluded[1])):
                continue
            h0, h1 = wall_height(w[k], x[g]), wall_height(w[k], at[g])
            if np.sign(h0) * h1 < R[g] * (1 - TOUCH_RTOL):
                fail(f"{MCT}: returned tc = {tc!r}, index = [{i}, {j}], but grain {g} reaches wall w[{k}] "
                     f"(index [{g}, {-(k + 1)}]) earlier")


def check_earliest(sb: Sandbox, gas: Scenario) -> None:
    tc, index = time_and_index(sb.call(MCT, *args_of(gas)), gas.n, len(gas.w))
    check_is_earliest(gas, tc, index)


def check_excludes_old(sb: Sandbox, case) -> None:
    gas, reverse = case
    tc, index = time_and_index(sb.call(MCT, *args_of(gas)), gas.n, len(gas.w))
    check_is_earliest(gas, tc, index)
    old = (index[1], index[0]) if reverse and index[1] >= 0 else index
    tc2, index2 = time_and_index(sb.call(MCT, *args_of(gas, old)), gas.n, len(gas.w))
    same = index2 is not None and (index2 == index or (index[1] >= 0 and sorted(index2) == sorted(index)))
    if same:
        fail(f"{MCT}: with indexOld = {list(old)} it returned that same contact again ({list(index2)}); the "
             "previous contact must be excluded" + (" in either grain order" if reverse else ""))
    check_is_earliest(gas, tc2, index2, excluded=index)


def check_no_contact(sb: Sandbox, gas: Scenario) -> None:
    resting = gas.with_(v=np.zeros_like(gas.v))
    r = sb.call(MCT, *args_of(resting))
    tc = r.value.items[0] if isinstance(r.value, wire.Sequence) and r.value.length == 2 else r.value
    if not (isinstance(tc, wire.Numeric) and tc.array.size == 1 and float(tc.array.reshape(())) == NO_CONTACT):
        fail(f"{MCT}: no grain moves, so tc must be exactly sys.float_info.max; got {wire.describe(r.value)}")


class Case:
    """Arguments given to the mutation check of minimum_contact_time."""

    def __init__(self, gas: Scenario):
        self.args = args_of(gas)


# -- update -------------------------------------------------------------------

def call_update(sb: Sandbox, gas: Scenario, x, v, index, dt: float, t: float = 0.0) -> tuple:
    """update in the sandbox; the new x, v and indexOld, read from the arguments."""
    r: Returned = sb.call(UPDATE, x, v, gas.R, gas.m, gas.w, index, gas.r, dt, t)
    return state_after_update(r, x.shape, v.shape)


def check_free_flight(sb: Sandbox, gas: Scenario) -> None:
    gaps = [np.linalg.norm(gas.x[i] - gas.x[j]) - gas.R[i] - gas.R[j]
            for i in range(gas.n) for j in range(i + 1, gas.n)]
    gaps += [min(gas.x[i] - gas.R[i]) for i in range(gas.n)] + [min(1 - gas.x[i] - gas.R[i]) for i in range(gas.n)]
    dt = 0.4 * min(gaps) / np.max(np.linalg.norm(gas.v, axis=1))
    x, v, index = gas.x.copy(), gas.v.copy(), np.array([-1, -1])
    x1, v1, _ = call_update(sb, gas, x, v, index, dt)
    expected = gas.x + gas.v * dt
    if np.array_equal(x1, gas.x):
        fail(f"{UPDATE} did not change x: it must move the grains in place (x += ..., not x = ...)")
    if not close(x1, expected, 1.0, STATE_RTOL) or not close(v1, gas.v, np.abs(gas.v).max(), STATE_RTOL):
        fail(f"{UPDATE}: with no contact within dt = {dt!r}, every grain should fly straight: expected x = "
             f"{fmt(expected)}, got {fmt(x1)} (and v unchanged: {fmt(gas.v)}, got {fmt(v1)})")


@st.composite
def collisions_in_one_step(draw):
    """Two grains of unequal masses meeting once at T inside a step dt, far from any wall."""
    pair = draw(S.colliding_pairs())
    m1, m2, r = draw(S.masses), draw(S.masses), draw(S.restitutions)
    after = draw(st.floats(0.01, 1.0))
    gas = Scenario("pair", np.array([pair.x1, pair.x2]), np.array([pair.v1, pair.v2]),
                   np.array([pair.R1, pair.R2]), np.array([m1, m2]), box_walls(2000.0, (-1000.0, -1000.0)),
                   r, pair.expected + after, 0.0)
    return gas, pair.expected


def check_one_collision(sb: Sandbox, case) -> None:
    gas, T = case
    x, v, index = gas.x.copy(), gas.v.copy(), np.array([-1, -1])
    x1, v1, index1 = call_update(sb, gas, x, v, index, gas.dt)
    xc = gas.x + gas.v * T
    n = (xc[0] - xc[1]) / np.linalg.norm(xc[0] - xc[1])
    un = (gas.v[0] - gas.v[1]) @ n
    m1, m2 = gas.m
    ve = gas.v + (1 + gas.r) * un / (m1 + m2) * np.array([-m2 * n, m1 * n])
    xe = xc + ve * (gas.dt - T)
    scale = np.abs(gas.v).max() + 1.0
    if not close(v1, ve, scale, STATE_RTOL) or not close(x1, xe, np.abs(xe).max() + 1.0, STATE_RTOL):
        fail(f"{UPDATE}: two grains (m = {fmt(gas.m)}, r = {gas.r!r}) collide once at t = {T!r} inside "
             f"dt = {gas.dt!r}: expected v = {fmt(ve)} and x = {fmt(xe)}; got v = {fmt(v1)}, x = {fmt(x1)}")
    if sorted(index1.astype(int).tolist()) != [0, 1]:
        fail(f"{UPDATE}: after the contact of grains 0 and 1, indexOld must hold it ([0, 1] or [1, 0]), "
             f"changed in place; it is {fmt(index1)}")


def run_and_watch(sb: Sandbox, gas: Scenario, steps: int, dt: float) -> None:
    """Run update step by step: no overlap, grains in the box, energy as r says."""
    x, v, index = gas.x.copy(), gas.v.copy(), np.array([-1, -1])
    energy = 0.5 * np.sum(gas.m * np.sum(v * v, axis=1))
    for step in range(steps):
        x, v, index = call_update(sb, gas, x, v, index.astype(int), dt, step * dt)
        t = (step + 1) * dt
        depth, pair = pair_overlap_during(x, np.zeros_like(v), gas.R, 0.0)
        if depth > OVERLAP_RTOL:
            fail(f"{UPDATE}: at t = {t!r} grains {pair[0]} and {pair[1]} overlap (by {depth:.3g} of their radii)")
        outside = np.flatnonzero(np.any((x - gas.R[:, None] < -OVERLAP_RTOL) | (x + gas.R[:, None] > 1 + OVERLAP_RTOL), axis=1))
        if outside.size:
            fail(f"{UPDATE}: at t = {t!r} grain {outside[0]} is outside the box, at {fmt(x[outside[0]])}")
        new = 0.5 * np.sum(gas.m * np.sum(v * v, axis=1))
        if gas.r == 1.0 and not close(new, energy, energy, VELOCITY_RTOL * 100):
            fail(f"{UPDATE}: with r = 1 the kinetic energy must stay {energy!r}; at t = {t!r} it is {new!r}")
        if new > energy * (1 + VELOCITY_RTOL * 100):
            fail(f"{UPDATE}: the kinetic energy grew from {energy!r} to {new!r} at t = {t!r} (r = {gas.r!r})")
        energy = new


def check_gas(sb: Sandbox, gas: Scenario) -> None:
    run_and_watch(sb, gas, steps=10, dt=0.02)


def check_busy_step(sb: Sandbox, gas: Scenario) -> None:
    run_and_watch(sb, gas, steps=1, dt=2.0)


PROPERTIES = [
    Property(MCT, "earliest contact", "the named bodies touch at tc and nothing touches before",
             gases(), check_earliest),
    Property(MCT, "excludes indexOld", "the previous contact is not returned again, in either grain order",
             st.tuples(gases(), st.booleans()), check_excludes_old),
    Property(MCT, "no contact", "sys.float_info.max when nothing moves", gases(), check_no_contact, examples=10),
    no_mutation(MCT, gases().map(Case)),
    Property(UPDATE, "free flight in place", "x += v dt in place when no contact happens", gases(speed=1.0),
             check_free_flight, examples=20),
    Property(UPDATE, "one collision", "two grains of unequal masses collide once inside dt",
             collisions_in_one_step(), check_one_collision, examples=40),
    Property(UPDATE, "gas physics", "no overlap, grains in the box, energy kept for r = 1 and never gained",
             gases(n_max=20, r=st.sampled_from([1.0, 0.9, 0.5])), check_gas, examples=6),
    Property(UPDATE, "many contacts in one dt", "hundreds of contacts inside one dt",
             st.builds(random_gas, n=st.just(30), seed=st.integers(0, 2**16), packing=st.just(0.3),
                       r=st.sampled_from([1.0, 0.95])), check_busy_step, examples=3),
]
