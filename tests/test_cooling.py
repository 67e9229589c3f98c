"""The freely cooling gas (reference.cooling): Haff's law over a small ensemble, counts, the command line."""

import json
import math

import numpy as np
import pytest

from reference import cooling, engine, events

#: The CI ensemble: small gases, long enough for the homogeneous regime.
SMALL, SEEDS = 400, (1, 2, 3, 4)


@pytest.fixture(scope="module")
def ensemble():
    """(gas, trace) of each seed, cooled through the homogeneous regime."""
    runs = []
    for seed in SEEDS:
        gas = cooling.initial_gas(SMALL, seed)
        trace, _ = cooling.cool(gas, cooling.RESTITUTION, cooling.HOMOGENEOUS_C)
        runs.append((gas, trace))
    return runs


@pytest.mark.parametrize("box", cooling.BOXES)
def test_the_start_is_a_gas_of_separate_disks_in_the_box_at_temperature_one(box):
    gas = cooling.initial_gas(300, 7, box=box)
    d = gas.x[:, None, :] - gas.x[None, :, :]
    if gas.periodic:  # through the box's edges too
        d -= gas.side * np.round(d / gas.side)
        assert gas.x.min() >= 0.0 and gas.x.max() < gas.side and len(gas.w) == 0
        assert np.abs(gas.v.sum(axis=0)).max() < 1e-9  # no flow of the whole gas
    else:
        assert gas.x.min() >= 0.5 - 1e-9 and gas.x.max() <= gas.side - 0.5 + 1e-9 and len(gas.w) == 4
    gaps = np.hypot(d[..., 0], d[..., 1]) + np.eye(300) * 9
    assert gaps.min() >= cooling.DIAMETER * (1 - 1e-9)
    assert cooling.temperature(gas.v, gas.m) == pytest.approx(cooling.T0, rel=1e-12)
    phi = 300 * math.pi * 0.25 / gas.side**2
    assert phi == pytest.approx(cooling.AREA_FRACTION, rel=1e-12)


def test_the_ensemble_follows_haff_in_time_and_the_exponential_in_collisions(ensemble):
    # Ensemble mean of E on common grids of t/tau and of c; fit-free predictions from each run's start.
    grid_c = np.linspace(0.5, cooling.HOMOGENEOUS_C * 0.98, 40)
    taus = [cooling.predictions(gas, cooling.RESTITUTION)[2] for gas, _ in ensemble]
    end = min(float(np.interp(cooling.HOMOGENEOUS_C * 0.98, trace.c, trace.t)) / tau
              for (_, trace), tau in zip(ensemble, taus))
    grid_s = np.linspace(0.01, end, 40)
    by_c = np.mean([np.interp(grid_c, trace.c, trace.energy) for _, trace in ensemble], axis=0)
    by_t = np.mean([np.interp(grid_s * tau, trace.t, trace.energy) for (_, trace), tau in zip(ensemble, taus)], axis=0)
    dev_c = by_c / cooling.energy_by_collisions(grid_c, cooling.T0, cooling.RESTITUTION) - 1
    dev_t = by_t / cooling.haff_energy(grid_s, cooling.T0, 1.0) - 1
    assert np.abs(dev_c).max() < cooling.HAFF_TOLERANCE, dev_c
    assert np.abs(dev_t).max() < cooling.HAFF_TOLERANCE, dev_t
    assert by_c[-1] < 0.5 * cooling.T0  # the energy did fall: the comparison is about a cooling gas


def test_energy_never_increases_and_the_run_reaches_its_collisions(ensemble):
    for _, trace in ensemble:
        assert np.all(np.diff(trace.energy) <= 1e-12 * trace.energy[:-1])
        assert np.all(np.diff(trace.t) > 0) and np.all(np.diff(trace.c) >= 0)
        assert trace.c[-1] >= cooling.HOMOGENEOUS_C and not trace.collapsed


def test_collisions_per_grain_are_counted_as_the_exact_search_counts_them():
    gas = cooling.initial_gas(8, 3, phi=0.15, box="walls")
    trace, snaps = cooling.cool(gas, 1.0, 6.0)  # r = 1: the exact search (walls restitute with r) is the same physics
    x, v, last, pairs, walls = gas.x, gas.v, (-1, -1), 0, 0
    for t0, t1 in zip(trace.t[:-1], trace.t[1:]):
        done = events.advance(x, v, gas.R, gas.m, gas.w, last, 1.0, t1 - t0, t0)
        x, v, last = done.x, done.v, done.last
        pairs += sum(1 for c in done.contacts if c.index[1] >= 0)
        walls += sum(1 for c in done.contacts if c.index[1] < 0)
    assert pairs > 20 and walls > 0
    assert trace.c[-1] == pytest.approx(2 * pairs / 8, abs=1e-12)
    assert np.allclose(snaps[-1].gas.x, x, atol=1e-8)


