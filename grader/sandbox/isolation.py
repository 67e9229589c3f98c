"""Fence a submission's process in: an allow-list sandbox that fails closed.

A :class:`Box` is one private folder and the way to start a process fenced into it. Where the machine
permits (bubblewrap, ``bwrap``, and Linux namespaces), the child sees only what it needs (the file tree of
:mod:`grader.sandbox.allow_list`): Python's standard library, numpy, matplotlib and their dependencies, its own
folder, a private /dev, /proc and /tmp; nothing else exists for it (no checkout, no home, no network). As root
it runs under a uid of its own (``SANDBOX_UID_BASE + pid * 64 + slot``), never root. Without namespaces, a
root grader still drops to that uid; a non-root grader cannot, and says so. :func:`probe` reports what is
actually in force; the runner refuses hidden tests unless it is strong.

Every folder lives under one parent per grader process (``<tmp>/granular-grader-<pid>-*``) that ``close()``,
an atexit hook and SIGTERM remove; :func:`cleanup_stale` removes those of dead grader processes.
"""

from __future__ import annotations

import functools
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from grader import spec
from grader.errors import SandboxFault
from grader.sandbox import allow_list as tree
from grader.sandbox import host, processes, seccomp
from grader.sandbox.host import SANDBOX_UID_BASE, cleanup_stale
from grader.spec.limits import ONE_THREAD, Limits
from grader.spec.paths import PACKAGE_ROOT

__all__ = ["Probe", "probe", "Box", "cleanup_stale", "SANDBOX_UID_BASE", "Mode"]

#: Private /tmp of a box: small; TMPDIR points at the work folder, which has the real quota.
_TMP_BYTES, _TMP_FILES = 1024**2, 64


class Mode(Enum):
    BWRAP_ROOT = "bubblewrap, as root"
    BWRAP_USER = "bubblewrap, user namespace"
    PLAIN_ROOT = "no namespaces, as root"
    PLAIN_USER = "no namespaces, not root"


@dataclass(frozen=True)
class Probe:
    """What isolation is in force.

    strong: the submission cannot read any secret (reference, hidden tests, hidden paths), cannot outlive its
    box, and is not root: with bubblewrap (allow-list file system, own pid and network namespaces, own uid),
    or as root without namespaces when its uid provably cannot read any secret.
    protections: what IS in force; weaknesses: what is not, and why (none of them exposes a secret when strong).
    """

    strong: bool
    protections: tuple[str, ...]
    weaknesses: tuple[str, ...]


# ---------------------------------------------------------------- which mode the machine permits


def _bwrap_refusal(mode: Mode) -> str | None:
    """None when a real box starts here with bubblewrap and finds numpy (not imports: 0.1 s of CPU per check; a box
    whose numpy fails to import never boots, SandboxFault), else why not (one line)."""
    if sys.platform != "linux" or shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    if mode is Mode.BWRAP_ROOT and shutil.which("setpriv") is None:
        return "setpriv is not installed (Debian: util-linux)"
    files = tree.box_tree()
    filter_fd = seccomp.program_fd() if seccomp.supported() else None
    argv = _bwrap_argv(mode, files, Path("/dev/null"), Path("/dev/null"), host.uid_of(host.SLOTS - 1),
                       Limits(), filter_fd) + [
        files.python, "-I", "-S", "-c", f"import sys, importlib.util; sys.path[:0] = {list(files.site)!r}; "
        "sys.exit(0 if importlib.util.find_spec('numpy') else 'numpy cannot be found in the box')"]
    try:
        run = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                             env=_environment(files), start_new_session=True,
                             pass_fds=() if filter_fd is None else (filter_fd,))
    except (OSError, subprocess.SubprocessError) as e:
        return f"bubblewrap could not start ({e})"
    finally:
        if filter_fd is not None:
            os.close(filter_fd)
    lines = run.stderr.decode(errors="replace").strip().splitlines() or [f"exit {run.returncode}"]
    return f"bubblewrap refused ({lines[-1][:200]})" if run.returncode != 0 else None


