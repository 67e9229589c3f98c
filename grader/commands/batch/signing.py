"""The batch's output folder: files written without following a link, records signed with its key.

A submission must not be able to change a grade, its own or anyone's: the
sandbox never sees the output folder, and a re-run trusts a stored grade only
if its HMAC-SHA256 verifies with the folder's key (``.grader-key``, created
once with mode 0600, read only by the grader). The signature covers the
student's name, the sha256 of the graded file, the fingerprint of the grader
(its code, rubric and limits) and the bytes of results.json and feedback.html;
anything changed outside the grader fails it, and the student is regraded.

Every file is written through descriptors of the output folder: created with
O_EXCL|O_NOFOLLOW under a temporary name, then renamed over the old one (a
rename replaces a link, it never follows it), so no file outside the output
folder is ever written, whatever links were planted inside it.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError

KEY_FILE = ".grader-key"
RESULTS, PAGE, SIGNATURE = "results.json", "feedback.html", "record.sig"
_KEY_BYTES = 32
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
#: Largest stored file read back (a feedback page holds an animation).
READ_CAP = 64 * 1024**2


class OutputError(UsageError):
    """The output folder cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Record:
    """One student's stored grade: what was graded, under which grader, and the files shown."""

    student: str
    sha256: str  # of the graded file
    fingerprint: str  # of the grader, rubric and limits
    results: bytes  # results.json
    page: bytes  # feedback.html

    def message(self) -> bytes:
        head = json.dumps(["granular-grader record 1", self.student, self.sha256, self.fingerprint])
        return b"\0".join([head.encode("utf-8", "surrogateescape"), hashlib.sha256(self.results).digest(),
                           hashlib.sha256(self.page).digest()])


def sign(key: bytes, record: Record) -> str:
    return hmac.new(key, record.message(), hashlib.sha256).hexdigest()


def verifies(key: bytes, record: Record, signature: str) -> bool:
    return hmac.compare_digest(sign(key, record), signature)


class OutputFolder:
    """The output folder, opened once; reads and writes inside it never follow a link."""

    def __init__(self, path: Path):
        self.path = path
        try:
            # The TA's own path: following a link to it is the TA's choice; nothing below is followed.
            self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise OutputError(f"--out {path}: cannot open ({os.strerror(exc.errno or 0)}); give a folder you "
                              "can write") from None

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> OutputFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _folder(self, parts: tuple[str, ...], create: bool) -> int | None:
        """A descriptor of the folder ``parts`` (a link in the way is replaced when creating); None if absent."""
        fd = os.dup(self.fd)
        for part in parts:
            try:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                child = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                if not create or exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    os.close(fd)
                    if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                        return None
                    raise
                os.unlink(part, dir_fd=fd)  # not ours: a link or a file where a folder belongs
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = child
        return fd

    def write(self, parts: tuple[str, ...], data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` to OUT/<parts>, atomically: readers see the old file or the new one."""
        fd = self._folder(parts[:-1], create=True)
        assert fd is not None
        partial = f".{parts[-1]}.{secrets.token_hex(6)}.partial"
        try:
            out = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                          dir_fd=fd)
            with os.fdopen(out, "wb") as f:
                f.write(data)
            os.replace(partial, parts[-1], src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            try:
                os.unlink(partial, dir_fd=fd)
            except FileNotFoundError:
                pass
            os.close(fd)

    def read(self, parts: tuple[str, ...], cap: int = READ_CAP) -> bytes | None:
        """The bytes of the regular file OUT/<parts>; None when absent, a link, not a file or too large."""
        fd = self._folder(parts[:-1], create=False)
        if fd is None:
            return None
        try:
            file = os.open(parts[-1], _READ, dir_fd=fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        with os.fdopen(file, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
                return None
            return f.read(cap + 1)[:cap]

    def remove(self, parts: tuple[str, ...]) -> None:
        fd = self._folder(parts[:-1], create=False)
        if fd is None:
            return
        try:
            os.unlink(parts[-1], dir_fd=fd)
        except (FileNotFoundError, IsADirectoryError):
            pass
        finally:
            os.close(fd)

    def names(self, parts: tuple[str, ...]) -> list[str]:
        """The entries of the folder OUT/<parts> (none if it is absent or a link)."""
        fd = self._folder(parts, create=False)
        if fd is None:
            return []
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def key(self) -> tuple[bytes, bool]:
        """The folder's signing key, and whether it was just made (no earlier record can verify then).

        A key that is not a private regular file of ours (a link, readable by
        others, owned by someone else) cannot be trusted: it is replaced.
        """
        try:
            fd = os.open(KEY_FILE, _READ, dir_fd=self.fd)
        except FileNotFoundError:
            return self._new_key(), True
        except OSError:
            return self._new_key(), True  # a link or worse: replaced
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            key = f.read(_KEY_BYTES + 1)
        if (stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077
                and len(key) == _KEY_BYTES):
            return key, False
        return self._new_key(), True

    def _new_key(self) -> bytes:
        key = secrets.token_bytes(_KEY_BYTES)
        self.write((KEY_FILE,), key, mode=0o600)
        return key


def store(out: OutputFolder, key: bytes, folder: tuple[str, ...], record: Record) -> None:
    """Write a student's results.json and feedback.html, then their signature (last: a crash leaves none)."""
    out.remove((*folder, SIGNATURE))
    out.write((*folder, RESULTS), record.results)
    out.write((*folder, PAGE), record.page)
    signature = json.dumps({"student": record.student, "sha256": record.sha256, "fingerprint": record.fingerprint,
                            "hmac": sign(key, record)}, ensure_ascii=True)
    out.write((*folder, SIGNATURE), signature.encode() + b"\n")


def drop(out: OutputFolder, folder: tuple[str, ...]) -> None:
    """Remove a student's record (signature first): a record of a file no longer graded must not outlive it."""
    for name in (SIGNATURE, RESULTS, PAGE):
        out.remove((*folder, name))


@dataclass(frozen=True)
class Lookup:
    """What the output folder holds for a student."""

    record: Record | None  # a record that verifies (maybe of another file or grader)
    forged: bool  # files are there, but no valid signature covers them


def load(out: OutputFolder, key: bytes, folder: tuple[str, ...], student: str) -> Lookup:
    """The student's stored record if its signature verifies."""
    results, page = out.read((*folder, RESULTS)), out.read((*folder, PAGE))
    raw = out.read((*folder, SIGNATURE), cap=4096)
    if results is None and page is None and raw is None:
        return Lookup(None, False)
    try:
        claim = json.loads(raw or b"")
        record = Record(student, str(claim["sha256"]), str(claim["fingerprint"]), results or b"", page or b"")
        if claim["student"] == student and results is not None and page is not None and \
                verifies(key, record, str(claim["hmac"])):
            return Lookup(record, False)
    except (ValueError, KeyError, TypeError):
        pass
    return Lookup(None, True)
