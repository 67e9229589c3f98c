"""Attacks on the Box, each a real script run through Box.popen, in both modes.

"bwrap": bubblewrap with namespaces (as root: the box's own uid). "plain": no namespaces, as root: the box
runs as a uid of its own. An attack prints one line per thing it managed (``GOT <what>``) and ``DONE``; in
bwrap mode it must get nothing; in plain mode everything it gets must be listed as a weakness of the box.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from grader.grading.cases import CaseBook
from grader.grading.runner import all_properties
from grader.grading.tracing import FreshBox
from grader.sandbox import allow_list, host, isolation, processes, seccomp
from grader.sandbox.client import Sandbox
from grader.spec import paths
from grader.spec.limits import Limits

CHECKOUT = Path(__file__).resolve().parents[1]
ROOT = os.geteuid() == 0

# The box's child: puts the site folders on sys.path, then runs the attack (the "submission") as __main__.
CHILD = """\
import sys
sys.path[:0] = sys.argv[1].split(":")
sys.argv = [sys.argv[2], *sys.argv[3:]]
exec(compile(open(sys.argv[0]).read(), sys.argv[0], "exec"), {"__name__": "__main__"})
print("DONE")
"""


def _reference_dir() -> Path:
    spec = importlib.util.find_spec("reference")
    assert spec is not None and spec.submodule_search_locations, "the reference package must be installed"
    return Path(spec.submodule_search_locations[0]).resolve()


SECRETS = [CHECKOUT, CHECKOUT / ".git" / "HEAD", CHECKOUT / "examples", CHECKOUT / "tests" / "submissions",
           CHECKOUT / "grader" / "properties" / "hidden.py", _reference_dir() / "__init__.py",
           *filter(None, [paths.case_cache_folder()])]  # the hidden tests' drawn inputs (made below, if need be)


def _bwrap_ok() -> bool:
    mode, _ = isolation._mode(True)
    return mode in (isolation.Mode.BWRAP_ROOT, isolation.Mode.BWRAP_USER)


needs_bwrap = pytest.mark.skipif(not _bwrap_ok(), reason="bubblewrap with namespaces does not work here")
needs_root = pytest.mark.skipif(not ROOT, reason="a uid of its own needs root")


@pytest.fixture(scope="session")
def readable_python() -> tuple[Path, tuple[Path, ...]]:
    """The interpreter and the packages where any uid may read them (hard links: instant, no space).

    Here the interpreter lives under /root (0700): without namespaces a uid of its own could not even start
    it, and the grader refuses to run (tested below). On Gradescope or a TA's machine it is readable.
    """
    prefix, tops = allow_list.host_prefix(), allow_list.package_tops()
    if not all(t.parent == tops[0].parent and t.is_relative_to(prefix) for t in tops):
        pytest.skip("the packages are not all in the interpreter's site-packages")
    base = Path(tempfile.mkdtemp(prefix="granular-test-python-"))
    base.chmod(0o755)
    site = base / "prefix" / tops[0].parent.relative_to(prefix)
    site.mkdir(parents=True)
    stdlib = tops[0].parent.parent
    links = [p for p in prefix.iterdir() if p.name != "lib"] + [p for p in (prefix / "lib").iterdir() if p != stdlib]
    links += [p for p in stdlib.iterdir() if p != tops[0].parent] + list(tops)
    links += list(tops[0].parent.glob("*.dist-info"))  # importlib.metadata finds the packages' dependencies
    for p in links:
        subprocess.run(["cp", "-al", str(p), str(base / "prefix" / p.relative_to(prefix))], check=True)
    yield base / "prefix", tuple(site / t.name for t in tops)
    shutil.rmtree(base, ignore_errors=True)


def _clear_caches() -> None:
    for f in (isolation._mode, isolation._probe, host.interpreter_usable, allow_list.box_tree):
        f.cache_clear()


@pytest.fixture(params=["bwrap", "plain"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "bwrap":
        if not _bwrap_ok():
            pytest.skip("bubblewrap with namespaces does not work here")
    else:
        if not ROOT:
            pytest.skip("without namespaces, a uid of its own needs root")
        prefix, tops = request.getfixturevalue("readable_python")
        monkeypatch.setattr(allow_list, "host_prefix", lambda: prefix)
        monkeypatch.setattr(allow_list, "package_tops", lambda: tops)
    _clear_caches()
    yield request.param
    _clear_caches()


def _limits(mode: str, **kw: int) -> Limits:
    return Limits(namespaces=mode == "bwrap", **kw)


def _run(tmp_path: Path, attack: str, mode: str, args: list[str] = (), wait: bool = True, **kw: int):
    """Run ``attack`` in a fresh box; returns (box, process, lines it printed). The caller closes the box."""
    (tmp_path / "attack.py").write_text(textwrap.dedent(attack))
    (tmp_path / "child.py").write_text(CHILD)
    box = isolation.Box(tmp_path / "attack.py", tmp_path / "child.py", _limits(mode, **kw))
    proc = box.popen([":".join(box.site_inside), box.submission_inside, *map(str, args)], ())
    if not wait:
        return box, proc, []
    proc.wait(timeout=120)
    return box, proc, box.output(1 << 20).splitlines()


def _got(lines: list[str]) -> list[str]:
    assert "DONE" in lines, f"the attack did not finish: {lines}"
    return [line[4:] for line in lines if line.startswith("GOT ")]


def _assert_blocked_or_declared(mode: str, got: list[str], box: isolation.Box) -> None:
    """bwrap: nothing got through. plain: each success is declared as a weakness (the probe is honest)."""
    if mode == "bwrap":
        assert got == [], f"the attack got {got} through bubblewrap"
        assert box.probe.strong and box.probe.weaknesses == ()
        return
    assert not box.probe.strong or got == []
    text = " ".join(box.probe.weaknesses)
    for what in got:
        assert what.split(" ", 1)[1] in text or what.split(" ", 1)[0] in text, f"{what} not declared in {text}"


READ_ATTACK = """
import os, sys
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p):
            os.listdir(p)
        else:
            open(p, "rb").read(1)
        print("GOT read", p)
    except OSError:
        pass
