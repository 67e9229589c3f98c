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

DATA, HAFF, CLUSTER = "#1f77b4", "#d62728", "#2ca02c"


def write_plots(folder: Path, data: dict, final: cooling.Gas, fmt: str = "png") -> list[Path]:
    """The figures as ``folder/<name>.<fmt>``; data from :func:`reference.cooling.results`, final its last gas."""
    fmt = figures.check_format(fmt, cooling.CoolingError)
    folder = figures.prepare_folder(folder, cooling.CoolingError)
    with figures.style():
        drawn = {"cooling_energy": energy_figure(data), "cooling_clusters": cluster_figure(data, final)}
        return [figures.save(fig, folder, stem, fmt, cooling.CoolingError) for stem, fig in drawn.items()]


def energy_figure(data: dict) -> Any:
    """E/E0 against collisions per grain (semi-log) and against t/tau (log-log), with the two laws."""
    trace = data["trace"]
    t, c, e = (np.asarray(trace[k]) for k in ("t", "collisions_per_grain", "energy"))
    e0, tau, r = data["T0"], data["tau"], data["restitution"]
    fig, (left, right) = figures.new_figure(11, 4.6, 1, 2)
    left.semilogy(c, e / e0, color=DATA, lw=1.6, label=f"simulation, N = {data['grains']}")
    left.semilogy(c, cooling.energy_by_collisions(c, 1.0, r), "--", color=HAFF,
                  label=r"$E_0\,e^{-(1-r^2)c/2}$ (homogeneous)")
    left.set_xlabel("collisions per grain $c$")
    left.set_ylabel(r"kinetic energy per grain $E/E_0$")
    left.set_title("Energy against collisions")
    s = t[1:] / tau
    right.loglog(s, e[1:] / e0, color=DATA, lw=1.6, label="simulation")
    right.loglog(s, cooling.haff_energy(t[1:], 1.0, tau), "--", color=HAFF,
                 label=r"Haff: $E_0/(1+t/\tau)^2$, no fit")
    late = s >= s[-1] / 4
    if data["late_exponent"] is not None and np.any(late):
        anchor = e[1:][late][0] / e0 * s[late][0]
        right.loglog(s[late], anchor / s[late], ":", color="k", lw=1.6, label=r"$\propto 1/t$ (clustering)")
    for axes in (left, right):
        _mark_regimes(axes, data, t_axis=axes is right)
        axes.legend(loc="lower left")
    right.set_xlabel(r"time $t/\tau$")
    right.set_ylabel(r"$E/E_0$")
    exponent = data["late_exponent"]
    tail = f", late decay $E \\propto t^{{-{exponent:.2f}}}$" if exponent is not None else ""
    right.set_title(rf"Energy against time ($\tau$ = {tau:.3g} $\sigma\sqrt{{m/T_0}}$){tail}")
    fig.suptitle(f"Freely cooling disks: r = {r}, area fraction {data['area_fraction']}, {data['box']}")
    return fig


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


def cluster_figure(data: dict, final: cooling.Gas) -> Any:
    """The disks at the end of the run, drawn to scale and coloured by speed (relative to the r.m.s. speed)."""
    from matplotlib.collections import EllipseCollection
    from matplotlib.colors import LogNorm

    speed = np.hypot(final.v[:, 0], final.v[:, 1])
    rms = float(np.sqrt(np.mean(speed**2)))
    fig, axes = figures.new_figure(7.5, 6.6)
    size = 2 * final.R
    norm = LogNorm(vmin=max(float(np.percentile(speed, 1)) / rms, 1e-3), vmax=float(speed.max()) / rms)
    disks = EllipseCollection(size, size, np.zeros(len(size)), units="xy", offsets=final.x,
                              offset_transform=axes.transData, cmap="viridis", norm=norm)
    disks.set_array(np.maximum(speed / rms, norm.vmin))
    axes.add_collection(disks)
    axes.set_xlim(0, final.side)
    axes.set_ylim(0, final.side)
    axes.set_aspect("equal")
    axes.grid(False)
    axes.set_xlabel(r"$x/\sigma$")
    axes.set_ylabel(r"$y/\sigma$")
    c = data["trace"]["collisions_per_grain"][-1]
    t = data["trace"]["t"][-1] / data["tau"]
    axes.set_title(f"Clusters after {c:.0f} collisions per grain (t = {t:.0f} τ), N = {data['grains']}")
    fig.colorbar(disks, ax=axes, label=r"speed $|v|/v_{\mathrm{rms}}$ (log scale)", shrink=0.85)
    return fig