#: Set by a batch for its workers when its probe found bubblewrap working: each worker then skips the test box
#: (a box that does not start is still the grader's fault, SandboxFault).
MODE_ENV = "GRANULAR_BOX_MODE"
_BWRAP_MODES = {Mode.BWRAP_ROOT: True, Mode.BWRAP_USER: False}  # the mode, and whether it is root's


def inherited_environment(namespaces: bool) -> dict[str, str]:
    """The variable a batch passes to its workers: the bubblewrap mode probed here, if any."""
    mode, _ = _mode(namespaces)
    return {MODE_ENV: mode.name} if mode in _BWRAP_MODES else {}


@functools.cache
def _mode(namespaces: bool) -> tuple[Mode, str]:
    """The mode a box gets, and why namespaces are not used ('' when they are)."""
    root = os.geteuid() == 0
    inherited = Mode.__members__.get(os.environ.get(MODE_ENV, ""))
    if namespaces and inherited in _BWRAP_MODES and _BWRAP_MODES[inherited] == root:
        return inherited, ""
    if not namespaces:
        why = "namespaces turned off (--no-namespaces)"
    else:
        why = _bwrap_refusal(Mode.BWRAP_ROOT if root else Mode.BWRAP_USER) or ""
        if not why:
            return (Mode.BWRAP_ROOT if root else Mode.BWRAP_USER), ""
    return (Mode.PLAIN_ROOT if root else Mode.PLAIN_USER), why


def _mb(n: int) -> str:
    return f"{n / 1024**2:g} MB"


def _protections(mode: Mode, uid: int | None, limits: Limits) -> list[str]:
    """What the setup of ``mode`` puts in force (each one is set up by _bwrap_argv / _preexec)."""
    who = f"uid {uid}" if uid is not None else "a uid of its own (200000 and up)"
    rl = (f"resource limits: memory {_mb(limits.memory_bytes)}, files up to {_mb(limits.file_bytes)}, "
          f"{limits.open_files} open files, CPU {limits.cpu_seconds} s")
    rl += f", {limits.processes} processes" if mode in (Mode.PLAIN_ROOT, Mode.BWRAP_ROOT) else ""
    rl += "; starts no program (execve refused once it has started, seccomp)" if seccomp.refuses_exec() else ""
    locks = ["no file locks, file notifications, kernel keys or new namespaces (seccomp): no channel to a box running "
             "beside it, no kernel work outside the box's count"] if seccomp.supported() else []
    if mode is Mode.BWRAP_ROOT:
        return ["file system: only Python, numpy, matplotlib and its own folder are visible",
                f"runs as {who}, not root, with no capabilities and no new privileges",
                "own process namespace: sees only its own processes, all killed at the end", "no network", *locks,
                f"work folder quota: {_mb(limits.disk_bytes)}, {limits.files} files", rl]
    if mode is Mode.BWRAP_USER:
        return ["file system: only Python, numpy, matplotlib and its own folder are visible",
                "user namespace: no capabilities outside its sandbox",
                "own process namespace: sees only its own processes, all killed at the end",
                "no network", *locks, f"work folder quota: {_mb(limits.disk_bytes)}", rl]
    if mode is Mode.PLAIN_ROOT:
        return [f"runs as {who}, not root, with no new privileges: it can write only its work folder "
                "and the machine's shared temporary folders", "all its processes (found by uid) killed at the end",
                rl]
    return ["own session: its process group is killed at the end", rl]


