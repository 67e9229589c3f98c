"""Public properties of the four single-contact functions.

Every expectation comes from the statement: contact cases are built from
their answer (grader.properties.strategies), collision laws are checked as laws. Every
check also checks that the arguments were left unchanged, and every property
needs an answer a do-nothing function cannot give: each no-contact case comes
with a contact case, each solver case has a non-zero impulse.
"""

from __future__ import annotations

import numpy as np

from grader.properties.geometry import rotation, wall_tangent
from grader.properties.inputs import GrainContact, GrainPair, WallCase, WallContact, perp
from grader.properties.lazy import S, composite, st
from grader.properties.property import Caller, Property, fail
from grader.properties.readers import call_pure, fmt, one_float, vector, vector_pair
from grader.spec import NO_CONTACT
from grader.spec.tolerances import ALONG_WALL_MIN_TIME, TIME_RTOL, VELOCITY_RTOL, close

CTG, CTW, CSW, CSG = "contact_time_grains", "contact_time_walls", "contact_solve_wall", "contact_solve_grains"

NO_CONTACT_REASON = {
    "receding": "the grains move apart",
    "missing": "the grains pass each other without touching",
    "parallel": "the grains move with the same velocity",
    "overlapping": "the grains already overlap, so the contact time would be negative",
    "away": "the grain moves away from the wall",
    "overlap": "the grain already overlaps the wall line, so the contact time would be negative",
}


def expect_time(got: float, expected: float | None, name: str, what: str) -> None:
    assert expected is not None, "a contact case has its contact time"
    if not close(got, expected, expected + 1.0, TIME_RTOL):
        extra = " (sys.float_info.max means no contact, but there is one)" if got == NO_CONTACT else ""
        fail(f"{name}: expected tc = {fmt(expected)}, when {what}; got {fmt(got)}{extra}")


def expect_no_contact(got: float, name: str, kind: str) -> None:
    if got != NO_CONTACT:
        fail(f"{name}: expected exactly sys.float_info.max because {NO_CONTACT_REASON[kind]}; got {fmt(got)}")


# -- contact_time_grains -------------------------------------------------------

def check_grain_contact(caller: Caller, case: GrainPair) -> None:
    tc = one_float(call_pure(caller, CTG, case.args), CTG)
    expect_time(tc, case.expected, CTG, "the grains first touch (centres R1 + R2 apart, approaching)")


def check_grain_no_contact(caller: Caller, cases: tuple[GrainPair, GrainPair]) -> None:
    """A no-contact pair, then a contact pair: returning sys.float_info.max always fails."""
    none, contact = cases
    expect_no_contact(one_float(call_pure(caller, CTG, none.args), CTG), CTG, none.kind)
    check_grain_contact(caller, contact)


@composite
def similarities(draw):
    """(rotation matrix, shift, length scale, speed scale): a change of frame and units."""
    return rotation(draw(S.angles)), draw(S.vectors()), draw(S.floats(0.2, 5.0)), draw(S.floats(0.2, 5.0))


@composite
def transformed_pairs(draw):
    """A colliding pair seen swapped, moved, turned and rescaled, with its answer."""
    case = draw(S.stored(S.colliding_pairs))
    turn, shift, length, speed = draw(S.stored(similarities))
    x1, x2 = (turn @ x * length + shift for x in (case.x1, case.x2))
    v1, v2 = (turn @ v * speed for v in (case.v1, case.v2))
    R1, R2 = case.R1 * length, case.R2 * length
    args = (x2, x1, v2, v1, R2, R1) if draw(S.stored(st.booleans)) else (x1, x2, v1, v2, R1, R2)
    return args, case.expected * length / speed


def check_grain_invariance(caller: Caller, case) -> None:
    args, expected = case
    tc = one_float(call_pure(caller, CTG, args), CTG)
    expect_time(tc, expected, CTG, "the grains touch; the case is a swapped, moved, turned or rescaled one that works")


# -- contact_time_walls ----------------------------------------------------------

def check_wall_contact(caller: Caller, case: WallCase) -> None:
    tc = one_float(call_pure(caller, CTW, case.args), CTW)
    expect_time(tc, case.expected, CTW, "the grain reaches the wall line (distance R1, moving toward it)")


def check_wall_no_contact(caller: Caller, cases: tuple[WallCase, WallCase]) -> None:
    """A no-contact case, then a contact case: returning sys.float_info.max always fails."""
    none, contact = cases
    tc = one_float(call_pure(caller, CTW, none.args), CTW)  # inf fails there, quoting the statement
    if none.kind == "parallel":
        # Along the line the normal speed may be round-off instead of 0: a
        # contact further away than the grain travels in 1e12 time units is fine.
        if tc != NO_CONTACT and tc < ALONG_WALL_MIN_TIME:
            fail(f"{CTW}: expected sys.float_info.max because the grain moves along the wall; got {fmt(tc)}")
    else:
        expect_no_contact(tc, CTW, none.kind)
    check_wall_contact(caller, contact)


