"""The figures of the freely cooling gas (reference/cooling.py computes, this module draws).

Units: disk diameter sigma = 1, mass m = 1, initial temperature T0 = 1; energies are per grain and relative to
E0, times in units of Haff's time tau (from the initial temperature and density, no fit).

    python -m reference.cooling --plots DIR [--format svg|pdf|png] [--grains N] [--collisions-per-grain C]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from reference import cooling, figures

DATA, HAFF = "#1f77b4", "#d62728"
#: Speeds relative to the r.m.s. speed shown by the colour scale (those outside are clipped to its ends).
SPEED_RANGE = (0.05, 3.0)


def write_plots(folder: Path, data: dict, snapshots: list[cooling.Snapshot], fmt: str = "png") -> list[Path]:
    """The figures as ``folder/<name>.<fmt>``; data and snapshots from :func:`reference.cooling.results`."""
    fmt = figures.check_format(fmt, cooling.CoolingError)
    folder = figures.prepare_folder(folder, cooling.CoolingError)
    with figures.style():
        drawn = {"cooling_energy": energy_figure(data), "cooling_clusters": cluster_figure(data, snapshots)}
        return [figures.save(fig, folder, stem, fmt, cooling.CoolingError) for stem, fig in drawn.items()]


def energy_figure(data: dict) -> Any:
    """E/E0 against collisions per grain (semi-log) and t/tau (log-log), with the two laws; the decay exponent."""
    trace = data["trace"]
    t, c, e = (np.asarray(trace[k]) for k in ("t", "collisions_per_grain", "energy"))
    e0, tau, r = data["T0"], data["tau"], data["restitution"]
    fig, (left, middle, right) = figures.new_figure(15, 4.8, 1, 3)
    left.semilogy(c, e / e0, color=DATA, lw=1.6, label=f"simulation, N = {data['grains']}")
    law = cooling.energy_by_collisions(c, 1.0, r)
    shown = law >= 0.1 * e.min() / e0  # the exponential falls out of sight long before the gas does
    left.semilogy(c[shown], law[shown], "--", color=HAFF, label=r"$E_0\,e^{-(1-r^2)c/2}$ (homogeneous)")
    left.set_xlabel("collisions per grain $c$")
    left.set_ylabel(r"kinetic energy per grain $E/E_0$")
    left.set_title("Energy against collisions")
    s = t[1:] / tau
    middle.loglog(s, e[1:] / e0, color=DATA, lw=1.6, label="simulation")
    middle.loglog(s, cooling.haff_energy(t[1:], 1.0, tau), "--", color=HAFF,
                  label=r"Haff: $E_0/(1+t/\tau)^2$, no fit")
    middle.set_xlabel(r"time $t/\tau$")
    middle.set_ylabel(r"$E/E_0$")
    middle.set_title(rf"Energy against time ($\tau$ = {tau:.3g} $\sigma\sqrt{{m/T_0}}$)")
    for axes in (left, middle):
        _mark_regimes(axes, data, t_axis=axes is middle)
        axes.legend(loc="lower left")
    _exponent_panel(right, s, e[1:], data.get("ensemble"))
    fig.suptitle(f"Freely cooling disks: r = {r}, area fraction {data['area_fraction']}, {data['box']}")
    return fig


def _local_exponent(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """-d ln E / d ln t fitted over a factor 2 in time around each of 60 centres: (centres, exponents)."""
    centres = np.geomspace(max(s[0], 1e-2) * 1.5, s[-1] / 1.5, 60)
    return centres, [-np.polyfit(np.log(s[w]), np.log(e[w]), 1)[0] if np.count_nonzero(w) >= 3 else np.nan
                     for w in ((s >= x / 1.5) & (s <= x * 1.5) for x in centres)]


def _exponent_panel(axes: Any, s: np.ndarray, e: np.ndarray, ensemble: dict | None) -> None:
    """Local decay exponent against t/tau: the run shown, and the mean of the ensemble's ln E if there is one."""
    centres, local = _local_exponent(s, e)
    many = ensemble is not None and ensemble["runs"] > 1
    axes.semilogx(centres, local, color=DATA, lw=1.0 if many else 1.6, alpha=0.45 if many else 1.0,
                  label="simulation" + (" (the run shown)" if many else ""))
    if many:
        assert ensemble is not None
        mean_s, mean_local = _local_exponent(np.asarray(ensemble["t_over_tau"]), np.asarray(ensemble["energy"]))
        axes.semilogx(mean_s, mean_local, color="#2ca02c", lw=1.8, label=f"mean of {ensemble['runs']} runs")
        if ensemble["clustering_exponent"] is not None:
            lo, hi = ensemble["clustering_window_t_over_tau"]
            axes.hlines(ensemble["clustering_exponent"], lo, hi, color="#2ca02c", lw=3, alpha=0.6,
                        label=f"their fit over {lo:g}-{hi:g} τ: {ensemble['clustering_exponent']:.2f}")
    axes.semilogx(centres, 2 * centres / (1 + centres), "--", color=HAFF, label="Haff's law")
    axes.axhline(1.0, color="k", ls=":", lw=1.4, label="clustering, $E \\propto 1/t$ (Nie, Ben-Naim, Chen)")
    axes.set_ylim(0, 2.6)
    axes.set_xlabel(r"time $t/\tau$")
    axes.set_ylabel(r"decay exponent $-d\ln E/d\ln t$")
    axes.set_title("How fast the energy decays")
    axes.legend(loc="upper left")