mounts = open("/proc/self/mountinfo").read()
if sys.argv[1] in mounts:
    print("GOT mountinfo", sys.argv[1])
"""


def test_secrets_and_host_files_are_not_readable(tmp_path: Path, mode: str) -> None:
    CaseBook.drawn(all_properties(hidden=True), on_disk=True)  # the cache of drawn inputs exists, to be stolen
    assert all(secret.exists() for secret in SECRETS)
    box, _, lines = _run(tmp_path, READ_ATTACK, mode, [*SECRETS, "/etc/shadow", "/proc/1/environ", "/root"])
    try:
        got = _got(lines)
        host_only = [g for g in got if g.split()[1] in ("/etc/shadow", "/proc/1/environ", "/root")]
        assert host_only == [], f"a box read {host_only}"
        if mode == "bwrap":
            # A virtual environment inside the checkout is bound from there: its path (not its files) shows in the
            # mountinfo, which the probe then declares (a review's .venv).
            declared = any("installed inside the grader's folder" in w for w in box.probe.weaknesses)
            assert [g for g in got if not (declared and g.startswith("mountinfo"))] == []
            other, _, more = _run(tmp_path, READ_ATTACK, mode, ["/usr/local", "/usr/src", "/usr/share", "/home",
                                                                 "/work", "/opt", "/etc/passwd", "/var", "/sys"])
            other.close()
            assert _got(more) == []
        else:  # every secret read is declared, and then the box is not strong
            for g in got:
                assert any(w.startswith("can read") and Path(w[9:]) in [Path(g.split()[1]), *Path(g.split()[1]).parents]
                           for w in box.probe.weaknesses), f"{g} read but not declared: {box.probe.weaknesses}"
            assert not box.probe.strong if got else True
    finally:
        box.close()


IMPORT_ATTACK = """
import sys
sys.path[:0] = sys.argv[1:]
for name in ("reference", "grader", "grader.properties.hidden"):
    try:
        __import__(name)
        print("GOT import", name)
    except Exception:
        pass
"""


def test_reference_and_grader_cannot_be_imported(tmp_path: Path, mode: str) -> None:
    box, _, lines = _run(tmp_path, IMPORT_ATTACK, mode, [CHECKOUT, _reference_dir().parent])
    try:
        got = _got(lines)
        if mode == "bwrap":
            assert got == []
        else:
            assert got == [] or not box.probe.strong
            assert got == [] or any(w.startswith("can read") for w in box.probe.weaknesses)
    finally:
        box.close()


UID_ATTACK = """
import time
print([l for l in open("/proc/self/status").read().splitlines() if l.startswith(("Uid", "CapEff", "CapBnd"))])
print("UIDMAP", open("/proc/self/uid_map").read().split())
import sys; sys.stdout.flush()
time.sleep(30)
"""


@needs_root
def test_runs_as_its_own_uid_seen_from_the_host(tmp_path: Path, mode: str) -> None:
    box, proc, _ = _run(tmp_path, UID_ATTACK, mode, wait=False)
    try:
        deadline = time.monotonic() + 60
        while "UIDMAP" not in box.output(1 << 16) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert box.uid is not None and box.uid >= isolation.SANDBOX_UID_BASE
        seen = host.processes(box.uid)
        assert seen, "no process of the box's uid seen from the host"
        for pid in seen:  # from the host: the box's uid, no capabilities, no user namespace mapping it to root
            status = Path(f"/proc/{pid}/status").read_text()
            uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
            assert uids == [str(box.uid)] * 4
            assert "CapEff:\t0000000000000000" in status
            assert Path(f"/proc/{pid}/uid_map").read_text().split() == ["0", "0", "4294967295"]
        assert f"runs as uid {box.uid}, not root" in " ".join(box.probe.protections)
    finally:
        box.close()
    assert host.processes(box.uid) == []


WRITE_ATTACK = """
import os, sys
for p in sys.argv[1:]:
    try:
        with open(p, "w") as f:
            f.write("owned")
        print("GOT write", p)
    except OSError:
        pass
"""


def test_cannot_write_outside_its_work_folder(tmp_path: Path, mode: str) -> None:
    stamp = f"granular-attack-{os.getpid()}-{mode}"
    targets = [f"/root/{stamp}", f"/tmp/{stamp}", str(CHECKOUT / stamp), str(tmp_path / stamp)]
    box, _, lines = _run(tmp_path, WRITE_ATTACK, mode, targets)
    try:
        got = _got(lines)
        assert [g for g in got if g != f"write /tmp/{stamp}"] == [], f"wrote {got}"
        if got and mode == "plain":  # the shared /tmp: declared, and cleaned at close
            assert any("/tmp" in w for w in box.probe.weaknesses)
        if mode == "bwrap":  # its private /tmp, not the host's
            assert not Path(f"/tmp/{stamp}").exists()
    finally:
        box.close()
    assert not any(Path(t).exists() for t in targets), "a file written by the box is still on the host"


QUOTA_ATTACK = """
import os
written = 0
try:
    for i in range(1000):
        with open(f"big{i}", "wb") as f:
            f.write(b"x" * (512 * 1024))
        written += 512 * 1024
except OSError:
    pass
print("BYTES", written)
count = 0
try:
    for i in range(100000):
        open(f"f{i}", "w").close()
        count += 1
except OSError:
    pass
