"""Find the submissions of a batch and take a snapshot of them, never following a link.

Three layouts are understood:

* ``SUBMISSIONS/<student>/granularGas.py`` (one folder per student);
* ``SUBMISSIONS/<student>.py`` (one file per student);
* nbgrader's ``submitted/<student>/<assignment>/granularGas.py`` (with the
  assignment's name; SUBMISSIONS is the course folder or its ``submitted``).

Everything inside a student's part is the student's: a link there could
point at /etc/shadow, at a neighbour's file or at a solution, so no link is
followed (every step is opened with O_NOFOLLOW relative to its folder, and
checked with fstat on what was opened, so nothing can be swapped between the
check and the read). Every file is read once, at most ``MAX_BYTES``, before
anything is graded. A file that cannot be used costs its own student only
("missing: ..."); an entry that is not a submission is listed with the reason
it was skipped, never dropped silently.

Student names are the submissions' own text: :func:`safe_name` turns one into
a folder name and :func:`shown` into text safe for a terminal.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.spec import ARCHIVE_SUFFIXES, FILE_NAME
from grader.spec.limits import SOURCE_BYTES
from grader.spec.text import shown

#: Largest submission read, so a huge file cannot fill the grader's memory.
MAX_BYTES = SOURCE_BYTES
#: Entries of a student's folder looked at for a misnamed file (a folder of a million files costs no more).
MAX_ENTRIES_LOOKED_AT = 1000
#: Sub-folders of a student's folder looked into for a granularGas.py handed in one folder too deep.
FOLDERS_LOOKED_INTO = 8
#: Longest file name quoted in a status.
MAX_NAME_SHOWN = 60

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


class DiscoveryError(UsageError):
    """The submissions folder cannot be used as given; the message says why."""


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path  # where it was found (for messages)
    source: bytes | None  # None: the student handed in nothing usable
    problem: str = ""  # why source is None
    #: The status's first word when source is None: "missing", or "too large" (a file there, but past the limit).
    problem_word: str = "missing"
    #: What the TA should know of a file graded under another name ("graded hw3.py: --accept-single-py").
    note: str = ""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source or b"").hexdigest()


@dataclass(frozen=True)
class Skipped:
    """An entry of the submissions folder that is not a submission, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Discovery:
    submissions: tuple[Submission, ...]
    skipped: tuple[Skipped, ...]


class _Unusable(Exception):
    """One student's file cannot be used; the message is the student's status, after ``word``."""

    def __init__(self, message: str, word: str = "missing") -> None:
        super().__init__(message)
        self.word = word


def _problem(error: OSError, name: str) -> str:
    if error.errno == errno.ELOOP:
        return f"{name} is a link, which the batch does not follow: hand in the file itself"
    if error.errno == errno.ENOENT:
        return f"no {name}"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"cannot read {name}: permission denied"
    if error.errno == errno.ENOTDIR:
        return f"{name} is not a folder"
    return f"cannot read {name}: {os.strerror(error.errno or 0).lower()}"


def _open_dir(name: str, dir_fd: int, missing: str) -> int:
    """Open the folder ``name`` in ``dir_fd``, never through a link; _Unusable says why not."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise _Unusable(f"no {missing}") from None
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        if is_link or exc.errno == errno.ELOOP:
            raise _Unusable(f"{FILE_NAME} is in a folder that is a link") from None
        raise _Unusable(_problem(exc, name)) from None


def _read_at(dir_fd: int, name: str) -> bytes:
    """The bytes of the regular file ``name`` in ``dir_fd``; _Unusable if it is anything else."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _Unusable(_problem(exc, name)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise _Unusable(f"{name} is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise _Unusable(f"{name} is not a regular file")
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_BYTES:
            raise _Unusable(f"{name} has more than {MAX_BYTES} bytes, the most a submission may have", "too large")
        return b"".join(chunks)
    except OSError as exc:
        raise _Unusable(_problem(exc, name)) from None
    finally:
        os.close(fd)


