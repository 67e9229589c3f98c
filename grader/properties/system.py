"""Public properties of minimum_contact_time and update.

They need no reference: the contact returned must be one where the named
bodies touch with nothing overlapping before it, and update must move the
grains in place as the physics says (free flight, the collision law, no
overlap, walls, energy); the busy channel's end state is known in closed form.
"""

from __future__ import annotations

import numpy as np

from grader.properties.geometry import pair_overlap_during, wall_height, wall_heights
from grader.properties.lazy import S, composite, st
from grader.properties.property import Caller, Property, fail
from grader.properties.readers import args_of, call_pure, call_update, fmt, time_and_index
from grader.spec import NO_CONTACT, NO_PREVIOUS_CONTACT, wall_number
from grader.spec.scenarios import Scenario, box_walls, channel
from grader.spec.tolerances import ENERGY_RTOL, OVERLAP_RTOL, STATE_RTOL, TOUCH_RTOL, close

MCT, UPDATE = "minimum_contact_time", "update"

#: The busy channel: seeds (of grader.spec.scenarios.channel, 3 grains, free length 0.25) and the one dt, in
#: which each makes 1340 to 1770 contacts (checked by tests/test_properties.py): well past the recursion limit
#: (1000). Three grains, not more: a correct loop over all pairs costs its author about 0.1 ms of CPU per contact
#: (six grains cost three times as much, for no other bug found).
CHANNEL_SEEDS = (0, 3, 7, 13, 16)
CHANNEL_GRAINS, CHANNEL_GAP, CHANNEL_DT = 3, 0.25, 60.0
#: What the messages promise: every seed makes more contacts than this.
CHANNEL_CONTACTS = 1300


def check_is_earliest(gas: Scenario, tc: float, index, excluded=None) -> tuple[int, int]:
    """index touches at tc, and no other contact (but excluded) happens before; returns index."""
    x, v, R, w = gas.x, gas.v, gas.R, gas.w
    if index is None:
        fail(f"{MCT}: expected a contact (the grains move in a closed box); got tc = sys.float_info.max")
    i, j = index
    with np.errstate(all="ignore"):
        at = x + v * tc
        if j >= 0:
            gap = np.linalg.norm(at[i] - at[j]) - (R[i] + R[j])
            if not abs(gap) <= TOUCH_RTOL * (R[i] + R[j]):
                fail(f"{MCT}: returned tc = {fmt(tc)}, index = [{i}, {j}], but at that time grains {i} and {j} "
                     f"are {fmt(gap)} away from touching")
        else:
            k = wall_number(j)
            gap = abs(wall_height(w[k], at[i])) - R[i]
            if not abs(gap) <= TOUCH_RTOL * R[i]:
                fail(f"{MCT}: returned tc = {fmt(tc)}, index = [{i}, {j}] (grain {i}, wall w[{k}] since "
                     f"w[-(index[1]+1)] = w[{k}]), but then grain {i} is {fmt(gap)} away from touching w[{k}]")
    skip = tuple(excluded) if excluded is not None and excluded[1] >= 0 else None
    depth, pair = pair_overlap_during(x, v, R, tc, skip)
    if depth > TOUCH_RTOL:
        fail(f"{MCT}: returned tc = {fmt(tc)}, index = [{i}, {j}], but grains {pair[0]} and {pair[1]} touch "
             "earlier (they overlap before tc)")
    with np.errstate(all="ignore"):
        crossed = np.sign(wall_heights(w, x)) * wall_heights(w, at) < R[:, None] * (1 - TOUCH_RTOL)
    if excluded is not None and excluded[1] < 0:
        crossed[excluded[0], wall_number(excluded[1])] = False
    if crossed.any():
        g, k = (int(n) for n in np.argwhere(crossed)[0])  # the first in the order grains, then walls
        fail(f"{MCT}: returned tc = {fmt(tc)}, index = [{i}, {j}], but grain {g} reaches wall w[{k}] "
             f"(index [{g}, {-(k + 1)}]) earlier")
    return i, j


def earliest(caller: Caller, gas: Scenario, index_old=(-1, -1)) -> tuple[float, tuple[int, int] | None]:
    """minimum_contact_time on the gas, its arguments checked unchanged."""
    return time_and_index(call_pure(caller, MCT, args_of(gas, index_old)), gas.n, len(gas.w))


def check_earliest(caller: Caller, gas: Scenario) -> None:
    tc, index = earliest(caller, gas)
    check_is_earliest(gas, tc, index)


