"""Public properties of the four single-contact functions.

Every expectation comes from the statement: contact cases are built from
their answer (grader.strategies), collision laws are checked as laws.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from grader import strategies as S
from grader.checks import Property, fail, fmt, one_float, rotation, unchanged, vector, vector_pair, wall_tangent
from grader.sandbox import Sandbox
from grader.spec import NO_CONTACT
from grader.tolerances import TIME_RTOL, VELOCITY_RTOL, close

CTG, CTW, CSW, CSG = "contact_time_grains", "contact_time_walls", "contact_solve_wall", "contact_solve_grains"

NO_CONTACT_REASON = {
    "receding": "the grains move apart",
    "missing": "the grains pass each other without touching",
    "parallel": "the grains move with the same velocity",
    "overlapping": "the grains already overlap, so the contact time would be negative",
    "away": "the grain moves away from the wall",
    "overlap": "the grain already overlaps the wall line, so the contact time would be negative",
}


def expect_time(got: float, expected: float, name: str, what: str) -> None:
    if not close(got, expected, expected + 1.0, TIME_RTOL):
        extra = " (sys.float_info.max means no contact, but there is one)" if got == NO_CONTACT else ""
        fail(f"{name}: expected tc = {expected!r}, when {what}; got {fmt(got)}{extra}")


def expect_no_contact(got: float, name: str, kind: str) -> None:
    if got != NO_CONTACT:
        fail(f"{name}: expected exactly sys.float_info.max because {NO_CONTACT_REASON[kind]}; got {fmt(got)}")


# -- contact_time_grains -------------------------------------------------------

def check_grain_contact(sb: Sandbox, case: S.GrainPair) -> None:
    tc = one_float(sb.call(CTG, *case.args), CTG)
    expect_time(tc, case.expected, CTG, "the grains first touch (centres R1 + R2 apart, approaching)")


def check_grain_no_contact(sb: Sandbox, case: S.GrainPair) -> None:
    expect_no_contact(one_float(sb.call(CTG, *case.args), CTG), CTG, case.kind)


@st.composite
def similarities(draw):
    """(rotation matrix, shift, length scale, speed scale): a change of frame and units."""
    return rotation(draw(S.angles)), draw(S.vectors()), draw(st.floats(0.2, 5.0)), draw(st.floats(0.2, 5.0))


@st.composite
def transformed_pairs(draw):
    """A colliding pair seen swapped, moved, turned and rescaled, with its answer."""
    case = draw(S.colliding_pairs())
    turn, shift, length, speed = draw(similarities())
    x1, x2 = (turn @ x * length + shift for x in (case.x1, case.x2))
    v1, v2 = (turn @ v * speed for v in (case.v1, case.v2))
    R1, R2 = case.R1 * length, case.R2 * length
    args = (x2, x1, v2, v1, R2, R1) if draw(st.booleans()) else (x1, x2, v1, v2, R1, R2)
    return args, case.expected * length / speed


def check_grain_invariance(sb: Sandbox, case) -> None:
    args, expected = case
    tc = one_float(sb.call(CTG, *args), CTG)
    expect_time(tc, expected, CTG, "the grains touch; the case is a swapped, moved, turned or rescaled one that works")


# -- contact_time_walls ----------------------------------------------------------

def check_wall_contact(sb: Sandbox, case: S.WallCase) -> None:
    tc = one_float(sb.call(CTW, *case.args), CTW)
    expect_time(tc, case.expected, CTW, "the grain reaches the wall line (distance R1, moving toward it)")


def check_wall_no_contact(sb: Sandbox, case: S.WallCase) -> None:
    tc = one_float(sb.call(CTW, *case.args), CTW)
    if case.kind == "parallel":
        # Along the line the normal speed may be round-off instead of 0: a
        # contact further away than the grain travels in 1e12 time units is fine.
        if tc != NO_CONTACT and tc < 1e12:
            fail(f"{CTW}: expected sys.float_info.max because the grain moves along the wall; got {fmt(tc)}")
        return
    expect_no_contact(tc, CTW, case.kind)


def resited(draw, wall: np.ndarray) -> np.ndarray:
    """The same wall line through two other points: any distance apart, either order."""
    u = wall_tangent(wall)
    a = draw(st.floats(-30.0, 30.0))
    b = a + draw(st.sampled_from([-1.0, 1.0])) * draw(st.floats(0.05, 40.0))
    return np.array([wall[0] + a * u, wall[0] + b * u])


@st.composite
def reshaped_walls(draw):
    """A colliding wall case with the wall's points slid along the line and maybe swapped."""
    case = draw(S.colliding_walls())
    return S.WallCase(resited(draw, case.w), case.x1, case.v1, case.R1, case.expected)