def _read_path(top_fd: int, parts: list[str], student: str, where: Path, accept: bool = False) -> Submission:
    """Walk ``parts`` (folders, then the file) from ``top_fd`` without following a link.

    When the file is absent, the folder it belongs in is looked at for a file handed in under
    another name: named in the problem, or read instead of it if ``accept`` and it is the only .py.
    """
    fds: list[int] = []
    try:
        fd = top_fd
        for part in parts[:-1]:
            fd = _open_dir(part, fd, "/".join(parts[1:]))
            fds.append(fd)
        if len(parts) > 1 and not _exists(fd, parts[-1]):
            name = _instead(fd, parts[-1], accept)
            return Submission(student, where.with_name(name), _read_at(fd, name),
                              note=f"graded {_text(name)} as {parts[-1]}, by --accept-single-py")
        return Submission(student, where, _read_at(fd, parts[-1]))
    except _Unusable as exc:
        return Submission(student, where, None, str(exc), problem_word=exc.word)
    finally:
        for fd in fds:
            os.close(fd)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # there, but not usable: _read_at names the reason
    return True


def _text(name: str) -> str:
    """A file name for a status: escaped (it is the student's text) and short."""
    shown_name = shown(_student_name(name))
    return shown_name if len(shown_name) <= MAX_NAME_SHOWN else shown_name[:MAX_NAME_SHOWN - 3] + "..."


def _kind(entry: os.DirEntry) -> str:
    """What an entry is, when it is not a plain file the batch can read ("" when it is)."""
    if entry.is_symlink():
        return "a link, which the batch does not follow"
    if entry.is_dir(follow_symlinks=False):
        return "a folder"
    return "" if entry.is_file(follow_symlinks=False) else "not a regular file"


def _instead(dir_fd: int, wanted: str, accept: bool) -> str:
    """The only .py of the folder, when ``accept``; else _Unusable naming what was handed in and how to fix it."""
    with os.scandir(dir_fd) as scan_:
        entries = [e for _, e in zip(range(MAX_ENTRIES_LOOKED_AT), scan_, strict=False)
                   if e.name.lower().endswith((".py", *ARCHIVE_SUFFIXES))
                   or e.name.casefold().startswith(wanted.casefold()[:-3])]
    entries.sort(key=lambda e: e.name)
    python = [e for e in entries if e.name.lower().endswith(".py")]
    if accept and len(python) == 1:
        return python[0].name
    archives = [e for e in entries if e.name.lower().endswith(ARCHIVE_SUFFIXES)]
    if archives and not python:  # a review's submission.zip was reported as "no granularGas.py" only
        raise _Unusable(f"no {wanted}, but {_text(archives[0].name)}, an archive: unpack it into the student's "
                        f"folder ({wanted} at its top)")
    if not entries:
        deeper = _one_folder_down(dir_fd, wanted)
        raise _Unusable(f"no {wanted}, but {deeper}/{wanted} one folder down: move it up, into the student's "
                        "folder" if deeper else f"no {wanted}")
    if len(python) > 1:
        names = ", ".join(_text(e.name) for e in python[:3]) + (", ..." if len(python) > 3 else "")
        raise _Unusable(f"no {wanted}, but {len(python)} .py files ({names}): rename the one to grade to {wanted}"
                        + ("; --accept-single-py takes a folder's only .py file" if accept else ""))
    found = (python or entries)[0]
    name, kind = _text(found.name), _kind(found)
    if kind:
        raise _Unusable(f"no {wanted}, but {name}, {kind}: hand in the file itself, named {wanted}")
    if not python:
        raise _Unusable(f"no {wanted}, but {name}: hand in the Python file itself, named {wanted}")
    capitals = " (capitals matter)" if found.name.casefold() == wanted.casefold() else ""
    raise _Unusable(f"no {wanted}, but {name}: rename it to {wanted}{capitals}, or grade it as it is with "
                    "--accept-single-py")


