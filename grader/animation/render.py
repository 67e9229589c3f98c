"""The student's gas next to the reference's, as an animation (.gif, .mp4, .html).

Both start from the same initial state and are drawn at the same frame
times. Grains are coloured by speed; below, kinetic energy and total
momentum over time for both runs. Marked in red: the first frame where the
student's grains leave the reference's beyond tolerance, overlapping grains,
grains outside the box, and a run that broke (with the reason).

    python -m grader animate granularGas.py --out gas.gif [--scenario gas] [--grains 80]
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from grader.animation.trajectories import (
    Differences,
    Trajectory,
    compare,
    outside,
    overlapping,
    record,
    reference_step,
    sandbox_step,
)
from grader.properties import oracle
from grader.sandbox.client import Sandbox
from grader.spec import scenarios
from grader.spec.limits import Limits
from grader.spec.scenarios import Scenario

FORMATS = (".gif", ".mp4", ".html")
#: Scenarios a feedback page may show, in the order they are tried.
FEEDBACK_SCENARIOS = ("single", "head_on", "unequal", "c12", "dem", "gas")
#: Calls of update in an animation may be long (many grains, long dt).
ANIMATION_LIMITS = Limits(call_seconds=20.0, function_seconds=3600.0)
MARK = "#d62728"


class AnimationError(ValueError):
    """The animation cannot be made as asked; the message says what to fix."""


@dataclass
class Runs:
    scenario: Scenario
    student: Trajectory
    reference: Trajectory | None
    differences: Differences

    def summary(self) -> dict:
        """What the feedback page says about this animation."""
        def at(frame: int | None) -> float | None:
            return None if frame is None else float(self.student.times[frame])

        d = self.differences
        return {"scenario": self.scenario.name, "first_divergence_t": at(d.first_divergence),
                "first_overlap_t": at(d.overlaps[0] if d.overlaps else None),
                "first_outside_t": at(d.outside[0] if d.outside else None), "error": self.student.error}


def scenario(name: str, grains: int = 60, seed: int = 0, duration: float | None = None,
             r: float | None = None) -> Scenario:
    """A grader scenario by name, with the animation's options applied."""
    kwargs: dict = {"n": grains, "seed": seed} if name == "gas" else {}
    if r is not None:
        if not 0 <= r <= 1:
            raise AnimationError(f"--r {r}: the restitution coefficient must lie in [0, 1]")
        kwargs["e" if name in ("c12", "dem") else "r"] = r
    try:
        chosen = scenarios.build(name, **kwargs)
    except (ValueError, TypeError) as exc:
        raise AnimationError(str(exc)) from None
    if duration is not None:
        if not duration > 0:
            raise AnimationError(f"--duration {duration}: give a time > 0")
        chosen = chosen.with_(duration=duration)
    return chosen


@contextmanager
def _student(path: str | Path, limits: Limits, hide: tuple[Path, ...]) -> Iterator[Sandbox]:
    """The submission in a sandbox, if it imports and defines update."""
    with Sandbox(path, limits, hide) as sandbox:
        if sandbox.import_error:
            raise AnimationError(f"{path}: {sandbox.import_error}")
        if "update" not in sandbox.functions:
            raise AnimationError(f"{path} defines no function update(); write it to see your gas move")
        yield sandbox


def _run(sandbox: Sandbox, chosen: Scenario) -> Runs:
    """The student's update in the sandbox, the reference's here."""
    student = record(sandbox_step(sandbox, chosen), chosen)
    reference = record(reference_step(chosen), chosen) if oracle.available() else None
    return Runs(chosen, student, reference, compare(student, reference, chosen))


def simulate(path: str | Path, chosen: Scenario, limits: Limits = ANIMATION_LIMITS,
             hide: tuple[Path, ...] = ()) -> Runs:
    """Run the student's update in the sandbox and the reference's here."""
    with _student(path, limits, hide) as sandbox:
        return _run(sandbox, chosen)


def first_failing(path: str | Path, limits: Limits = ANIMATION_LIMITS, hide: tuple[Path, ...] = (),
                  duration: float = 2.0) -> Runs | None:
    """The first feedback scenario where the student's gas goes wrong (None: none does).

    One sandbox serves every scenario: each run starts from its own state.
    """
    try:
        with _student(path, limits, hide) as sandbox:
            for name in FEEDBACK_SCENARIOS:
                chosen = scenario(name, grains=30)
                chosen = chosen.with_(duration=min(chosen.duration, duration))  # a short animation
                runs = _run(sandbox, chosen)
                if runs.differences.any or runs.student.error:
                    return runs
    except AnimationError:
        return None  # nothing to animate (no update, or no import)
    return None


