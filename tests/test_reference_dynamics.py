"""The reference's system-level behaviour: contact search, update, benchmarks."""

import functools
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.spec import NO_CONTACT, wall_code
from grader.spec.scenarios import box_walls, c12_row, random_gas
from grader.spec.tolerances import OVERLAP_RTOL, TIME_RTOL, VELOCITY_RTOL, close
from reference import vectorised as ref
from reference.events import InelasticCollapseError, advance
from reference.validation import InvalidArgument

# ARGESIM C12, e = 0.2: collision times and pairs (spheres numbered from 1) of
# the event-oriented table of the TU Wien study (SNE 28(4), 2018).
C12_TIMES = [1, 8 / 3, 19 / 4, 49 / 9, 6.83333, 7.63462, 9.14815, 9.50427, 9.72685, 11.7937, 14.612, 14.7375, 14.9109]
C12_PAIRS = ["12", "23", "12", "34", "23", "12", "34", "23", "34", "23", "12", "23", "12"]


def brute_force_minimum(x, v, R, w, old):
    """Every pair and every grain-wall couple, with the fixed-signature functions."""
    best = (NO_CONTACT, (-1, -1))
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if sorted(old) != [i, j]:
                best = min(best, (ref.contact_time_grains(x[i], x[j], v[i], v[j], R[i], R[j]), (i, j)))
        for k in range(len(w)):
            if list(old) != [i, wall_code(k)]:
                best = min(best, (ref.contact_time_walls(w[k], x[i], v[i], R[i]), (i, wall_code(k))))
    return best


def same_contact(a, b):
    """Contacts are equal up to the order of two grains."""
    a, b = list(a), list(b)
    return a == b or (a[1] >= 0 and sorted(a) == sorted(b))


@given(seed=st.integers(0, 10**6), n=st.integers(2, 30))
def test_minimum_contact_time_matches_brute_force_and_excludes_index_old(seed, n):
    gas = random_gas(n=n, seed=seed)
    tc, index = ref.minimum_contact_time(gas.x, gas.v, gas.R, gas.w, [-1, -1])
    best_t, best_index = brute_force_minimum(gas.x, gas.v, gas.R, gas.w, [-1, -1])
    assert tc == best_t and same_contact(index, best_index)
    assert index.dtype.kind == "i" and index.shape == (2,)
    for old in ([index[0], index[1]], [index[1], index[0]] if index[1] >= 0 else list(index)):
        tc2, index2 = ref.minimum_contact_time(gas.x, gas.v, gas.R, gas.w, np.array(old))
        t_expected, i_expected = brute_force_minimum(gas.x, gas.v, gas.R, gas.w, old)
        assert tc2 == t_expected and same_contact(index2, i_expected)
        assert not same_contact(index2, index)


def test_wall_index_names_the_wall_as_in_the_handout():
    w = box_walls(1.0)
    # A grain heading right: it meets wall 1 (x = 1) first.
    tc, index = ref.minimum_contact_time(np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]]), [0.1], w, [-1, -1])
    assert tc == pytest.approx(0.4) and list(index) == [0, -2]
    assert np.array_equal(w[-(index[1] + 1)], w[1])


def test_minimum_contact_time_without_any_contact():
    tc, _ = ref.minimum_contact_time(np.array([[0.5, 0.5]]), np.zeros((1, 2)), [0.1], box_walls(1.0), [-1, -1])
    assert tc == sys.float_info.max


def pair_gaps(x, R):
    i, j = np.triu_indices(len(x), 1)
    return np.linalg.norm(x[i] - x[j], axis=1) - (R[i] + R[j])


@pytest.mark.parametrize("r", [1.0, 0.8])
def test_long_gas_run_keeps_grains_apart_and_inside_the_box(r):
    gas = random_gas(n=60, r=r, seed=7)
    x, v, index = gas.x.copy(), gas.v.copy(), gas.fresh_index()
    energy = 0.5 * np.sum(gas.m * np.sum(v * v, axis=1))
    contacts = 0
    for step in range(400):
        before = x.copy()
        ref.update(x, v, gas.R, gas.m, gas.w, index, r, gas.dt, step * gas.dt)
        contacts += int(not np.allclose(before + v * gas.dt, x))
        assert np.all(pair_gaps(x, gas.R) >= -OVERLAP_RTOL * gas.R.max())
        assert np.all(x - gas.R[:, None] >= -OVERLAP_RTOL) and np.all(x + gas.R[:, None] <= 1 + OVERLAP_RTOL)
        new_energy = 0.5 * np.sum(gas.m * np.sum(v * v, axis=1))
        if r == 1.0:
            assert close(new_energy, energy, energy, VELOCITY_RTOL)
        else:
            assert new_energy <= energy * (1 + VELOCITY_RTOL)
        energy = new_energy
    assert contacts > 100  # the run really had contacts to get wrong


def test_c12_row_gives_the_benchmark_collision_table():
    row = c12_row(0.2)
    result = advance(row.x, row.v, row.R, row.m, row.w, (-1, -1), row.r, row.duration)
    times = [c.t for c in result.contacts]
    pairs = [f"{c.index[0] + 1}{c.index[1] + 1}" for c in result.contacts]
    assert pairs == C12_PAIRS
    # The table prints 5-6 significant digits.
    assert np.allclose(times, C12_TIMES, rtol=0, atol=5e-5)
    assert close(times[:4], [1, 8 / 3, 19 / 4, 49 / 9], 10, TIME_RTOL)


def test_update_handles_thousands_of_contacts_in_one_dt_in_place():
    # Three grains in a row closing in with r = 0: the middle one rattles
    # between the others over a thousand times before double precision stops it.
    x = np.array([[-2.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])
    index, xid, vid = np.array([-1, -1]), id(x), id(v)
    R, m, w = np.full(3, 0.5), np.ones(3), box_walls(100.0, (-50.0, -50.0))
    result = advance(x, v, R, m, w, (-1, -1), 0.0, 10.0)
    assert len(result.contacts) > sys.getrecursionlimit()
    t_end = ref.update(x, v, R, m, w, index, 0.0, 10.0, 5.0)
    assert id(x) == xid and id(v) == vid and t_end == 15.0
    assert np.array_equal(x, result.x) and np.array_equal(v, result.v)
    assert sorted(index) in ([0, 1], [1, 2])


def test_piling_up_contacts_stop_with_an_error_instead_of_hanging(monkeypatch):
    # The cap is lowered from events.MAX_CONTACTS_PER_ADVANCE (100 000 contacts, half a minute of CPU here)
    # to a thousand: the same loop stops the same way, fifty times sooner.
    monkeypatch.setattr(ref, "advance", functools.partial(advance, max_contacts=2000))
    # A grain trapped between two walls barely wider apart than its diameter.
    gap = 1e-7
    w = np.array([[[0.0, -0.5 - gap], [1.0, -0.5 - gap]], [[0.0, 0.5 + gap], [1.0, 0.5 + gap]]])
    x, v = np.array([[0.0, 0.0]]), np.array([[0.0, 1.0]])
    with pytest.raises(InelasticCollapseError, match="piling up"):
        ref.update(x, v, np.array([0.5]), np.ones(1), w, np.array([-1, -1]), 1.0, 1.0, 0.0)


def test_update_refuses_arrays_it_cannot_change_in_place():
    with pytest.raises(InvalidArgument, match="in place"):
        ref.update([[0.5, 0.5]], np.zeros((1, 2)), [0.1], [1.0], box_walls(1.0), np.array([-1, -1]), 1.0, 0.1, 0.0)
