"""The animation's figure: the two gases, a speed colour bar, energy and momentum over time.

Layout (10 in wide, so 800 px at the default 80 dpi): a header with the
time and, in red, what went wrong; the student's gas and the reference's
side by side with one speed colour bar; below, kinetic energy and total
momentum on two stacked panels sharing the time axis. Every text has room
reserved for it (no tight_layout per frame, no title pushed out of the
figure). The static parts are drawn once; each frame redraws only the
moving artists (grains, header, time cursors) over a saved background.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.animation.trajectories import Runs, Trajectory, outside, overlapping

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MARK = "#d62728"
WIDTH_IN, HEIGHT_IN, DPI = 10.0, 9.0, 80
#: Characters per header line, and header lines at most (the room reserved above the gases).
NOTE_WIDTH, NOTE_LINES = 105, 3


@dataclass
class Movie:
    """A figure and how to draw its frame k (returns the artists it changed)."""

    fig: Figure
    draw: Callable[[int], list]
    frames: list[int]
    moving: list


def _view(runs: Runs) -> tuple[tuple[float, float], tuple[float, float]]:
    """The box, or the grains' whereabouts when the box is far larger (the C12 row)."""
    chosen = runs.scenario
    corners = chosen.w.reshape(-1, 2)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    shown = [t for t in (runs.student, runs.reference) if t is not None]
    where = np.concatenate([t.positions.reshape(-1, 2) for t in shown])
    pad = 2 * chosen.R.max()
    glo, ghi = where.min(axis=0) - pad, where.max(axis=0) + pad
    if np.max(ghi - glo) * 5 < np.max(hi - lo):
        centre, half = (glo + ghi) / 2, np.max(ghi - glo) / 2
        lo, hi = centre - half, centre + half
    margin = 0.02 * np.max(hi - lo)
    return (lo[0] - margin, hi[0] + margin), (lo[1] - margin, hi[1] + margin)


def warm() -> None:
    """Import what the figures use and draw a small one with text, so that matplotlib's modules and fonts are
    loaded (a batch's fork server does it once: its workers then draw their first frame at once)."""
    import matplotlib.cm  # noqa: F401
    import matplotlib.collections  # noqa: F401
    import matplotlib.colors  # noqa: F401
    import PIL.Image  # noqa: F401

    fig = _figure(False, 20)
    fig.add_subplot(111).set_title("warm", fontsize=11)
    fig.text(0.5, 0.5, "warm  $|\\mathbf{v}|$")  # mathtext too: its parser is built on first use
    fig.canvas.draw()


def _figure(window: bool, dpi: int) -> Figure:
    if window:
        import matplotlib.pyplot as plt

        return plt.figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=dpi)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def _gas_panel(fig, where, runs: Runs, trajectory: Trajectory | None, name: str, speed_max: float):
    """One gas in its box (None: a panel saying why there is no reference run)."""
    from matplotlib.collections import EllipseCollection

    ax = fig.add_subplot(where)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(name, fontsize=11)
    if trajectory is None:
        ax.text(0.5, 0.5, "The reference's run of this scenario\nis not in the kit: it ships the standard\n"
                "scenarios at their default settings.", ha="center", va="center", fontsize=10, color="dimgrey",
                transform=ax.transAxes)
        for side in ax.spines.values():
            side.set_color("lightgrey")
        return None
    for side in ax.spines.values():
        side.set_color("lightgrey")  # the walls, in black, frame the gas
    chosen = runs.scenario
    xlim, ylim = _view(runs)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    for wall in chosen.w:
        ax.plot(wall[:, 0], wall[:, 1], color="black", lw=1.5)
    grains = EllipseCollection(2 * chosen.R, 2 * chosen.R, 0, units="xy", offsets=trajectory.positions[0],
                               offset_transform=ax.transData, cmap="viridis", linewidths=1.5)
    grains.set_clim(0, speed_max)
    grains.set_array(np.linalg.norm(trajectory.velocities[0], axis=1))
    ax.add_collection(grains)
    return grains