def _one_folder_down(dir_fd: int, wanted: str) -> str:
    """The (shown) name of a sub-folder holding ``wanted``, if one of the first few does; never through a link."""
    with os.scandir(dir_fd) as scan_:
        folders = sorted(e.name for _, e in zip(range(MAX_ENTRIES_LOOKED_AT), scan_, strict=False)
                         if e.is_dir(follow_symlinks=False))
    for name in folders[:FOLDERS_LOOKED_INTO]:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
        except OSError:
            continue
        try:
            if _exists(fd, wanted):
                return _text(name)
        finally:
            os.close(fd)
    return ""


def _student_name(entry: str) -> str:
    """A folder name as text: bytes that are not UTF-8 become \\xNN escapes (they could not be written out)."""
    return entry.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


#: The file a batch leaves in its output folder (grader.commands.batch.pool), which marks it as one.
OUTPUT_MARKER = ".granular-grader-batch"


def _classify(top_fd: int, folder: Path, name: str, inside: list[str], files: bool,
              accept: bool = False) -> Submission | Skipped:
    """One entry of a folder of submissions: a student's (maybe unusable) submission, or skipped.

    inside: the path of the file in a student's folder; files: ``<student>.py`` files are submissions;
    accept: a folder's only .py file, and ``<student>.PY``, are graded (--accept-single-py).
    """
    where = folder / name
    if name.startswith((".", "_")):
        return Skipped(where, "name starts with '.' or '_' (hidden): not a submission")
    mode = os.stat(name, dir_fd=top_fd, follow_symlinks=False).st_mode
    if files and name.lower().endswith(".py") and (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        student = _student_name(name[:-3])
        if name.endswith(".py"):
            return _read_path(top_fd, [name], student, where)
        if not accept:
            return Submission(student, where, None, f"{_text(name)}: the name must end in .py, in lower case; rename "
                                                    f"it to {_text(name[:-3])}.py, or grade it as it is with "
                                                    "--accept-single-py")
        found = _read_path(top_fd, [name], student, where)
        return found if found.source is None else \
            dataclasses.replace(found, note=f"graded {_text(name)} as a .py file, by --accept-single-py")
    if stat.S_ISLNK(mode):
        try:
            target_is_dir = stat.S_ISDIR(os.stat(name, dir_fd=top_fd).st_mode)
        except OSError:
            target_is_dir = True  # dangling or closed: still a student's folder, unusable
        if not target_is_dir:
            return Skipped(where, "a link to something that is not a folder")
        return Submission(_student_name(name), where, None, f"{FILE_NAME} is in a folder that is a link")
    if stat.S_ISDIR(mode):
        found = _read_path(top_fd, [name, *inside], _student_name(name), where.joinpath(*inside), accept)
        if found.problem == f"no {FILE_NAME}" and _exists(top_fd, f"{name}/{OUTPUT_MARKER}"):
            # A row that says what it is, never a skip: a student's folder holding a copied marker must not vanish.
            return dataclasses.replace(found, problem=f"another batch's output folder (it holds {OUTPUT_MARKER}), "
                                                      "not a submission: move it out of the submissions folder")
        return found
    if name.lower().endswith(ARCHIVE_SUFFIXES):
        return Skipped(where, "an archive, which the batch does not unpack: unpack it into a folder named after the "
                              f"student, holding {FILE_NAME}")
    return Skipped(where, "neither a folder nor a .py file" if files else "not a folder")


def _entries(top_fd: int) -> list[str]:
    return sorted(os.listdir(top_fd))


def _open_top(folder: Path) -> int:
    if not folder.exists():
        raise DiscoveryError(f"{folder}: no such folder; give the folder that holds the submissions")
    if not folder.is_dir():
        raise DiscoveryError(f"{folder} is a file; give the folder that holds the submissions")
    try:
        # The TA's own folder: following a link to it is the TA's choice.
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise DiscoveryError(f"{folder}: cannot open ({os.strerror(exc.errno or 0)}); give a folder you can "
                             "read") from None


def _scan_folder(folder: Path, inside: list[str], exclude: set[Path], files: bool,
                 accept: bool = False) -> tuple[list[Submission], list[Skipped]]:
    top_fd = _open_top(folder)
    found: list[Submission] = []
    skipped: list[Skipped] = []
    try:
        for name in _entries(top_fd):
            if (folder / name).resolve() in exclude:
                skipped.append(Skipped(folder / name, "the batch's output folder"))
                continue
            entry = _classify(top_fd, folder, name, inside, files, accept)
            if isinstance(entry, Skipped):
                skipped.append(entry)
            else:
                found.append(entry)
    finally:
        os.close(top_fd)
    return found, skipped


def scan(folder: Path, assignment: str | None = None, exclude: tuple[Path, ...] = (),
         accept_single_py: bool = False) -> Discovery:
    """The submissions in ``folder`` (sorted by student) and what was skipped; raises DiscoveryError.

    A student's file under another name (``GranularGas.py``, ``hw3.py``, ``dora.PY``) is named in the
    student's problem with the fix; with ``accept_single_py`` a folder's only .py file is graded, and
    so is ``<student>.PY``, each with a note saying so.
    """
    skip = {p.resolve() for p in exclude}
    if assignment is not None:
        submitted = folder / "submitted" if (folder / "submitted").is_dir() else folder
        found, skipped = _scan_folder(submitted, [assignment, FILE_NAME], skip, False, accept_single_py)
        if not found:
            raise DiscoveryError(f"no student folders in {submitted}; nbgrader keeps submissions in "
                                 f"submitted/<student>/{assignment}/{FILE_NAME}")
        return Discovery(tuple(sorted(found, key=lambda s: s.student)), tuple(skipped))
    if (folder / "submitted").is_dir() and not (folder / "submitted" / FILE_NAME).exists():
        raise DiscoveryError(f"{folder} looks like an nbgrader course (it has submitted/); "
                             f"add --assignment NAME to grade submitted/<student>/NAME/{FILE_NAME}")
    found, skipped = _scan_folder(folder, [FILE_NAME], skip, True, accept_single_py)
    by_student: dict[str, Submission] = {}
    for submission in found:
        if submission.student in by_student:
            raise DiscoveryError(f"two submissions for {shown(submission.student)}: "
                                 f"{by_student[submission.student].path} and {submission.path}; keep one of them")
        by_student[submission.student] = submission
    if not by_student:
        raise DiscoveryError(f"no submissions in {folder}: expected <student>/{FILE_NAME} folders or "
                             "<student>.py files")
    return Discovery(tuple(sorted(by_student.values(), key=lambda s: s.student)), tuple(skipped))


def discover(folder: Path, assignment: str | None = None, exclude: tuple[Path, ...] = ()) -> list[Submission]:
    """The submissions of :func:`scan` only (what was skipped is dropped: prefer scan)."""
    return list(scan(folder, assignment, exclude).submissions)


# -- names ----------------------------------------------------------------------
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# An unchanged name never looks like a changed one (which ends in "-" and 10 hex digits).
_LOOKS_HASHED = re.compile(r".*-[0-9a-f]{10}")


def safe_name(student: str) -> str:
    """A folder name for ``student``: the name itself when harmless, else a slug with a hash of the name.

    Distinct names give distinct folders: a name is kept only if it is made of
    letters, digits, '.', '_' and '-', does not start with '.', and does not end
    like a slug; every other name gets ``<slug>-<10 hex of sha256(name)>``.
    """
    if _SAFE.fullmatch(student) and not _LOOKS_HASHED.fullmatch(student):
        return student
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", unicodedata.normalize("NFKD", student)).strip("._-")[:40] or "student"
    return f"{slug}-{hashlib.sha256(student.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"
