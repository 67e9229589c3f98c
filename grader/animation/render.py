"""The student's gas next to the reference's, as an animation (.gif, .mp4, .html).

Both start from the same initial state and are drawn at the same frame
times. Grains are coloured by speed; below, kinetic energy and total
momentum over time for both runs. Marked in red: the first frame where the
student's grains leave the reference's beyond tolerance, overlapping grains,
grains outside the box, and a run that broke (with the reason). Without
the reference code (the student kit) the reference's side is its stored run
(grader.animation.reference_runs) when the scenario is a standard one, else
the student's gas is shown alone and the heading says so.

    python -m grader animate granularGas.py --out gas.gif [--scenario gas] [--grains 80]
"""

from __future__ import annotations

import html
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.animation import figure, reference_runs
from grader.animation.figure import Movie, build
from grader.animation.trajectories import (
    ABSENT,
    COMPUTED,
    STORED,
    Runs,
    Trajectory,
    compare,
    record,
    reference_step,
    sandbox_step,
)
from grader.errors import UsageError
from grader.properties import oracle
from grader.sandbox.client import Sandbox
from grader.spec import scenarios
from grader.spec.limits import FEEDBACK_ANIMATION_SECONDS, Limits
from grader.spec.scenarios import Scenario

FORMATS = (".gif", ".mp4", ".html")
#: Scenarios a feedback page may show, in the order they are tried.
FEEDBACK_SCENARIOS = ("single", "head_on", "unequal", "c12", "dem", "gas")
#: Calls of update in an animation may be long (many grains, long dt).
ANIMATION_LIMITS = Limits(call_seconds=20.0, function_seconds=3600.0)
#: The animate command's gas: the one whose reference run the kit ships.
DEFAULT_GRAINS = reference_runs.GAS_GRAINS


class AnimationError(UsageError):
    """The animation cannot be made as asked; the message says what to fix."""


def scenario(name: str, grains: int = DEFAULT_GRAINS, seed: int = 0, duration: float | None = None,
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
def _student(path: str | Path, limits: Limits, hide: tuple[Path, ...], box: Sandbox | None = None) -> Iterator[Sandbox]:
    """The submission in a sandbox (``box``, if given: its owner closes it), if it imports and defines update."""
    with Sandbox(path, limits, hide) if box is None else nullcontext(box) as sandbox:
        sandbox.start()  # started already, unless lent
        if sandbox.import_error:
            raise AnimationError(f"{path}: {sandbox.import_error}")
        if "update" not in sandbox.functions:
            raise AnimationError(f"{path} defines no function update(); write it to see your gas move")
        yield sandbox


def reference_run(chosen: Scenario) -> tuple[Trajectory | None, str]:
    """The reference's run of the scenario: computed here, else stored in the kit's data, else none."""
    if oracle.available():
        return record(reference_step(chosen), chosen), COMPUTED
    kept = reference_runs.stored(chosen)
    return kept, (STORED if kept is not None else ABSENT)


def _run(sandbox: Sandbox, chosen: Scenario) -> Runs:
    """The student's update in the sandbox, the reference's here (or from the stored data)."""
    student = record(sandbox_step(sandbox, chosen), chosen)
    reference, source = reference_run(chosen)
    return Runs(chosen, student, reference, compare(student, reference, chosen), source)


def simulate(path: str | Path, chosen: Scenario, limits: Limits = ANIMATION_LIMITS,
             hide: tuple[Path, ...] = ()) -> Runs:
    """Run the student's update in the sandbox and the reference's here."""
    with _student(path, limits, hide) as sandbox:
        return _run(sandbox, chosen)


def first_failing(path: str | Path, limits: Limits = ANIMATION_LIMITS, hide: tuple[Path, ...] = (),
                  duration: float = 2.0, box: Sandbox | None = None) -> Runs | None:
    """The first feedback scenario where the student's gas goes wrong (None: none does).

    One sandbox serves every scenario: each run starts from its own state. box: the sandbox to run in (its owner
    closes it); by default one of its own.
    """
    try:
        with _student(path, limits, hide, box) as sandbox:
            for name in FEEDBACK_SCENARIOS:
                chosen = scenario(name, grains=DEFAULT_GRAINS)
                chosen = chosen.with_(duration=min(chosen.duration, duration))  # a short animation
                runs = _run(sandbox, chosen)
                if runs.differences.any or runs.student.error:
                    return runs
    except AnimationError:
        return None  # nothing to animate (no update, or no import)
    return None


def save(movie: Movie, target: str | Path, fps: int = 25) -> Path:
    """Write the animation; the format follows the extension."""
    target = Path(target)
    extension = target.suffix.lower()
    if extension not in FORMATS:
        raise AnimationError(f"cannot write {target}: use a file name ending in .gif, .mp4 or .html")
    target.parent.mkdir(parents=True, exist_ok=True)
    if extension == ".gif":
        figure.write_gif(movie, target, fps)
        return target
    if extension == ".mp4":
        needs_ffmpeg()  # before the animation is made: matplotlib warns about one deleted unsaved
    anim = figure.animation(movie)
    if extension == ".mp4":
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
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n</head>\n"
            f"<body>\n{player}\n</body>\n</html>\n")


