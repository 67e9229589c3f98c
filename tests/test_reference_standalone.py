"""The reference stands alone: it imports nothing from grader, its copied
conventions equal grader.spec's, reference/granularGas.py runs as a single file
with numpy only, and that model answer agrees with the vectorised oracle."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader import spec
from grader.spec.scenarios import random_gas
from reference import conventions
from reference import granularGas as model
from reference import vectorised as oracle

REFERENCE = Path(__file__).resolve().parent.parent / "reference"
MODEL_FILE = REFERENCE / "granularGas.py"


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (relative imports as '.')."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else node.module.split(".")[0])
    return names


def test_the_copied_conventions_equal_the_spec():
    assert conventions.NO_CONTACT == spec.NO_CONTACT == model.NO_CONTACT == sys.float_info.max
    assert tuple(conventions.NO_PREVIOUS_CONTACT) == tuple(spec.NO_PREVIOUS_CONTACT) == (-1, -1)
    for k in range(50):
        assert conventions.wall_code(k) == spec.wall_code(k)
        assert conventions.wall_number(spec.wall_code(k)) == spec.wall_number(spec.wall_code(k)) == k
    for bad_k, bad_code in [(-1, 0), (-5, 3)]:
        for module in (conventions, spec):
            with pytest.raises(ValueError):
                module.wall_code(bad_k)
            with pytest.raises(ValueError):
                module.wall_number(bad_code)


@pytest.mark.parametrize("path", sorted(REFERENCE.glob("*.py")), ids=lambda p: p.name)
def test_no_module_of_the_reference_imports_the_grader(path):
    assert "grader" not in imported_modules(path), f"{path.name} imports grader"


def test_the_model_answer_imports_numpy_and_the_standard_library_only():
    found = imported_modules(MODEL_FILE)
    extra = {name for name in found if name != "numpy" and name not in sys.stdlib_module_names}
    assert not extra, f"reference/granularGas.py imports {sorted(extra)}: it is graded alone, with numpy only"
    assert "numpy" in found  # the parse did see the imports


def test_the_model_answer_runs_alone_in_an_empty_folder(tmp_path):
    # As in the grader's sandbox: the one file, no reference package next to it, isolated mode.
    shutil.copyfile(MODEL_FILE, tmp_path / "granularGas.py")
    probe = ("import sys; sys.path.insert(0, '.')\nimport numpy as np, granularGas as g\n"
             "x = np.array([[0.2, 0.5], [0.8, 0.5]]); v = np.array([[1.0, 0.0], [-1.0, 0.0]])\n"
             "w = np.array([[[0, 0], [1, 0]], [[1, 0], [1, 1]], [[1, 1], [0, 1]], [[0, 1], [0, 0]]], float)\n"
             "i = np.array([-1, -1]); g.update(x, v, np.full(2, 0.1), np.ones(2), w, i, 1.0, 0.25, 0.0)\n"
             "print(sorted(i.tolist()), v[0, 0])\n")
    done = subprocess.run([sys.executable, "-I", "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[0,", "1]", "-1.0"]


@st.composite
def gases_among_any_walls(draw):
    """A random gas, turned by any angle, with its box and up to two extra walls of any orientation.

    r >= 0.5: with r near 0 the grains collapse into clusters with endless
    contacts, which the loop-based model answer takes minutes to give up on.
    """
    gas = random_gas(n=draw(st.integers(1, 7)), seed=draw(st.integers(0, 2**16)),
                     packing=draw(st.floats(0.05, 0.4)), r=draw(st.floats(0.5, 1.0)))
    angle = draw(st.floats(0.0, 2 * np.pi))
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    walls = [gas.w]
    for _ in range(draw(st.integers(0, 2))):
        a = np.array([draw(st.floats(-1.0, 2.0)), draw(st.floats(-1.0, 2.0))])
        direction = draw(st.floats(0.0, 2 * np.pi))
        length = draw(st.floats(0.01, 10.0))
        walls.append(np.array([[a, a + length * np.array([np.cos(direction), np.sin(direction)])]]))
    w = np.concatenate(walls) @ turn.T
    return gas.x @ turn.T, gas.v @ turn.T, gas.R, gas.m, w, gas.r


AGREEMENT = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@AGREEMENT
@given(gases_among_any_walls(), st.integers(-1, 6), st.integers(-9, 6))
def test_model_and_oracle_find_the_same_earliest_contact(gas, a, b):
    x, v, R, _, w, _ = gas
    old = np.array([a, b] if 0 <= a < len(x) and -len(w) <= b < len(x) and a != b else [-1, -1])
    tc_model, index_model = model.minimum_contact_time(x, v, R, w, old)
    tc_oracle, index_oracle = oracle.minimum_contact_time(x, v, R, w, old)
    assert tc_model == tc_oracle
    assert index_model.tolist() == index_oracle.tolist()
    assert index_model.dtype.kind == "i"


@AGREEMENT
@given(gases_among_any_walls(), st.floats(0.0, 0.2))
def test_model_and_oracle_update_agree(gas, dt):
    x, v, R, m, w, r = gas
    states = []
    for module in (model, oracle):
        xs, vs, index = x.copy(), v.copy(), np.array([-1, -1])
        for step in range(3):
            module.update(xs, vs, R, m, w, index, r, dt, step * dt)
        states.append((xs, vs, index.tolist()))
    (x1, v1, i1), (x2, v2, i2) = states
    assert i1 == i2
    assert np.array_equal(x1, x2) and np.array_equal(v1, v2)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 1.0), st.floats(0.0, 2 * np.pi), st.floats(-1.0, 1.0))
def test_model_contact_functions_agree_with_the_oracle_on_single_walls_and_pairs(length, angle, shift):
    direction = np.array([np.cos(angle), np.sin(angle)])
    wall = np.array([[shift, 0.0], [shift, 0.0] + length * direction])
    x1, v1 = np.array([0.3, 0.7]), np.array([-0.4, 0.9])
    assert model.contact_time_walls(wall, x1, v1, 0.1) == oracle.contact_time_walls(wall, x1, v1, 0.1)
    # Motion exactly along a wall (exact in floating point for an axis-parallel one): the largest float, not inf.
    for along, velocity in [(np.array([[shift, 0.0], [shift + length, 0.0]]), np.array([angle, 0.0])),
                            (np.array([[0.0, shift], [0.0, shift - length]]), np.array([0.0, -angle]))]:
        assert model.contact_time_walls(along, x1, velocity, 0.1) == sys.float_info.max
        assert oracle.contact_time_walls(along, x1, velocity, 0.1) == sys.float_info.max
    assert np.array_equal(model.contact_solve_wall(wall, x1, v1, 0.7), oracle.contact_solve_wall(wall, x1, v1, 0.7))
    x2, v2 = x1 + 0.5 * direction, np.array([0.2, -0.1])
    got = model.contact_solve_grains(x1, x2, v1, v2, 1.0, 2.5, 0.3)
    want = oracle.contact_solve_grains(x1, x2, v1, v2, 1.0, 2.5, 0.3)
    assert all(np.array_equal(g, e) for g, e in zip(got, want, strict=True))


def test_model_update_survives_thousands_of_contacts_in_one_dt():
    # The middle grain rattles between the others over a thousand times (r = 0).
    x = np.array([[-2.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])
    w = random_gas(n=1).w * 100.0 - 50.0
    x2, v2, index = x.copy(), v.copy(), np.array([-1, -1])
    model.update(x, v, np.full(3, 0.5), np.ones(3), w, np.array([-1, -1]), 0.0, 10.0, 0.0)
    oracle.update(x2, v2, np.full(3, 0.5), np.ones(3), w, index, 0.0, 10.0, 0.0)
    assert np.array_equal(x, x2) and np.array_equal(v, v2)


def test_model_update_stops_piling_contacts_with_an_error():
    gap = 1e-7
    w = np.array([[[0.0, -0.5 - gap], [1.0, -0.5 - gap]], [[0.0, 0.5 + gap], [1.0, 0.5 + gap]]])
    with pytest.raises(model.InelasticCollapseError, match="piling"):
        model.update(np.array([[0.0, 0.0]]), np.array([[0.0, 1.0]]), np.array([0.5]), np.ones(1), w,
                     np.array([-1, -1]), 1.0, 1.0, 0.0)
