"""Physics scenarios: the submission's own functions together, against benchmarks.

* The ARGESIM C12 row (reference.c12): the collision table that
  minimum_contact_time and contact_solve_grains produce when driven event by
  event, and the velocities update gives after the benchmark's 15 s.
* The DEM two-particle case (reference.dem, hard-sphere solution in its x-y
  plane): contact time and point, velocities after the collision.

These run with the student's functions calling each other, as a simulation
does: a scenario grades the physics of the whole, on top of the functions.
"""

from __future__ import annotations

import numpy as np

from grader.properties.lazy import st
from grader.properties.property import Caller, Property, fail, terse
from grader.properties.readers import TERSE, call_update, fmt, one_float, time_and_index, vector_pair
from grader.spec import NO_PREVIOUS_CONTACT, scenarios
from grader.spec.tolerances import SCENARIO_RTOL, close
from reference import c12, dem

C12, DEM = "c12_row", "dem_pair"
MCT, CSG, CTG, UPDATE = "minimum_contact_time", "contact_solve_grains", "contact_time_grains", "update"
#: Events driven in the C12 row before giving up (the benchmark has at most 13 for these e).
MAX_EVENTS = 100


def _rows(a: np.ndarray) -> str:
    """Vectors on one line: (0.25, 0), (1, 0)."""
    if terse():
        return TERSE
    return ", ".join("(" + ", ".join(f"{c:.10g}" for c in row) + ")" for row in np.atleast_2d(a))


def _pair(i: int, j: int) -> str:
    return f"{min(i, j)}-{max(i, j)}"


def drive_row(caller: Caller, row: scenarios.Scenario, t_end: float) -> list[tuple[float, str]]:
    """Collisions (t, pair numbered from 1) from the student's contact search and collision law."""
    x, v, index_old = row.x.copy(), row.v.copy(), np.array(NO_PREVIOUS_CONTACT)
    t, events = 0.0, list[tuple[float, str]]()
    while len(events) < MAX_EVENTS:
        tc, index = time_and_index(caller.call(MCT, x, v, row.R, row.w, index_old), row.n, len(row.w))
        if index is None or t + tc > t_end:
            break
        x, t = x + v * tc, t + tc
        i, j = index
        if j < 0:
            events.append((t, f"{i + 1}-wall"))
            break
        dv1, dv2 = vector_pair(caller.call(CSG, x[i], x[j], v[i], v[j], row.m[i], row.m[j], row.r), CSG)
        v[i] = v[i] + dv1
        v[j] = v[j] + dv2
        index_old = np.array([i, j])
        events.append((t, _pair(i + 1, j + 1)))
    return events


def check_c12_table(caller: Caller, e: float) -> None:
    expected = [(float(c.t), _pair(*c.pair)) for c in c12.event_row(e, t_end=c12.T_END).collisions]
    got = drive_row(caller, scenarios.c12_row(e), c12.T_END)
    for k, ((t_exp, p_exp), (t_got, p_got)) in enumerate(zip(expected, got, strict=False)):
        if p_exp != p_got or abs(t_exp - t_got) > SCENARIO_RTOL * c12.T_END:
            fail(f"your functions give {len(got)} collisions for the C12 row with e = {e} in [0, 15]; the "
                 f"benchmark has {len(expected)}; the first difference is collision {k + 1}: expected t = "
                 f"{t_exp:.6g} (pair {p_exp}), got t = {t_got:.6g} (pair {p_got}). Driven with "
                 f"{MCT} and {CSG}: check the contact search and the collision law.")
    if len(got) != len(expected):
        k = min(len(got), len(expected))
        extra = (f"an extra collision at t = {got[k][0]:.6g} (pair {got[k][1]})" if len(got) > k else
                 f"no collision {k + 1}, expected at t = {expected[k][0]:.6g} (pair {expected[k][1]})")
        fail(f"your functions give {len(got)} collisions for the C12 row with e = {e} in [0, 15]; the benchmark "
             f"has {len(expected)}: {extra}")