print("FILES", count)
"""


@needs_bwrap
def test_work_folder_quota_bytes_and_files(tmp_path: Path) -> None:
    _clear_caches()
    box, _, lines = _run(tmp_path, QUOTA_ATTACK, "bwrap", disk_bytes=4 * 1024**2, files=50)
    try:
        numbers = {k: int(v) for k, v in (line.split() for line in lines if line.startswith(("BYTES", "FILES")))}
        assert 0 < numbers["BYTES"] <= 4 * 1024**2
        if box.mode is isolation.Mode.BWRAP_ROOT:
            assert numbers["FILES"] <= 50
            assert "work folder quota: 4 MB, 50 files" in box.probe.protections
    finally:
        box.close()


SLEEPER_ATTACK = """
import os, sys, time
if os.fork() == 0:
    try:
        os.setsid()
    except PermissionError:  # refused in a box with the seccomp filter: the double fork goes on without it
        pass
    if os.fork() == 0:
        # The sleeper says it runs (on a busy machine it may start late).
        print("FORKED", flush=True)
        time.sleep(300)
        os._exit(0)
    os._exit(0)
time.sleep(300)
"""


def test_double_forked_sleeper_does_not_outlive_the_box(tmp_path: Path, mode: str) -> None:
    if mode == "plain" and not ROOT:
        pytest.skip("found by uid: needs root")
    box, _, _ = _run(tmp_path, SLEEPER_ATTACK, mode, wait=False)
    deadline = time.monotonic() + 60
    while "FORKED" not in box.output(1000) and time.monotonic() < deadline:
        time.sleep(0.05)
    uid = box.uid
    if uid is not None:
        assert len(host.processes(uid)) >= 2, "the attack and its sleeper should run before close()"
    box.close()
    if uid is not None:
        assert host.processes(uid) == []
    sleepers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).endswith(box.submission_inside)]
    assert sleepers == []


def _cmdline(p: Path) -> str:
    try:
        return (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


NET_ATTACK = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    print("GOT network 127.0.0.1")
except OSError:
    pass
"""


def test_no_network(tmp_path: Path, mode: str) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        box, _, lines = _run(tmp_path, NET_ATTACK, mode, [server.getsockname()[1]])
        try:
            got = _got(lines)
            if mode == "bwrap":
                assert got == [] and "no network" in box.probe.protections
            else:
                assert "network is open" in box.probe.weaknesses
                # Nor is the seccomp filter loaded: what the CPU count then misses is declared too.
                assert any("escapes the CPU count" in w for w in box.probe.weaknesses), box.probe.weaknesses
        finally:
            box.close()
    finally:
        server.close()


PLOT = """
import numpy as np
import matplotlib.pyplot as plt
plt.plot(np.arange(3))
plt.show()
print("PLOTTED", np.__version__)
"""


def test_numpy_and_matplotlib_work_and_the_folder_goes(tmp_path: Path, mode: str) -> None:
    box, proc, lines = _run(tmp_path, PLOT, mode)
    root = box.root
    try:
        assert proc.returncode == 0, lines
        assert any(line.startswith("PLOTTED") for line in lines) and "DONE" in lines
    finally:
        box.close()
    box.close()  # idempotent
    assert not root.exists()


def test_pass_fds_keep_their_numbers_and_output_is_capped(tmp_path: Path, mode: str) -> None:
    read, write = os.pipe()
    (tmp_path / "attack.py").write_text("import os\nos.write(int(__import__('sys').argv[1]), b'hello')\n"
                                        "print('x' * 5000)\n")
    (tmp_path / "child.py").write_text(CHILD)
    box = isolation.Box(tmp_path / "attack.py", tmp_path / "child.py", _limits(mode))
    try:
        proc = box.popen([":".join(box.site_inside), box.submission_inside, str(write)], (write,))
        os.close(write)
        assert proc.wait(timeout=120) == 0, box.output(4000)
        assert os.read(read, 100) == b"hello"
        assert box.output(100) == "x" * 100
    finally:
        os.close(read)
        box.close()


def test_no_namespaces_refuses_an_interpreter_it_cannot_run_as_its_uid(tmp_path: Path) -> None:
    if not ROOT or host.interpreter_usable(host.uid_of(63)):
        pytest.skip("needs root and an interpreter that other uids cannot read (here: under /root)")
    (tmp_path / "s.py").write_text("")
    with pytest.raises(isolation.SandboxFault, match="cannot run"):
        isolation.Box(tmp_path / "s.py", tmp_path / "s.py", Limits(namespaces=False))
    assert not isolation.probe(namespaces=False).strong


KEEPER = """
import sys, time
from pathlib import Path
from grader.sandbox import isolation
from grader.spec.limits import Limits
box = isolation.Box(Path(sys.argv[1]), Path(sys.argv[1]), Limits())
print(box.root, flush=True)
time.sleep(300)
"""


