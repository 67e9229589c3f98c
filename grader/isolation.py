"""What the operating system offers to fence a submission in, without root.

Three layers, each used when the machine permits it (probed once):

* resource limits (always): CPU time, address space, file size, core dumps,
  number of processes; a new session whose process group is killed as a whole;
* Linux namespaces through ``unshare``: a pid namespace (the submission sees
  and can signal only its own processes; they all die with it), a network
  namespace (no connection leaves the machine), a mount namespace in which the
  temporary folder, the reference, the grader, the submissions and the output
  folder are hidden under empty file systems and the rest is read-only;
  a user namespace when the grader itself is not root;
* when the grader runs as root: the submission runs under a uid of its own
  (never root), so it cannot write the files of anyone else either.

:func:`wrap` turns the child's command into the guarded one and lists the
protections that are active, for the report.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Run by ``sh`` inside the new namespaces, as their root, before the child
# starts. Its cwd is the sandbox folder; it hides the folder that holds every
# sandbox, then binds its own folder back in place (through /proc/self/cwd,
# which still points at it), so it sees its own folder and no other; only its
# working folder inside is writable.
NAMESPACE_SETUP = r"""
set -e
root=$1; cover=$2; shift 2
n=$1; shift
while [ "$n" -gt 0 ]; do mount --bind -o ro "$1" "$root/$2"; shift 2; n=$((n - 1)); done
mount -t tmpfs -o size=64m,mode=1777 granular-tmp "$cover"
mkdir -p "$root"
mount -c --rbind /proc/self/cwd "$root"
mount --bind "$root/work" "$root/work"
mount -o remount,bind,ro "$root"
n=$1; shift
while [ "$n" -gt 0 ]; do mount -t tmpfs -o ro,size=4k granular-hidden "$1"; shift; n=$((n - 1)); done
for dir in /dev/shm /var/tmp /run/shm; do
  if [ -d "$dir" ] && [ "$dir" != "$cover" ]; then mount -t tmpfs -o size=16m,mode=1777 granular-tmp "$dir"; fi