def check_c12_update(caller: Caller, e: float) -> None:
    row = scenarios.c12_row(e)
    run = c12.event_row(e, t_end=c12.T_END)
    x, v, _ = call_update(caller, row, row.x.copy(), row.v.copy(), np.array(NO_PREVIOUS_CONTACT), c12.T_END)
    expected_v = np.array([[float(u), 0.0] for u in run.velocities])
    expected_x = np.array([[float(p), 0.0] for p in run.positions])
    if not close(v, expected_v, c12.V0, SCENARIO_RTOL):
        fail(f"after update(..., dt = 15) on the C12 row with e = {e}, the velocities are {_rows(v)}; the "
             f"benchmark's are {_rows(expected_v)}")
    if not close(x, expected_x, c12.T_END, SCENARIO_RTOL):
        fail(f"after update(..., dt = 15) on the C12 row with e = {e}, the positions are {_rows(x)}; the "
             f"benchmark's are {_rows(expected_x)}")


#: The DEM pair is also asked from earlier on its path (x2 this much time back): a constant contact time, right
#: for the pair as published, earns nothing.
DEM_EARLIER = 0.25


def check_dem_contact(caller: Caller, _: object) -> None:
    pair = scenarios.dem_pair()
    expected_point = dem.hard_sphere(1.0)["contact_point_before"][:2]  # the same from either start
    for earlier in (0.0, DEM_EARLIER):
        x2 = pair.x[1] - pair.v[1] * earlier
        tc = one_float(caller.call(CTG, pair.x[0], x2, pair.v[0], pair.v[1], pair.R[0], pair.R[1]), CTG)
        expected = dem.contact_time() + earlier
        if abs(tc - expected) > SCENARIO_RTOL * expected:
            fail(f"{CTG} gives tc = {fmt(tc)} for the DEM pair (x1 = (0, 0) at rest, x2 = {_rows(x2)} moving "
                 f"at (-1, -1), diameters 1); the grains touch at t = {fmt(expected)}")
        x1, x2 = pair.x[0] + pair.v[0] * tc, x2 + pair.v[1] * tc
        point = x1 + pair.R[0] * (x2 - x1) / np.linalg.norm(x2 - x1)
        if not close(point, expected_point, 1.0, SCENARIO_RTOL):
            fail(f"at your contact time the DEM pair touch at {_rows(point)}; the contact point is "
                 f"{_rows(expected_point)}")


def check_dem_collision(caller: Caller, e: float) -> None:
    pair = scenarios.dem_pair(e)
    hard = dem.hard_sphere(e)
    tc = hard["t"]
    x = pair.x + pair.v * tc
    dv1, dv2 = vector_pair(caller.call(CSG, x[0], x[1], pair.v[0], pair.v[1], pair.m[0], pair.m[1], e), CSG)
    got = np.array([pair.v[0] + dv1, pair.v[1] + dv2])
    expected = np.array([hard["v1"][:2], hard["v2"][:2]])
    if not close(got, expected, 1.0, SCENARIO_RTOL):
        fail(f"{CSG} gives velocities {_rows(got)} after the DEM pair's collision with e = {e}; the hard-sphere "
             f"solution is {_rows(expected)}")
    x_end, v_end, _ = call_update(caller, pair, pair.x.copy(), pair.v.copy(), np.array(NO_PREVIOUS_CONTACT), 1.0)
    expected_x = x + expected * (1.0 - tc)
    if not close(v_end, expected, 1.0, SCENARIO_RTOL) or not close(x_end, expected_x, 1.0, SCENARIO_RTOL):
        fail(f"update(..., dt = 1) on the DEM pair with e = {e} ends at x = {_rows(x_end)}, v = {_rows(v_end)}; "
             f"the hard-sphere solution is x = {_rows(expected_x)}, v = {_rows(expected)}")


PROPERTIES = [
    Property(C12, "collision table", "the contact search and collision law give the benchmark's collisions in "
             "[0, 15] (e = 0.2, 0.6, 1)", lambda: st.sampled_from([0.2, 0.6, 1.0]), check_c12_table, examples=3,
             uses=(MCT, CSG)),
    Property(C12, "final state after update", "update over the benchmark's 15 s ends at its positions and "
             "velocities", lambda: st.sampled_from([0.2, 0.6, 1.0]), check_c12_update, examples=3, uses=(UPDATE,)),
    Property(DEM, "contact time and point", "the pair touch at t = 0.5 at (0.3, 0.4) (and 0.25 later when started "
             "0.25 earlier on its path)", lambda: st.just(None),
             check_dem_contact, examples=1, uses=(CTG,)),
    Property(DEM, "velocities after the collision", "the hard-sphere velocities for e = 1 and 0.75, also "
             "through update", lambda: st.sampled_from([1.0, 0.75]), check_dem_collision, examples=2,
             uses=(CSG, UPDATE)),
]
