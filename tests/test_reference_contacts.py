"""Physics of the reference's contact functions, checked with Hypothesis."""

import copy
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.properties import strategies as S
from grader.spec import NO_CONTACT
from grader.spec.tolerances import DISTANCE_RTOL, TIME_RTOL, VELOCITY_RTOL, close
from reference import vectorised as ref
from reference.validation import InvalidArgument


def test_no_contact_is_the_largest_float():
    assert NO_CONTACT == sys.float_info.max


@given(S.colliding_pairs())
def test_grain_contact_time_is_the_constructed_one(case):
    tc = ref.contact_time_grains(*case.args)
    assert isinstance(tc, float)
    assert close(tc, case.expected, case.expected + 1.0, TIME_RTOL)
    dx = case.x1 + case.v1 * tc - case.x2 - case.v2 * tc
    reach = case.R1 + case.R2
    assert close(np.linalg.norm(dx), reach, reach, DISTANCE_RTOL)
    assert np.dot(dx, case.v1 - case.v2) < 0  # approaching at contact


@given(S.no_contact_pairs())
def test_grain_no_contact_returns_exactly_float_max(case):
    assert ref.contact_time_grains(*case.args) == sys.float_info.max


@given(S.colliding_pairs())
def test_grain_contact_time_is_symmetric_and_translation_invariant(case):
    tc = ref.contact_time_grains(*case.args)
    swapped = ref.contact_time_grains(case.x2, case.x1, case.v2, case.v1, case.R2, case.R1)
    shift = np.array([3.0, -7.0])
    moved = ref.contact_time_grains(case.x1 + shift, case.x2 + shift, case.v1, case.v2, case.R1, case.R2)
    assert close(swapped, tc, tc + 1, TIME_RTOL) and close(moved, tc, tc + 1, TIME_RTOL)


@given(S.colliding_walls())
def test_wall_contact_time_is_the_constructed_one(case):
    tc = ref.contact_time_walls(*case.args)
    assert close(tc, case.expected, case.expected + 1.0, TIME_RTOL)
    # The wall's points reversed describe the same line.
    assert close(ref.contact_time_walls(case.w[::-1], case.x1, case.v1, case.R1), tc, tc + 1, TIME_RTOL)


@given(S.no_contact_walls())
def test_wall_no_contact_returns_exactly_float_max(case):
    assert ref.contact_time_walls(*case.args) == sys.float_info.max


def test_wall_projection_divides_by_the_squared_length():
    # Wall of length 4 along x: the handout's |t| instead of |t|^2 would put the
    # foot of the perpendicular in the wrong place and give the wrong time.
    w = np.array([[0.0, 0.0], [4.0, 0.0]])
    assert ref.contact_time_walls(w, np.array([1.0, 2.0]), np.array([0.0, -1.0]), 0.5) == pytest.approx(1.5)


@given(S.grain_contacts())
def test_grain_collision_conserves_momentum_and_applies_restitution(c):
    dv1, dv2 = ref.contact_solve_grains(*c.args)
    assert dv1.shape == dv2.shape == (2,)
    scale = c.m1 * np.linalg.norm(c.v1) + c.m2 * np.linalg.norm(c.v2) + 1.0
    assert close(c.m1 * dv1 + c.m2 * dv2, [0, 0], scale, VELOCITY_RTOL)
    n = (c.x1 - c.x2) / np.linalg.norm(c.x1 - c.x2)
    t = S.perp(n)
    un = np.dot(c.v1 - c.v2, n)
    un_after = np.dot(c.v1 + dv1 - c.v2 - dv2, n)
    vscale = np.linalg.norm(c.v1) + np.linalg.norm(c.v2) + 1.0
    assert close(un_after, -c.r * un, vscale, VELOCITY_RTOL)
    assert close([np.dot(dv1, t), np.dot(dv2, t)], [0, 0], vscale, VELOCITY_RTOL)
    mu = c.m1 * c.m2 / (c.m1 + c.m2)
    before = 0.5 * (c.m1 * c.v1 @ c.v1 + c.m2 * c.v2 @ c.v2)
    after = 0.5 * (c.m1 * (c.v1 + dv1) @ (c.v1 + dv1) + c.m2 * (c.v2 + dv2) @ (c.v2 + dv2))
    assert close(before - after, 0.5 * (1 - c.r**2) * mu * un**2, before + 1.0, VELOCITY_RTOL)


@given(S.grain_contacts())
def test_elastic_grain_collision_keeps_energy(c):
    c = S.GrainContact(c.x1, c.x2, c.v1, c.v2, c.m1, c.m2, 1.0)
    dv1, dv2 = ref.contact_solve_grains(*c.args)
    before = c.m1 * c.v1 @ c.v1 + c.m2 * c.v2 @ c.v2
    after = c.m1 * (c.v1 + dv1) @ (c.v1 + dv1) + c.m2 * (c.v2 + dv2) @ (c.v2 + dv2)
    assert close(after, before, before + 1.0, VELOCITY_RTOL)


@given(S.wall_contacts())
def test_wall_bounce_reverses_the_normal_velocity_times_r(c):
    dv = ref.contact_solve_wall(*c.args)
    u = (c.wall[1] - c.wall[0]) / np.linalg.norm(c.wall[1] - c.wall[0])
    n = S.perp(u)
    scale = np.linalg.norm(c.v1) + 1.0
    assert close(np.dot(c.v1 + dv, n), -c.r * np.dot(c.v1, n), scale, VELOCITY_RTOL)
    assert close(np.dot(dv, u), 0.0, scale, VELOCITY_RTOL)


@given(st.one_of(S.grain_contacts(), S.wall_contacts()))
def test_contact_solvers_do_not_modify_their_arguments(c):
    before = copy.deepcopy(c.args)
    solver = ref.contact_solve_grains if isinstance(c, S.GrainContact) else ref.contact_solve_wall
    solver(*c.args)
    for a, b in zip(c.args, before, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda: ref.contact_time_grains([0, 0, 0], [1, 1], [0, 0], [0, 0], 1, 1), "x1"),
        (lambda: ref.contact_time_grains([0, 0], [3, 0], [0, 0], [0, 0], -1, 1), "R1"),
        (lambda: ref.contact_time_walls([[0, 0], [0, 0]], [1, 1], [0, 0], 1), "two points"),
        (lambda: ref.contact_solve_grains([0, 0], [1, 0], [0, 0], [0, 0], 1, 1, 1.5), "[0, 1]"),
        (lambda: ref.contact_solve_grains([0, 0], [0, 0], [0, 0], [0, 0], 1, 1, 1), "same point"),
        (lambda: ref.minimum_contact_time(np.zeros((2, 2)), np.zeros((2, 2)), [1, 1], np.zeros((4, 2)), [-1, -1]), "w"),
        (lambda: ref.minimum_contact_time([[0, 0], [3, 0]], np.zeros((2, 2)), [1, 1], [[[0, 0], [1, 0]]], [0, 5]),
         "indexOld"),
    ],
)
def test_bad_arguments_get_an_error_that_names_them(call, names):
    with pytest.raises(InvalidArgument, match=names):
        call()
