"""reference.engine (the event-driven engine) agrees with the exact search and the model answer.

Three codes, one physics: the engine (cell list, event queue, lazy positions), reference.vectorised (the O(n^2)
search of the next contact before every contact) and reference/granularGas.py (the model answer, plain loops). They
must agree on random gases in boxes of any orientation, with extra walls of any orientation, with grains that leave
the engine's grid; and the engine must meet inelastic collapse with today's error, never a hang.
"""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.spec import FUNCTIONS
from grader.spec.scenarios import random_gas
from reference import engine, events
from reference import granularGas as model
from reference import vectorised as oracle
from reference.validation import InvalidArgument

ROOT = Path(__file__).resolve().parent.parent
#: Round-off grows with every contact; a few dozen contacts stay far below this.
RTOL = 1e-11


def rotation(theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


@st.composite
def tilted_gases(draw):
    """A random_gas turned by any angle, its box possibly larger than the grains' region, plus tilted walls.

    Returns (x, v, R, m, w, r, dt): walls of any orientation, point order and length; extra walls are lines at
    random (they may cut grains, which then never see them, in all three codes alike).
    """
    n = draw(st.integers(1, 7))
    gas = random_gas(n=n, r=draw(st.sampled_from([1.0, 0.9, 0.6])), seed=draw(st.integers(0, 10_000)),
                     packing=draw(st.sampled_from([0.1, 0.3, 0.45])))
    turn = rotation(draw(st.floats(0.0, 2 * np.pi)))
    shift = np.array(draw(st.tuples(st.floats(-3, 3), st.floats(-3, 3))))
    room = draw(st.sampled_from([1.0, 1.0, 2.5]))  # > 1: grains leave the engine's grid and come back
    w = (gas.w - 0.5) * room
    if draw(st.booleans()):  # other point orders and lengths: the same lines
        w = np.stack([w[:, 1], w[:, 1] + 3.0 * (w[:, 0] - w[:, 1])], axis=1)
    for _ in range(draw(st.integers(0, 2))):
        angle = draw(st.floats(0.0, np.pi))
        point = np.array(draw(st.tuples(st.floats(-0.6, 0.6), st.floats(-0.6, 0.6))))
        w = np.concatenate([w, [[point, point + [np.cos(angle), np.sin(angle)]]]])
    x = (gas.x - 0.5) @ turn.T + shift
    w = w @ turn.T + shift
    dt = draw(st.sampled_from([0.05, 0.2, 0.5]))
    return x, gas.v @ turn.T, gas.R, gas.m, w, gas.r, dt


def run_update(module, system, steps=2):
    """(x, v, indexOld, returned t) after ``steps`` calls of module.update on copies of the system."""
    x, v, R, m, w, r, dt = system
    x, v, index = x.copy(), v.copy(), np.array([-1, -1])
    t = 0.0
    for _ in range(steps):
        t = module.update(x, v, R, m, w, index, r, dt, t)
    return x, v, index.tolist(), t


def assert_agree(a, b, who):
    np.testing.assert_allclose(a[0], b[0], rtol=RTOL, atol=RTOL, err_msg=f"{who}: positions")
    np.testing.assert_allclose(a[1], b[1], rtol=RTOL, atol=RTOL, err_msg=f"{who}: velocities")
    assert a[2] == b[2], f"{who}: last contact {a[2]} != {b[2]}"
    assert a[3] == pytest.approx(b[3], rel=1e-15), f"{who}: returned time"


@settings(max_examples=25)
@given(tilted_gases())
def test_engine_model_answer_and_exact_search_agree(system):
    ours = run_update(engine, system)
    assert_agree(ours, run_update(oracle, system), "engine vs reference.vectorised")
    assert_agree(ours, run_update(model, system), "engine vs reference/granularGas.py")


def test_a_denser_gas_with_hundreds_of_contacts_agrees():
    gas = random_gas(n=40, r=0.9, seed=3, packing=0.4)
    system = (gas.x, gas.v, gas.R, gas.m, gas.w, gas.r, 0.1)
    ours, exact = run_update(engine, system, steps=3), run_update(oracle, system, steps=3)
    solved = events.advance(gas.x, gas.v, gas.R, gas.m, gas.w, (-1, -1), gas.r, 0.3).contacts
    assert len(solved) > 100  # the comparison below is about many contacts, not a quiet gas
    assert_agree(ours, exact, "engine vs reference.vectorised")


def test_grains_far_outside_the_first_grid_and_no_walls():
    # Two grains fly far away, then a third one comes from afar and hits one of them: outside-grid bookkeeping.
    x = np.array([[0.0, 0.0], [0.3, 0.0], [40.0, 0.0]])
    v = np.array([[-1.0, 0.0], [1.0, 0.0], [-0.5, 0.0]])
    system = (x, v, np.full(3, 0.05), np.array([1.0, 2.0, 0.5]), np.zeros((0, 2, 2)), 0.8, 20.0)
    ours = run_update(engine, system, steps=2)
    assert ours[2] == [1, 2]  # they did meet
    assert_agree(ours, run_update(oracle, system, steps=2), "engine vs reference.vectorised")


def test_index_old_is_not_solved_again():
    # The grain touches wall 0 and moves into it: only indexOld = [0, -1] keeps it from bouncing at t = 0.
    x, v = np.array([[0.5, 0.05]]), np.array([[0.2, -1.0]])
    w = np.array([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 2.0], [1.0, 2.0]]])
    for old in ([0, -1], [-1, -1]):
        results = []
        for module in (engine, oracle):
            xs, vs, index = x.copy(), v.copy(), np.array(old)
            module.update(xs, vs, np.array([0.05]), np.array([1.0]), w, index, 1.0, 0.01, 0.0)
            results.append((xs, vs, index.tolist(), 0.0))
        assert_agree(*results, f"indexOld={old}")
    assert results[0][1][0, 1] > 0  # without indexOld the contact at t = 0 is solved