def resited(draw, wall: np.ndarray) -> np.ndarray:
    """The same wall line through two other points: any distance apart, either order."""
    u = wall_tangent(wall)
    a = draw(S.floats(-30.0, 30.0))
    b = a + draw(S.signs) * draw(S.floats(0.05, 40.0))
    return np.array([wall[0] + a * u, wall[0] + b * u])


@composite
def reshaped_walls(draw):
    """A colliding wall case with the wall's points slid along the line and maybe swapped."""
    case = draw(S.stored(S.colliding_walls))
    return WallCase(resited(draw, case.w), case.x1, case.v1, case.R1, case.expected)


@composite
def transformed_walls(draw):
    case = draw(S.stored(S.colliding_walls))
    turn, shift, length, speed = draw(S.stored(similarities))
    w = np.array([turn @ p * length + shift for p in case.w])
    return WallCase(w, turn @ case.x1 * length + shift, turn @ case.v1 * speed, case.R1 * length,
                    case.expected * length / speed)


# -- contact_solve_wall ------------------------------------------------------------

def check_wall_bounce(caller: Caller, c: WallContact) -> None:
    """The grain moves toward the wall (vn != 0), so the increment is never zero."""
    dv = vector(call_pure(caller, CSW, c.args).value, CSW, "dv1")
    u = wall_tangent(c.wall)
    n = perp(u)
    scale = np.linalg.norm(c.v1) + 1.0
    vn, vt = c.v1 @ n, c.v1 @ u
    after = c.v1 + dv
    if not close(after @ n, -c.r * vn, scale, VELOCITY_RTOL):
        fail(f"{CSW}: the normal velocity {fmt(vn)} should become -r * ({fmt(vn)}) = {fmt(-c.r * vn)} with "
             f"r = {fmt(c.r)}; v1 + dv1 = {fmt(after)} has normal velocity {fmt(after @ n)}")
    if not close(after @ u, vt, scale, VELOCITY_RTOL):
        fail(f"{CSW}: the velocity along the wall should stay {fmt(vt)}; v1 + dv1 = {fmt(after)} has "
             f"{fmt(after @ u)}")


@composite
def reordered_wall_contacts(draw):
    c = draw(S.stored(S.wall_contacts))
    return WallContact(resited(draw, c.wall), c.x1, c.v1, c.r)


# -- contact_solve_grains --------------------------------------------------------

def _grain_increments(caller: Caller, c: GrainContact):
    dv1, dv2 = vector_pair(call_pure(caller, CSG, c.args), CSG)
    n = (c.x1 - c.x2) / np.linalg.norm(c.x1 - c.x2)
    scale = np.linalg.norm(c.v1) + np.linalg.norm(c.v2) + 1.0
    return dv1, dv2, n, scale


def law_increments(c: GrainContact) -> tuple[np.ndarray, np.ndarray]:
    """The statement's law: impulse J = (1 + r) mu un along n, shared as -J/m1 and +J/m2."""
    n = (c.x1 - c.x2) / np.linalg.norm(c.x1 - c.x2)
    un = (c.v1 - c.v2) @ n
    J = (1 + c.r) * c.m1 * c.m2 / (c.m1 + c.m2) * un
    return -J / c.m1 * n, J / c.m2 * n


def expect_law(c: GrainContact, dv1: np.ndarray, dv2: np.ndarray, scale: float, what: str) -> None:
    e1, e2 = law_increments(c)
    if not (close(dv1, e1, scale, VELOCITY_RTOL) and close(dv2, e2, scale, VELOCITY_RTOL)):
        fail(f"{CSG}: {what}, and the increments must follow the collision law: with m1 = {fmt(c.m1)}, "
             f"m2 = {fmt(c.m2)}, r = {fmt(c.r)}, expected dv1 = {fmt(e1)}, dv2 = {fmt(e2)}; got dv1 = "
             f"{fmt(dv1)}, dv2 = {fmt(dv2)}")


def check_momentum(caller: Caller, c: GrainContact) -> None:
    dv1, dv2, _, scale = _grain_increments(caller, c)
    p = c.m1 * dv1 + c.m2 * dv2
    if not close(p, [0.0, 0.0], (c.m1 + c.m2) * scale, VELOCITY_RTOL):
        fail(f"{CSG}: momentum changed by m1*dv1 + m2*dv2 = {fmt(p)} with m1 = {fmt(c.m1)}, m2 = {fmt(c.m2)} "
             "(expected 0; with unequal masses the two increments differ)")
    expect_law(c, dv1, dv2, scale, "momentum is kept")


def check_grain_restitution(caller: Caller, c: GrainContact) -> None:
    dv1, dv2, n, scale = _grain_increments(caller, c)
    un = (c.v1 - c.v2) @ n
    un_after = (c.v1 + dv1 - c.v2 - dv2) @ n
    if not close(un_after, -c.r * un, scale, VELOCITY_RTOL):
        fail(f"{CSG}: the normal relative velocity {fmt(un)} should become -r * ({fmt(un)}) = {fmt(-c.r * un)} "
             f"with r = {fmt(c.r)}; it became {fmt(un_after)}")
    t = perp(n)
    if not close([dv1 @ t, dv2 @ t], [0.0, 0.0], scale, VELOCITY_RTOL):
        fail(f"{CSG}: frictionless grains keep their tangential velocity; dv1, dv2 have tangential parts "
             f"{fmt(dv1 @ t)}, {fmt(dv2 @ t)}")


