"""What the batch knows of one student after grading: status, results, why it was regraded."""

from __future__ import annotations

from dataclasses import dataclass

from grader import spec
from grader.commands.batch.submissions import safe_name
from grader.grading.results import Results
from grader.grading.runner import GradeOptions
from grader.reports.feedback import points


def _number(x: float) -> float | int:
    """Points in the grades table and CSV: exactly the number every report shows (feedback.points, the one
    rounding), as a number a spreadsheet can add up."""
    value = float(points(x))
    return int(value) if value.is_integer() else value


@dataclass
class Outcome:
    """What the batch knows of one student."""

    student: str
    status: str
    results: Results | None = None  # None: no grade
    reused: bool = False
    #: Why the student was regraded, when the TA should know ("record changed outside the grader: ...").
    note: str = ""
    #: The options grade_file received for this grade (fresh grades only).
    options: GradeOptions | None = None

    @property
    def folder(self) -> str:
        return safe_name(self.student)

    @property
    def grader_error(self) -> bool:
        return self.status.startswith("grader error")

    @property
    def row(self) -> dict:
        row: dict = {"student": self.student, "status": self.status}
        if self.results is not None:
            items = self.results.by_item()
            row |= {"score": _number(self.results.score), "max_score": _number(self.results.max_score),
                    **{name: _number(items[name][0]) for name in spec.ITEM_NAMES}}
            if self.results.efficiency is not None and self.results.efficiency.bonus_max:
                row["bonus"] = _number(self.results.bonus)  # beside the score, never in it
        return row
