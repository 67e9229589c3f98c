"""What a box leaves on the host, and how it is removed: its uid's processes, its pid namespace, its folders.

A root grader gives each box a uid of its own (``SANDBOX_UID_BASE + pid * SLOTS + slot``); every process of
that uid is the box's and is killed with ``kill(-1)`` run as that uid. Folders live under one parent per grader
process (``<tmp>/granular-grader-<pid>-*``), removed by the last ``close()``, an atexit hook or SIGTERM; a
SIGKILLed grader leaves its parent, which :func:`cleanup_stale` removes (and kills what still runs under its
uids) on the next start.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from grader.errors import SandboxFault
from grader.sandbox import allow_list as tree

#: First uid of the submissions when the grader is root; a grader process owns SLOTS uids from base + pid * SLOTS.
SANDBOX_UID_BASE = 200_000
SLOTS = 64
PARENT_PREFIX = "granular-grader-"
_OWNER_FILE = "owner"
KILL_SECONDS = 10.0




def uid_of(slot: int, pid: int | None = None) -> int:
    return SANDBOX_UID_BASE + (os.getpid() if pid is None else pid) * SLOTS + slot


def as_uid(uid: int) -> None:
    """In a forked child: become ``uid`` for good (no groups, no way back, no new privileges)."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    tree.no_new_privs()


_PROBE_READ = r"""
import itertools, os, sys
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p):
            names = os.listdir(p)
            files = list(itertools.islice((os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs), 200))
            ok = bool(names) and any(_try(f) for f in files) if files else bool(names)
        else:
            ok = _try(p)
    except OSError:
        ok = False
    if ok:
        print(p)
"""
_PROBE_TRY = "def _try(f):\n    try:\n        open(f, 'rb').read(1)\n        return True\n    except OSError:\n" \
             "        return False\n"


def readable_as(uid: int, paths: Sequence[Path]) -> list[str]:
    """Which of ``paths`` a process of ``uid`` can read: tried for real, not guessed from mode bits."""
    paths = [p for p in paths if p.exists()]
    if not paths:
        return []
    try:
        run = subprocess.run([tree.host_python(), "-I", "-S", "-c", _PROBE_TRY + _PROBE_READ, *map(str, paths)],
                             capture_output=True, timeout=60, preexec_fn=lambda: as_uid(uid), cwd="/")
    except (OSError, subprocess.SubprocessError):
        return [str(p) for p in paths]  # could not even test: assume the worst
    if run.returncode != 0:
        return [str(p) for p in paths]
    return run.stdout.decode(errors="replace").split("\n")[:-1]


@functools.cache
def interpreter_usable(uid: int) -> bool:
    """Can an unprivileged uid run the interpreter and import numpy without namespaces?"""
    try:
        return subprocess.run([tree.host_python(), "-I", "-S", "-c", "import sys; sys.path[:0] = sys.argv[1:]; "
                               "import numpy", *tree.host_site()], capture_output=True, timeout=60, cwd="/",
                              preexec_fn=lambda: as_uid(uid)).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def proc_text(folder: str, name: str) -> str:
    """A file of /proc as text. A process names itself (its comm, in stat and status) with any bytes, not always
    UTF-8: a submission writing b"\\xff" there must not crash the grader, or every grading on the machine."""
    return Path(folder, name).read_bytes().decode("utf-8", errors="replace")


def _live_processes() -> dict[int, set[int]]:
    """pid -> its real, effective and saved uids, for every live (not zombie) process."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = proc_text(entry.path, "status")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if not fields.get("State", "").strip().startswith("Z"):
            found[int(entry.name)] = {int(u) for u in fields.get("Uid", "").split()[:3]}
    return found


def processes(uid: int) -> list[int]:
    """Live (not zombie) processes with ``uid`` as real, effective or saved uid."""
    return [pid for pid, uids in _live_processes().items() if uid in uids]


def running_uids() -> set[int]:
    return {u for uids in _live_processes().values() for u in uids}


def _waited(pause: float) -> float:
    """Sleep ``pause`` seconds; the next pause, twice as long up to 0.1 s. Processes that hold much memory take a
    while to die (1.5 GB in 28 processes: 0.8 s), and each look at /proc (each kill, a fork of the grader) costs the
    grader CPU: a red team's file made a close cost 0.4 s of it with 5 ms pauses."""
    time.sleep(pause)
    return min(2 * pause, 0.1)


def kill_uid(uid: int) -> None:
    """Kill every process of ``uid``: kill(-1) as that uid reaches them all at once, even a fork bomb."""
    deadline, pause = time.monotonic() + KILL_SECONDS, 0.005
    while processes(uid):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the forked killer
            try:
                as_uid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        if time.monotonic() > deadline:
            raise SandboxFault(f"processes of uid {uid} survive SIGKILL; kill them by hand (pkill -9 -U {uid})")
        pause = _waited(pause)


# ---------------------------------------------------------------- folders: one parent per grader process

