"""Grades kept by the TA, for files already graded: never in a folder the student can write.

The cache lives in the course's ``.granular_grader/cache/`` (mode 0700, owned
by the grading user): a file a student ships, wherever it is and whatever its
name, is never read as a grade. An entry is keyed by
:func:`grader.commands.courses.settings.cache_key` (the file's bytes, the grader's
version, the rubric and the limits), so a changed file, grader, rubric or
limit is graded again. Only the student's view is kept (no hidden details).
"""

from __future__ import annotations

from pathlib import Path

from grader.errors import CacheError
from grader.grading.results import ResultsError
from grader.reports.student_view import StudentView
from grader.spec.paths import private_folder

__all__ = ["CACHE_DIR", "CacheError", "ResultCache"]

CACHE_DIR = Path(".granular_grader") / "cache"


class ResultCache:
    """Student views by cache key, in a TA-only folder."""

    def __init__(self, folder: Path):
        self.folder = private_folder(folder, "grade cache")

    def get(self, key: str) -> StudentView | None:
        try:
            return StudentView.from_json((self.folder / f"{key}.json").read_text())
        except (OSError, ValueError, ResultsError):
            return None  # unreadable (another grader version's, say): graded again

    def put(self, key: str, view: StudentView) -> None:
        target = self.folder / f"{key}.json"
        temporary = target.with_suffix(".tmp")
        temporary.write_text(view.to_json())
        temporary.replace(target)  # never a half-written entry
