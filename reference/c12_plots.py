"""The figures of ARGESIM benchmark C12 (reference/c12.py computes, this module draws).

The row is dimensionless: diameter d = 1, initial speed v0 = 1, so positions
and gaps are in units of d, times in units of d / v0 and velocities in units
of v0; every axis says so.

    python -m reference.c12 --plots DIR [--format svg|pdf|png] [--samples N]
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.ticker as ticker
import numpy as np

from reference import c12, figures

SPHERES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")  # spheres 1-4, the same colour in every figure
TIME = r"time $t\,v_0/d$"
E_AXIS = r"restitution coefficient $e$"
E_C = r"$e_c = 3 - 2\sqrt{2} \approx %.5f$"


def write_plots(folder: Path, data: dict | None = None, fmt: str = "png") -> list[Path]:
    """The benchmark's figures as ``folder/<task>.<fmt>``; data: ``c12.results()`` (computed if None)."""
    fmt = figures.check_format(fmt, c12.C12Error)
    folder = figures.prepare_folder(folder, c12.C12Error)
    data = data or c12.results()
    with figures.style():
        drawn = {"a1_positions_and_gaps": a1_figure(), "b1_collisions": b1_figure(data),
                 "b2_final_velocities": b2_figure(data), "c2_histogram": c2_figure(data["c2"]["n"])}
        return [figures.save(fig, folder, stem, fmt, c12.C12Error) for stem, fig in drawn.items()]


def a1_figure(e: float = 0.2) -> Any:
    """Positions and gaps against time: exact events (solid) and the spreadsheet's time grid (dotted)."""
    exact = c12.event_row(e, t_end=c12.T_END, history=True)
    grid = c12.time_row(e)
    t_e = np.array([float(t) for t, _ in exact.history])
    x_e = np.array([[float(p) for p in xs] for _, xs in exact.history]) / c12.DIAMETER
    t_g = np.array([t for t, _ in grid.history])
    x_g = np.array([xs for _, xs in grid.history]) / c12.DIAMETER
    fig, (top, bottom) = figures.new_figure(9, 6.5, 2, 1, sharex=True)
    for k in range(4):
        top.plot(t_e, x_e[:, k], color=SPHERES[k], label=f"sphere {k + 1}")
        top.plot(t_g, x_g[:, k], ":", color=SPHERES[k], lw=1.8)
    gap_colours = ("#9467bd", "#8c564b", "#17becf")
    for k in range(3):
        bottom.plot(t_e, x_e[:, k + 1] - x_e[:, k] - 1, color=gap_colours[k], label=f"gap {k + 1}–{k + 2}")
        bottom.plot(t_g, x_g[:, k + 1] - x_g[:, k] - 1, ":", color=gap_colours[k], lw=1.8)
        hits = [float(c.t) for c in exact.collisions if c.pair[0] == k + 1]
        bottom.plot(hits, np.zeros(len(hits)), "o", ms=4, color=gap_colours[k])
    top.plot([], [], "k-", label="exact events")
    top.plot([], [], "k:", lw=1.8, label=rf"time grid, $\Delta t = {c12.SPREADSHEET_DT}\,d/v_0$")
    bottom.plot([], [], "ko", ms=4, label="collisions (exact)")
    top.set_ylabel(r"position $x_i/d$")
    bottom.set_ylabel(r"gap $(x_{i+1} - x_i - d)/d$")
    bottom.set_xlabel(TIME)
    bottom.set_xlim(0, c12.T_END)
    bottom.set_ylim(bottom=-0.05)
    top.legend(loc="lower right", ncols=2)  # the lines leave both corners on the right free
    bottom.legend(loc="upper right", ncols=2)
    top.set_title(rf"a1: four spheres, $e = {e}$: {len(exact.collisions)} collisions exactly, "
                  rf"{len(grid.collisions)} on the time grid, in $0 \leq t\,v_0/d \leq {c12.T_END:g}$")
    return fig


def b1_figure(data: dict) -> Any:
    """Number of collisions in the window against e; the collapse threshold marked."""
    fig, ax = figures.new_figure(8, 4.5)
    ax.plot(data["b1"]["e"], data["b1"]["n"], "o-", ms=3, lw=1, drawstyle="steps-mid", color=SPHERES[0],
            label=rf"exact events in $0 \leq t\,v_0/d \leq {c12.T_END:g}$, $e$ every 0.005")
    ax.axvline(c12.CRITICAL_E, color="grey", ls="--", label=(E_C % c12.CRITICAL_E) + ": inelastic collapse")
    ax.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))  # counts: whole numbers only
    ax.set_ylim(0, max(data["b1"]["n"]) * 1.08)
    ax.set_xlim(0.15, 1.0)
    ax.set_xlabel(E_AXIS)
    ax.set_ylabel("number of collisions")
    ax.set_title("b1: collisions as a function of $e$")
    ax.legend(loc="upper right")
    return fig


