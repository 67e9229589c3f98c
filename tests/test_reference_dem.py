"""Hard sphere against soft sphere: analytic impulses, closed-form contact duration."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import dem


def test_contact_time_and_point_of_the_report():
    assert dem.contact_time() == pytest.approx(0.5, abs=1e-12)
    assert dem.hard_sphere(1.0)["contact_point_before"] == pytest.approx([0.3, 0.4, 0.0], abs=1e-12)


@pytest.mark.parametrize("e, v1, v2", [
    (1.0, [-0.84, -1.12, 0.0], [-0.16, 0.12, 0.0]),
    (0.75, [-0.735, -0.98, 0.0], [-0.265, -0.02, 0.0]),
])
def test_hard_sphere_velocities_are_the_analytic_ones(e, v1, v2):
    # n = (0.6, 0.8, 0) at contact; the closing speed along n is 1.4, the
    # reduced mass half a mass: each sphere changes by (1 + e) 0.7 n.
    out = dem.hard_sphere(e)
    assert out["v1"] == pytest.approx(v1, abs=1e-12) and out["v2"] == pytest.approx(v2, abs=1e-12)
    assert np.array_equal(out["contact_point_before"], out["contact_point_after"])


@pytest.mark.parametrize("e", [1.0, 0.75])
def test_soft_sphere_agrees_with_hard_sphere_and_conserves_momentum(e):
    soft, hard = dem.soft_sphere(e), dem.hard_sphere(e)
    assert soft["v1"] == pytest.approx(hard["v1"], abs=5e-3) and soft["v2"] == pytest.approx(hard["v2"], abs=5e-3)
    assert soft["v1"] + soft["v2"] == pytest.approx(dem.V1 + dem.V2, abs=1e-12)
    n = np.array([0.6, 0.8, 0.0])
    assert float((soft["v2"] - soft["v1"]) @ n) / 1.4 == pytest.approx(e, abs=5e-3)  # restitution of the spring


@pytest.mark.parametrize("e", [1.0, 0.75])
def test_soft_sphere_contact_lasts_the_closed_form_time(e):
    assert dem.soft_sphere(e)["duration"] == pytest.approx(dem.contact_duration(e), abs=dem.DT)
    # The report's figure, 0.0210 s for e = 0.75, is this within its step counting.
    assert dem.contact_duration(0.75) == pytest.approx(0.02116, abs=1e-5)


@settings(max_examples=8, deadline=None)
@given(e=st.floats(0.5, 1.0), k=st.floats(200.0, 3000.0), mass=st.floats(0.02, 0.2))
def test_contact_duration_formula_holds_for_other_springs(e, k, mass):
    pair = dem.Pair(m1=mass, m2=2 * mass)
    run = dem.soft_sphere(e, pair, k=k)
    # The stiffness switches to unloading at a step, up to dt after the turning
    # point; the unloading branch, e times slower, turns that into dt / e^2.
    assert run["duration"] == pytest.approx(dem.contact_duration(e, pair, k), abs=(1 + 1 / e**2) * dem.DT)


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(dem.DEMError, match="restitution"):
        dem.hard_sphere(1.5)
    with pytest.raises(dem.DEMError, match="overlap at t = 0"):
        dem.contact_time(dem.Pair(x2=np.array([0.5, 0.0, 0.0])))
    assert math.isinf(dem.contact_time(dem.Pair(v2=np.array([1.0, 1.0, 0.0]))))


def test_command_line_json_and_plots(tmp_path):
    done = subprocess.run([sys.executable, "-m", "reference.dem", "--json", "--plots", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["contact_time"] == pytest.approx(0.5)
    assert data["contact_point_before"] == pytest.approx([0.3, 0.4, 0.0])
    for e in ("1.0", "0.75"):
        assert set(data["hard_sphere"][e]) == {"v1", "v2", "contact_point_after"}
        assert set(data["soft_sphere"][e]) == {"v1", "v2", "duration", "contact_point_after"}
    assert data["soft_sphere"]["0.75"]["contact_point_after"] == pytest.approx([0.289, 0.389, 0.0], abs=2e-3)
    assert (tmp_path / "dem_overlap_and_force.png").stat().st_size > 10_000
