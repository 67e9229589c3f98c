"""What the course notebook's cells call when a student runs it on their own machine: the student kit ships this
module (the nbgrader commands stay with the instructors).

:func:`report` prints the points table (the setup cell), :func:`score` one rubric item's points (each test cell),
from the student's own granularGas.py graded once per content, with the public tests only where the reference is
absent (the kit). Nothing is written and no file is trusted: the grade is this machine's, for the student's eyes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from grader import spec
from grader.grading.results import Results
from grader.reports.student_view import StudentView, item_text, student_view, summary_text

_graded: dict[str, StudentView] = {}


def _view(path: Path) -> StudentView | None:
    """The student's own file graded once per content (in memory: no file is trusted or written)."""
    from grader.grading import runner

    if not path.is_file():
        return None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest not in _graded:
        _graded[digest] = student_view(Results.from_report(runner.grade_file(path)), path.name)
    return _graded[digest]


def score(item: str, points: float, path: str = spec.FILE_NAME) -> float:
    """``points`` times the fraction of the item's tests that ``path`` passes (0 if it cannot be graded)."""
    if item not in spec.ITEM_NAMES:
        print(f"score: unknown item {item!r}; the items are {', '.join(spec.ITEM_NAMES)}")
        return 0.0
    view = _view(Path(path))
    if view is None:
        print(f"{path} could not be graded: is it next to this notebook?")
        return 0.0
    print(item_text(view.item(item)), end="")
    return round(points * view.item(item).fraction, 6)


def report(path: str = spec.FILE_NAME) -> None:
    """Print the points table (the setup cell's output)."""
    view = _view(Path(path))
    print(f"{path} could not be graded: is it next to this notebook?" if view is None else summary_text(view),
          end="" if view else "\n")