@st.composite
def transformed_walls(draw):
    case = draw(S.colliding_walls())
    turn, shift, length, speed = draw(similarities())
    w = np.array([turn @ p * length + shift for p in case.w])
    return S.WallCase(w, turn @ case.x1 * length + shift, turn @ case.v1 * speed, case.R1 * length,
                      case.expected * length / speed)


# -- contact_solve_wall ------------------------------------------------------------

def check_wall_bounce(sb: Sandbox, c: S.WallContact) -> None:
    dv = vector(sb.call(CSW, *c.args).value, CSW, "dv1")
    u = wall_tangent(c.wall)
    n = S.perp(u)
    scale = np.linalg.norm(c.v1) + 1.0
    vn, vt = c.v1 @ n, c.v1 @ u
    after = c.v1 + dv
    if not close(after @ n, -c.r * vn, scale, VELOCITY_RTOL):
        fail(f"{CSW}: the normal velocity {vn!r} should become -r * {vn!r} = {-c.r * vn!r} with r = {c.r!r}; "
             f"v1 + dv1 = {fmt(after)} has normal velocity {after @ n!r}")
    if not close(after @ u, vt, scale, VELOCITY_RTOL):
        fail(f"{CSW}: the velocity along the wall should stay {vt!r}; v1 + dv1 = {fmt(after)} has {after @ u!r}")


@st.composite
def reordered_wall_contacts(draw):
    c = draw(S.wall_contacts())
    return S.WallContact(resited(draw, c.wall), c.x1, c.v1, c.r)


# -- contact_solve_grains --------------------------------------------------------

def _grain_increments(sb: Sandbox, c: S.GrainContact):
    dv1, dv2 = vector_pair(sb.call(CSG, *c.args), CSG)
    n = (c.x1 - c.x2) / np.linalg.norm(c.x1 - c.x2)
    scale = np.linalg.norm(c.v1) + np.linalg.norm(c.v2) + 1.0
    return dv1, dv2, n, scale


def check_momentum(sb: Sandbox, c: S.GrainContact) -> None:
    dv1, dv2, _, scale = _grain_increments(sb, c)
    p = c.m1 * dv1 + c.m2 * dv2
    if not close(p, [0.0, 0.0], (c.m1 + c.m2) * scale, VELOCITY_RTOL):
        fail(f"{CSG}: momentum changed by m1*dv1 + m2*dv2 = {fmt(p)} with m1 = {c.m1!r}, m2 = {c.m2!r} "
             "(expected 0; with unequal masses the two increments differ)")


def check_grain_restitution(sb: Sandbox, c: S.GrainContact) -> None:
    dv1, dv2, n, scale = _grain_increments(sb, c)
    un = (c.v1 - c.v2) @ n
    un_after = (c.v1 + dv1 - c.v2 - dv2) @ n
    if not close(un_after, -c.r * un, scale, VELOCITY_RTOL):
        fail(f"{CSG}: the normal relative velocity {un!r} should become -r * {un!r} = {-c.r * un!r} "
             f"with r = {c.r!r}; it became {un_after!r}")
    t = S.perp(n)
    if not close([dv1 @ t, dv2 @ t], [0.0, 0.0], scale, VELOCITY_RTOL):
        fail(f"{CSG}: frictionless grains keep their tangential velocity; dv1, dv2 have tangential parts "
             f"{dv1 @ t!r}, {dv2 @ t!r}")