def _finite_top(*series: np.ndarray) -> float:
    """The largest finite value of the series (0 if none): a file's gas may blow up to inf or nan, and an axis
    limit of inf stopped the grading (a red team's update scaled its velocities by 1e200)."""
    return max(float(np.max(s, where=np.isfinite(s), initial=0.0)) for s in series)


def _headroom(top: float) -> float:
    return min(1.1 * top, np.finfo(float).max)


def _curves(fig, grid, runs: Runs, panels: list[tuple[str, Trajectory]]):
    """Kinetic energy and |total momentum| on two stacked panels; their time cursors."""
    energy_ax = fig.add_subplot(grid[0])
    momentum_ax = fig.add_subplot(grid[1], sharex=energy_ax)
    scale = float(np.sum(runs.scenario.m * np.linalg.norm(runs.scenario.v, axis=1))) or 1.0
    for k, (name, trajectory) in enumerate(panels):
        style = dict(ls="-", color="#1f77b4", lw=1.8) if k == 0 else dict(ls="--", color="#ff7f0e", lw=1.4)
        energy_ax.plot(trajectory.times, trajectory.energy, label=name, **style)
        momentum_ax.plot(trajectory.times, np.linalg.norm(trajectory.momentum, axis=1), label=name, **style)
    energy_top = _finite_top(*(t.energy for _, t in panels))
    momentum_top = _finite_top(*(np.linalg.norm(t.momentum, axis=1) for _, t in panels))
    # From zero: a conserved quantity is a flat line, not rounding noise blown up with an offset.
    energy_ax.set_ylim(0, _headroom(energy_top) if energy_top > 0 else 1.0)
    momentum_ax.set_ylim(0, _headroom(max(momentum_top, 0.05 * scale)))
    end = max(float(t.times[-1]) for _, t in panels) or 1.0
    energy_ax.set_xlim(0, end)
    for ax, label, top in ((energy_ax, "kinetic\nenergy  $E$", energy_top),
                           (momentum_ax, "total momentum\n$|\\mathbf{P}|$", momentum_top)):
        ax.set_ylabel(label)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain" if top < 1e6 else "sci")
        ax.grid(alpha=0.3)
    energy_ax.tick_params(labelbottom=False)
    momentum_ax.set_xlabel("time  $t$")
    energy_ax.legend(fontsize=8, loc="best")  # where the curves are not: they start high or low, and may blow up
    first = runs.differences.first_divergence
    if first is not None:
        for ax in (energy_ax, momentum_ax):
            ax.axvline(float(runs.student.times[first]), color=MARK, lw=1)
    return [ax.axvline(0, color="grey", lw=0.8) for ax in (energy_ax, momentum_ax)]


def _notes(runs: Runs, frame: int, bad: np.ndarray) -> list[str]:
    """What went wrong by this frame, in the header's few lines."""
    student, d = runs.student, runs.differences
    notes = []
    if d.first_divergence is not None and frame >= d.first_divergence:
        notes.append(f"your grains leave the reference's at t = {student.times[d.first_divergence]:.2f}")
    if bad.any():
        notes.append("red outline: grains overlapping or outside the box")
    if student.error and frame >= len(student.times) - 1:
        notes.append(f"your update stopped {student.error}")
    lines = [line for note in notes for line in textwrap.wrap(note, NOTE_WIDTH)]
    if len(lines) > NOTE_LINES:
        lines = lines[:NOTE_LINES - 1] + [lines[NOTE_LINES - 1][:NOTE_WIDTH - 3] + "..."]
    return lines


def _speed_scale(student: Trajectory, reference: Trajectory | None) -> tuple[float, bool]:
    """The top of the colour scale, and whether the student's grains go faster. The reference's speeds set it where
    it is shown: a student's gas gaining speed (up to 40 in a review's run) would otherwise leave the reference's
    grains all the colour of rest. Faster grains take the top colour; non-finite speeds are left out."""
    speeds = [np.linalg.norm(t.velocities, axis=2) for t in (student, reference) if t is not None]
    top = _finite_top(speeds[-1]) or _finite_top(*speeds) or 1.0  # the reference's, when there is one
    return top, bool(np.any(speeds[0] > top))


