"""Hostile and broken submissions: each gets its real grade and harms nothing.

Every case is the correct textbook submission with something added, at
import or at the start of contact_solve_wall (a function with few tests), so
the expected grade is known: full marks but for the function concerned.
"""

import os
import select
import socket
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from grader.errors import IsolationTooWeak, SandboxFault
from grader.grading.runner import GradeOptions, GradeReport, grade_file
from grader.properties import oracle
from grader.sandbox import isolation
from grader.sandbox.client import Sandbox
from grader.spec import FUNCTION_NAMES
from grader.spec.limits import OUTPUT_CAP, Limits

from .test_grader_corpus import TEXTBOOK

REPO = Path(__file__).resolve().parents[1]
FAST = Limits(call_seconds=2.0, import_seconds=4.0)
WALL = "def contact_solve_wall(wall, x1, v1, r):\n"
NO_NAMESPACES = Limits(call_seconds=2.0, import_seconds=4.0, namespaces=False)
needs_namespaces = pytest.mark.skipif(not isolation.probe().strong,
                                      reason="bubblewrap with namespaces does not work on this machine")


def grade(path: Path, limits: Limits = FAST, hidden: bool = False, **options: object) -> GradeReport:
    """The public tests only unless asked: the attacks are the submission's, the hidden tests add nothing to them
    (and a failing function costs minutes of shrinking there)."""
    return grade_file(path, GradeOptions(limits=limits, hidden=hidden, **options))


def hostile(tmp_path: Path, at_import: str = "", in_wall: str = "", name: str = "granularGas.py") -> Path:
    """The textbook submission with code added at import and/or in contact_solve_wall."""
    text = TEXTBOOK.read_text()
    text = text.replace("import numpy as np\n", "import numpy as np\nimport os, sys, time, math\n" + at_import, 1)
    body = "".join("    " + line + "\n" for line in in_wall.splitlines())
    text = text.replace(WALL, WALL + body)
    path = tmp_path / name
    path.write_text(text)
    return path


def lost_only(report, *functions: str) -> None:
    """Full marks to every function but these, which lose points.

    (A function that returns rubbish may keep the points of, say, not mutating
    its arguments: that is its real grade.) The submission's update calls its own
    helpers: when one of them is broken, update may lose points too (also its real
    grade), so it is not checked then.
    """
    table = report.by_item()
    for name in FUNCTION_NAMES:
        score, maximum = table[name]
        if name == "update" and functions and "update" not in functions:
            continue
        if name in functions:
            assert score < maximum / 2, f"{name} kept {score} points"
        else:
            assert score == maximum, f"{name} lost points: " + "; ".join(
                r.message for r in report.results if r.prop.item == name and r.status == "failed")