def _weaknesses(mode: Mode, why: str, readable: Sequence[str]) -> list[str]:
    if mode in _BWRAP_MODES:
        out = [] if seccomp.supported() else [f"no seccomp filter on {platform.machine()}: boxes running at once "
                                               f"could signal each other (file locks), {seccomp.UNFILTERED_CPU}"]
        if tree.packages_under(PACKAGE_ROOT):  # its path only, never its files: the box stays strong
            out.append(f"numpy and matplotlib are installed inside the grader's folder ({PACKAGE_ROOT}), "
                       "so the box's /proc/self/mountinfo shows that folder's path (none of its files); install "
                       "them in a virtual environment outside it")
        return out
    out = [f"no namespaces: {why}; it sees every file of the machine that other users may read", "network is open",
           "a process it leaves behind is found only by its uid" if mode is Mode.PLAIN_ROOT else "a process that "
           "leaves its session is not killed at the end", f"no seccomp filter: {seccomp.UNFILTERED_CPU}"]
    if mode is Mode.PLAIN_USER:
        out.insert(0, "runs as your own user: it can read and write your files")
    else:
        out.append("it can write the shared temporary folders (/tmp, /var/tmp, /dev/shm); "
                   "what it leaves there is removed at the end")
        out += [f"can read {path}" for path in readable]
    return out


def probe(namespaces: bool = True) -> Probe:
    """The isolation a Box gets on this machine (cached per process; cheap after the first call)."""
    return _probe(namespaces, ())


@functools.lru_cache(maxsize=64)
def _probe(namespaces: bool, hide: tuple[Path, ...], uid: int | None = None,
           limits: Limits = Limits()) -> Probe:
    mode, why = _mode(namespaces)
    readable: list[str] = []
    if mode is Mode.PLAIN_ROOT:
        readable = host.readable_as(uid or host.uid_of(host.SLOTS - 1), [*tree.secrets(), *hide])
    weak = _weaknesses(mode, why, readable) + processes.weaknesses()
    probe_uid = uid or host.uid_of(host.SLOTS - 1)
    strong = mode in _BWRAP_MODES or (
        mode is Mode.PLAIN_ROOT and not readable and host.interpreter_usable(probe_uid))
    return Probe(strong, tuple(_protections(mode, uid, limits)), tuple(weak))


# ---------------------------------------------------------------- how a child is started

# Run by ``sh`` as root inside the new namespaces (root mode), before the submission: a tmpfs with an inode
# limit (bubblewrap itself can set only the size), then the box's own uid for good.
_ROOT_LAUNCH = r"""
set -e
mount -n -t tmpfs -o "size=$1,nr_inodes=$2,mode=1777,nosuid,nodev" granular-work /box/work
mount -n -t tmpfs -o "size=$3,nr_inodes=$4,mode=1777,nosuid,nodev" granular-tmp /tmp
mount -n -t tmpfs -o "size=$3,nr_inodes=$4,mode=1777,nosuid,nodev" granular-shm /dev/shm
cd /box/work
uid=$5; shift 5
exec setpriv --reuid="$uid" --regid="$uid" --clear-groups --bounding-set=-all --inh-caps=-all --no-new-privs -- "$@"
"""

WORK_INSIDE = "/box/work"


def _bwrap_argv(mode: Mode, files: tree.BoxTree, submission: Path, child: Path, uid: int,
                limits: Limits, seccomp_fd: int | None = None) -> list[str]:
    """The bubblewrap command line (without the child's own argv); seccomp_fd: a pipe holding seccomp.program()."""
    filtered = [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
    argv = ["bwrap", "--die-with-parent", "--new-session", *filtered, *files.mount_args(),
            "--ro-bind", str(submission), f"/box/{spec.FILE_NAME}", "--ro-bind", str(child), "/box/child.py"]
    if mode is Mode.BWRAP_ROOT:
        # No user namespace: the uid outside is the box's own one, set by setpriv after the mounts.
        argv[1:1] = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                     "--cap-drop", "ALL", *[a for c in ("SETUID", "SETGID", "SETPCAP", "SYS_ADMIN")
                                            for a in ("--cap-add", f"CAP_{c}")]]
        argv += ["--dir", WORK_INSIDE, "--dir", "/tmp", "--remount-ro", "/", "--chdir", "/",
                 "/bin/sh", "-c", _ROOT_LAUNCH, "granular-launch", str(limits.disk_bytes), str(limits.files + 1),
                 str(_TMP_BYTES), str(_TMP_FILES), str(uid)]
    else:
        argv[1:1] = ["--unshare-all", "--unshare-user", "--disable-userns"]
        argv += ["--perms", "0700", "--size", str(limits.disk_bytes), "--tmpfs", WORK_INSIDE,
                 "--perms", "0700", "--size", str(_TMP_BYTES), "--tmpfs", "/tmp",
                 "--perms", "0700", "--size", str(_TMP_BYTES), "--tmpfs", "/dev/shm",
                 "--remount-ro", "/", "--chdir", WORK_INSIDE]
    return argv