def test_sigkilled_grader_leaves_a_folder_that_cleanup_stale_removes(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("")
    grader = subprocess.Popen([sys.executable, "-c", KEEPER, str(tmp_path / "s.py")], stdout=subprocess.PIPE,
                              cwd=CHECKOUT, text=True)
    root = Path(grader.stdout.readline().strip())
    assert root.is_dir()
    assert root.parent not in isolation.cleanup_stale(), "a live grader's folder must stay"
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    assert root.is_dir()
    assert root.parent in isolation.cleanup_stale()
    assert not root.parent.exists()


def test_sigterm_removes_the_folders(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("")
    grader = subprocess.Popen([sys.executable, "-c", KEEPER, str(tmp_path / "s.py")], stdout=subprocess.PIPE,
                              cwd=CHECKOUT, text=True)
    root = Path(grader.stdout.readline().strip())
    grader.terminate()
    assert grader.wait(timeout=30) == -signal.SIGTERM
    assert not root.parent.exists()


def test_probe_lists_only_what_is_set_up() -> None:
    _clear_caches()
    strong = isolation.probe(True)
    weak = isolation.probe(False)
    assert weak.weaknesses and any("turned off" in w for w in weak.weaknesses)
    if _bwrap_ok():
        assert strong.strong and strong.weaknesses == ()
        assert "no network" in strong.protections
    assert "no network" not in weak.protections
    assert shutil.which("bwrap") is not None or not strong.strong


AS_USER = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from grader.sandbox import isolation
from grader.spec.limits import Limits
box = isolation.Box(Path(sys.argv[2]), Path(sys.argv[3]), Limits())
print("MODE", box.mode.name, box.probe.strong, flush=True)
proc = box.popen([":".join(box.site_inside), box.submission_inside, *sys.argv[4:]], ())
proc.wait()
print(box.output(100000))
box.close()
print("CLOSED", box.root.exists())
"""


@needs_root
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_grader_that_is_not_root_gets_a_user_namespace(readable_python: tuple[Path, tuple[Path, ...]]) -> None:
    prefix, _ = readable_python
    uid = isolation.SANDBOX_UID_BASE - 1 - os.getpid() % 1000  # an ordinary user: not a box's uid
    folder = Path(tempfile.mkdtemp(prefix="granular-test-user-"))
    try:
        folder.chmod(0o755)
        (folder / "attack.py").write_text(READ_ATTACK + "print(open('/proc/self/status').read().count('Uid'))\n")
        (folder / "child.py").write_text(CHILD)
        (folder / "grader.py").write_text(AS_USER)
        run = subprocess.run([str(prefix / "bin" / Path(allow_list.host_python()).name), "-I",
                              str(folder / "grader.py"), str(CHECKOUT), str(folder / "attack.py"),
                              str(folder / "child.py"), *map(str, SECRETS), "/etc/shadow", "/root"],
                             capture_output=True, text=True, timeout=300, cwd=folder,
                             env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(prefix / "lib")},
                             preexec_fn=lambda: host.as_uid(uid))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if "MODE BWRAP_USER" not in run.stdout:
        pytest.skip(f"unprivileged user namespaces are not permitted here: {run.stdout[-300:]} {run.stderr[-300:]}")
    assert "MODE BWRAP_USER True" in run.stdout
    lines = run.stdout.splitlines()
    assert _got(lines) == [], run.stdout
    assert "CLOSED False" in lines


def test_a_batch_worker_takes_the_batchs_bubblewrap_mode_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker skips the test box when its batch found bubblewrap working; any other value is probed afresh."""
    root = os.geteuid() == 0
    mine, other = ("BWRAP_ROOT", "BWRAP_USER") if root else ("BWRAP_USER", "BWRAP_ROOT")
    tested: list[object] = []

    def test_box(mode: object) -> str:
        tested.append(mode)
        return "bubblewrap refused (test)"

    monkeypatch.setattr(isolation, "_bwrap_refusal", test_box)
    try:
        for value, probed in ((mine, False), (other, True), ("PLAIN_ROOT", True), ("nonsense", True)):
            isolation._mode.cache_clear()
            tested.clear()
            monkeypatch.setenv(isolation.MODE_ENV, value)
            mode, why = isolation._mode(True)
            assert bool(tested) == probed, value
            assert (mode.name, why) == ((mine, "") if not probed else (mode.name, "bubblewrap refused (test)"))
            assert mode.name.startswith("PLAIN") == probed
        isolation._mode.cache_clear()
        monkeypatch.setenv(isolation.MODE_ENV, mine)
        assert isolation._mode(False)[0].name.startswith("PLAIN")  # --no-namespaces wins
    finally:
        isolation._mode.cache_clear()


LOCK_HOLDER = """
import fcntl, os, sys, time
fd = os.open(os.__file__, os.O_RDONLY)  # a library file every box binds: the same inode in each
for name, take in (("lockf", lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 4242)),
                   ("flock", lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)),
                   ("ofd", lambda: fcntl.fcntl(fd, 37, bytes(32)))):  # F_OFD_SETLK
    try:
        take()
        print("GOT", name, flush=True)
    except OSError:
        pass
libc = __import__("ctypes").CDLL(None, use_errno=True)
x86 = __import__("platform").machine() == "x86_64"
for name, call in (("inotify", lambda: libc.inotify_init1(0)),
                   ("notify", lambda: fcntl.fcntl(os.open("/", os.O_RDONLY), fcntl.F_NOTIFY, fcntl.DN_ACCESS)),
                   ("fanotify", lambda: libc.syscall(300 if x86 else 262, 0x200, 0)),  # FAN_REPORT_FID
                   ("add_key", lambda: libc.syscall(248 if x86 else 217, b"user", b"granular-test", b"x", 1, -4)),
                   ("keyctl", lambda: libc.syscall(250 if x86 else 219, 0, -4, 0))):  # KEYCTL_GET_KEYRING_ID
    try:
        if call() >= 0:
            print("GOT", name, flush=True)
    except OSError:
        pass
fcntl.fcntl(fd, fcntl.F_GETFL)  # other fcntl commands still work
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""

LOCK_PROBER = """
import fcntl, os, struct
fd = os.open(os.__file__, os.O_RDONLY)
asked = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 4242, 1, 0)  # who holds byte 4242?
try:
    kind = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, asked))[0]
    if kind != fcntl.F_UNLCK:
        print("GOT a lock of another box")
except OSError:
    pass