def b2_figure(data: dict) -> Any:
    """Final velocities against e, with the quasi-plastic e and c1's half-speed point."""
    fig, ax = figures.new_figure(8, 5)
    velocities = np.array(data["b2"]["v"]) / c12.V0
    for k in range(4):
        ax.plot(data["b2"]["e"], velocities[:, k], color=SPHERES[k], label=rf"$v_{k + 1}/v_0$")
    e_qp, e_half = data["a2"]["quasi_plastic_e"], data["c1"]["e"]
    ax.axhline(0.25, color="grey", lw=0.8, ls=":", label=r"common velocity $v_0/4$")
    ax.axvline(c12.CRITICAL_E, color="grey", ls="--", lw=0.8, label=E_C % c12.CRITICAL_E)
    ax.axvline(e_qp, color="black", ls="-.", lw=1, label=rf"quasi-plastic: $e_{{qp}} = {e_qp:.4f}$")
    ax.annotate(rf"$e_{{qp}} = {e_qp:.4f}$" "\n" r"all $|v_i - v_0/4| \leq 5\times10^{-7}\,v_0$",
                xy=(e_qp, 0.62), xytext=(0.24, 0.62), va="center", fontsize=9,
                arrowprops={"arrowstyle": "->", "color": "black"})
    ax.plot([e_half], [0.5], "s", color=SPHERES[3], ms=6, mfc="none")
    ax.annotate(rf"c1: $v_4 = v_0/2$ at $e = 2^{{2/3}} - 1 = {e_half:.5f}$", xy=(e_half, 0.5),
                xytext=(0.62, 0.36), fontsize=9, arrowprops={"arrowstyle": "->", "color": SPHERES[3]})
    ax.set_xlim(0.15, 1.0)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(E_AXIS)
    ax.set_ylabel(rf"final velocity $v_i/v_0$ at $t\,v_0/d = {c12.T_END:g}$")
    ax.set_title("b2: final velocities as a function of $e$")
    ax.legend(loc="upper center")  # above the curves: v4 stays below 0.6 v0 up to e = 0.7
    return fig


def c2_figure(n: int) -> Any:
    """Histogram of the final v4 for e ~ N(0.5, 0.05), with its mean and both 95 % intervals."""
    mc = c12.monte_carlo(n)
    v4 = np.asarray(mc["samples"]) / c12.V0
    lo, hi = mc["central95"]
    fig, ax = figures.new_figure(8, 6)
    ax.hist(v4, bins=min(60, max(10, int(math.sqrt(n)))), density=True, color="#9ecae1", edgecolor="white",
            label=f"histogram of {n:,} Monte Carlo samples".replace(",", " "))
    grid = np.linspace(v4.min(), v4.max(), 300)
    ax.plot(grid, np.exp(-((grid - mc["mean"]) / mc["std"]) ** 2 / 2) / (mc["std"] * math.sqrt(2 * math.pi)),
            color="#08519c", lw=1.2, label=r"normal density with the sample mean and $s$")
    ax.axvspan(lo, hi, color="#fdae6b", alpha=0.25, zorder=0,
               label=f"central 95 % of $v_4$ (2.5th–97.5th percentiles): [{lo:.4f}, {hi:.4f}]")
    ax.axvline(mc["mean"], color="black", label=rf"mean $\bar v_4/v_0 = {mc['mean']:.4f}$, $s = {mc['std']:.4f}$")
    c_lo, c_hi = mc["ci95"]
    ax.errorbar([mc["mean"]], [0.5 * ax.get_ylim()[1]], xerr=[[mc["mean"] - c_lo], [c_hi - mc["mean"]]], fmt="none",
                ecolor="#d62728", elinewidth=2, capsize=5,
                label=rf"95 % CI of the mean ($\pm 1.96\,s/\sqrt{{n}}$): [{c_lo:.4f}, {c_hi:.4f}]")
    ax.set_xlabel(rf"final velocity $v_4/v_0$ at $t\,v_0/d = {c12.T_END:g}$")
    ax.set_ylabel(r"probability density (per unit $v_4/v_0$)")
    ax.set_title(r"c2: $e \sim \mathrm{N}(0.5,\ 0.05^2)$, final velocity of sphere 4")
    fig.legend(loc="outside lower center", ncols=2)  # below the axes: the histogram fills them
    return fig