def check_excludes_old(caller: Caller, case) -> None:
    gas, reverse = case
    tc, found = earliest(caller, gas)
    index = check_is_earliest(gas, tc, found)
    old = (index[1], index[0]) if reverse and index[1] >= 0 else index
    tc2, index2 = earliest(caller, gas, old)
    if index2 is not None and (index2 == index or (index[1] >= 0 and sorted(index2) == sorted(index))):
        fail(f"{MCT}: with indexOld = {list(old)} it returned that same contact again ({list(index2)}); the "
             "previous contact must be excluded" + (" in either grain order" if reverse else ""))
    check_is_earliest(gas, tc2, index2, excluded=index)


def check_no_contact(caller: Caller, gas: Scenario) -> None:
    """Nothing moves: sys.float_info.max; then the same gas moving: its earliest contact."""
    tc, _ = earliest(caller, gas.with_(v=np.zeros_like(gas.v)))
    if tc != NO_CONTACT:
        fail(f"{MCT}: no grain moves, so tc must be exactly sys.float_info.max; got tc = {fmt(tc)}")
    check_earliest(caller, gas)


# -- update -------------------------------------------------------------------

@composite
def collisions_in_one_step(draw):
    """Two grains of masses drawn independently (mostly unequal; a shrunk case may have them equal) meeting once at T
    inside a step dt, far from any wall."""
    pair = draw(S.stored(S.colliding_pairs))
    m1, m2, r = draw(S.masses), draw(S.masses), draw(S.restitutions)
    after = draw(S.floats(0.01, 1.0))
    gas = Scenario("pair", np.array([pair.x1, pair.x2]), np.array([pair.v1, pair.v2]),
                   np.array([pair.R1, pair.R2]), np.array([m1, m2]), box_walls(2000.0, (-1000.0, -1000.0)),
                   r, pair.expected + after, 0.0)
    return gas, pair.expected


def check_one_collision(caller: Caller, case) -> None:
    gas, T = case
    x, v, index = gas.x.copy(), gas.v.copy(), np.array(NO_PREVIOUS_CONTACT)
    x1, v1, index1 = call_update(caller, gas, x, v, index, gas.dt)
    xc = gas.x + gas.v * T
    n = (xc[0] - xc[1]) / np.linalg.norm(xc[0] - xc[1])
    un = (gas.v[0] - gas.v[1]) @ n
    m1, m2 = gas.m
    ve = gas.v + (1 + gas.r) * un / (m1 + m2) * np.array([-m2 * n, m1 * n])
    xe = xc + ve * (gas.dt - T)
    scale = np.abs(gas.v).max() + 1.0
    if np.array_equal(x1, gas.x):
        fail(f"{UPDATE} did not change x: it must move the grains in place (x += ..., not x = ...)")
    if not close(v1, ve, scale, STATE_RTOL) or not close(x1, xe, np.abs(xe).max() + 1.0, STATE_RTOL):
        fail(f"{UPDATE}: two grains (m = {fmt(gas.m)}, r = {fmt(gas.r)}) collide once at t = {fmt(T)} inside "
             f"dt = {fmt(gas.dt)}: expected v = {fmt(ve)} and x = {fmt(xe)}; got v = {fmt(v1)}, x = {fmt(x1)}")
    if sorted(index1.tolist()) != [0, 1]:
        fail(f"{UPDATE}: after the contact of grains 0 and 1, indexOld must hold it ([0, 1] or [1, 0]), "
             f"changed in place; it is {fmt(index1)}")


def energy_of(m: np.ndarray, v: np.ndarray) -> float:
    return float(0.5 * np.sum(m * np.sum(v * v, axis=1)))