"""


@needs_bwrap
def test_boxes_cannot_signal_each_other_through_locks_on_shared_files(tmp_path: Path) -> None:
    """Red teams' channels: boxes bind the same library files read-only (the same inodes), and a lock taken in one
    is seen by F_GETLK in another running at the same time, whatever the namespaces and uids; 64 bits went from the
    grading's box to the box that confirms traced answers. fanotify marks on shared files and the kernel keyring
    (shared by the boxes, and outliving them) carried messages too. All of these now fail (seccomp)."""
    from grader.sandbox import seccomp

    if not seccomp.supported():
        pytest.skip("no seccomp filter for this machine (declared as a weakness)")
    _clear_caches()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    holder, held, _ = _run(tmp_path / "a", LOCK_HOLDER, "bwrap", ["3"], wait=False)
    try:
        time.sleep(1.5)  # the holder has tried its locks
        prober, probed, lines = _run(tmp_path / "b", LOCK_PROBER, "bwrap")
        prober.close()
        held.wait(timeout=120)
        assert _got(holder.output(1 << 20).splitlines()) == [] and _got(lines) == []
    finally:
        holder.close()


def test_packages_installed_inside_the_checkout_are_declared(monkeypatch) -> None:
    """A review's .venv inside the checkout: every package is bound from there, so the box's mountinfo names the
    checkout's folder. The probe says so (and how to avoid it); packages elsewhere add no such line."""
    from grader.sandbox import allow_list, isolation
    from grader.spec.paths import PACKAGE_ROOT

    def weaknesses() -> list[str]:
        return isolation._weaknesses(isolation.Mode.BWRAP_ROOT, "", [])

    monkeypatch.setattr(allow_list, "package_tops", lambda: (Path("/opt/elsewhere/site-packages/numpy"),))
    assert not any("inside the grader's folder" in w for w in weaknesses())
    monkeypatch.setattr(allow_list, "package_tops", lambda: (PACKAGE_ROOT / ".venv/lib/site-packages/numpy",))
    assert any("inside the grader's folder" in w and "outside it" in w for w in weaknesses())


CHILD_HIDER = """
import os, signal, time

def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    signal.getsignal(signal.SIGCHLD)  # reading the disposition is allowed
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel would reap the children: no parent sees their CPU
        ignored = 1.0
    except OSError:
        ignored = 2.0
    for _ in range(20):
        if os.fork() == 0:
            _burn(0.04)
            os._exit(0)
        time.sleep(0.041)
    return ignored
"""


@needs_bwrap
def test_children_reaped_by_the_kernel_cannot_hide_their_cpu_time(tmp_path: Path) -> None:
    """A review's file set SIGCHLD to be ignored and burnt its CPU in short-lived children: the kernel reaped them
    at exit, their CPU time reached no parent, and the box's meter charged 0.07 s of the 1.3 s they used (a way past
    every CPU limit, and to an efficiency bonus). Setting SIGCHLD's disposition now fails (seccomp), and children
    left unreaped are counted as the zombies they stay."""
    from grader.sandbox import seccomp
    from grader.sandbox.client import Sandbox

    if not seccomp.supported():
        pytest.skip("no seccomp filter for this machine (declared as a weakness)")
    source = tmp_path / "granularGas.py"
    source.write_text(CHILD_HIDER)
    with Sandbox(source, Limits(call_seconds=20.0)) as box:
        before = box.cpu_spent
        x = np.zeros(2)
        returned = box.call("contact_time_grains", x, np.array([3.0, 0.0]), x, x, 1.0, 1.0)
        spent = box.cpu_spent - before
    assert float(returned.value.array) == 2.0, "SIGCHLD could be ignored in the box"
    assert spent >= 0.6, f"the box counted {spent:.2f} s of the 0.8 s its children used"


KERNEL_WORKER = """
import ctypes, errno, os, resource, socket, threading

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    libc = ctypes.CDLL(None, use_errno=True)
    unshare, clone3 = (272, 435) if os.uname().machine == "x86_64" else (97, 435)
    bits = 0
    if libc.syscall(unshare, 0x10000000) == -1 and ctypes.get_errno() == errno.EPERM:  # a user namespace
        bits |= 1
    if libc.syscall(clone3, None, 0) == -1 and ctypes.get_errno() == errno.ENOSYS:
        bits |= 2
    params = ctypes.create_string_buffer(120)
    if libc.syscall(425, 8, params) == -1 and ctypes.get_errno() == errno.ENOSYS:  # io_uring_setup, both machines
        bits |= 64
    ran = []
    thread = threading.Thread(target=ran.append, args=(1,))
    thread.start()
    thread.join()
    bits |= 4 if ran else 0
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    bits |= 8 if os.waitpid(pid, 0)[1] == 0 else 0
    bits |= 16 if resource.getrlimit(resource.RLIMIT_NOFILE) == (256, 256) else 0
    held = []
    try:
        for _ in range(300):
            held.extend(socket.socketpair())
    except OSError as exc:
        bits |= 32 if exc.errno == errno.EMFILE else 0
    return float(bits)
"""


def _seccomp_probe(tmp_path: Path, source_text: str) -> int:
    """The bits a probe file's contact_time_grains returns from a real box (skipped without a seccomp filter)."""
    from grader.sandbox import seccomp
    from grader.sandbox.client import Sandbox

    if not seccomp.supported():
        pytest.skip("no seccomp filter for this machine (declared as a weakness)")
    source = tmp_path / "granularGas.py"
    source.write_text(source_text)
    with Sandbox(source, Limits(call_seconds=20.0)) as box:
        x = np.zeros(2)
        return int(float(box.call("contact_time_grains", x, np.array([3.0, 0.0]), x, x, 1.0, 1.0).value.array))


@needs_bwrap
def test_no_kernel_work_outside_the_box_and_threads_and_processes_still_work(tmp_path: Path) -> None:
    """A review's files made the kernel work in its own workers, outside the box and its CPU count: network namespaces
    made and dropped 2 000 times a second in a user namespace of the box's own (0.85 s uncharged per second charged),
    and the garbage collection of 19 900 sockets kept in flight (4.8 s uncharged for 0.4 s); a second review's made and
    closed io_uring rings, torn down in kernel workers (0.64 s uncharged per second). New namespaces are refused
    (unshare EPERM, clone3 ENOSYS so that threads and processes fall back to clone), io_uring does not exist, and a
    process holds at most 256 files, which also caps the sockets in flight. Threads and fork still work."""
    bits = _seccomp_probe(tmp_path, KERNEL_WORKER)
    names = ["user namespace refused", "clone3 ENOSYS", "a thread ran", "fork worked", "256 open files",
             "the 257th file refused", "io_uring ENOSYS"]
    assert [name for k, name in enumerate(names) if not bits >> k & 1] == []