def test_engine_counts_grain_contacts_apart_from_wall_hits():
    # Two grains flying apart toward opposite walls, then back: one wall hit each per crossing, one pair contact.
    x, v = np.array([[4.0, 5.0], [6.0, 5.0]]), np.array([[-1.0, 0.0], [1.0, 0.0]])
    R, m, w = np.full(2, 0.5), np.ones(2), cooling.box_walls(10.0)
    done = engine.advance(x, v, R, m, w, (-1, -1), 1.0, 8.0)  # walls at t = 3.5, each other at t = 7.5
    assert (done.contacts, done.grain_contacts) == (3, 1)


def test_elastic_walls_keep_a_grains_energy_and_inelastic_walls_take_it():
    x, v = np.array([[2.0, 5.0]]), np.array([[3.0, 0.0]])
    R, m, w = np.full(1, 0.5), np.ones(1), cooling.box_walls(10.0)
    kept = engine.advance(x, v, R, m, w, (-1, -1), 0.5, 10.0, wall_restitution=1.0)
    lost = engine.advance(x, v, R, m, w, (-1, -1), 0.5, 10.0)
    assert kept.contacts == 3 and lost.contacts == 2  # hits at t = 2.5, 5.5, 8.5; slowed: 2.5, 8.5
    assert np.hypot(*kept.v[0]) == pytest.approx(3.0, rel=1e-12)
    assert np.hypot(*lost.v[0]) < 3.0 * 0.5  # the homework's rule: walls restitute with r


def test_the_laws_are_the_derived_ones():
    phi = 0.1
    assert cooling.pair_correlation(phi) == pytest.approx((1 - 0.04375) / 0.81)
    omega = cooling.collision_frequency(2.0, phi, 4.0)
    assert omega == pytest.approx(2 * 2.0 * 1.0 * cooling.pair_correlation(phi) * math.sqrt(4 * math.pi))
    tau = cooling.haff_time(0.9, omega)
    assert tau * 0.19 * omega == pytest.approx(4.0)
    assert cooling.haff_energy(tau, 3.0, tau) == pytest.approx(0.75)
    assert cooling.energy_by_collisions(2 / 0.19, 1.0, 0.9) == pytest.approx(math.exp(-1))


