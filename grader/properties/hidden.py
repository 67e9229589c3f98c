"""Hidden properties: the submission against the reference solution.

Only this module (through :mod:`grader.properties.oracle`) touches the reference; the
student kit leaves both out. Each case is first checked for conditioning: the
reference is run again on inputs nudged by a relative 1e-10, and a case whose
answer moves more than the tolerance (grazing contacts, near ties, chaotic
runs) is discarded, since no correct code could be held to it. The update
cases all hold grain-grain contacts (counted with the reference's functions,
here), so free flight or wall bounces alone cannot agree with the reference.
"""

from __future__ import annotations

import numpy as np

from grader.properties.contacts import grain_contact_cases, wall_contact_cases
from grader.properties.inputs import GrainContact, WallContact
from grader.properties.lazy import S, composite, st
from grader.properties.oracle import collapse_error, reference, update_within
from grader.properties.property import Caller, Property, discard_unless, fail
from grader.properties.readers import (
    args_of,
    call_pure,
    call_update,
    fmt,
    one_float,
    time_and_index,
    vector,
    vector_pair,
)
from grader.spec import NO_PREVIOUS_CONTACT
from grader.spec.scenarios import Scenario, random_gas
from grader.spec.tolerances import CONDITIONING_RTOL, HUGE_TIME, STATE_RTOL, TIME_RTOL, close, nudged

#: The hidden update runs: steps of dt.
UPDATE_STEPS, UPDATE_DT = 5, 0.04


def same_time(a: float, b: float) -> bool:
    return a == b or (max(a, b) < HUGE_TIME and close(a, b, abs(b) + 1.0, TIME_RTOL))


def well_conditioned_time(function: str, args: tuple) -> float:
    expected = getattr(reference(), function)(*args)
    discard_unless(same_time(getattr(reference(), function)(*nudged(args)), expected))
    return expected


@composite
def random_grain_args(draw):
    return (draw(S.vectors(3.0)), draw(S.vectors(3.0)), draw(S.vectors(S.MAX_SPEED)), draw(S.vectors(S.MAX_SPEED)),
            draw(S.radii), draw(S.radii))


@composite
def random_wall_args(draw):
    w, _, _ = draw(S.stored(S.wall_lines))
    return (w, draw(S.vectors()), draw(S.vectors(S.MAX_SPEED)), draw(S.radii))


def time_check(function: str):
    def check(caller: Caller, args: tuple) -> None:
        expected = well_conditioned_time(function, args)
        got = one_float(call_pure(caller, function, args), function)
        if not same_time(got, expected):
            fail(f"{function}: expected {fmt(expected)} (the reference's answer); got {fmt(got)}")
    return check


def check_minimum(caller: Caller, gas: Scenario) -> None:
    args = args_of(gas)
    tc_ref, index_ref = reference().minimum_contact_time(*args)
    tc_nudged, index_nudged = reference().minimum_contact_time(*nudged(args))
    discard_unless(same_time(tc_ref, tc_nudged) and sorted(index_ref) == sorted(index_nudged))
    tc, index = time_and_index(call_pure(caller, "minimum_contact_time", args), gas.n, len(gas.w))
    if not same_time(tc, tc_ref) or index is None or sorted(index) != sorted(index_ref.tolist()):
        fail(f"minimum_contact_time: expected tc = {fmt(tc_ref)}, index = {index_ref.tolist()}; got tc = "
             f"{fmt(tc)}, index = {list(index) if index else None}")


def check_solve_wall(caller: Caller, c: WallContact) -> None:
    expected = reference().contact_solve_wall(*c.args)
    got = vector(call_pure(caller, "contact_solve_wall", c.args).value, "contact_solve_wall", "dv1")
    if not close(got, expected, np.abs(c.v1).max() + 1, STATE_RTOL):
        fail(f"contact_solve_wall: expected dv1 = {fmt(expected)}; got {fmt(got)}")


def check_solve_grains(caller: Caller, c: GrainContact) -> None:
    e1, e2 = reference().contact_solve_grains(*c.args)
    g1, g2 = vector_pair(call_pure(caller, "contact_solve_grains", c.args), "contact_solve_grains")
    scale = np.abs(np.concatenate([c.v1, c.v2])).max() + 1
    if not (close(g1, e1, scale, STATE_RTOL) and close(g2, e2, scale, STATE_RTOL)):
        fail(f"contact_solve_grains: expected dv1 = {fmt(e1)}, dv2 = {fmt(e2)}; got {fmt(g1)}, {fmt(g2)}")