def _view(chosen: Scenario, runs: list[Trajectory]) -> tuple[tuple[float, float], tuple[float, float]]:
    """The box, or the grains' whereabouts when the box is far larger (the C12 row)."""
    corners = chosen.w.reshape(-1, 2)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    where = np.concatenate([t.positions.reshape(-1, 2) for t in runs])
    pad = 2 * chosen.R.max()
    glo, ghi = where.min(axis=0) - pad, where.max(axis=0) + pad
    if np.max(ghi - glo) * 5 < np.max(hi - lo):
        centre, half = (glo + ghi) / 2, np.max(ghi - glo) / 2
        lo, hi = centre - half, centre + half
    margin = 0.02 * np.max(hi - lo)
    return (lo[0] - margin, hi[0] + margin), (lo[1] - margin, hi[1] + margin)


def build(runs: Runs, title: str = "your granularGas.py", max_frames: int | None = None, dpi: int = 80,
          window: bool = False):
    """A matplotlib FuncAnimation of the runs (not yet saved).

    window: draw in a pyplot window (to show live) instead of off screen.
    """
    import matplotlib

    if not window:
        matplotlib.use("Agg")
    from matplotlib.animation import FuncAnimation
    from matplotlib.collections import EllipseCollection
    from matplotlib.figure import Figure

    chosen, student, reference = runs.scenario, runs.student, runs.reference
    panels = [(title, student)] + ([("reference", reference)] if reference is not None else [])
    frames = len(reference.times) if reference is not None else len(student.times)
    stride = max(1, -(-frames // max_frames)) if max_frames else 1
    shown = list(range(0, frames, stride))
    if window:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(4.2 * len(panels), 6.2), dpi=dpi)
    else:
        fig = Figure(figsize=(4.2 * len(panels), 6.2), dpi=dpi)
    grid = fig.add_gridspec(2, len(panels), height_ratios=[3, 1.3])
    xlim, ylim = _view(chosen, [t for _, t in panels])
    speed_max = max(float(np.max(np.linalg.norm(t.velocities, axis=2))) for _, t in panels) or 1.0
    collections, titles = [], []
    for col, (name, trajectory) in enumerate(panels):
        ax = fig.add_subplot(grid[0, col])
        ax.set_aspect("equal")
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_xticks([])
        ax.set_yticks([])
        for wall in chosen.w:
            ax.plot(wall[:, 0], wall[:, 1], color="black", lw=1.5)
        grains = EllipseCollection(2 * chosen.R, 2 * chosen.R, 0, units="xy", offsets=trajectory.positions[0],
                                   offset_transform=ax.transData, cmap="viridis", linewidths=1.5)
        grains.set_clim(0, speed_max)
        grains.set_array(np.linalg.norm(trajectory.velocities[0], axis=1))
        ax.add_collection(grains)
        collections.append((grains, trajectory))
        titles.append(ax.set_title(name, fontsize=10))
    energy_ax = fig.add_subplot(grid[1, 0])
    momentum_ax = fig.add_subplot(grid[1, 1]) if len(panels) > 1 else energy_ax.twinx()
    for name, trajectory, style in [(p[0], p[1], "-" if k == 0 else "--") for k, p in enumerate(panels)]:
        energy_ax.plot(trajectory.times, trajectory.energy, style, label=name)
        momentum_ax.plot(trajectory.times, np.linalg.norm(trajectory.momentum, axis=1), style, label=name)
    energy_ax.set_xlabel("t")
    energy_ax.set_ylabel("kinetic energy")
    momentum_ax.set_xlabel("t")
    momentum_ax.set_ylabel("|total momentum|")
    energy_ax.legend(fontsize=7)
    d = runs.differences
    if d.first_divergence is not None:
        t_div = float(student.times[d.first_divergence])
        for ax in (energy_ax, momentum_ax):
            ax.axvline(t_div, color=MARK, lw=1)
    cursor = [ax.axvline(0, color="grey", lw=0.8) for ax in (energy_ax, momentum_ax)]
    fig.tight_layout()

    def draw(frame: int):
        artists = []
        for (grains, trajectory), text, (name, _) in zip(collections, titles, panels):
            k = min(frame, len(trajectory.times) - 1)
            x = trajectory.positions[k]
            grains.set_offsets(x)
            grains.set_array(np.linalg.norm(trajectory.velocities[k], axis=1))
            bad = overlapping(x, chosen.R) | outside(x, chosen.R, chosen.w)
            grains.set_edgecolors([MARK if b else "none" for b in bad])
            label = f"{name}   t = {trajectory.times[k]:.2f}"
            if trajectory is student:
                notes = []
                if d.first_divergence is not None and frame >= d.first_divergence:
                    notes.append(f"differs from the reference since t = {student.times[d.first_divergence]:.2f}")
                if bad.any():
                    notes.append("red: overlapping or outside the box")
                if student.error and frame >= len(student.times) - 1:
                    notes.append("stopped: " + student.error[:60])
                if notes:
                    label += "\n" + "\n".join(notes)
                text.set_color(MARK if notes else "black")
            text.set_text(label)
            artists += [grains, text]
        t = (reference if reference is not None else student).times[min(frame, frames - 1)]
        for line in cursor:
            line.set_xdata([t, t])
        return artists

    return FuncAnimation(fig, draw, frames=shown, interval=40, blit=False, repeat=False)


def save(anim, target: str | Path, fps: int = 25) -> Path:
    """Write the animation; the format follows the extension."""
    target = Path(target)
    extension = target.suffix.lower()
    if extension not in FORMATS:
        raise AnimationError(f"cannot write {target}: use a file name ending in .gif, .mp4 or .html")
    target.parent.mkdir(parents=True, exist_ok=True)
    if extension == ".gif":
        anim.save(target, writer="pillow", fps=fps)
    elif extension == ".mp4":
        from matplotlib.animation import FFMpegWriter

        if not FFMpegWriter.isAvailable():
            raise AnimationError("writing .mp4 needs ffmpeg, which is not installed (e.g. apt install ffmpeg); "
                                 "write a .gif or .html instead")
        anim.save(target, writer="ffmpeg", fps=fps)
    else:
        target.write_text(standalone_html(anim.to_jshtml(fps=fps, default_mode="once"), target.stem),
                          encoding="utf-8")
    return target


# matplotlib's player takes its button icons from a font on a CDN: use
# characters instead, so that the page loads nothing from the network.
_ICONS = {"fast-backward": "|&lt;", "step-backward": "&lt;|", "play": "&#x25B6;", "pause": "||",
          "step-forward": "|&gt;", "fast-forward": "&gt;|", "minus": "&minus;", "plus": "+"}


def standalone_html(player: str, title: str) -> str:
    """matplotlib's JavaScript player as a self-contained page."""
    player = re.sub(r"<link[^>]*font-awesome[^>]*>", "", player)

    def icon(match: re.Match) -> str:
        names = match.group(1).split()
        name = next((n[3:] for n in names if n.startswith("fa-") and n[3:] in _ICONS), None)
        mirrored = "fa-flip-horizontal" in names
        symbol = _ICONS.get(name, "&bull;") if name else "&bull;"
        return f'<span style="display:inline-block{";transform:scaleX(-1)" if mirrored else ""}">{symbol}</span>'

    player = re.sub(r'<i class="([^"]*)"\s*></i>', icon, player)
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n</head>\n"
            f"<body>\n{player}\n</body>\n</html>\n")


