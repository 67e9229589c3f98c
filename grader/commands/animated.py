"""The feedback animation of a graded file, attached to its results: what ``check`` and the batch's workers share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.errors import GraderError
from grader.grading.causes import MISSING, NOT_WRITTEN
from grader.grading.report import GradeReport
from grader.grading.results import AnimationNote, Results
from grader.sandbox.client import Sandbox
from grader.spec.limits import Limits


@dataclass(frozen=True)
class Animated:
    """The results (noting what the animation shows, if there is one), its GIF, or why there is none."""

    results: Results
    gif: bytes | None
    #: Why there is no animation, as the terminal and the page say it (None when there is one).
    absent: str | None = None


def with_feedback_animation(path: Path, graded: GradeReport, results: Results, limits: Limits,
                            hide: tuple[Path, ...], box: Sandbox | None) -> Animated:
    """The animation of the first feedback scenario where the file's gas goes wrong, with its results.

    box: the grading's searches' box (runner.search_box), lent to the animation once the grading is over.
    """
    if graded.import_error:
        return Animated(results, None, "the file does not import")
    if graded.all_passed:
        return Animated(results, None, "every test passed")
    stopped = _no_gas(graded)
    if stopped:
        return Animated(results, None, stopped)
    from grader.animation import render

    try:
        with np.errstate(all="ignore"):  # a gas that blew up to inf or nan is drawn, not warned about
            made = render.feedback_animation(path, limits, hide=hide, box=box)
    except GraderError:
        raise  # the sandbox's faults stay the grader's, said as such
    except Exception as exc:  # noqa: BLE001 - a drawing bug must not take the grade with it: the animation is extra
        return Animated(results, None, f"the animation could not be drawn ({type(exc).__name__}), a fault of the "
                        "grader's and not of your file; your grade stands")
    if made is None:
        scenarios = ", ".join(render.FEEDBACK_SCENARIOS)
        return Animated(results, None, f"your update ran each feedback scenario ({scenarios}) as the reference's "
                        "does: the failures are in cases those scenarios do not reach")
    gif, summary = made
    return Animated(results.with_animation(AnimationNote.from_json(summary)), gif)


def _no_gas(graded: GradeReport) -> str:
    """Why the file has no gas to animate ("" if it may): every test of update failed because update, or a
    function it calls, is missing or not written yet (the animation would show grains that never move)."""
    causes = [t.cause for t in graded.results if t.prop.item == "update"]
    first = causes[0] if causes else None
    if first is None or any(c is None or c.kind not in (MISSING, NOT_WRITTEN) for c in causes):
        return ""
    if first.function == "update":
        return "the file defines no update to animate" if first.kind == MISSING else "your update is not written yet"
    said = "which the file does not define" if first.kind == MISSING else "which is not written yet"
    return f"your update calls {first.function}, {said}: no gas of yours to animate"
