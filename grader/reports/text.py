"""A grade as text for the terminal (results.json: grader.reports.gradescope_json)."""

from __future__ import annotations

from grader.grading.report import GradeReport
from grader.reports import terminal


def as_text(report: GradeReport) -> str:
    """The report printed by ``check`` (grader.reports.terminal)."""
    return terminal.as_text(report)