def _mark_regimes(axes: Any, data: dict, t_axis: bool) -> None:
    """Shade the homogeneous regime tested against the laws; a line where E leaves Haff's law."""
    trace, tau = data["trace"], data["tau"]
    c, t = np.asarray(trace["collisions_per_grain"]), np.asarray(trace["t"])
    end_c = data["homogeneous_collisions_per_grain"]
    end = float(np.interp(end_c, c, t)) / tau if t_axis else end_c
    start = t[1] / tau if t_axis else 0.0
    axes.axvspan(start, end, color=HAFF, alpha=0.07, lw=0, label=f"tested: c ≤ {end_c:g}")
    cross = data["crossover"]
    if cross is not None:
        where = cross["t_over_tau"] if t_axis else cross["collisions_per_grain"]
        axes.axvline(where, color="0.4", lw=1, ls="-.",
                     label=f"leaves Haff by {100 * data['tolerance']:g} %: c = {cross['collisions_per_grain']:.0f}")


def cluster_figure(data: dict, snapshots: list[cooling.Snapshot]) -> Any:
    """The disks at each snapshot, drawn to scale and coloured by speed (relative to the r.m.s. speed then)."""
    fig, panels = figures.new_figure(5.2 * len(snapshots), 5.4, 1, len(snapshots), squeeze=False)
    for axes, snap in zip(panels[0], snapshots):
        disks = _disks(axes, snap.gas)
        axes.set_title(f"c = {snap.c:.0f} collisions per grain, t = {snap.t / data['tau']:.0f} τ", fontsize=10)
    fig.colorbar(disks, ax=panels[0].tolist(), label=r"speed $|v|/v_{\mathrm{rms}}$ (log scale)", shrink=0.8)
    fig.suptitle(f"Clusters of the freely cooling gas, N = {data['grains']}, r = {data['restitution']}")
    return fig


def _disks(axes: Any, gas: cooling.Gas) -> Any:
    from matplotlib.collections import EllipseCollection
    from matplotlib.colors import LogNorm

    speed = np.hypot(gas.v[:, 0], gas.v[:, 1])
    relative = speed / float(np.sqrt(np.mean(speed**2)))
    norm = LogNorm(vmin=SPEED_RANGE[0], vmax=SPEED_RANGE[1])
    size = 2 * gas.R
    disks = EllipseCollection(size, size, np.zeros(len(size)), units="xy", offsets=gas.x,
                              offset_transform=axes.transData, cmap="viridis", norm=norm)
    disks.set_array(np.clip(relative, *SPEED_RANGE))
    axes.add_collection(disks)
    axes.set_xlim(0, gas.side)
    axes.set_ylim(0, gas.side)
    axes.set_aspect("equal")
    axes.grid(False)
    axes.set_xlabel(r"$x/\sigma$")
    axes.set_ylabel(r"$y/\sigma$")
    return disks