CONTINUERS = """
import ctypes, errno, fcntl, os, platform, signal
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": dict(kill=62, tkill=200, tgkill=234, sigqueue=129, tgsigqueue=297, prctl=157, setpgid=109, setsid=112,
                     ptrace=101, timer_create=222, mq_notify=244, clone=56),
      "aarch64": dict(kill=129, tkill=130, tgkill=131, sigqueue=138, tgsigqueue=240, prctl=167, setpgid=154,
                      setsid=157, ptrace=117, timer_create=107, mq_notify=184, clone=220)}[platform.machine()]

def _refused(*args):
    return libc.syscall(*args) == -1 and ctypes.get_errno() in (errno.EPERM, errno.ENOSYS)

def _refused_alone(*args):  # in a child of its own: the calls change the caller
    pid = os.fork()
    if pid == 0:
        os._exit(1 if _refused(*args) else 0)
    return os.waitpid(pid, 0)[1] >> 8 == 1

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    child = os.fork()
    if child == 0:
        signal.pause()
        os._exit(0)
    info = ctypes.create_string_buffer(128)  # si_signo, si_errno, si_code = SI_QUEUE (as a process may send)
    ctypes.memmove(info, (ctypes.c_int * 3)(18, 0, -1), 12)
    pidfd = libc.syscall(434, child, 0)  # pidfd_open, both machines
    tries = [(NR["kill"], child, 18), (NR["kill"], child, 18 | 1 << 32), (NR["tkill"], child, 18),
             (NR["tgkill"], child, child, 18), (NR["sigqueue"], child, 18, info),
             (NR["tgsigqueue"], child, child, 18, info), (424, pidfd, 18, None, 0), (NR["prctl"], 1, 18),
             (NR["timer_create"], 1, None, ctypes.byref(ctypes.c_void_p())), (NR["mq_notify"], 0, None)]
    bits = sum(1 << k for k, t in enumerate(tries) if _refused(*t))
    bits |= sum(1 << (10 + k) for k, t in enumerate([(NR["setpgid"], 0, 0), (NR["setsid"],), (NR["ptrace"], 0, 0, 0, 0)])
                if _refused_alone(*t))
    r, w = os.pipe()
    try:
        fcntl.fcntl(r, 10, 18)  # F_SETSIG
    except OSError as exc:
        bits |= 1 << 13 if exc.errno == errno.EPERM else 0
    pid = libc.syscall(NR["clone"], 18, 0, 0, 0, 0)  # a fork whose end sends its parent SIGCONT
    if pid == 0:
        os._exit(0)
    bits |= 1 << 14 if pid == -1 and ctypes.get_errno() == errno.EPERM else 0
    if pid > 0:
        os.waitpid(pid, 0x40000000)  # __WALL: a child that does not end with SIGCHLD
    bits |= 1 << 15 if libc.syscall(NR["kill"], child, 15) == 0 and os.waitpid(child, 0)[0] == child else 0
    return float(bits)
"""


@needs_bwrap
def test_nothing_in_a_box_can_continue_a_stopped_process(tmp_path: Path) -> None:
    """A box waiting for its next call is stopped (Sandbox.pause); a process of it that could send SIGCONT, or make
    the kernel send it, could wake the others: a ring of six that wakes the next and stops itself (SPINNERS) ran on,
    unseen, after 1 of 10 freezes in a box without these rules (3 to 17 of 20 outside one). Other signals work."""
    bits = _seccomp_probe(tmp_path, CONTINUERS)
    names = ["kill SIGCONT", "kill SIGCONT with high bits", "tkill", "tgkill", "rt_sigqueueinfo",
             "rt_tgsigqueueinfo", "pidfd_send_signal", "PR_SET_PDEATHSIG", "timer_create", "mq_notify", "setpgid",
             "setsid", "ptrace", "F_SETSIG", "clone ending with SIGCONT", "SIGTERM still sent"]
    assert [name for k, name in enumerate(names) if not bits >> k & 1] == []


SPINNERS = """
import os, signal, threading, time
calls = 0

def _spin():
    while True:
        pass

def _ring(k):  # six processes: each spins a little, wakes the next and stops, so one of them always runs
    nxt = int(open("/tmp/ring").read().split()[(k + 1) % 6])
    while True:
        end = time.perf_counter() + 20e-6
        while time.perf_counter() < end:
            pass
        while True:
            try:
                os.kill(nxt, signal.SIGCONT)
            except OSError:
                pass
            with open(f"/proc/{nxt}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1][1:2] != b"T":
                    break
        os.kill(os.getpid(), signal.SIGSTOP)

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    global calls
    calls += 1
    if calls == 1:  # processes and a thread that never stop
        ring = []
        for k in range(6):
            pid = os.fork()
            if pid == 0:
                while not os.path.exists("/tmp/ring"):
                    time.sleep(0.001)
                _ring(k)
            ring.append(pid)
        with open("/tmp/ring.new", "w") as f:
            f.write(" ".join(map(str, ring)))
        os.rename("/tmp/ring.new", "/tmp/ring")
        if os.fork() == 0:
            _spin()
        threading.Thread(target=_spin, daemon=True).start()
    if calls >= 3:  # + 0.5 when the thread runs again
        used = time.process_time()
        time.sleep(0.5)
        return calls + (0.5 if time.process_time() - used > 0.05 else 0.0)
    return float(calls)
"""