def trapped_grain():
    """A grain bouncing (r = 1) between two walls a hair wider apart than its diameter: contacts without end."""
    w = np.array([[[0.0, 0.0], [0.0, 1.0]], [[0.100000001, 0.0], [0.100000001, 1.0]]])
    return np.array([[0.05, 0.5]]), np.array([[1.0, 0.3]]), np.array([0.05]), np.array([1.0]), w


def test_inelastic_collapse_raises_todays_error_and_leaves_the_arguments_alone():
    x, v, R, m, w = trapped_grain()
    with pytest.raises(events.InelasticCollapseError) as ours:
        engine.advance(x, v, R, m, w, (-1, -1), 1.0, 1.0, t=2.0, max_contacts=50)
    with pytest.raises(events.InelasticCollapseError) as exact:
        events.advance(x, v, R, m, w, (-1, -1), 1.0, 1.0, t=2.0, max_contacts=50)
    same_but_time = r"\(the last one at t=[0-9.e+-]+\)"
    assert re.sub(same_but_time, "", str(ours.value)) == re.sub(same_but_time, "", str(exact.value))
    assert "more than 50 contacts between t=2 and t=3" in str(ours.value)
    # update: the real cap (MAX_CONTACTS_PER_ADVANCE), and x, v, indexOld untouched as reference.vectorised does.
    xs, vs, index = x.copy(), v.copy(), np.array([-1, -1])
    with pytest.raises(events.InelasticCollapseError, match=f"more than {events.MAX_CONTACTS_PER_ADVANCE} contacts"):
        engine.update(xs, vs, R, m, w, index, 1.0, 1.0, 0.0)
    assert np.array_equal(xs, x) and np.array_equal(vs, v) and index.tolist() == [-1, -1]