def _environment(files: tree.BoxTree, work: str = WORK_INSIDE) -> dict[str, str]:
    # One string-hash seed for all (a file looping over a set of strings got 35 or 100): python runs without -I.
    env = {"PATH": files.path_var, "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
           "MPLCONFIGDIR": f"{work}/.matplotlib", "PYTHONHASHSEED": "0", **ONE_THREAD}
    if files.library_path:
        env["LD_LIBRARY_PATH"] = files.library_path
    return env


def _preexec(limits: Limits, nproc: bool, uid: int | None) -> None:
    """Runs in the forked child before exec: limits, then (without namespaces) the box's uid."""
    for which, value in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_CPU, limits.cpu_seconds),
                         (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_NOFILE, limits.open_files)):
        resource.setrlimit(which, (value, value))
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    # Past the file size limit a write fails instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if uid is not None:
        host.as_uid(uid)
    # After the uid change, which clears it: the child dies with the grader.
    tree.die_with_parent()


# ---------------------------------------------------------------- the box


class Box:
    """One private sandbox folder and how to start a process fenced into it."""

    @property
    def own_pid_namespace(self) -> bool:
        """Whether the child has a pid namespace of its own: its pid 1 (in the tree the CPU meter follows) reaps
        every orphan, so an orphan's CPU cannot leave the count; without one the host's init reaps it, and it does."""
        return self.mode in _BWRAP_MODES

    def __init__(self, submission: Path, child_script: Path, limits: Limits, hide: Sequence[Path] = ()) -> None:
        """Creates the folder; copies the submission (as granularGas.py) and the child script into it."""
        self.limits = limits
        self.mode, _ = _mode(limits.namespaces)
        self._procs: list[subprocess.Popen] = []
        self._closed = False
        pid = os.getpid()
        with host.LOCK:
            used = {box.slot for box in host.OPEN.get(pid, [])}
            free = [s for s in range(host.SLOTS - 1) if s not in used]  # the last slot is the probe's
            if not free:
                raise SandboxFault(f"more than {host.SLOTS - 1} boxes open at once in process {pid}; close some")
            self.slot = free[0]
            self.root = Path(tempfile.mkdtemp(prefix=f"box-{self.slot}-", dir=host.parent()))
            host.OPEN.setdefault(pid, []).append(self)
        root_modes = (Mode.BWRAP_ROOT, Mode.PLAIN_ROOT)
        self.uid: int | None = host.uid_of(self.slot) if self.mode in root_modes else None
        try:
            self._fill(Path(submission), Path(child_script), tuple(Path(p) for p in hide))
        except BaseException:
            self.close()
            raise

    def _fill(self, submission: Path, child: Path, hide: tuple[Path, ...]) -> None:
        self.root.chmod(0o711)
        for name, source in ((spec.FILE_NAME, submission), ("child.py", child)):
            shutil.copyfile(source, self.root / name)
            (self.root / name).chmod(0o444)  # under its own uid, the child cannot rewrite what it is graded on
        (self.root / "out").mkdir(mode=0o700)
        for name in ("stdout", "stderr"):
            (self.root / "out" / name).touch(mode=0o600)
        self.probe = _probe(self.limits.namespaces, hide, self.uid, self.limits)
        if self.mode in _BWRAP_MODES:
            self.tree = tree.box_tree(tuple(p.resolve() for p in hide))
            self.submission_inside, self.child_inside = f"/box/{spec.FILE_NAME}", "/box/child.py"
            self.site_inside, self.work_inside = self.tree.site, WORK_INSIDE
            return
        self.work = self.root / "work"
        self.work.mkdir(mode=0o700)
        self.submission_inside, self.child_inside = str(self.root / spec.FILE_NAME), str(self.root / "child.py")
        self.site_inside, self.work_inside = tree.host_site(), str(self.work)
        if self.uid is not None:
            if not host.interpreter_usable(self.uid):
                raise SandboxFault(
                    f"without namespaces the submission runs as uid {self.uid}, which cannot run {tree.host_python()}"
                    " with numpy: make the interpreter readable by other users, or install bubblewrap and drop "
                    "--no-namespaces")
            os.chown(self.work, self.uid, self.uid)
            host.kill_uid(self.uid)  # nothing of an earlier grader with this pid may share the uid

    def popen(self, child_args: list[str], pass_fds: tuple[int, ...]) -> subprocess.Popen:
        """Start ``<python> -I -S <child_inside> *child_args`` fenced in; returns the outermost process."""
        if self._closed:
            raise SandboxFault("Box.popen after close(): open a new Box")
        bwrap = self.mode in _BWRAP_MODES
        filter_fd = seccomp.program_fd() if bwrap and seccomp.supported() else None
        if bwrap:
            files = self.tree
            prefix = _bwrap_argv(self.mode, files, self.root / spec.FILE_NAME, self.root / "child.py",
                                 self.uid or 0, self.limits, filter_fd)
            python, env, cwd = files.python, _environment(files), self.root
        else:
            prefix, python, cwd = [], tree.host_python(), self.work
            env = {**_environment(tree.box_tree(), self.work_inside), "PATH": "/usr/bin:/bin"}
            env["LD_LIBRARY_PATH"] = str(tree.host_prefix() / "lib")  # its RUNPATH may not be searchable
        drop = self.uid if self.mode is Mode.PLAIN_ROOT else None
        nproc = self.mode in (Mode.BWRAP_ROOT, Mode.PLAIN_ROOT)
        extra = () if filter_fd is None else (filter_fd,)
        try:
            with open(self.root / "out" / "stdout", "ab") as out, open(self.root / "out" / "stderr", "ab") as err:
                proc = subprocess.Popen([*prefix, python, "-s", "-S", self.child_inside, *child_args],
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd, env=env,
                                        pass_fds=(*pass_fds, *extra), start_new_session=True,
                                        preexec_fn=lambda: _preexec(self.limits, nproc, drop))
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        self._procs.append(proc)
        return proc

    def output(self, limit: int) -> str:
        """What the child printed (stdout then stderr), at most ``limit`` bytes read."""
        chunks: list[bytes] = []
        for name in ("stdout", "stderr"):
            with open(self.root / "out" / name, "rb") as f:
                chunks.append(f.read(max(0, limit - sum(map(len, chunks)))))
        return b"".join(chunks).decode("utf-8", errors="replace")

    def kill_all(self) -> None:
        """Kill every process that ran in the box and wait until none is left."""
        namespaces = {ns for proc in self._procs if proc.poll() is None for ns in host.pid_namespaces_under(proc.pid)}
        for proc in self._procs:
            if proc.poll() is None:
                host.kill_group(proc)
        for proc in self._procs:
            try:
                proc.wait(timeout=host.KILL_SECONDS)
            except subprocess.TimeoutExpired as e:
                raise SandboxFault(f"the box's process {proc.pid} survives SIGKILL") from e
        if self.uid is not None:
            host.kill_uid(self.uid)
        host.wait_namespaces_empty(namespaces)

    def close(self) -> None:
        """kill_all, then remove the folder; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.kill_all()
        finally:
            if self.mode is Mode.PLAIN_ROOT and self.uid is not None:
                host.remove_owned_by(self.uid)
            shutil.rmtree(self.root, ignore_errors=True)
            pid = os.getpid()
            with host.LOCK:
                boxes = host.OPEN.get(pid, [])
                if self in boxes:
                    boxes.remove(self)
                parent = host.PARENTS.pop(pid, None) if not boxes else None
            if parent is not None:  # the last box of this process: nothing of it stays on disk
                shutil.rmtree(parent, ignore_errors=True)

    def __enter__(self) -> Box:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