#: Contacts in one step past which the reference gives up on a hidden gas (InelasticCollapseError: the case tests
#: nothing). Its own limit, 100 000, cost 20 s of the grader's CPU per case where a wrong update's shrinking led to
#: r = 0; the drawn gases need a few dozen.
HIDDEN_CONTACTS_PER_STEP = 2000


def reference_run(gas: Scenario, x: np.ndarray, v: np.ndarray, steps: int, dt: float):
    x, v, index = x.copy(), v.copy(), np.array(NO_PREVIOUS_CONTACT)
    update = update_within(HIDDEN_CONTACTS_PER_STEP)
    for step in range(steps):
        update(x, v, gas.R, gas.m, gas.w, index, gas.r, dt, step * dt)
    return x, v


#: Wall hits followed, at most, before a gas still without a grain-grain contact counts as having none: with r
#: near 0 a grain may slide along a wall, hit after hit (the strategy's filter must end, whatever Hypothesis draws).
WALL_HITS_CAP = 200


def has_grain_contact(gas: Scenario, duration: float) -> bool:
    """Whether the hidden run holds a grain-grain contact in [0, duration], driven with the reference's own
    functions (False past WALL_HITS_CAP wall hits)."""
    ref = reference()
    x, v, index, t = gas.x.copy(), gas.v.copy(), np.array(NO_PREVIOUS_CONTACT), 0.0
    for _ in range(WALL_HITS_CAP):
        tc, index = ref.minimum_contact_time(x, v, gas.R, gas.w, index)
        if t + tc > duration:
            return False
        i, j = (int(e) for e in index)
        if j >= 0:
            return True
        x, t = x + v * tc, t + tc
        v[i] += ref.contact_solve_wall(gas.w[-(j + 1)], x[i], v[i], gas.r)
    return False


def colliding_gases() -> st.SearchStrategy[Scenario]:
    """Gases whose hidden run holds at least one grain-grain contact."""
    return st.builds(random_gas, n=st.integers(3, 15), seed=st.integers(0, 2**16), packing=st.floats(0.15, 0.35),
                     r=S.restitutions).filter(lambda gas: has_grain_contact(gas, UPDATE_STEPS * UPDATE_DT))


def check_update(caller: Caller, gas: Scenario) -> None:
    steps, dt = UPDATE_STEPS, UPDATE_DT
    try:
        xe, ve = reference_run(gas, gas.x, gas.v, steps, dt)
        x_nudged, v_nudged = nudged((gas.x, gas.v))
        xn, vn = reference_run(gas, x_nudged, v_nudged, steps, dt)
    except collapse_error():
        # The reference cannot run this gas (r near 0: contacts pile up), so it tests nothing. A red team's wrong
        # update led the shrinking there, and the grader stopped with a traceback instead of a grade.
        discard_unless(False)
    discard_unless(close(xn, xe, 1.0, CONDITIONING_RTOL) and close(vn, ve, np.abs(ve).max() + 1, CONDITIONING_RTOL))
    x, v, index = gas.x.copy(), gas.v.copy(), np.array(NO_PREVIOUS_CONTACT)
    for step in range(steps):
        x, v, index = call_update(caller, gas, x, v, index.astype(int), dt, step * dt)
    if not (close(x, xe, 1.0, STATE_RTOL) and close(v, ve, np.abs(ve).max() + 1, STATE_RTOL)):
        worst = int(np.argmax(np.abs(x - xe).max(axis=1) + np.abs(v - ve).max(axis=1)))
        fail(f"update: after {steps} steps of dt = {fmt(dt)} the state differs from the reference's; grain "
             f"{worst} is at {fmt(x[worst])} with velocity {fmt(v[worst])}, expected {fmt(xe[worst])} and "
             f"{fmt(ve[worst])}")


PROPERTIES = [
    Property("contact_time_grains", "agrees with the reference", "random pairs", random_grain_args,
             time_check("contact_time_grains"), hidden=True),
    Property("contact_time_walls", "agrees with the reference", "random grains and walls", random_wall_args,
             time_check("contact_time_walls"), hidden=True),
    Property("minimum_contact_time", "agrees with the reference", "random gases", lambda: S.gases(n_max=20),
             check_minimum, hidden=True, examples=30),
    Property("contact_solve_wall", "agrees with the reference", "random bounces", wall_contact_cases,
             check_solve_wall, hidden=True),
    Property("contact_solve_grains", "agrees with the reference", "random collisions", grain_contact_cases,
             check_solve_grains, hidden=True),
    Property("update", "agrees with the reference", "short runs of gases with grain-grain contacts",
             colliding_gases, check_update, hidden=True, examples=8, shrink_cases=40),
]
