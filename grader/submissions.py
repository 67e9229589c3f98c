"""Find the submissions of a batch and take a snapshot of them.

Three layouts are understood:

* ``SUBMISSIONS/<student>/granularGas.py`` (one folder per student);
* ``SUBMISSIONS/<student>.py`` (one file per student);
* nbgrader's ``submitted/<student>/<assignment>/granularGas.py`` (with the
  assignment's name; SUBMISSIONS is the course folder or its ``submitted``).

Every file is read once, before anything is graded: what a submission writes
next to the others while it runs cannot change their grades.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "granularGas.py"
#: Largest submission read, so a huge file cannot fill the grader's memory.
MAX_BYTES = 2 * 1024**2


class DiscoveryError(ValueError):
    """The submissions folder cannot be used as given; the message says why."""


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path  # where it was found (for messages)
    source: bytes | None  # None: the student handed in nothing usable
    problem: str = ""  # why source is None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source or b"").hexdigest()


def _read(student: str, path: Path) -> Submission:
    if not path.is_file():
        return Submission(student, path, None, f"no {FILE_NAME} in {path.parent}")
    size = path.stat().st_size
    if size > MAX_BYTES:
        return Submission(student, path, None, f"{path} has {size} bytes; a submission may have at most {MAX_BYTES}")
    return Submission(student, path, path.read_bytes())


def _visible(entries: list[Path]) -> list[Path]:
    return sorted(p for p in entries if not p.name.startswith((".", "_")))


def discover(folder: Path, assignment: str | None = None, exclude: tuple[Path, ...] = ()) -> list[Submission]:
    """The submissions in ``folder``, sorted by student; raises DiscoveryError."""
    if not folder.exists():
        raise DiscoveryError(f"{folder}: no such folder; give the folder that holds the submissions")
    if not folder.is_dir():
        raise DiscoveryError(f"{folder} is a file; give the folder that holds the submissions")
    skip = {p.resolve() for p in exclude}
    if assignment is not None:
        submitted = folder / "submitted" if (folder / "submitted").is_dir() else folder
        found = [_read(d.name, d / assignment / FILE_NAME) for d in _visible(list(submitted.iterdir()))
                 if d.is_dir() and d.resolve() not in skip]
        if not found:
            raise DiscoveryError(f"no student folders in {submitted}; nbgrader keeps submissions in "
                                 f"submitted/<student>/{assignment}/{FILE_NAME}")
        return found
    if (folder / "submitted").is_dir() and not (folder / "submitted" / FILE_NAME).exists():
        raise DiscoveryError(f"{folder} looks like an nbgrader course (it has submitted/); "
                             "add --assignment NAME to grade submitted/<student>/NAME/granularGas.py")
    by_student: dict[str, Submission] = {}
    for entry in _visible(list(folder.iterdir())):
        if entry.resolve() in skip:
            continue
        if entry.is_dir():
            found = _read(entry.name, entry / FILE_NAME)
        elif entry.suffix == ".py":
            found = _read(entry.stem, entry)
        else:
            continue
        if found.student in by_student:
            raise DiscoveryError(f"two submissions for {found.student}: {by_student[found.student].path} and "
                                 f"{found.path}; keep one of them")
        by_student[found.student] = found
    if not by_student:
        raise DiscoveryError(f"no submissions in {folder}: expected <student>/{FILE_NAME} folders or "
                             "<student>.py files")
    return sorted(by_student.values(), key=lambda s: s.student)