def test_json_has_the_numbers(capsys):
    assert cooling.main(["--json", "--grains", "60", "--seed", "2", "--collisions-per-grain", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"grains", "seed", "restitution", "area_fraction", "box", "T0", "omega0", "tau", "tolerance",
            "homogeneous_collisions_per_grain", "max_deviation_time", "max_deviation_collisions", "crossover",
            "late_exponent", "decay_exponents", "ensemble", "collapsed", "snapshots", "trace"} <= set(data)
    assert data["grains"] == 60 and data["seed"] == 2
    trace = data["trace"]
    assert len(trace["t"]) == len(trace["energy"]) == len(trace["collisions_per_grain"]) > 5
    assert trace["collisions_per_grain"][-1] >= 4 and trace["energy"][0] == pytest.approx(1.0)
    assert [s["collisions_per_grain"] for s in data["snapshots"]] == [trace["collisions_per_grain"][-1]]


def test_snapshots_are_taken_on_the_first_step_past_each_count():
    gas = cooling.initial_gas(50, 5)
    trace, snaps = cooling.cool(gas, cooling.RESTITUTION, 8.0, snapshots=(5.0, 2.0))
    assert [s.c for s in snaps[:2]] == [trace.c[trace.c >= 2.0][0], trace.c[trace.c >= 5.0][0]]
    for snap in snaps:
        k = int(np.nonzero(trace.c == snap.c)[0][0])
        assert snap.t == trace.t[k] and cooling.temperature(snap.gas.v, snap.gas.m) == trace.energy[k]
    assert snaps[-1].c == trace.c[-1]


def test_a_periodic_gas_cools_with_no_flow_of_the_whole_gas(ensemble):
    for gas, trace in ensemble:
        assert gas.periodic and trace.energy[-1] < 0.5 * trace.energy[0]
    gas = ensemble[0][0]
    _, snaps = cooling.cool(gas, cooling.RESTITUTION, 20.0)
    assert np.abs((gas.m[:, None] * snaps[-1].gas.v).sum(axis=0)).max() < 1e-9 * len(gas.x)


def test_the_ensemble_exponent_is_that_of_the_mean_power_law():
    """Three runs sampled at different times, all E = t^-1 (the clustering regime's law) times a constant of their
    own: the exponents of the mean ln E are 1 over every decade and over the clustering window."""
    tau = 2.0
    traces = [cooling.Trace(t, np.arange(len(t), dtype=float), k / t, False)
              for k, t in ((1.0, np.geomspace(1e-2, 3e4, 300)), (2.0, np.geomspace(1e-3, 4e4, 500)),
                           (0.5, np.geomspace(1e-2, 2.5e4, 90)))]
    found = cooling.ensemble_exponents(traces, tau)
    assert found["runs"] == 3 and found["reached_t_over_tau"] == pytest.approx(2.5e4 / tau)
    assert [e["t_over_tau"] for e in found["decay_exponents"]] == [[1.0, 10.0], [10.0, 100.0], [100.0, 1000.0],
                                                                   [1000.0, 10000.0]]
    assert all(e["exponent"] == pytest.approx(1.0, abs=1e-6) for e in found["decay_exponents"])
    assert found["clustering_exponent"] == pytest.approx(1.0, abs=1e-6)
    short = [cooling.Trace(t.t[t.t < 100.0], t.c[t.t < 100.0], t.energy[t.t < 100.0], False) for t in traces]
    assert cooling.ensemble_exponents(short, tau)["clustering_exponent"] is None  # the window is not reached


def test_decay_exponents_are_those_of_a_power_law():
    t = np.geomspace(1e-3, 2e3, 200)
    trace = cooling.Trace(t, np.arange(200.0), 5.0 * t**-1.25, False)
    exponents = cooling.decade_exponents(trace, 1.0)
    assert [e["t_over_tau"] for e in exponents] == [[1.0, 10.0], [10.0, 100.0], [100.0, 1000.0]]
    assert all(e["exponent"] == pytest.approx(1.25) for e in exponents)
    assert cooling.decay_exponent(trace, t > 1e3) == pytest.approx(1.25)
    assert cooling.decay_exponent(trace, t > 1.99e3) is None  # too few samples to fit


@pytest.mark.parametrize("argv, message", [
    (["--format", "svg"], "--format svg goes with --plots DIR"),
    (["--plots", "{tmp}", "--format", "gif"], "--format 'gif': choose one of png, svg, pdf"),
    (["--grains", "1"], "--grains 1: give between 2 and 1000000 disks"),
    (["--grains", "2000000"], "--grains 2000000: give between 2 and 1000000 disks"),
    (["--collisions-per-grain", "0"], "--collisions-per-grain 0"),
    (["--seeds", "0"], "--seeds 0: give between 1 and 100 runs"),
])
def test_bad_arguments_are_named(argv, message, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path / "figs")) for a in argv]
    assert cooling.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("reference.cooling: ") and message in err
    assert not (tmp_path / "figs").exists()  # nothing computed or written before the check


def test_plots_are_written_in_the_format_asked(tmp_path, capsys):
    assert cooling.main(["--plots", str(tmp_path), "--format", "svg", "--grains", "80",
                         "--collisions-per-grain", "12"]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["cooling_clusters.svg", "cooling_energy.svg"]
    assert "Haff" in (tmp_path / "cooling_energy.svg").read_text()
    assert capsys.readouterr().out == ""  # --plots without --json prints no numbers


def test_an_unknown_box_is_refused_with_the_choices():
    with pytest.raises(cooling.CoolingError, match="box='round': choose one of periodic, walls"):
        cooling.initial_gas(10, 0, box="round")


def test_without_numba_the_command_says_it_will_be_slow(monkeypatch, capsys):
    """A review ran the quick start's install (no numba): the default run, some 100 times slower, said nothing."""
    monkeypatch.setattr(cooling.engine, "COMPILED", False)
    assert cooling.main(["--grains", "1"]) == 2  # refused at once: only the warning and the usage message are printed
    err = capsys.readouterr().err
    assert "numba is not installed" in err and '.[fast]' in err and "--grains 1" in err
