"""The figures of the two-particle case (reference/dem.py computes, this module draws).

SI units throughout (m, s, kg, N): the positions are in m, the times in s or
ms, the velocities in m/s, as in the DEM coursework report.

* dem_overlap_and_force: the soft-sphere contact, overlap and force against
  time, with the closed-form contact duration marked;
* dem_hard_vs_soft: both models on the same axes, for every e: the paths of
  the centres in the x-y plane, and the velocities along the contact normal.

    python -m reference.dem --plots DIR [--format svg|pdf|png]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from reference import dem, figures

MODELS = {"hard": "#1f77b4", "soft": "#d62728"}  # hard sphere blue, soft sphere red, in every panel
#: The paths are drawn from t = 0 to this time (s): the contact is at 0.5 s.
PATH_END = 1.0
#: The velocity panels show this window around the contact, in ms from the first touch.
WINDOW_MS = (-5.0, 35.0)


def write_plots(folder: Path, fmt: str = "png") -> list[Path]:
    """Both figures as ``folder/<name>.<fmt>``."""
    fmt = figures.check_format(fmt, dem.DEMError)
    folder = figures.prepare_folder(folder, dem.DEMError)
    # One soft-sphere run per e, long enough for the paths, serves both figures (the runs cost the most).
    runs = {e: dem.soft_sphere_run(e, after=PATH_END - dem.contact_time()) for e in dem.RESTITUTIONS}
    with figures.style():
        drawn = {"dem_overlap_and_force": contact_figure(runs), "dem_hard_vs_soft": comparison_figure(runs)}
        return [figures.save(fig, folder, stem, fmt, dem.DEMError) for stem, fig in drawn.items()]


def contact_figure(runs: dict[float, dem.SoftRun]) -> Any:
    """Overlap and contact force of the soft-sphere runs (one per e) against time."""
    tc = dem.contact_time()
    fig, (top, bottom) = figures.new_figure(8, 6, 2, 1, sharex=True)
    for (e, run), colour in zip(runs.items(), ("#1f77b4", "#ff7f0e"), strict=True):
        window = (run.t >= tc + WINDOW_MS[0] / 1e3) & (run.t <= tc + WINDOW_MS[1] / 1e3)
        ms = (run.t[window] - tc) * 1e3
        top.plot(ms, np.maximum(run.reach[window], 0) * 1e3, color=colour, label=f"$e = {e}$")
        bottom.plot(ms, run.force[window], color=colour)
        duration = dem.contact_duration(e) * 1e3
        top.axvline(duration, color=colour, ls=":", lw=1)
        bottom.axvline(duration, color=colour, ls=":", lw=1, label=rf"$T = {duration:.2f}$ ms for $e = {e}$")
    top.set_ylabel(r"overlap $\delta$ (mm)")
    top.set_title(rf"Soft-sphere contact: linear spring, $k = {dem.STIFFNESS:g}$ N/m loading, $k e^2$ "
                  rf"unloading, leapfrog $\Delta t = {dem.DT * 1e3:g}$ ms")
    top.legend(loc="upper right")
    bottom.set_ylabel(r"contact force $|F|$ (N)")
    bottom.set_xlabel(rf"time since first touch $t - t_c$ (ms), $t_c = {tc:g}$ s")
    bottom.legend(loc="upper right", title=r"contact duration $T = \frac{\pi}{2}\sqrt{\mu/k}\,(1 + 1/e)$",
                  title_fontsize=8.5)
    return fig


def hard_motion(e: float, t: np.ndarray, pair: dem.Pair = dem.Pair()) -> tuple[np.ndarray, ...]:
    """Hard-sphere positions and velocities (x1, x2, v1, v2) at times ``t`` (s): a kink at the contact."""
    hit = dem.hard_sphere(e, pair)
    before = t[:, None] < hit["t"]
    since = (t - hit["t"])[:, None]
    motion = []
    for x, v_in, v_out in ((pair.x1, pair.v1, hit["v1"]), (pair.x2, pair.v2, hit["v2"])):
        at_contact = x + v_in * hit["t"]
        motion.append((np.where(before, x + v_in * t[:, None], at_contact + v_out * since),
                       np.where(before, v_in, v_out)))
    (x1, v1), (x2, v2) = motion
    return x1, x2, v1, v2


def comparison_figure(runs: dict[float, dem.SoftRun]) -> Any:
    """Hard against soft sphere, one column per e: paths in the x-y plane, normal velocities in time."""
    tc = dem.contact_time()
    normal = np.array([0.6, 0.8, 0.0])  # from sphere 1 to sphere 2 at the hard-sphere contact
    fig, axes = figures.new_figure(5.2 * len(runs), 9, 2, len(runs), height_ratios=[1.15, 1])
    for column, (e, run) in enumerate(runs.items()):
        paths, speeds = axes[0, column], axes[1, column]
        hard1, hard2, hard_v1, hard_v2 = hard_motion(e, run.t)
        gap = max(np.abs(run.x1 - hard1).max(), np.abs(run.x2 - hard2).max())
        _draw_paths(paths, run, hard1, hard2, tc)
        paths.set_title(f"$e = {e}$: centres from $t = 0$ to {run.t[-1]:.2f} s\n"
                        f"largest hard–soft distance {gap * 1e3:.1f} mm")
        ms = (run.t - tc) * 1e3
        window = (ms >= WINDOW_MS[0]) & (ms <= WINDOW_MS[1])
        for sphere, hard_v, soft_v, style in ((1, hard_v1, run.v1, "-"), (2, hard_v2, run.v2, "--")):
            speeds.plot(ms[window], hard_v[window] @ normal, style, color=MODELS["hard"], lw=2, alpha=0.6,
                        label=f"sphere {sphere}, hard", drawstyle="steps-post")
            speeds.plot(ms[window], soft_v[window] @ normal, style, color=MODELS["soft"], lw=1.2,
                        label=f"sphere {sphere}, soft")
        speeds.axvspan(0, dem.contact_duration(e) * 1e3, color="grey", alpha=0.12, label="soft contact")
        speeds.set_xlim(*WINDOW_MS)
        speeds.set_xlabel(r"time since first touch $t - t_c$ (ms)")
        speeds.set_title(rf"velocity along the contact normal $\hat n = (0.6, 0.8, 0)$, $e = {e}$")
    _same_frame(axes[0], 0.1)
    axes[0, 0].set_ylabel(r"$y$ (m)")
    axes[1, 0].set_ylabel(r"normal velocity $\mathbf{v}_i \cdot \hat n$ (m/s)")
    axes[1, 0].sharey(axes[1, 1])
    axes[0, 0].legend(loc="upper left", fontsize=8)
    axes[1, 0].legend(loc="center right", fontsize=8)
    fig.suptitle(rf"Hard sphere (impulse at $t_c = {tc:g}$ s) against soft sphere (spring, $k = {dem.STIFFNESS:g}$ "
                 rf"N/m), masses {dem.MASS:g} kg, diameters {dem.DIAMETER:g} m")
    return fig


def _draw_paths(ax: Any, run: dem.SoftRun, hard1: np.ndarray, hard2: np.ndarray, tc: float) -> None:
    """Both models' paths of both centres, and the spheres' outlines at the hard-sphere contact."""
    import matplotlib.patches as patches

    at_contact = int(np.searchsorted(run.t, tc))
    for sphere, hard, soft in ((1, hard1, run.x1), (2, hard2, run.x2)):
        first = sphere == 1  # one legend entry per model: both spheres are drawn alike
        ax.plot(hard[:, 0], hard[:, 1], color=MODELS["hard"], lw=4, alpha=0.35,
                label="hard sphere (impulse)" if first else None)
        ax.plot(soft[:, 0], soft[:, 1], "--", color=MODELS["soft"], lw=1.2,
                label="soft sphere (spring, leapfrog)" if first else None)
        ax.add_patch(patches.Circle(tuple(hard[at_contact, :2]), dem.DIAMETER / 2, fill=False, color="grey", lw=0.8))
        ax.annotate(str(sphere), tuple(hard[0, :2]), xytext=(4, 4), textcoords="offset points", fontsize=9)
    ax.set_xlabel(r"$x$ (m)")


def _same_frame(row: Any, margin: float) -> None:
    """One x-y frame for every panel of ``row``, holding all lines and circles plus ``margin``, at equal scales."""
    points = [line.get_xydata() for ax in row for line in ax.get_lines() if len(line.get_xdata())]
    for circle in (patch for ax in row for patch in ax.patches):
        points.append(np.array(circle.center) + circle.radius * np.array([[-1, -1], [1, 1]]))
    stacked = np.vstack(points)
    low, high = stacked.min(axis=0) - margin, stacked.max(axis=0) + margin
    for ax in row:
        ax.set_xlim(low[0], high[0])
        ax.set_ylim(low[1], high[1])
        ax.set_aspect("equal", adjustable="box")