def check_energy_loss(sb: Sandbox, c: S.GrainContact) -> None:
    dv1, dv2, n, _ = _grain_increments(sb, c)
    un = (c.v1 - c.v2) @ n
    mu = c.m1 * c.m2 / (c.m1 + c.m2)
    before = 0.5 * (c.m1 * c.v1 @ c.v1 + c.m2 * c.v2 @ c.v2)
    v1, v2 = c.v1 + dv1, c.v2 + dv2
    lost = before - 0.5 * (c.m1 * v1 @ v1 + c.m2 * v2 @ v2)
    expected = 0.5 * (1 - c.r**2) * mu * un**2
    if not close(lost, expected, before + 1.0, VELOCITY_RTOL):
        fail(f"{CSG}: the kinetic energy lost should be (1 - r^2)/2 * mu * un^2 = {expected!r} "
             f"(r = {c.r!r}, mu = {mu!r}, un = {un!r}); it is {lost!r}")


def check_grain_swap(sb: Sandbox, c: S.GrainContact) -> None:
    dv1, dv2, _, scale = _grain_increments(sb, c)
    swapped = S.GrainContact(c.x2, c.x1, c.v2, c.v1, c.m2, c.m1, c.r)
    sw1, sw2, _, _ = _grain_increments(sb, swapped)
    if not (close(sw1, dv2, scale, VELOCITY_RTOL) and close(sw2, dv1, scale, VELOCITY_RTOL)):
        fail(f"{CSG}: swapping the two grains should swap the increments: got ({fmt(dv1)}, {fmt(dv2)}) "
             f"and, swapped, ({fmt(sw1)}, {fmt(sw2)})")


def no_mutation(function: str, strategy: st.SearchStrategy) -> Property:
    def check(sb: Sandbox, case) -> None:
        unchanged(sb.call(function, *case.args), case.args, function)

    return Property(function, "does not modify its arguments", "arguments are left as they were", strategy, check,
                    examples=20)


PROPERTIES = [
    Property(CTG, "contact time", "returns the first time the grains touch", S.colliding_pairs(), check_grain_contact),
    Property(CTG, "no contact", "sys.float_info.max for receding, missing and parallel grains",
             st.one_of(S.receding_pairs(), S.missing_pairs(), S.parallel_pairs()), check_grain_no_contact),
    Property(CTG, "overlap", "sys.float_info.max for grains that already overlap", S.overlapping_pairs(),
             check_grain_no_contact),
    Property(CTG, "symmetry and invariance", "same physics after swapping, moving, turning, rescaling",
             transformed_pairs(), check_grain_invariance),
    no_mutation(CTG, S.colliding_pairs()),
    Property(CTW, "contact time", "returns the time the grain reaches the wall line", S.colliding_walls(),
             check_wall_contact),
    Property(CTW, "no contact", "sys.float_info.max for grains moving away or along, or overlapping",
             S.no_contact_walls(), check_wall_no_contact),
    Property(CTW, "walls of any length and point order", "a wall is the infinite line through its points",
             reshaped_walls(), check_wall_contact),
    Property(CTW, "invariance", "same physics after moving, turning and rescaling", transformed_walls(),
             check_wall_contact),
    no_mutation(CTW, S.colliding_walls()),
    Property(CSW, "restitution law", "normal velocity reversed times r, tangential kept", S.wall_contacts(),
             check_wall_bounce),
    Property(CSW, "walls of any length and point order", "the bounce depends on the line only",
             reordered_wall_contacts(), check_wall_bounce),
    no_mutation(CSW, S.wall_contacts()),
    Property(CSG, "momentum", "m1 dv1 + m2 dv2 = 0, for unequal masses too", S.grain_contacts(), check_momentum),
    Property(CSG, "restitution law", "normal relative velocity reversed times r, tangential kept",
             S.grain_contacts(), check_grain_restitution),
    Property(CSG, "energy", "kinetic energy lost is (1 - r^2)/2 mu un^2", S.grain_contacts(), check_energy_loss),
    Property(CSG, "swapping the grains", "swapping the grains swaps the increments", S.grain_contacts(),
             check_grain_swap),
    no_mutation(CSG, S.grain_contacts()),
]