class _Closable(Protocol):
    slot: int

    def close(self) -> None: ...


LOCK = threading.RLock()
PARENTS: dict[int, Path] = {}  # pid -> parent folder (a forked worker makes its own)
OPEN: dict[int, list[_Closable]] = {}  # pid -> open boxes
_HOOKED: set[int] = set()


def start_time(pid: int) -> str | None:
    """The start time of ``pid`` (field 22 of /proc/<pid>/stat): tells a reused pid from the original."""
    try:
        stat = proc_text(f"/proc/{pid}", "stat")
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def parent() -> Path:
    pid = os.getpid()
    with LOCK:
        if pid not in PARENTS or not PARENTS[pid].is_dir():
            folder = Path(tempfile.mkdtemp(prefix=f"{PARENT_PREFIX}{pid}-"))
            folder.chmod(0o711)  # a box's uid may reach its own box, list nothing
            (folder / _OWNER_FILE).write_text(f"{pid} {start_time(pid)}\n")
            PARENTS[pid] = folder
            _hook(pid)
        return PARENTS[pid]


def _hook(pid: int) -> None:
    """atexit and SIGTERM remove this process's folders (SIGKILL cannot: cleanup_stale does it later)."""
    if pid in _HOOKED:
        return
    _HOOKED.add(pid)
    atexit.register(_close_all)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, frame: object) -> None:
    _close_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _close_all() -> None:
    pid = os.getpid()
    for box in list(OPEN.get(pid, [])):
        try:
            box.close()
        except Exception:  # noqa: BLE001 - exiting: remove what can be removed
            pass
    with LOCK:
        parent = PARENTS.pop(pid, None)
    if parent is not None:
        shutil.rmtree(parent, ignore_errors=True)


def _stale(folder: Path) -> int | None:
    """The dead owner pid of a parent folder of ours, or None when it is alive (or not ours)."""
    match = re.fullmatch(rf"{PARENT_PREFIX}(\d+)-\w+", folder.name)
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if match is None or not folder.is_dir() or folder.is_symlink() or st.st_uid != os.geteuid():
        return None
    pid = int(match.group(1))
    try:
        owner_pid, start = (folder / _OWNER_FILE).read_text().split()
    except (OSError, ValueError):
        owner_pid, start = str(pid), None  # being created, or written by an older version
        if time.time() - st.st_mtime < 60:
            return None
    if pid == os.getpid() or (start_time(pid) is not None and (start is None or start_time(pid) == start)):
        return None
    return int(owner_pid)


def cleanup_stale(tmp: Path | None = None) -> list[Path]:
    """Remove the box folders of grader processes that died (killed: SIGKILL runs no hook), and, as root,
    kill what still runs under their uids. Call it when an entry point starts. Returns the folders removed."""
    removed = []
    for folder in Path(tmp or tempfile.gettempdir()).glob(f"{PARENT_PREFIX}*"):
        pid = _stale(folder)
        if pid is None:
            continue
        if os.geteuid() == 0:
            first = uid_of(0, pid)
            for uid in sorted(u for u in running_uids() if first <= u < first + SLOTS):
                kill_uid(uid)
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group is the whole tree that stayed in it
    except OSError:
        pass
    try:
        proc.kill()
    except OSError:
        pass


def pid_namespaces_under(pid: int) -> set[str]:
    """The pid namespaces of ``pid``'s children (bwrap's pid 1 of the box), other than ours."""
    ours = os.readlink("/proc/self/ns/pid")
    found = set()
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and proc_text(entry.path, "stat").rsplit(")", 1)[1].split()[1] == str(pid):
                ns = os.readlink(f"{entry.path}/ns/pid")
                if ns != ours:
                    found.add(ns)
        except (OSError, IndexError):
            continue
    return found


def _is_zombie(proc_dir: str) -> bool:
    """A dead process not yet reaped by its (new) parent: it runs no code and holds nothing."""
    with open(f"{proc_dir}/stat", "rb") as f:
        state = f.read().rsplit(b")", 1)[1].split()[0]
    return state in (b"Z", b"X")


def wait_namespaces_empty(namespaces: set[str]) -> None:
    """Wait until no process lives in ``namespaces`` (the kernel kills them all when their pid 1 dies)."""
    deadline, pause = time.monotonic() + KILL_SECONDS, 0.01
    while namespaces:
        alive = False
        for entry in os.scandir("/proc"):
            try:
                alive = alive or (entry.name.isdigit() and os.readlink(f"{entry.path}/ns/pid") in namespaces
                                  and not _is_zombie(entry.path))
            except OSError:
                continue
        if not alive:
            return
        if time.monotonic() > deadline:
            raise SandboxFault(f"processes of the box's pid namespace {sorted(namespaces)} survive its end")
        pause = _waited(pause)


def remove_owned_by(uid: int) -> None:
    """Without namespaces: remove what ``uid`` left in the shared temporary folders."""
    for shared in {Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")}:
        try:
            entries = list(os.scandir(shared))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue
