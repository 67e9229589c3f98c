"""Grades kept by the TA, for files already graded: never in a folder the student can write.

The cache lives in the course's ``.granular_grader/cache/`` (mode 0700, owned
by the grading user): a file a student ships, wherever it is and whatever its
name, is never read as a grade. An entry is keyed by
:func:`grader.commands.courses.settings.cache_key` (the file's bytes, the grader's
version, the rubric and the limits), so a changed file, grader, rubric or
limit is graded again. Only the student's view is kept (no hidden details).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from grader.errors import GraderError
from grader.grading.results import ResultsError
from grader.reports.student_view import StudentView

CACHE_DIR = Path(".granular_grader") / "cache"


class CacheError(GraderError):
    """The cache folder is not the TA's alone; the message says what to fix."""


def _private_folder(folder: Path) -> Path:
    """``folder``, created 0700; refused if another user owns it or may write in it."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(f"grade cache {folder}: it must belong to the grading user and be writable by nobody "
                         f"else (chmod 700 {folder}, or delete it)")
    return folder


class ResultCache:
    """Student views by cache key, in a TA-only folder."""

    def __init__(self, folder: Path):
        self.folder = _private_folder(folder)

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