def build(runs: Runs, title: str = "your granularGas.py", max_frames: int | None = None, dpi: int = DPI,
          window: bool = False) -> Movie:
    """The figure of the runs and its frame-drawing function (nothing saved yet)."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize, to_rgba

    chosen, student, reference = runs.scenario, runs.student, runs.reference
    panels = [(title, student)] + ([("reference", reference)] if reference is not None else [])
    frames = max(len(t.times) for _, t in panels)
    stride = max(1, -(-frames // max_frames)) if max_frames else 1
    fig = _figure(window, dpi)
    outer = fig.add_gridspec(2, 1, height_ratios=[4.0, 2.7], left=0.1, right=0.9, top=0.835, bottom=0.065,
                             hspace=0.12)
    top = outer[0].subgridspec(1, 3, width_ratios=[1, 1, 0.05], wspace=0.08)
    speed_max, faster = _speed_scale(student, reference)
    grains = [_gas_panel(fig, top[0, 0], runs, student, title, speed_max),
              _gas_panel(fig, top[0, 1], runs, reference, "reference", speed_max)]
    fig.colorbar(ScalarMappable(Normalize(0, speed_max), cmap="viridis"), cax=fig.add_subplot(top[0, 2]),
                 label="speed  $|\\mathbf{v}|$", extend="max" if faster else "neither")
    cursors = _curves(fig, outer[1].subgridspec(2, 1, hspace=0.08), runs, panels)
    fig.text(0.5, 0.985, f"{runs.heading}  \N{MIDDLE DOT}  scenario {chosen.name}, {chosen.n} "
             f"grain{'s' if chosen.n != 1 else ''}, r = {chosen.r:g}", ha="center", va="top", fontsize=12)
    clock = fig.text(0.5, 0.955, "", ha="center", va="top", fontsize=11)
    # The notes quote the student's error message: "$" there is text, not mathtext (a review's file crashed the
    # animation, and with it the grading, with a message of "$\\undefinedcommand{$").
    notes = fig.text(0.5, 0.93, "", ha="center", va="top", fontsize=9.5, color=MARK, linespacing=1.15,
                     parse_math=False)
    drawn = [(g, t, np.linalg.norm(t.velocities, axis=2)) for g, t in zip(grains, (student, reference))
             if g is not None and t is not None]  # speeds of every frame, computed once
    marked, unmarked = np.array(to_rgba(MARK)), np.zeros(4)

    def draw(frame: int) -> list:
        mine = student.positions[min(frame, len(student.times) - 1)]
        bad = overlapping(mine, chosen.R) | outside(mine, chosen.R, chosen.w)
        for panel, (collection, trajectory, speeds) in enumerate(drawn):
            k = min(frame, len(trajectory.times) - 1)
            collection.set_offsets(trajectory.positions[k])
            collection.set_array(speeds[k])
            if panel == 0:  # the student's grains: overlapping or outside ones outlined in red
                collection.set_edgecolors(np.where(bad[:, None], marked, unmarked))
        longest = max((t for _, t in panels), key=lambda t: len(t.times))
        t = float(longest.times[min(frame, frames - 1)])
        clock.set_text(f"t = {t:.2f}")
        notes.set_text("\n".join(_notes(runs, min(frame, len(student.times) - 1), bad)))
        for line in cursors:
            line.set_xdata([t, t])
        return [c for c, _, _ in drawn] + [clock, notes, *cursors]

    # At most max_frames, evenly spaced from the first to the last: the last is where a run that stopped says
    # why (every stride-th frame from the first often skipped it, and the note with it).
    shown = sorted({int(k) for k in np.linspace(0, frames - 1, -(-frames // stride)).round()})
    return Movie(fig, draw, shown, [c for c, _, _ in drawn] + [clock, notes, *cursors])


def write_gif(movie: Movie, target: Path, fps: int) -> None:
    """The frames, drawn over the saved static background, as a looping GIF."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    fig = movie.fig
    for artist in movie.moving:
        artist.set_animated(True)  # left out of the full draw: drawn per frame below
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    background = canvas.copy_from_bbox(fig.bbox)
    texts = _TextPatches(canvas)
    images, palette = [], None
    for frame in movie.frames:
        canvas.restore_region(background)
        texts.new_frame()
        for artist in movie.draw(frame):
            if not texts.draw(artist):
                fig.draw_artist(artist)
        image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0,
                                 1).convert("RGB")
        if palette is None:
            palette = _palette(image)
        # One palette for every frame: the colour bar holds every speed's colour; mapping is 40x faster
        # than quantising each frame afresh.
        images.append(image.quantize(palette=palette, dither=Image.Dither.NONE))
    images[0].save(target, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
    for artist in movie.moving:
        artist.set_animated(False)


class _TextPatches:
    """A moving text drawn once per string: its pixels (over the static background) are kept and pasted whenever
    the same string comes back (the notes stay the same for many frames; rendering their glyphs was half of a
    frame's time). A pasted text has the pixels drawing it gives: only texts clear of every panel (where the other
    moving artists are drawn, clipped) are kept, and a text is neither kept nor pasted where it would overlap a
    text already drawn in the frame (texts are taken in the frame's order)."""

    def __init__(self, canvas: Any) -> None:
        self.canvas = canvas
        self.kept: dict[tuple[int, str], tuple[Any, Any]] = {}  # (id, string) -> (box, pixels)
        self.panels: Any = None
        self.frame_boxes: list[Any] = []
        self.pasted = 0

    def new_frame(self) -> None:
        self.frame_boxes = []

    def _clear_of_texts(self, box: Any) -> bool:
        """Whether ``box`` overlaps no text drawn in this frame so far."""
        return not any(box.overlaps(other) for other in self.frame_boxes)

    def draw(self, artist: Any) -> bool:
        """Whether the artist was drawn or pasted here (else the caller draws it)."""
        from matplotlib.text import Text
        from matplotlib.transforms import Bbox

        if not isinstance(artist, Text) or not artist.get_text():
            return False
        key = (id(artist), artist.get_text())
        if key in self.kept:
            box, pixels = self.kept[key]
            if self._clear_of_texts(box):
                self.canvas.restore_region(pixels)
                self.frame_boxes.append(box)
                self.pasted += 1
                return True
        renderer, fig = self.canvas.get_renderer(), self.canvas.figure
        if self.panels is None:
            self.panels = Bbox.union([ax.get_window_extent(renderer) for ax in fig.axes])
        fig.draw_artist(artist)
        box = artist.get_window_extent(renderer).padded(1.0)  # anti-aliasing reaches a pixel out
        if key not in self.kept and not box.overlaps(self.panels) and self._clear_of_texts(box):
            self.kept[key] = (box, self.canvas.copy_from_bbox(box))
        self.frame_boxes.append(box)
        return True


def _palette(first):
    """256 colours from the first frame (colour bar included) and the marks' red."""
    from matplotlib.colors import to_rgb
    from PIL import Image

    # The red of the marks, blended into white as anti-aliased red text is.
    blend = np.linspace(0, 1, first.width)[:, None]
    strip = np.rint(255 * ((1 - blend) * np.array(to_rgb(MARK)) + blend)).astype(np.uint8)
    source = np.concatenate([np.asarray(first), np.broadcast_to(strip, (8, *strip.shape))])
    return Image.fromarray(source).quantize(256, method=Image.Quantize.FASTOCTREE)


def animation(movie: Movie, interval: int = 40):
    """A matplotlib FuncAnimation of the movie (for a window, .mp4 and .html)."""
    from matplotlib.animation import FuncAnimation

    return FuncAnimation(movie.fig, movie.draw, frames=movie.frames, interval=interval, blit=False, repeat=False)