def check_step(gas: Scenario, before: tuple, after: tuple, dt: float, t: float) -> None:
    """One step of update: grains moved (no faster than the energy allows), no overlap, in the box, energy."""
    (x0, v0), (x, v) = before, after
    energy, new = energy_of(gas.m, v0), energy_of(gas.m, v)
    moving = np.linalg.norm(v0, axis=1) > 0
    still = np.flatnonzero(moving & np.all(x == x0, axis=1))
    if still.size:
        fail(f"{UPDATE}: grain {still[0]} moves at {fmt(v0[still[0]])} but update(dt = {fmt(dt)}) left it at "
             f"{fmt(x0[still[0]])}: update must move the grains in place (x += ..., not x = ...)")
    # A grain whose velocity is the same (to FREE_VELOCITY_RTOL) met nothing in dt, or only grazed: it flew by
    # v dt (to rounding, or to the graze's tiny change). Without this, an update that barely moves the grains
    # broke no rule of a gas.
    free = np.flatnonzero(moving & np.all(np.abs(v - v0) <= FREE_VELOCITY_RTOL * (np.abs(v0) + 1.0), axis=1))
    flown = x0[free] + v0[free] * dt
    for k in free[~np.all(np.abs(x[free] - flown) <= STATE_RTOL * (np.abs(flown) + 1.0), axis=1)][:1]:
        fail(f"{UPDATE}: grain {k} kept its velocity {fmt(v0[k])} over dt = {fmt(dt)}, so it met nothing and "
             f"must fly from {fmt(x0[k])} to {fmt(x0[k] + v0[k] * dt)}; it is at {fmt(x[k])}")
    reach = np.sqrt(2 * energy / gas.m) * dt * (1 + 1e-6) + OVERLAP_RTOL * gas.R
    jump = np.flatnonzero(np.linalg.norm(x - x0, axis=1) > reach)
    if jump.size:
        fail(f"{UPDATE}: grain {jump[0]} went from {fmt(x0[jump[0]])} to {fmt(x[jump[0]])} in dt = {fmt(dt)}, "
             "further than its kinetic energy lets it")
    depth, pair = pair_overlap_during(x, np.zeros_like(v), gas.R, 0.0)
    if depth > OVERLAP_RTOL:
        fail(f"{UPDATE}: at t = {fmt(t)} grains {pair[0]} and {pair[1]} overlap (by {depth:.3g} of their radii)")
    for k, wall in enumerate(gas.w):
        inside = np.sign(np.mean([wall_height(wall, p) for p in gas.x]))
        heights = np.array([inside * wall_height(wall, p) for p in x])
        out = np.flatnonzero(heights < gas.R * (1 - OVERLAP_RTOL))
        if out.size:
            fail(f"{UPDATE}: at t = {fmt(t)} grain {out[0]} at {fmt(x[out[0]])} overlaps or crossed wall w[{k}]")
    if gas.r == 1.0 and not close(new, energy, energy, ENERGY_RTOL):
        fail(f"{UPDATE}: with r = 1 the kinetic energy must stay {fmt(energy)}; at t = {fmt(t)} it is {fmt(new)}")
    if new > energy * (1 + ENERGY_RTOL):
        fail(f"{UPDATE}: the kinetic energy grew from {fmt(energy)} to {fmt(new)} at t = {fmt(t)} "
             f"(r = {fmt(gas.r)})")


#: Velocity change (relative to |v| + 1) below which a grain counts as having flown freely through a step.
FREE_VELOCITY_RTOL = 1e-12
#: Over a run, the grains' displacements must add up to at least this fraction of the distance their speeds
#: carry them (the reference's gases of these properties: 0.76 at the least, over 400 random gases).
MOVED_FRACTION = 0.25


def run_and_watch(caller: Caller, gas: Scenario, steps: int, dt: float) -> None:
    """Run update step by step, checking every step (check_step), then that the grains moved as gas grains do."""
    x, v, index = gas.x.copy(), gas.v.copy(), np.array(NO_PREVIOUS_CONTACT)
    moved = flown = 0.0
    for step in range(steps):
        x0, v0 = x.copy(), v.copy()
        x, v, index = call_update(caller, gas, x, v, index.astype(int), dt, step * dt)
        x, v = x.copy(), v.copy()
        check_step(gas, (x0, v0), (x, v), dt, (step + 1) * dt)
        moved += float(np.linalg.norm(x - x0, axis=1).sum())
        flown += float(np.linalg.norm(v0, axis=1).sum()) * dt
    if moved < MOVED_FRACTION * flown:
        fail(f"{UPDATE}: over {steps} steps of dt = {fmt(dt)} the grains moved {moved:.3g} in all, while their "
             f"speeds carry them {flown:.3g}: between contacts a grain flies at its velocity")


def check_gas(caller: Caller, gas: Scenario) -> None:
    # 2 time units: every grain (speed >= 0.5) travels a box length, so it must bounce.
    run_and_watch(caller, gas, steps=20, dt=0.1)