def _one_call(box: FreshBox | Sandbox) -> tuple[float, float]:
    """(answer, CPU seconds charged) of one call of contact_time_grains (a replay, in a FreshBox)."""
    x = np.zeros(2)
    returned = box.call("contact_time_grains", x, np.array([3.0, 0.0]), x, x, 1.0, 1.0)
    return float(returned.value.array), returned.cpu_seconds


def test_processes_left_busy_between_replays_use_no_cpu_and_run_again_at_the_next(tmp_path: Path, mode: str) -> None:
    """A call is charged what its box used since the call before, but after a box's last call nothing is: the replay
    boxes stay open to the end of a grading, and a file's processes left busy there would use the machine, charged to
    nobody, for the rest of it. A box kept open between calls is stopped (Sandbox.pause), and nothing in it can
    continue a stopped process (seccomp: the ring of six below, which wakes itself, is test_nothing_in_a_box_...)."""
    source = tmp_path / "granularGas.py"
    source.write_text(SPINNERS)
    with FreshBox(source, _limits(mode, call_seconds=20)) as box:
        assert _one_call(box)[0] == 1.0
        time.sleep(1.0)  # without the freeze, three spinners on two cores: about 2 s of CPU
        answer, charged = _one_call(box)  # charged: what the box used since the first call ended
        assert charged < 0.3, f"the box used {charged:.2f} s of CPU while it waited for its next call"
        if mode == "plain" and answer == 1.0:
            return  # no seccomp filter: the ring woke itself through every round, and the box was emptied
        assert answer == 2.0, "the box was emptied: its processes were not all stopped"
        assert _one_call(box)[0] == 3.5, "the box's processes did not run again at its next call"
        started = time.monotonic()
    assert time.monotonic() - started < 5.0, "closing a box of stopped processes took long"


BACKGROUND_SPINNER = """import os

_calls = [0]


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    _calls[0] += 1
    if _calls[0] == 1 and os.fork() == 0:  # busy from the first call on, whatever the calls
        while True:
            pass
    return float(_calls[0])
"""


def _until_pausing(box: Sandbox) -> None:
    """Calls, with waits, until the box is seen busy between them (a slow machine gives the spinner less CPU)."""
    for _ in range(20):
        _one_call(box)[0]
        if box.pausing:
            return
        time.sleep(0.1)
    raise AssertionError("the box was never seen busy between its calls: the test shows nothing")


#: A red team's addition: a thread waits in clone(CLONE_VFORK) for a child that pauses for ever, in uninterruptible
#: sleep (state D), which SIGSTOP cannot end; every freeze of the box failed, and the box was emptied and imported
#: again every few calls.
STUCK_IN_VFORK = """
import ctypes, threading

_libc = ctypes.CDLL(None)
_STACK = ctypes.create_string_buffer(1 << 16)


def _stuck():
    _libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    _libc.clone(ctypes.cast(_libc.pause, ctypes.c_void_p), ctypes.addressof(_STACK) + (1 << 16) - 64,
                0x4000 | 17, None)  # CLONE_VFORK | SIGCHLD


threading.Thread(target=_stuck, daemon=True).start()
"""


@pytest.mark.parametrize("stuck", [False, True], ids=["spinner", "spinner-and-a-thread-stuck-in-vfork"])
def test_a_grading_box_busy_between_its_calls_is_stopped_there_so_a_slower_grader_charges_it_no_more(
        tmp_path: Path, mode: str, stuck: bool) -> None:
    """A call is charged what its box used since the call before: a file busy in the background was charged the
    grader's own time between two calls, more on a slower machine (the same file, another grade near a limit).
    Once a box has used BETWEEN_CALLS_CPU_SECONDS there, it is stopped between every two of its calls
    (Sandbox._pause_after) and goes on at the next, its state kept; a task in uninterruptible sleep that was sent SIGSTOP counts as
    stopped (it runs nothing before it stops)."""
    source = tmp_path / "granularGas.py"
    source.write_text(BACKGROUND_SPINNER + (STUCK_IN_VFORK if stuck else ""))
    charged = []
    if stuck and not (mode == "bwrap" and seccomp.supported()):
        # No seccomp filter: another process could continue the stuck one before its stop takes effect, so it
        # cannot count as stopped, and the calls are lost as a crash (never charged the grader's time).
        from grader.sandbox.channel import ChildDied

        with Sandbox(source, _limits(mode, call_seconds=20)) as box, pytest.raises(ChildDied):
            _until_pausing(box)
        return
    with Sandbox(source, _limits(mode, call_seconds=20)) as box:
        for k in range(5):
            answer, cost = _one_call(box)
            assert answer == k + 1, "the box was emptied: its state was lost"
            charged.append(cost)
            time.sleep(0.4)  # a slow grader between two calls
    assert charged[1] > 0.05, f"the spinner was not charged the first wait ({charged}): the test shows nothing"
    assert max(charged[2:]) < 0.05, f"the box ran while the grader worked between its calls: {charged}"


#: Busy in the background from its import on.
SPINNER_FROM_IMPORT = """import os

if os.fork() == 0:
    while True:
        pass


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return 1.0
"""


def test_a_box_that_goes_on_or_renews_starts_its_child_at_its_first_call(tmp_path: Path, mode: str) -> None:
    """The searches' box goes on from the grading's (Sandbox.carry_on_from, runner._searched), and a renewed box
    has a fresh child: each imported the file a while before its first call (the searches import Hypothesis and
    replay the known cases first), and a file busy from its import was charged all that time at that call."""
    source = tmp_path / "granularGas.py"
    source.write_text(SPINNER_FROM_IMPORT)
    with Sandbox(source, _limits(mode, call_seconds=20)) as first:
        _until_pausing(first)
        second = Sandbox(source, _limits(mode, call_seconds=20))
        try:
            second.carry_on_from(first)
            time.sleep(0.3)  # the grader at work before the searches' first call
            assert _one_call(second)[1] < 0.05, "the searches' box ran before its first call"
        finally:
            second.close()
        first.renew()
        time.sleep(0.3)
        assert _one_call(first)[1] < 0.05, "the renewed box ran before its first call"