done
mount -o remount,bind,ro / 2>/dev/null || true
cd "$root/work"
exec "$@"
"""

#: First uid used for submissions when the grader is root (one per worker).
SANDBOX_UID_BASE = 200_000


@dataclass(frozen=True)
class Guard:
    """How one child is started: a command prefix and what it protects."""

    argv: list[str]
    python: str  # the interpreter, as the child sees it
    site: str  # the folder holding numpy, as the child sees it
    uid: int | None  # the uid the child runs under, if it changes
    nproc_in_preexec: bool  # set RLIMIT_NPROC before exec (else in argv)
    protections: tuple[str, ...]
    #: Without namespaces, a root grader drops to ``uid`` itself before exec.
    setuid_in_preexec: bool = False


def _run_ok(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _readable_by_others(path: Path) -> bool:
    """Can a uid with no rights of its own read ``path`` (every parent searchable)?"""
    path = path.resolve()
    for p in [path, *path.parents]:
        mode = p.stat().st_mode
        if not mode & 0o001:
            return False
    return bool(path.stat().st_mode & 0o004)


def _unshare_flags() -> list[str]:
    flags = ["unshare", "--mount", "--net", "--pid", "--fork", "--mount-proc",
             "--kill-child=SIGKILL", "--propagation", "private"]
    if os.geteuid() != 0:
        flags[1:1] = ["--user", "--map-root-user"]
    return flags


@functools.lru_cache(maxsize=None)
def namespaces_available() -> bool:
    """Can this process start a child in new user/pid/net/mount namespaces?"""
    tools = ["unshare", "mount", "sh", "setpriv"] + ([] if os.geteuid() == 0 else ["prlimit"])
    if sys.platform != "linux" or any(shutil.which(t) is None for t in tools):
        return False
    return _run_ok(_unshare_flags() + ["sh", "-c", "mount -t tmpfs none /tmp && mount -o remount,bind,ro / ; true"])


def _site_dir() -> Path:
    import numpy

    return Path(numpy.__file__).resolve().parents[1]


def wrap(root: Path, hide: list[Path], nproc: int, use_namespaces: bool = True) -> Guard:
    """The guard for a child whose sandbox folder is ``root``.

    hide: folders the child must not see (besides the other sandboxes).
    """
    python, site = str(Path(sys.executable)), str(_site_dir())
    base = ["own session (process group killed as a whole)", "resource limits: CPU time, memory, file size, "
            f"processes ({nproc})"]
    if not (use_namespaces and namespaces_available()):
        if os.geteuid() != 0:
            return Guard([], python, site, None, True, tuple(base))
        # Root without namespaces (a container, say): at least not as root,
        # when the interpreter and numpy are readable by another uid.
        if _readable_by_others(Path(sys.executable)) and _readable_by_others(Path(site)):
            uid = SANDBOX_UID_BASE + os.getpid()
            return Guard([], python, site, uid, True, tuple(base + [f"runs as uid {uid}, not root"]), True)
        return Guard([], python, site, None, True, tuple(base + [
            "runs as root: the interpreter is not readable by other users and namespaces are not available"]))
    binds: list[str] = []  # source, name in the sandbox folder, ...
    uid = None
    tail: list[str]
    covered = root.parent.resolve()

    def reachable(path: Path) -> bool:
        """Can the child open ``path`` as it is (not hidden, not closed to it)?"""
        return not path.resolve().is_relative_to(covered) and (os.geteuid() != 0 or _readable_by_others(path))

    # The interpreter and numpy may sit where the child cannot go (under
    # /root, or in the temporary folder that is hidden): bind them, read-only,
    # into the sandbox.
    prefix = Path(sys.base_prefix).resolve()
    # The base interpreter, not a venv's copy of it: the child needs no venv.
    exe = prefix / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    exe = exe.resolve() if exe.exists() else Path(sys.executable).resolve()
    python = str(exe)
    if not reachable(exe) and exe.is_relative_to(prefix):
        binds += [str(prefix), "python"]
        python = str(root / "python" / exe.relative_to(prefix))
    if not reachable(Path(site)):
        binds += [site, "site"]
        site = str(root / "site")
    if os.geteuid() == 0:
        uid = SANDBOX_UID_BASE + os.getpid()
        # Changing uid clears the parent-death signal: set it again, so the
        # child dies with unshare, which dies with the grader.
        tail = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                "--pdeathsig=SIGKILL"]
        who = f"runs as uid {uid}, not root"
    else:
        # A nested user namespace drops the powers over the mounts above.
        tail = ["unshare", "--user", "setpriv", "--pdeathsig=SIGKILL", "prlimit", f"--nproc={nproc}:{nproc}"]
        who = "user namespace (no power over the grader's files or mounts)"
    hidden = [p.resolve() for p in hide if p.exists() and p.is_dir()]
    # A bound folder shows its content again at a second place: hide it there too.
    for source, name in zip(binds[::2], binds[1::2]):
        hidden += [root / name / p.relative_to(source) for p in hidden if p.is_relative_to(source)]
    hidden = [p for p in hidden if not (p.is_relative_to(covered) and not p.is_relative_to(root))
              and not root.resolve().is_relative_to(p)]
    argv = (_unshare_flags() + ["sh", "-c", NAMESPACE_SETUP, "granular-setup", str(root.resolve()), str(covered),
                                str(len(binds) // 2), *binds, str(len(hidden)), *map(str, hidden)] + tail)
    protections = base + [
        "pid namespace (sees and signals only its own processes; all die with it)",
        "network namespace (no network)",
        "mount namespace (other submissions, the output, the reference and the grader hidden; "
        "read-only file system outside its folder)",
        who,
    ]
    return Guard(argv, python, site, uid, os.geteuid() == 0, tuple(protections))


def process_count(uid: int) -> int | None:
    """How many processes ``uid`` has now (RLIMIT_NPROC counts them all); None if unknown."""
    if not Path("/proc/self").exists():
        return None
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += 1
        except OSError:
            continue
    return count