def test_a_collapsing_row_of_grains_ends():
    # Three grains in a row, r far below the collapse threshold 7 - 4 sqrt(3) of three grains: contacts pile up
    # until round-off ends them (grains then overlap and pass) or the cap does; either way the call returns.
    x = np.array([[0.0, 0.0], [0.2, 0.0], [0.4, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])
    for r in (0.0, 0.02, 0.05):
        try:
            done = engine.advance(x, v, np.full(3, 0.05), np.ones(3), np.zeros((0, 2, 2)), (-1, -1), r, 1.0)
        except events.InelasticCollapseError:
            continue
        assert done.contacts >= 2
        np.testing.assert_allclose(done.v.sum(axis=0), v.sum(axis=0), atol=1e-12)  # momentum, equal masses


def test_bad_arguments_get_the_oracles_errors():
    gas = random_gas(n=3, seed=1)
    for bad in (dict(x=gas.x.tolist()), dict(r=1.5), dict(dt=-1.0), dict(indexOld=np.array([0, 7]))):
        args = dict(x=gas.x.copy(), v=gas.v.copy(), R=gas.R, m=gas.m, w=gas.w, indexOld=np.array([-1, -1]),
                    r=0.9, dt=0.01, t=0.0) | bad
        with pytest.raises(InvalidArgument) as ours:
            engine.update(**args)
        with pytest.raises(InvalidArgument) as exact:
            oracle.update(**args)
        assert str(ours.value) == str(exact.value)


def test_without_numba_the_same_code_runs_as_plain_python():
    script = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np\n"
        "from reference import engine, vectorised\n"
        "from grader.spec.scenarios import random_gas\n"
        "assert engine.COMPILED is False\n"
        "g = random_gas(n=6, r=0.9, seed=5, packing=0.3)\n"
        "out = []\n"
        "for module in (engine, vectorised):\n"
        "    x, v, i = g.x.copy(), g.v.copy(), np.array([-1, -1])\n"
        "    module.update(x, v, g.R, g.m, g.w, i, g.r, 0.3, 0.0)\n"
        "    out.append((x, v, i.tolist()))\n"
        "assert np.allclose(out[0][0], out[1][0], rtol=1e-11, atol=1e-11), out\n"
        "assert np.allclose(out[0][1], out[1][1], rtol=1e-11, atol=1e-11), out\n"
        "assert out[0][2] == out[1][2] != [-1, -1], out\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_compiled_says_what_runs():
    assert isinstance(engine.COMPILED, bool)
    pytest.importorskip("numba")
    from reference import engine_core

    assert engine.COMPILED == hasattr(engine_core.run, "py_func")


def test_the_engine_offers_the_six_functions_of_the_spec():
    # So that the grader's oracle can be pointed at reference.engine instead of reference.vectorised.
    for spec in FUNCTIONS:
        params = tuple(inspect.signature(getattr(engine, spec.name)).parameters)
        assert params == spec.params, f"reference.engine.{spec.name}{params} is not the spec's {spec.signature()}"


def test_the_oracle_moves_large_gases_with_the_engine_and_small_ones_with_the_search(monkeypatch):
    from grader.properties import oracle as grader_oracle

    moved: list[int] = []
    monkeypatch.setattr(engine, "update", lambda x, *args: moved.append(len(x)) or oracle.update(x, *args))
    grader_oracle.reference.cache_clear()
    try:
        for n in (10, grader_oracle.ENGINE_FROM_GRAINS):
            gas = random_gas(n=n, seed=1, packing=0.2, r=0.9, speed=1.0)
            x, v = gas.x.copy(), gas.v.copy()
            grader_oracle.reference().update(x, v, gas.R, gas.m, gas.w, np.array([-1, -1]), gas.r, 0.3, 0.0)
    finally:
        grader_oracle.reference.cache_clear()
    assert moved == ([grader_oracle.ENGINE_FROM_GRAINS] if engine.COMPILED else [])
