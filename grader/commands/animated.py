"""The feedback animation of a graded file, attached to its results: what ``check`` and the batch's workers share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.errors import GraderError
from grader.grading.causes import MISSING
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
    if any(t.cause is not None and t.cause.kind == MISSING and t.cause.function == "update" for t in graded.results):
        return Animated(results, None, "the file defines no update to animate")
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