def check_energy_loss(caller: Caller, c: GrainContact) -> None:
    dv1, dv2, n, scale = _grain_increments(caller, c)
    un = (c.v1 - c.v2) @ n
    mu = c.m1 * c.m2 / (c.m1 + c.m2)
    before = 0.5 * (c.m1 * c.v1 @ c.v1 + c.m2 * c.v2 @ c.v2)
    v1, v2 = c.v1 + dv1, c.v2 + dv2
    lost = before - 0.5 * (c.m1 * v1 @ v1 + c.m2 * v2 @ v2)
    expected = 0.5 * (1 - c.r**2) * mu * un**2
    if not close(lost, expected, before + 1.0, VELOCITY_RTOL):
        fail(f"{CSG}: the kinetic energy lost should be (1 - r^2)/2 * mu * un^2 = {fmt(expected)} "
             f"(r = {fmt(c.r)}, mu = {fmt(mu)}, un = {fmt(un)}); it is {fmt(lost)}")
    expect_law(c, dv1, dv2, scale, "the energy lost is right")


def check_grain_swap(caller: Caller, c: GrainContact) -> None:
    dv1, dv2, _, scale = _grain_increments(caller, c)
    swapped = GrainContact(c.x2, c.x1, c.v2, c.v1, c.m2, c.m1, c.r)
    sw1, sw2, _, _ = _grain_increments(caller, swapped)
    if not (close(sw1, dv2, scale, VELOCITY_RTOL) and close(sw2, dv1, scale, VELOCITY_RTOL)):
        fail(f"{CSG}: swapping the two grains should swap the increments: got ({fmt(dv1)}, {fmt(dv2)}) "
             f"and, swapped, ({fmt(sw1)}, {fmt(sw2)})")
    expect_law(c, dv1, dv2, scale, "swapping the grains swaps the increments")


def grain_contact_cases():
    """The cases of contact_solve_grains's properties, the hidden one's too: one module-level builder, so that their
    searches are shared (Property.search_key). A function, not strategies.grain_contacts itself: Hypothesis is
    imported when a case is first drawn (grader.properties.lazy)."""
    return S.grain_contacts()


def wall_contact_cases():
    """The cases of contact_solve_wall's restitution law and of its hidden agreement (as grain_contact_cases)."""
    return S.wall_contacts()


PROPERTIES = [
    Property(CTG, "contact time", "returns the first time the grains touch", lambda: S.colliding_pairs(),
             check_grain_contact),
    Property(CTG, "no contact", "sys.float_info.max for receding, missing and parallel grains (each case "
             "with a contact case)",
             lambda: st.tuples(st.one_of(S.receding_pairs(), S.missing_pairs(), S.parallel_pairs()),
                               S.colliding_pairs()),
             check_grain_no_contact),
    Property(CTG, "overlap", "sys.float_info.max for grains that already overlap (each case with a contact case)",
             lambda: st.tuples(S.overlapping_pairs(), S.colliding_pairs()), check_grain_no_contact),
    Property(CTG, "symmetry and invariance", "same physics after swapping, moving, turning, rescaling",
             transformed_pairs, check_grain_invariance),
    Property(CTW, "contact time", "returns the time the grain reaches the wall line", lambda: S.colliding_walls(),
             check_wall_contact),
    Property(CTW, "no contact", "sys.float_info.max for grains moving away or along, or overlapping (each case "
             "with a contact case)", lambda: st.tuples(S.no_contact_walls(), S.colliding_walls()),
             check_wall_no_contact),
    Property(CTW, "walls of any length and point order", "a wall is the infinite line through its points",
             reshaped_walls, check_wall_contact),
    Property(CTW, "invariance", "same physics after moving, turning and rescaling", transformed_walls,
             check_wall_contact),
    Property(CSW, "restitution law", "normal velocity reversed times r, tangential kept, arguments unchanged",
             wall_contact_cases, check_wall_bounce),
    Property(CSW, "walls of any length and point order", "the bounce depends on the line only",
             reordered_wall_contacts, check_wall_bounce),
    Property(CSG, "momentum", "m1 dv1 + m2 dv2 = 0, for unequal masses too, with the law's impulse",
             grain_contact_cases, check_momentum),
    Property(CSG, "restitution law", "normal relative velocity reversed times r, tangential kept",
             grain_contact_cases, check_grain_restitution),
    Property(CSG, "energy", "kinetic energy lost is (1 - r^2)/2 mu un^2, with the law's impulse",
             grain_contact_cases, check_energy_loss),
    Property(CSG, "swapping the grains", "swapping the grains swaps the increments", grain_contact_cases,
             check_grain_swap),
]
