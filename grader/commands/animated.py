"""The feedback animation of a graded file, attached to its results: what ``check`` and the batch's workers share."""

from __future__ import annotations

from pathlib import Path

from grader.grading.report import GradeReport
from grader.grading.results import AnimationNote, Results
from grader.sandbox.client import Sandbox
from grader.spec.limits import Limits


def with_feedback_animation(path: Path, graded: GradeReport, results: Results, limits: Limits,
                            hide: tuple[Path, ...], box: Sandbox | None) -> tuple[Results, bytes | None]:
    """The results noting what the animation of the first failing scenario shows, and its GIF; the results as they
    were and None when the file passed every test, did not import, or ran every feedback scenario as the reference.

    box: the grading's searches' box (runner.search_box), lent to the animation once the grading is over.
    """
    if graded.all_passed or graded.import_error:
        return results, None
    from grader.animation import render

    made = render.feedback_animation(path, limits, hide=hide, box=box)
    if made is None:
        return results, None
    gif, summary = made
    return results.with_animation(AnimationNote.from_json(summary)), gif