def test_a_stopped_box_is_stopped_as_soon_as_it_answers_so_a_slower_grader_charges_its_calls_no_more(
        tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second red team: a box stopped between its calls ran on from its answer until the stop's first round had
    looked for new processes, so a grader 5 ms slower there charged a background process 12.5 ms a call instead
    of 2.4. The members known are now sent SIGSTOP as soon as the answer comes (ProcessTree.stop_known)."""
    real_refresh = processes.ProcessTree.refresh

    def slow_refresh(self: processes.ProcessTree, at_once: bool = False) -> None:
        time.sleep(0.1)  # a grader that takes 100 ms more to look for new processes (far above a busy host's delays)
        real_refresh(self, at_once)

    source = tmp_path / "granularGas.py"
    source.write_text(BACKGROUND_SPINNER)
    charged = []
    with Sandbox(source, _limits(mode, call_seconds=20)) as box:
        _until_pausing(box)  # seen busy: stopped from now on
        monkeypatch.setattr(processes.ProcessTree, "refresh", slow_refresh)
        for _ in range(8):
            charged.append(_one_call(box)[1])
    # Without the stop at the answer a call was charged about the whole 100 ms; with it, a few ms on a quiet host
    # and 14-17 ms in a CI run sharing its 2 cores with other gradings (the grader's process waits for a core).
    assert sorted(charged)[len(charged) // 2] < 0.04, f"charged the grader's slowness: {charged}"


def test_a_grading_box_whose_processes_cannot_be_stopped_between_calls_loses_those_calls(
        tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A red team's file made every freeze fail: its box was emptied without a call failing, and its fresh child
    got a new allowance of CPU between calls, so it went on restarting (and importing again) every few calls at no
    cost. Now a call after which its box cannot be stopped fails (ChildDied: the file's doing), and a fresh child is
    stopped between its calls from the start."""
    from grader.sandbox.channel import ChildDied

    source = tmp_path / "granularGas.py"
    source.write_text(BACKGROUND_SPINNER)
    monkeypatch.setattr(processes, "FREEZE_ROUNDS", 2)
    monkeypatch.setattr(processes.ProcessTree, "_frozen", staticmethod(lambda pid, stopping=False: False))
    with Sandbox(source, _limits(mode, call_seconds=20)) as box:
        with pytest.raises(ChildDied, match="could not be stopped"):
            _until_pausing(box)
        with pytest.raises(ChildDied, match="could not be stopped"):  # a fresh child, stopped at once
            _one_call(box)[0]


def test_without_pidfds_a_busy_box_is_not_stopped_its_calls_go_on_and_the_probe_says_so(
        tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A red team's machine without pidfds (Linux before 5.3, or a Python without them): no freeze could succeed,
    and a correct file with a background thread crashed in all 30 tests. The grader's shortfall is declared, never
    the file's loss."""
    source = tmp_path / "granularGas.py"
    source.write_text(BACKGROUND_SPINNER)
    monkeypatch.setattr(processes, "can_freeze", lambda: False)
    isolation._probe.cache_clear()
    assert any("no pidfds" in w for w in isolation.probe(namespaces=mode == "bwrap").weaknesses)
    with Sandbox(source, _limits(mode, call_seconds=20)) as box:
        _until_pausing(box)
        calls = _one_call(box)[0]
        time.sleep(0.1)
        assert _one_call(box)[0] == calls + 1, "the box was emptied"
    with FreshBox(source, _limits(mode, call_seconds=20)) as replays:  # a box for replays, paused after each:
        # emptied instead, as nothing would charge what it ran after its last replay (a review's finding)
        assert _one_call(replays)[0] == _one_call(replays)[0] == 1.0, "the replays' box ran on between replays"


def test_the_grader_s_wait_for_a_box_to_stop_counts_as_the_file_s_time_asleep(
        tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A red team's file held every freeze about 0.25 s with a system call SIGSTOP waits for (75 s to grade, 100
    points). The grader's wait now counts as the file's time asleep (Limits.asleep_seconds): it runs out, and the calls stop."""
    from grader.sandbox.channel import CallTimeout, Channel

    real_freeze = Channel.freeze

    def slow_freeze(self: Channel) -> bool:
        frozen = real_freeze(self)
        time.sleep(0.5)  # as if a task took that long to stop
        return frozen

    monkeypatch.setattr(Channel, "freeze", slow_freeze)
    source = tmp_path / "granularGas.py"
    source.write_text(BACKGROUND_SPINNER)
    with Sandbox(source, Limits(namespaces=mode == "bwrap", call_seconds=20, asleep_seconds=1.0)) as box:
        with pytest.raises(CallTimeout, match="asleep"):
            _until_pausing(box)
            for _ in range(40):
                _one_call(box)[0]
        assert box.pausing


def test_a_box_whose_processes_do_not_all_stop_is_emptied_and_the_next_call_starts_afresh(
        tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "granularGas.py"
    source.write_text(SPINNERS)
    monkeypatch.setattr(processes, "FREEZE_ROUNDS", 2)
    monkeypatch.setattr(processes.ProcessTree, "_frozen", staticmethod(lambda pid, stopping=False: False))
    with FreshBox(source, _limits(mode, call_seconds=20)) as box:
        assert _one_call(box)[0] == 1.0
        answer, charged = _one_call(box)
    assert answer == 1.0, "a box that could not be stopped was kept: its processes ran on, charged to nobody"
    assert charged < 0.3, "the fresh child was charged the old one's CPU"