def processes_matching(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("code, status", [
    ("while True:\n    pass\n", "timeout at import"),
    ("time.sleep(3600)\n", "timeout at import"),
    ("os._exit(0)\n", "crashed at import"),
    ("sys.exit(0)\n", "error at import"),
])
def test_hang_or_exit_at_import_scores_zero_with_a_clear_status(tmp_path, code, status):
    started = time.monotonic()
    report = grade(hostile(tmp_path, at_import=code), limits=FAST)
    assert report.score == 0 and report.status == status
    assert report.import_error
    # A sleeping import uses no CPU: it is stopped by the wall backstop of the CPU limit (limits.py).
    assert time.monotonic() - started < 2 * FAST.import_wall_seconds + 30


@pytest.mark.parametrize("code, statuses, fragments", [
    ("while True:\n    pass", ["timeout: contact_solve_wall"], ["used more than 2 s of CPU time"]),
    ("time.sleep(3600)", ["timeout: contact_solve_wall"], ["stopped computing"]),
    ("np.ones(10**11)", ["graded"], ["MemoryError"]),
    # Filling 2 GiB may take longer than a call may: either way it is stopped.
    ("hog = []\nwhile True:\n    hog.append(bytearray(10**8))", ["graded", "timeout: contact_solve_wall"],
     ["MemoryError", "used more than 2 s of CPU time"]),
])
def test_hang_or_memory_bomb_costs_that_function_only(tmp_path, code, statuses, fragments):
    report = grade(hostile(tmp_path, in_wall=code), limits=FAST)
    lost_only(report, "contact_solve_wall")
    # update calls the submission's own contact_solve_wall: it may hang or crash with it.
    assert report.status.replace(", update", "") in statuses, report.status
    messages = [r.message for r in report.results if r.prop.item == "contact_solve_wall"]
    assert any(fragment in m for m in messages for fragment in fragments), messages


def test_a_function_slow_on_every_call_uses_up_its_budget(tmp_path):
    limits = Limits(call_seconds=2.0, import_seconds=4.0, function_seconds=3.0)
    # Budgets count CPU time (a sleep would cost nothing): each call spins for 1.2 s of CPU.
    spin = "spent = time.process_time()\nwhile time.process_time() - spent < 1.2:\n    pass"
    with Sandbox(hostile(tmp_path, in_wall=spin), limits) as sandbox:
        args = (np.array([[0.0, 0.0], [1.0, 0.0]]), np.zeros(2), np.ones(2), 0.5)
        for _ in range(3):
            sandbox.call("contact_solve_wall", *args)  # each call is within its own limit
        with pytest.raises(Exception, match="far too slow"):
            sandbox.call("contact_solve_wall", *args)
        assert sandbox.call("contact_solve_grains", np.zeros(2), np.ones(2), np.ones(2), np.zeros(2),
                            1.0, 1.0, 1.0).value is not None


@needs_namespaces
def test_killing_its_parent_or_every_process_harms_only_itself(tmp_path):
    kills = ("for target, how in ((os.getppid(), os.kill), (-1, os.kill), (0, os.killpg), (1, os.kill)):\n"
             "    try:\n        how(target, 9)\n    except OSError:\n        pass\n"
             "raise RuntimeError('still alive after killing everything it could')")
    report = grade(hostile(tmp_path, in_wall=kills), limits=FAST)
    lost_only(report, "contact_solve_wall")
    assert any("still alive" in r.message or "process" in r.message
               for r in report.results if r.prop.item == "contact_solve_wall")


@needs_namespaces
def test_forked_children_do_not_outlive_the_grading(tmp_path):
    marker = f"sleep {900000 + os.getpid() % 90000}"
    code = (f"if os.fork() == 0:\n"
            f"    os.setsid()\n"
            f"    if os.fork() == 0:\n"
            f"        os.execv('/bin/sh', ['sh', '-c', '{marker}; :'])\n"
            f"    os._exit(0)\n"
            f"for _ in range(200):\n"
            f"    try:\n"
            f"        os.fork()\n"
            f"    except OSError:\n"
            f"        break\n")
    sandbox = Sandbox(hostile(tmp_path, in_wall=code), FAST)
    with sandbox:
        try:
            sandbox.call("contact_solve_wall", np.array([[0.0, 0.0], [1.0, 0.0]]), np.zeros(2), np.ones(2), 0.5)
        except Exception:  # noqa: BLE001 - whatever the fork bomb does to its own call
            pass
        assert processes_matching(marker), "the test's submission did not start its sleeper"
    time.sleep(0.5)
    assert not processes_matching(marker)
    assert not processes_matching(str(sandbox.box.root))
    assert not sandbox.box.root.exists()


@needs_namespaces
def test_a_fork_bomb_costs_that_function_only(tmp_path):
    # Copies of the child that come back to the grader's loop exit; their
    # replies, were any sent, would be dropped as answers to older requests.
    bomb = "while True:\n    os.fork()"
    report = grade(hostile(tmp_path, in_wall=bomb), limits=FAST)
    lost_only(report, "contact_solve_wall")


def test_flooding_stdout_and_stderr_is_cut_and_costs_nothing(tmp_path):
    flood = ("for _ in range(100000):\n    print('x' * 100)\n    print('y' * 100, file=sys.stderr)\n"
             "try:\n    os.write(1, b'z' * 10**7)\nexcept OSError:\n    pass\n")
    path = hostile(tmp_path, at_import=flood, in_wall="print('wall ' * 1000)")
    with Sandbox(path, FAST) as sandbox:
        sandbox.call("contact_solve_wall", np.array([[0.0, 0.0], [1.0, 0.0]]), np.zeros(2), np.ones(2), 0.5)
        sizes = [(sandbox.box.root / "out" / name).stat().st_size for name in ("stdout", "stderr")]
        assert all(0 < size <= FAST.file_bytes for size in sizes)
    report = grade(path, limits=FAST)
    lost_only(report)
    assert len(report.output.encode()) <= OUTPUT_CAP


def test_monkeypatching_numpy_and_math_changes_nothing(tmp_path):
    patch = ("np.isclose = lambda *a, **k: np.array(True)\nnp.allclose = lambda *a, **k: True\n"
             "np.array_equal = lambda *a, **k: True\nmath.isclose = lambda *a, **k: True\n"
             "import json\njson.dumps = lambda *a, **k: '{\"ok\": true}'\n")
    # A wrong wall normal: the patched comparisons must not hide it.
    path = hostile(tmp_path, at_import=patch)
    path.write_text(path.read_text().replace("n = np.array([-t[1], t[0]])", "n = np.array([t[0], t[1]])"))
    lost_only(grade(path, limits=FAST), "contact_solve_wall")


def test_values_that_compare_equal_to_anything_get_no_points(tmp_path):
    liars = ("class Liar(float):\n"
             "    __eq__ = __le__ = __ge__ = lambda s, o: True\n"
             "    __lt__ = __gt__ = __ne__ = lambda s, o: False\n"
             "    __hash__ = float.__hash__\n"
             "class LiarArray(np.ndarray):\n"
             "    __eq__ = lambda s, o: np.ones(np.shape(s), bool)\n"
             "    __ne__ = lambda s, o: np.zeros(np.shape(s), bool)\n")
    path = hostile(tmp_path, at_import=liars, in_wall="return np.full(2, 7.0).view(LiarArray)")
    text = path.read_text().replace("def contact_time_grains(x1, x2, v1, v2, R1, R2):\n",
                                    "def contact_time_grains(x1, x2, v1, v2, R1, R2):\n    return Liar(3.0)\n")
    path.write_text(text)
    lost_only(grade(path, limits=FAST), "contact_time_grains", "contact_solve_wall")


def test_objects_that_would_run_code_when_unpickled_are_never_unpickled(tmp_path):
    marker = tmp_path / "unpickled"
    bomb = (f"class Bomb:\n    def __reduce__(self):\n        return (os.system, ('touch {marker}',))\n"
            "    def __repr__(self):\n        return 'Bomb()'\n")
    report = grade(hostile(tmp_path, at_import=bomb, in_wall="return Bomb()"), limits=FAST)
    lost_only(report, "contact_solve_wall")
    assert not marker.exists()
    assert any("Bomb" in r.message for r in report.results if r.status == "failed")


@needs_namespaces
def test_the_reference_can_be_neither_imported_nor_read(tmp_path):
    steal = (f"try:\n    print('READ OK', len(open({str(REPO / 'reference' / 'granularGas.py')!r}).read()))\n"
             "except OSError as exc:\n    print('NOREAD', exc)\n"
             f"sys.path.insert(0, {str(REPO)!r})\n"
             "try:\n    import reference.granularGas\n    print('IMPORTED')\nexcept ImportError:\n    pass\n")
    report = grade(hostile(tmp_path, at_import=steal), limits=FAST)
    assert "NOREAD" in report.output and "READ OK" not in report.output and "IMPORTED" not in report.output
    lost_only(report)


@needs_namespaces
def test_nothing_outside_its_working_folder_can_be_written(tmp_path):
    targets = [REPO / "tests" / "planted.py", tmp_path / "planted.txt", Path.home() / "planted.txt"]
    write = (f"for p in {[str(t) for t in targets]!r} + [__file__]:\n"
             "    try:\n        open(p, 'a').write('# planted')\n        print('WROTE', p)\n"
             "    except OSError as exc:\n        print('BLOCKED', exc)\n"
             "open('scratch.txt', 'w').write('its own folder is fine')\n")
    path = hostile(tmp_path, at_import=write)
    before = path.read_text()
    report = grade(path, limits=FAST)
    assert "WROTE" not in report.output and report.output.count("BLOCKED") == 4
    assert not any(t.exists() for t in targets) and path.read_text() == before
    lost_only(report)


@needs_namespaces
def test_no_network_connection_leaves_the_sandbox(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    call = (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "    print('CONNECTED')\nexcept OSError as exc:\n    print('NO NETWORK', exc)\n")
    report = grade(hostile(tmp_path, at_import=call), limits=FAST)
    readable, _, _ = select.select([listener], [], [], 0.2)
    listener.close()
    assert not readable and "NO NETWORK" in report.output
    lost_only(report)


def test_the_report_lists_the_protections_that_were_active(tmp_path):
    report = grade(hostile(tmp_path), limits=FAST)
    assert any("resource limits" in p for p in report.protections)
    if isolation.probe().strong:
        assert "no network" in report.protections and report.weaknesses == ()
        assert any("own process namespace" in p for p in report.protections)
    try:
        no_ns = grade(hostile(tmp_path), limits=NO_NAMESPACES, hidden=False)
    except SandboxFault as exc:  # fail closed: as root, never run the submission as root
        assert "cannot run" in str(exc) and os.geteuid() == 0
        return
    assert not any(kind in p for p in no_ns.protections for kind in ("no network", "process namespace",
                                                                       "file system: only"))
    assert any("namespaces" in w for w in no_ns.weaknesses)
    lost_only(no_ns)


@pytest.mark.skipif(not oracle.available(), reason="hidden tests need the reference installed")
def test_hidden_tests_are_refused_without_strong_isolation(tmp_path):
    if isolation.probe(namespaces=False).strong:
        pytest.skip("here even the no-namespace sandbox keeps every secret unreadable")
    with pytest.raises(IsolationTooWeak, match="allow-weak-isolation"):
        grade(hostile(tmp_path), limits=NO_NAMESPACES, hidden=True)


@needs_namespaces
def test_the_checkout_cannot_be_found_through_mountinfo_git_or_its_files(tmp_path):
    steal = (f"import subprocess\nrepo = {str(REPO)!r}\n"
             "print('MOUNTED' if repo in open('/proc/self/mountinfo').read() else 'NOT MOUNTED')\n"
             "for argv in (['git', '--git-dir', repo + '/.git', 'show', 'HEAD:reference/granularGas.py'],\n"
             "             [sys.executable, repo + '/tests/submissions/correct_textbook.py'],\n"
             "             [sys.executable, '-c', 'import reference']):\n"
             "    try:\n"
             "        run = subprocess.run(argv, capture_output=True, timeout=20)\n"
             "        print('RAN' if run.returncode == 0 else 'FAILED', argv[-1])\n"
             "    except OSError:\n"
             "        print('FAILED', argv[-1])\n")
    report = grade(hostile(tmp_path, at_import=steal), limits=Limits(call_seconds=2.0, import_seconds=20.0))
    assert "NOT MOUNTED" in report.output and "RAN" not in report.output
    assert report.output.count("FAILED") == 3
    lost_only(report)


@needs_namespaces
def test_flooding_the_disk_is_stopped_and_leaves_nothing(tmp_path):
    flood = ("written = files = 0\n"
             "try:\n    while written < 300 * 2**20:\n"
             "        open(f'big{written}', 'wb').write(b'x' * 2**19)\n        written += 2**19\n"
             "except OSError:\n    pass\n"
             "try:\n    while files < 50000:\n        open(f'f{files}', 'w').close()\n        files += 1\n"
             "except OSError:\n    pass\n"
             "print('FLOOD', written, files)\n")
    before = {p.name for p in Path(tempfile.gettempdir()).iterdir()}
    report = grade(hostile(tmp_path, at_import=flood), limits=FAST)
    written, files = (int(n) for n in report.output.split("FLOOD ", 1)[1].split()[:2])
    assert written <= FAST.disk_bytes and files <= FAST.files
    lost_only(report)
    left = {p.name for p in Path(tempfile.gettempdir()).iterdir()} - before
    assert not [name for name in left if name.startswith(f"granular-grader-{os.getpid()}-")]
