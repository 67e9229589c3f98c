"""Where the grader's own files are, declared once (modules sit at different depths)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from grader.errors import CacheError

#: The ``grader`` package folder.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The folder holding ``grader/`` and ``reference/``: a checkout, a kit or a Gradescope bundle.
PACKAGE_ROOT = PACKAGE_DIR.parent


#: Where the drawn cases of the tests are kept (grader.grading.cases), if set.
CASE_CACHE_ENV = "GRANULAR_CACHE_DIR"


def case_cache_folder() -> Path | None:
    """GRANULAR_CACHE_DIR, else $XDG_CACHE_HOME/granular-grader, else ~/.cache/granular-grader; None for a user
    with no home (no HOME, no entry in the password file). It holds the hidden tests' inputs, so it is one of the
    sandbox's secrets too."""
    if os.environ.get(CASE_CACHE_ENV):
        return Path(os.environ[CASE_CACHE_ENV])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "granular-grader"
    try:
        return Path.home() / ".cache" / "granular-grader"
    except (RuntimeError, KeyError):
        return None


def source_digest(root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 over every file of ``root``'s grader and reference packages, sub-packages and data included.

    Caches written at run time (bytecode, numba's) are left out. A grade made by other sources is not reused
    (the batch's records, the nbgrader cache).
    """
    digest = hashlib.sha256()
    for folder in ("grader", "reference"):
        for source in sorted((root / folder).rglob("*")):
            if source.is_file() and "__pycache__" not in source.parts and source.suffix != ".pyc":
                relative = str(source.relative_to(root)).encode()
                content = hashlib.sha256(source.read_bytes()).digest()
                digest.update(len(relative).to_bytes(4, "big") + relative + content)
    return digest.hexdigest()


def private_folder(folder: Path, what: str) -> Path:
    """``folder``, created 0700; CacheError if another user owns it or may write in it (what it holds could be
    forged). OSError if it cannot be made."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(f"{what} {folder}: it must belong to the grading user and be writable by nobody "
                         f"else (chmod 700 {folder}, or delete it)")
    return folder