def gif_bytes(runs: Runs, max_frames: int = 50, dpi: int = 60) -> bytes:
    """A short GIF of the runs, for embedding in a page."""
    with tempfile.TemporaryDirectory() as tmp:
        path = save(build(runs, max_frames=max_frames, dpi=dpi), Path(tmp) / "a.gif", fps=15)
        return path.read_bytes()


def animate_main(path: str, out: str, scenario_name: str = "gas", grains: int = 60, duration: float | None = None,
                 seed: int = 0, r: float | None = None, call_seconds: float = ANIMATION_LIMITS.call_seconds) -> str:
    """Render and save; a sentence saying what was written and what it shows."""
    if Path(out).suffix.lower() not in FORMATS:
        raise AnimationError(f"--out {out}: use a file name ending in .gif, .mp4 or .html")
    if not os.path.isfile(path):
        raise AnimationError(f"{path}: no such file; give the path of a granularGas.py")
    if scenario_name not in scenarios.SCENARIOS:
        raise AnimationError(f"--scenario {scenario_name}: choose one of {', '.join(scenarios.SCENARIOS)}")
    if grains < 1:
        raise AnimationError(f"--grains {grains}: give at least 1")
    if not call_seconds > 0:
        raise AnimationError(f"--timeout {call_seconds}: give a number of seconds > 0")
    limits = replace(ANIMATION_LIMITS, call_seconds=call_seconds)
    runs = simulate(path, scenario(scenario_name, grains, seed, duration, r), limits)
    save(build(runs), out)
    s = runs.summary()
    said = [f"wrote {out}: {runs.scenario.name}, {len(runs.student.times)} frames"]
    if runs.reference is None:
        said.append("the reference is not installed: your gas alone")
    elif s["first_divergence_t"] is None:
        said.append("your gas follows the reference's all along")
    else:
        said.append(f"your gas leaves the reference's at t = {s['first_divergence_t']:.3g}")
    if s["first_overlap_t"] is not None:
        said.append(f"grains overlap from t = {s['first_overlap_t']:.3g}")
    if s["first_outside_t"] is not None:
        said.append(f"a grain leaves the box at t = {s['first_outside_t']:.3g}")
    if s["error"]:
        said.append(f"your update stopped {s['error']}")
    return "; ".join(said)
