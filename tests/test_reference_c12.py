"""ARGESIM C12: the papers' tables, conservation laws, and the tasks' numbers."""

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import c12

# TU Wien study, Table 1 (event-oriented column; its "14.47" for collision
# 12 is a misprint: the spreadsheet of Figure 4 gives 14.7375).
PAPER_EVENTS = [(1.0, (1, 2)), (2.67, (2, 3)), (4.75, (1, 2)), (5.44, (3, 4)), (6.83, (2, 3)), (7.63, (1, 2)),
                (9.15, (3, 4)), (9.50, (2, 3)), (9.73, (3, 4)), (11.79, (2, 3)), (14.61, (1, 2)), (14.74, (2, 3)),
                (14.91, (1, 2))]
PAPER_GRID = [(1.0, (1, 2)), (2.7, (2, 3)), (4.85, (1, 2)), (5.5, (3, 4)), (6.85, (2, 3)), (7.6, (1, 2)),
              (8.95, (3, 4)), (9.2, (2, 3)), (9.25, (3, 4)), (9.3, (2, 3)), (13.05, (1, 2)), (13.1, (2, 3)),
              (13.2, (1, 2))]


def test_a1_event_table_is_the_papers():
    run = c12.event_row(0.2, t_end=c12.T_END)
    assert [c.pair for c in run.collisions] == [pair for _, pair in PAPER_EVENTS]
    assert [round(float(c.t), 2) for c in run.collisions] == [t for t, _ in PAPER_EVENTS]


def test_a1_time_oriented_table_is_the_spreadsheets():
    run = c12.time_row(0.2, dt=0.05)
    assert [(float(c.t), c.pair) for c in run.collisions] == PAPER_GRID


@settings(max_examples=60, deadline=None)
@given(e=st.floats(0.18, 1.0), masses=st.tuples(*[st.floats(0.2, 5.0)] * 4))
def test_every_collision_conserves_momentum_and_never_creates_energy(e, masses):
    run = c12.event_row(e, masses=masses, max_collisions=5000)
    momentum = sum(m * v for m, v in zip(masses, run.velocities, strict=True))
    energy = sum(m * v * v for m, v in zip(masses, run.velocities, strict=True)) / 2
    assert momentum == pytest.approx(masses[0] * c12.V0, rel=1e-9)
    assert energy <= masses[0] * c12.V0**2 / 2 * (1 + 1e-12)
    if run.settled:  # after the last collision no neighbours approach
        assert all(a <= b + 1e-12 for a, b in zip(run.velocities, run.velocities[1:], strict=False))


def test_a2_elastic_row_passes_the_whole_velocity_to_the_last_sphere():
    run = c12.event_row(1.0)
    assert run.velocities == [0.0, 0.0, 0.0, 1.0] and len(run.collisions) == 3


def test_a2_quasi_plastic_criterion():
    e_qp = c12.quasi_plastic_e()
    assert c12.CRITICAL_E < e_qp < 0.19  # the papers: 0.184 (goal seek), 0.18 (ACSL, six decimals)
    assert c12.spread(c12.final_velocities(e_qp)) <= c12.QUASI_PLASTIC_SPREAD
    assert c12.spread(c12.final_velocities(e_qp + 1e-3)) > c12.QUASI_PLASTIC_SPREAD
    assert all(abs(v - 0.25) < 1e-6 for v in c12.final_velocities(e_qp))


def test_b1_three_collisions_above_the_first_rehit_and_more_below():
    n, _ = c12.sweep([0.55, 0.6, 0.8, 1.0, 0.45, 0.22, 0.2])
    assert n[:4] == [3, 3, 3, 3]
    assert n[4] == 6 and n[5] > 6 and n[6] == 13


def test_b2_final_velocities_go_from_elastic_to_quasi_plastic():
    _, v = c12.sweep([1.0, 0.6, 0.18])
    assert v[0] == [0.0, 0.0, 0.0, 1.0]
    assert v[1][3] == pytest.approx((1.6 / 2) ** 3)
    assert all(abs(u - 0.25) < 1e-5 for u in v[2])


def test_c1_has_the_closed_form_two_to_the_two_thirds_minus_one():
    e = c12.half_speed_e()
    assert e == pytest.approx(2 ** (2 / 3) - 1, abs=1e-12)
    assert e == pytest.approx(0.587401052, abs=1e-9)  # ACSL's Newton iteration
    assert c12.final_velocities(e)[3] == pytest.approx(0.5, abs=1e-12)


def test_c2_monte_carlo_agrees_with_both_papers():
    mc = c12.monte_carlo(4000)
    assert 0.420 < mc["mean"] < 0.427  # 0.4231 (TU Wien), 0.4249 (ACSL)
    assert 0.038 < mc["std"] < 0.046  # 0.0419, 0.0413
    lo, hi = mc["ci95"]
    assert lo < mc["mean"] < hi and hi - lo == pytest.approx(2 * 1.96 * mc["std"] / math.sqrt(4000), rel=1e-3)


def test_high_precision_agrees_with_doubles_far_from_the_threshold():
    for e in (0.2, 0.5):
        out = c12.high_precision(e)
        assert out["n"] == len(c12.event_row(e, t_end=c12.T_END).collisions) and out["converged"]


def test_high_precision_counts_what_doubles_miss_near_the_threshold():
    e = 0.172
    doubles = len(c12.event_row(e, t_end=c12.T_END).collisions)
    out = c12.high_precision(e)
    assert out["converged"] and out["n"] > doubles
    assert c12.high_precision(e, digits=2 * out["digits"])["n"] == out["n"]
    # Closer to e_c the count needs more digits, and grows like 1/sqrt(e - e_c).
    closer = c12.high_precision(0.1716)
    assert closer["converged"] and closer["digits"] > out["digits"] and closer["n"] > out["n"]


def test_critical_restitution_is_three_minus_two_root_two():
    assert c12.CRITICAL_E == pytest.approx(0.1715729, abs=1e-7)
    below = c12.high_precision(c12.CRITICAL_E - 1e-4, digits=60)
    assert not below["settled"] or below["n"] > 200  # collapse: collisions pile up as far as precision allows


def test_command_line_json_has_the_documented_shape():
    done = subprocess.run([sys.executable, "-m", "reference.c12", "--json"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["a1"]["collisions"][1] == {"t": pytest.approx(8 / 3), "pair": [2, 3]}
    assert data["a2"]["elastic"] == [0.0, 0.0, 0.0, 1.0] and len(data["a2"]["quasi_plastic"]) == 4
    assert len(data["b1"]["e"]) == len(data["b1"]["n"]) == len(data["b2"]["v"])
    assert set(data["c2"]) == {"n", "mean", "std", "ci95"}
    one = subprocess.run([sys.executable, "-m", "reference.c12", "--e", "0.3", "--digits", "40", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert json.loads(one.stdout) == {"e": 0.3, "digits": 40, "n": pytest.approx(len(
        c12.event_row(0.3, t_end=c12.T_END).collisions)), "v": pytest.approx(c12.final_velocities(0.3))}
    bad = subprocess.run([sys.executable, "-m", "reference.c12", "--e", "1.5"], capture_output=True, text=True)
    assert bad.returncode == 2 and "[0, 1]" in bad.stderr and "Traceback" not in bad.stderr


def test_plots_are_written(tmp_path):
    paths = c12.write_plots(tmp_path)
    assert {p.name for p in paths} == {"a1_positions_and_gaps.png", "b1_collisions.png",
                                       "b2_final_velocities.png", "c2_histogram.png"}
    assert all(p.stat().st_size > 10_000 for p in paths)