def gif_bytes(runs: Runs, max_frames: int = 50, dpi: int = figure.DPI) -> bytes:
    """A short GIF of the runs, for embedding in a page."""
    with tempfile.TemporaryDirectory() as tmp:
        path = save(build(runs, max_frames=max_frames, dpi=dpi), Path(tmp) / "a.gif", fps=15)
        return path.read_bytes()


def feedback_animation(path: str | Path, limits: Limits, hide: tuple[Path, ...] = (),
                       box: Sandbox | None = None) -> tuple[bytes, dict[str, Any]] | None:
    """The feedback page's GIF of the first scenario where the gas goes wrong, and what it shows (Runs.summary);
    None if none does.

    The grading's call limit, not the animate command's longer one: a function that hung in the tests must not
    hang here for long; and FEEDBACK_ANIMATION_SECONDS of CPU in all, imports included. box: the grading's
    searches' box (runner.search_box), once the grading is over, to go on in under those budgets (its owner
    closes it): one box less to start; what the file learnt there can change its animation, nothing graded.
    """
    budget = replace(limits, function_seconds=min(limits.function_seconds, FEEDBACK_ANIMATION_SECONDS),
                     grading_seconds=FEEDBACK_ANIMATION_SECONDS)
    if box is not None and box.import_failure is not None:
        box = None  # its import failed on a restart, under the grading's budgets: a box of its own may import
    if box is not None:
        box.new_budgets(budget)
    runs = first_failing(path, budget, hide=hide, box=box)
    if runs is None:
        return None
    return gif_bytes(runs), runs.summary()


def needs_ffmpeg() -> None:
    """AnimationError unless matplotlib finds ffmpeg, which writing .mp4 needs."""
    from matplotlib.animation import FFMpegWriter

    if not FFMpegWriter.isAvailable():
        raise AnimationError("writing .mp4 needs ffmpeg, which is not installed (e.g. apt install ffmpeg); "
                             "write a .gif or .html instead")


def animate_main(path: str, out: str, scenario_name: str = "gas", grains: int = DEFAULT_GRAINS,
                 duration: float | None = None, seed: int = 0, r: float | None = None,
                 call_seconds: float = ANIMATION_LIMITS.call_seconds) -> str:
    """Render and save; a sentence saying what was written and what it shows."""
    if Path(out).suffix.lower() not in FORMATS:
        raise AnimationError(f"--out {out}: use a file name ending in .gif, .mp4 or .html")
    if Path(out).suffix.lower() == ".mp4":
        needs_ffmpeg()  # said before the simulation, not after it
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
    return outcome(runs, out)


def outcome(runs: Runs, out: str | Path | None) -> str:
    """What the terminal says about an animation (out: the file written; None: shown in a window)."""
    s = runs.summary()
    said = [f"{f'wrote {out}' if out is not None else 'showing'}: {runs.scenario.name}, "
            f"{len(runs.student.times)} frames"]
    if runs.reference is None:
        said.append(f"your gas alone: the kit stores the reference's run of the standard scenarios only "
                    f"(default settings, gas of {DEFAULT_GRAINS} grains and seed 0)")
    elif s["first_divergence_t"] is not None:
        said.append(f"your gas leaves the reference's at t = {s['first_divergence_t']:.3g}")
    else:
        said.append("your gas follows the reference's " + ("as long as it runs" if runs.student.error
                                                           else "all along"))
    if runs.reference_source == STORED and runs.reference is not None:
        said.append("(the reference's side: the run stored in the kit)")
    if s["first_overlap_t"] is not None:
        said.append(f"grains overlap from t = {s['first_overlap_t']:.3g}")
    if s["first_outside_t"] is not None:
        said.append(f"a grain leaves the box at t = {s['first_outside_t']:.3g}")
    if runs.stopped():
        said.append(runs.stopped())
    return "; ".join(said)