def channel_end_state(gas: Scenario, dt: float) -> tuple[np.ndarray, np.ndarray, float]:
    """End state of the channel after dt, in closed form: (x, v, smallest gap at the end).

    Equal masses with r = 1 on a line exchange velocities when they collide:
    with each grain's 2R shrunk away (grain k at R + 2Rk + q_k), the points q
    move freely in [0, L - 2nR], reflected by the walls, and pass through each
    other; grain k is then the k-th point from the left.
    """
    n, R = gas.n, gas.R[0]
    free = gas.w[1, 0, 0] - 2 * R * n
    q = np.mod(gas.x[:, 0] - R - 2 * R * np.arange(n) + gas.v[:, 0] * dt, 2 * free)
    u = np.where(q > free, -gas.v[:, 0], gas.v[:, 0])
    q = np.where(q > free, 2 * free - q, q)
    order = np.argsort(q, kind="stable")
    x = np.stack([R + 2 * R * np.arange(n) + q[order], np.zeros(n)], axis=1)
    v = np.stack([u[order], np.zeros(n)], axis=1)
    return x, v, float(np.min(np.diff(np.concatenate([[0.0], q[order], [free]]))))


def check_channel(caller: Caller, gas: Scenario) -> None:
    xe, ve, _ = channel_end_state(gas, CHANNEL_DT)
    x, v, index = call_update(caller, gas, gas.x.copy(), gas.v.copy(), np.array(NO_PREVIOUS_CONTACT), CHANNEL_DT)
    if not (close(x, xe, gas.w[1, 0, 0], STATE_RTOL) and close(v, ve, np.abs(gas.v).max(), STATE_RTOL)):
        worst = int(np.argmax(np.abs(x - xe).max(axis=1) + np.abs(v - ve).max(axis=1)))
        fail(f"{UPDATE}: {gas.n} equal grains (r = 1) bounce along a channel between two walls, over "
             f"{CHANNEL_CONTACTS} contacts in one dt = {fmt(CHANNEL_DT)}; at the end grain {worst} should be at "
             f"{fmt(xe[worst])} with velocity {fmt(ve[worst])}; got {fmt(x[worst])} and {fmt(v[worst])}. "
             + _channel_hint(gas, x, worst))
    if tuple(index.tolist()) == (-1.0, -1.0):
        fail(f"{UPDATE}: after over {CHANNEL_CONTACTS} contacts indexOld is still [-1, -1]; it must hold the last "
             "contact, changed in place (indexOld[:] = index)")


def _channel_hint(gas: Scenario, x: np.ndarray, shown: int) -> str:
    """What a wrong end state of the channel suggests (shown: the grain the message quotes, named if it is out).
    (A recursive update stops with a RecursionError, which the sandbox's message explains: a wrong state is not
    that.)"""
    left, right = gas.w[0, 0, 0], gas.w[1, 0, 0]
    out = np.flatnonzero(~((x[:, 0] >= left) & (x[:, 0] <= right)))
    if out.size:
        grain = shown if shown in out else int(out[0])
        return (f"Grain {grain} ended outside the channel ({fmt(left)} <= x <= {fmt(right)}): a contact with "
                "a wall was missed or solved wrong. update must solve every contact inside dt in a loop (here over "
                f"{CHANNEL_CONTACTS}, none left out), with contact_time_walls and contact_solve_wall right")
    return ("update must solve every contact inside dt in a loop, in time order, each from the state the one before "
            "left")


def channels() -> st.SearchStrategy[Scenario]:
    return st.sampled_from(CHANNEL_SEEDS).map(lambda seed: channel(CHANNEL_GRAINS, seed, CHANNEL_GAP))


PROPERTIES = [
    Property(MCT, "earliest contact", "the named bodies touch at tc and nothing touches before",
             lambda: S.gases(), check_earliest),
    Property(MCT, "excludes indexOld", "the previous contact is not returned again, in either grain order",
             lambda: st.tuples(S.gases(), st.booleans()), check_excludes_old),
    Property(MCT, "no contact", "sys.float_info.max when nothing moves (each case with the gas moving)",
             lambda: S.gases(),
             check_no_contact, examples=20),
    Property(UPDATE, "one collision", "in place: two grains of any masses (mostly unequal) collide once inside dt",
             collisions_in_one_step, check_one_collision, examples=40),
    Property(UPDATE, "gas physics", "in place: grains move, no overlap, grains in the box, energy kept for r = 1 "
             "and never gained", lambda: S.gases(n_max=16, r=st.sampled_from([1.0, 0.9, 0.5])), check_gas, examples=6),
    Property(UPDATE, "many contacts in one dt", f"over {CHANNEL_CONTACTS} contacts inside one dt: the end state of "
             "grains bouncing along a channel", channels, check_channel, examples=1, fixed_inputs=True),
]
