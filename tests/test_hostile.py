"""Hostile and broken submissions: each gets its real grade and harms nothing.

Every case is the correct textbook submission with something added, at
import or at the start of contact_solve_wall (a function with few tests), so
the expected grade is known: full marks but for the function concerned.

Every attack is tried in the sandbox (a few calls, always run); grading a
whole file takes 10-20 s of CPU, so CI grades a declared sample of the
attacks end to end (GRANULAR_FULL_CORPUS=1 grades every one), and the
attacks made at import share one graded file.
"""

import math
import os
import select
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from grader.errors import IsolationTooWeak, SandboxFault
from grader.grading import cases, tracing
from grader.grading.cases import CaseBook
from grader.grading.runner import GradeOptions, GradeReport, all_properties, grade_file, status_of
from grader.properties import oracle
from grader.sandbox import isolation, wire
from grader.sandbox.channel import CallTimeout, ChildDied
from grader.sandbox.client import CallRaised, ImportFailed, Sandbox
from grader.spec import FUNCTION_NAMES
from grader.spec.limits import (
    ASLEEP_PER_CPU_SECOND,
    EFFICIENCY_SECONDS,
    FEEDBACK_ANIMATION_SECONDS,
    OUTPUT_CAP,
    SUBMISSION_SECONDS,
    Limits,
)

from .conftest import corpus_params, scaled_sample
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
                named = (entry / "cmdline").read_bytes().replace(b"\0", b" ") + b" " + (entry / "comm").read_bytes()
                if text in named.decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def gone(text: str, backstop: float = 30.0) -> bool:
    """No process mentions ``text`` any more: killed processes may take a moment to go on a busy machine,
    so this waits for them (at most ``backstop`` seconds, far more than a quiet machine needs)."""
    deadline = time.monotonic() + backstop
    while processes_matching(text):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


WALL_ARGS = (np.array([[0.0, 0.0], [1.0, 0.0]]), np.zeros(2), np.ones(2), 0.5)
GRAINS_ARGS = (np.zeros(2), np.ones(2), np.ones(2), np.zeros(2), 1.0, 1.0, 1.0)


def still_answers(sandbox: Sandbox) -> None:
    """After whatever contact_solve_wall did, the other functions are called as before (in a new child if needed)."""
    returned = sandbox.call("contact_solve_grains", *GRAINS_ARGS)
    assert returned.value is not None


#: At import: the status its grade gets, and the error the sandbox reports.
AT_IMPORT = [
    ("while True:\n    pass\n", "timeout at import", CallTimeout),
    ("time.sleep(3600)\n", "timeout at import", CallTimeout),
    ("os._exit(0)\n", "crashed at import", ChildDied),
    ("sys.exit(0)\n", "error at import", ImportFailed),
]


@pytest.mark.parametrize("code, status, error", AT_IMPORT, ids=["busy", "sleep", "os._exit", "sys.exit"])
def test_hang_or_exit_at_import_is_final_with_a_clear_status(tmp_path, code, status, error):
    started = time.monotonic()
    with Sandbox(hostile(tmp_path, at_import=code), FAST) as sandbox:
        assert isinstance(sandbox.import_failure, error) and sandbox.import_error
        assert status_of([], sandbox.import_failure) == status
        with pytest.raises(ImportFailed):
            sandbox.call("contact_solve_grains", *GRAINS_ARGS)
    # A sleeping import uses no CPU: it is stopped by the wall backstop of the CPU limit (limits.py),
    # not left to hang (a generous bound: a busy machine may take far longer than the backstop).
    assert time.monotonic() - started < 4 * FAST.import_wall_seconds + 120


@pytest.mark.parametrize("code, status", corpus_params(
    [(code, status) for code, status, _ in AT_IMPORT], ["busy", "sleep", "os._exit", "sys.exit"], {"sleep"}))
def test_hang_or_exit_at_import_scores_zero_with_a_clear_status(tmp_path, code, status):
    report = grade(hostile(tmp_path, at_import=code), limits=FAST)
    assert report.score == 0 and report.status == status
    assert report.import_error


KILLS = ("for target, how in ((os.getppid(), os.kill), (-1, os.kill), (0, os.killpg), (1, os.kill)):\n"
         "    try:\n        how(target, 9)\n    except OSError:\n        pass\n"
         "raise RuntimeError('still alive after killing everything it could')")


@dataclass(frozen=True)
class InWall:
    """An attack at the start of contact_solve_wall: what its call and its grade say."""

    name: str
    code: str
    #: One of these is in the message of the call (and of a failed test of contact_solve_wall).
    fragments: tuple[str, ...]
    #: The grade's status is one of these (None: any).
    statuses: tuple[str, ...] | None
    namespaces: bool = False


IN_WALL = [
    InWall("busy loop", "while True:\n    pass", ("used more than 2 s of CPU time",), ("timeout: contact_solve_wall",)),
    InWall("sleep", "time.sleep(3600)", ("stopped computing",), ("timeout: contact_solve_wall",)),
    InWall("huge array", "np.ones(10**11)", ("MemoryError",), ("graded",)),
    # Filling 2 GiB may take longer than a call may: either way it is stopped.
    InWall("memory hog", "hog = []\nwhile True:\n    hog.append(bytearray(10**8))",
           ("MemoryError", "used more than 2 s of CPU time"), ("graded", "timeout: contact_solve_wall")),
    InWall("killing its parent and every process", KILLS, ("still alive", "process"), None, True),
    # Copies of the child that come back to the grader's loop exit; their replies, were any sent,
    # would be dropped as answers to older requests.
    InWall("fork bomb", "while True:\n    os.fork()", ("",), None, True),
]
#: Graded end to end in CI (the busy loop and a crash are also graded in test_grader_corpus.py).
IN_WALL_SAMPLE = {"fork bomb"}


def in_wall_params(sample: set[str] | None):
    """pytest params of IN_WALL: all (sample None), or sampled as the corpus is (conftest.corpus_params)."""
    params = corpus_params(IN_WALL, [a.name for a in IN_WALL], sample) if sample is not None else [
        pytest.param(a, id=a.name) for a in IN_WALL]
    return [pytest.param(*p.values, id=p.id, marks=(*p.marks, *((needs_namespaces,) if a.namespaces else ())))
            for p, a in zip(params, IN_WALL)]


@pytest.mark.parametrize("attack", in_wall_params(None))
def test_an_attack_inside_a_call_costs_that_call_only(tmp_path, attack: InWall):
    with Sandbox(hostile(tmp_path, in_wall=attack.code), FAST) as sandbox:
        try:
            sandbox.call("contact_solve_wall", *WALL_ARGS)
        except (CallTimeout, ChildDied, CallRaised) as exc:
            message = str(exc)
        else:
            message = "returned normally"
        assert any(fragment in message for fragment in attack.fragments), message
        still_answers(sandbox)
        root = str(sandbox.box.root)
    assert gone(root)


@pytest.mark.parametrize("attack", in_wall_params(IN_WALL_SAMPLE))
def test_an_attack_inside_a_function_costs_that_function_only(tmp_path, attack: InWall):
    report = grade(hostile(tmp_path, in_wall=attack.code), limits=FAST)
    lost_only(report, "contact_solve_wall")
    # update calls the submission's own contact_solve_wall: it may hang or crash with it.
    if attack.statuses is not None:
        assert report.status.replace(", update", "") in attack.statuses, report.status
    messages = [r.message for r in report.results if r.prop.item == "contact_solve_wall" and r.status == "failed"]
    assert any(fragment in m for m in messages for fragment in attack.fragments), messages


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
def test_forked_children_do_not_outlive_the_grading(tmp_path):
    marker = f"sleeper{900000 + os.getpid() % 90000}"  # its name (a box starts no program: it names itself)
    code = (f"if os.fork() == 0:\n"
            f"    try:\n"
            f"        os.setsid()\n"
            f"    except PermissionError:\n"  # refused by the seccomp filter: the double fork goes on
            f"        pass\n"
            f"    if os.fork() == 0:\n"
            f"        import ctypes, time\n"
            f"        ctypes.CDLL(None).prctl(15, b'{marker}', 0, 0, 0)\n"  # PR_SET_NAME
            f"        print('SLEEPER-STARTED', flush=True)\n"
            f"        while True:\n"
            f"            time.sleep(1000)\n"
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
        # The grandchild may not have reached its exec yet on a busy machine (CI failed so beside CPU hogs). It says
        # so: the end of the fork bomb's call may already have killed it (without a session of its own, refused by
        # the seccomp filter, it is in the box's process group).
        deadline = time.monotonic() + 60
        while "SLEEPER-STARTED" not in sandbox.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "SLEEPER-STARTED" in sandbox.output(), "the test's submission did not start its sleeper"
    assert gone(marker)
    assert gone(str(sandbox.box.root))
    assert not sandbox.box.root.exists()


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


def test_monkeypatched_comparisons_and_values_that_compare_equal_to_anything_get_no_points(tmp_path):
    """Two attacks on the comparisons in one graded file: numpy's and math's patched in the child, and
    values whose comparisons always say yes (the grader compares in its own process, decoded values)."""
    patch = ("np.isclose = lambda *a, **k: np.array(True)\nnp.allclose = lambda *a, **k: True\n"
             "np.array_equal = lambda *a, **k: True\nmath.isclose = lambda *a, **k: True\n"
             "import json\njson.dumps = lambda *a, **k: '{\"ok\": true}'\n")
    liars = ("class Liar(float):\n"
             "    __eq__ = __le__ = __ge__ = lambda s, o: True\n"
             "    __lt__ = __gt__ = __ne__ = lambda s, o: False\n"
             "    __hash__ = float.__hash__\n"
             "class LiarArray(np.ndarray):\n"
             "    __eq__ = lambda s, o: np.ones(np.shape(s), bool)\n"
             "    __ne__ = lambda s, o: np.zeros(np.shape(s), bool)\n")
    path = hostile(tmp_path, at_import=patch + liars)
    text = path.read_text()
    # A wrong wall normal: the patched comparisons must not hide it.
    text = text.replace("n = np.array([-t[1], t[0]])", "n = np.array([t[0], t[1]])")
    text = text.replace("def contact_time_grains(x1, x2, v1, v2, R1, R2):\n",
                        "def contact_time_grains(x1, x2, v1, v2, R1, R2):\n    return Liar(3.0)\n")
    text = text.replace("def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):\n",
                        "def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):\n"
                        "    return np.full(2, 7.0).view(LiarArray), np.full(2, 7.0).view(LiarArray)\n")
    assert text.count("Liar(3.0)") == 1 and text.count(".view(LiarArray)") == 2 and "[t[0], t[1]]" in text
    path.write_text(text)
    # With the traced excuse on, the callers of those functions keep their points (off, their cases are set aside).
    lost_only(grade(path, limits=FAST, excuse_traced=True), "contact_time_grains", "contact_solve_wall",
              "contact_solve_grains")


def unpickling_bomb(tmp_path: Path) -> tuple[Path, Path]:
    """A file whose contact_solve_wall returns an object that would run a command if unpickled, and its marker."""
    marker = tmp_path / "unpickled"
    bomb = (f"class Bomb:\n    def __reduce__(self):\n        return (os.system, ('touch {marker}',))\n"
            "    def __repr__(self):\n        return 'Bomb()'\n")
    return hostile(tmp_path, at_import=bomb, in_wall="return Bomb()"), marker


def test_objects_that_would_run_code_when_unpickled_are_never_unpickled(tmp_path):
    path, marker = unpickling_bomb(tmp_path)
    with Sandbox(path, FAST) as sandbox:
        # The child sends a description of what it cannot encode, never a pickle.
        returned = sandbox.call("contact_solve_wall", *WALL_ARGS)
        assert isinstance(returned.value, wire.Opaque) and "Bomb" in wire.describe(returned.value)
        still_answers(sandbox)
    assert not marker.exists()


@pytest.mark.parametrize("graded_end_to_end", corpus_params([True], ["unpickling bomb"], set()))
def test_objects_that_would_run_code_when_unpickled_cost_that_function_only(tmp_path, graded_end_to_end):
    path, marker = unpickling_bomb(tmp_path)
    report = grade(path, limits=FAST)
    lost_only(report, "contact_solve_wall")
    assert not marker.exists()
    assert any("Bomb" in r.message for r in report.results if r.status == "failed")


#: Attacks made at import share one graded file; its import runs subprocesses and floods the disk.
AT_IMPORT_LIMITS = Limits(call_seconds=2.0, import_seconds=20.0)


@dataclass(frozen=True)
class ImportAttacks:
    """The grade of one file that tries, at import, every attack below (in this order), and what surrounds it."""

    report: GradeReport
    path: Path
    text: str
    targets: tuple[Path, ...]
    connected: bool
    temp_before: frozenset[str]


#: What a submission must not read: the reference, the hidden tests, the reference's stored runs (data in the grader
#: package), the engine, the corpus's pinned grades, and the cases drawn for the hidden tests (the user's cache).
SECRET_FILES = (REPO / "reference" / "granularGas.py", REPO / "grader" / "properties" / "hidden.py",
                REPO / "grader" / "animation" / "reference_data" / "gas.npz", REPO / "reference" / "engine.py",
                REPO / "tests" / "corpus_grades.json")


def drawn_cases_file() -> Path:
    """The file of cases this grader draws for every property, hidden ones included (drawn now if need be)."""
    CaseBook.drawn(all_properties(hidden=True), on_disk=True)
    found = cases.cache_file()
    assert found is not None and found.exists()
    return found


def steal_the_reference() -> str:
    return (f"for secret in {[str(s) for s in SECRET_FILES + (drawn_cases_file(),)]!r}:\n"
            "    try:\n        print('READ OK', secret, len(open(secret, 'rb').read()))\n"
            "    except OSError as exc:\n        print('NOREAD', exc)\n"
            f"sys.path.insert(0, {str(REPO)!r})\n"
            "try:\n    import reference.granularGas\n    print('IMPORTED')\nexcept ImportError:\n    pass\n")


def write_outside(targets: tuple[Path, ...]) -> str:
    return (f"for p in {[str(t) for t in targets]!r} + [__file__]:\n"
            "    try:\n        open(p, 'a').write('# planted')\n        print('WROTE', p)\n"
            "    except OSError as exc:\n        print('BLOCKED', exc)\n"
            "open('scratch.txt', 'w').write('its own folder is fine')\n")


def connect(port: int) -> str:
    return (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "    print('CONNECTED')\nexcept OSError as exc:\n    print('NO NETWORK', exc)\n")


def find_the_checkout() -> str:
    return (f"import subprocess\nrepo = {str(REPO)!r}\n"
            "print('MOUNTED' if repo in open('/proc/self/mountinfo').read() else 'NOT MOUNTED')\n"
            "for argv in (['git', '--git-dir', repo + '/.git', 'show', 'HEAD:reference/granularGas.py'],\n"
            "             [sys.executable, repo + '/tests/submissions/correct_textbook.py'],\n"
            "             [sys.executable, '-c', 'import reference']):\n"
            "    try:\n"
            "        run = subprocess.run(argv, capture_output=True, timeout=20)\n"
            "        print('RAN' if run.returncode == 0 else 'FAILED', argv[-1])\n"
            "    except OSError:\n"
            "        print('FAILED', argv[-1])\n")


#: Last: it leaves the disk full.
FLOOD_THE_DISK = ("written = files = 0\n"
                  "try:\n    while written < 300 * 2**20:\n"
                  "        open(f'big{written}', 'wb').write(b'x' * 2**19)\n        written += 2**19\n"
                  "except OSError:\n    pass\n"
                  "try:\n    while files < 50000:\n        open(f'f{files}', 'w').close()\n        files += 1\n"
                  "except OSError:\n    pass\n"
                  "print('FLOOD', written, files)\n")


@pytest.fixture(scope="module")
def import_attacks(tmp_path_factory) -> ImportAttacks:
    folder = tmp_path_factory.mktemp("import-attacks")
    targets = (REPO / "tests" / "planted.py", folder / "planted.txt", Path.home() / "planted.txt")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        code = (steal_the_reference() + write_outside(targets) + connect(listener.getsockname()[1])
                + find_the_checkout() + FLOOD_THE_DISK)
        path = hostile(folder, at_import=code)
        text = path.read_text()
        temp_before = frozenset(p.name for p in Path(tempfile.gettempdir()).iterdir())
        report = grade(path, limits=AT_IMPORT_LIMITS)
        readable, _, _ = select.select([listener], [], [], 0.2)
    finally:
        listener.close()
    return ImportAttacks(report, path, text, targets, bool(readable), temp_before)


@needs_namespaces
def test_the_reference_can_be_neither_imported_nor_read(import_attacks: ImportAttacks):
    output = import_attacks.report.output
    assert output.count("NOREAD") == len(SECRET_FILES) + 1 and "READ OK" not in output and "IMPORTED" not in output
    assert all(secret.exists() for secret in SECRET_FILES)  # each was there to be stolen
    lost_only(import_attacks.report)


@needs_namespaces
def test_nothing_outside_its_working_folder_can_be_written(import_attacks: ImportAttacks):
    output = import_attacks.report.output
    assert "WROTE" not in output and output.count("BLOCKED") == 4
    assert not any(t.exists() for t in import_attacks.targets) and import_attacks.path.read_text() == import_attacks.text
    lost_only(import_attacks.report)


@needs_namespaces
def test_no_network_connection_leaves_the_sandbox(import_attacks: ImportAttacks):
    assert not import_attacks.connected and "NO NETWORK" in import_attacks.report.output
    lost_only(import_attacks.report)


@needs_namespaces
def test_the_report_lists_the_protections_that_were_active(import_attacks: ImportAttacks):
    report = import_attacks.report
    assert any("resource limits" in p for p in report.protections)
    assert "no network" in report.protections and report.weaknesses == ()
    assert any("own process namespace" in p for p in report.protections)


def test_without_namespaces_the_report_says_what_is_missing_or_refuses(tmp_path):
    try:
        no_ns = grade(hostile(tmp_path), limits=NO_NAMESPACES, hidden=False)
    except SandboxFault as exc:  # fail closed: as root, never run the submission as root
        assert "cannot run" in str(exc) and os.geteuid() == 0
        return
    assert any("resource limits" in p for p in no_ns.protections)
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
def test_the_checkout_cannot_be_found_through_mountinfo_git_or_its_files(import_attacks: ImportAttacks):
    output = import_attacks.report.output
    declared = any("installed inside the grader's folder" in w for w in import_attacks.report.weaknesses)
    assert ("NOT MOUNTED" in output or declared) and "RAN" not in output  # declared: a .venv in the checkout
    assert output.count("FAILED") == 3
    lost_only(import_attacks.report)


@needs_namespaces
def test_flooding_the_disk_is_stopped_and_leaves_nothing(import_attacks: ImportAttacks):
    report = import_attacks.report
    written, files = (int(n) for n in report.output.split("FLOOD ", 1)[1].split()[:2])
    assert written <= AT_IMPORT_LIMITS.disk_bytes and files <= AT_IMPORT_LIMITS.files
    lost_only(report)
    left = {p.name for p in Path(tempfile.gettempdir()).iterdir()} - import_attacks.temp_before
    assert not [name for name in left if name.startswith(f"granular-grader-{os.getpid()}-")]


FORGED_INDEX = '''

# The child's encode() calls numpy.asarray as it runs: patched, it describes the index as an integer array of NaN.
_real_asarray = np.asarray


class _Marker:
    pass


class _Forged:
    dtype, size, shape = np.dtype(int), 2, (2,)

    def astype(self, kind):
        return _real_asarray([float("nan"), 1.0])


def _asarray(a, *args, **kwargs):
    return _Forged() if isinstance(a, _Marker) else _real_asarray(a, *args, **kwargs)


np.asarray = _asarray
_honest_search = minimum_contact_time


def minimum_contact_time(x, v, R, w, indexOld):
    tc, index = _honest_search(x, v, R, w, indexOld)
    return (tc, index) if tc == sys.float_info.max else (tc, _Marker())
'''


def test_a_forged_integer_reply_breaks_the_protocol_and_never_the_grader(tmp_path):
    """A red team's file: an index described as an integer array holding NaN passed the wire, and int(nan) in the
    grader's readers ended the whole grading with a grader error, no grade given (a student could swap a low grade
    for it). Integer arrays now hold whole numbers or are refused as malformed: the call broke the protocol."""
    path = tmp_path / "granularGas.py"
    path.write_text(TEXTBOOK.read_text() + FORGED_INDEX)
    report = grade(path)
    assert report.by_item()["minimum_contact_time"][0] == 0.0
    assert report.by_item()["contact_time_grains"] == (15.0, 15.0)
    failed = [r for r in report.results if r.prop.item == "minimum_contact_time" and r.status == "failed"]
    assert failed and all("protocol" in r.message for r in failed)


def test_a_file_restarting_its_box_in_every_test_is_stopped_by_the_gradings_cpu_budget(tmp_path, boots):
    """tests/limit_samples/crash_after_slow_import.py (a red team's): each call ends the process after an import
    just under its limit, so every test imports the file again: 776 s of CPU, near a batch's wall-clock backstop
    of then 15 minutes ("grader error", no grade). Imports and calls now share Limits.grading_seconds: past it no child is
    started and no call made, and the calls left fail as timeouts (the constants made small here)."""
    path = scaled_sample(tmp_path, Path(__file__).parent / "limit_samples" / "crash_after_slow_import.py",
                         "IMPORT_BURN = 19.0\nCALL_BURN = 4.8\n", "IMPORT_BURN = 0.3\nCALL_BURN = 0.2\n")
    counts = {}
    for budget in (math.inf, 2.0):
        boots.clear()
        limits = Limits(call_seconds=1.0, import_seconds=1.0, function_seconds=1.0, grading_seconds=budget)
        report = grade_file(path, GradeOptions(limits=limits, selftest=False))
        assert report.score == 0 and not report.import_error
        counts[budget] = len(boots)
        stopped = [r.message for r in report.results if "2 s of CPU in this grading" in r.message]
        assert bool(stopped) == (budget == 2.0), stopped
    # Each boot imports (0.3 s); each test that calls ends the process after 0.2 s: about 4 tests fit in 2 s. Without
    # the budget every test restarts the box.
    assert counts[2.0] <= 2.0 / 0.5 + 3 < counts[math.inf], counts


def test_what_a_file_may_compute_and_sleep_in_all_the_boxes_of_its_grading_stays_under_the_batchs_backstop():
    """A batch's wall-clock backstop (SUBMISSION_SECONDS) is for the grader's faults. A file's CPU budgets in every
    box of its grading, and the time asleep each box allows (Limits.asleep_seconds, ASLEEP_PER_CPU_SECOND), add up to
    well under it, with a quarter more for the grader's own work (before Limits.grading_seconds, a red team's file
    used 776 s of CPU; while ten seconds of any waiting were allowed per CPU second, one that slept nine parts in ten
    could reach it: tests/test_asleep.py). On a machine that is not overloaded: the time a box waits for a core is not
    charged, and neither is sleep a file hides in the mean (it pays as much CPU time)."""
    limits = Limits()

    def most(cpu_budget: float) -> float:
        """CPU seconds and seconds asleep of a box: the last start and call may overshoot its CPU budget."""
        cpu = cpu_budget + limits.import_seconds + limits.call_seconds
        return cpu + limits.asleep_seconds + ASLEEP_PER_CPU_SECOND * cpu

    boxes = {"grading and searches": most(limits.grading_seconds),
             "audit replays (two boxes)": 2 * most(tracing.REPLAY_CPU_SECONDS),
             "efficiency (two functions)": most(2 * EFFICIENCY_SECONDS),
             "feedback animation": most(FEEDBACK_ANIMATION_SECONDS)}
    assert 1.25 * sum(boxes.values()) <= SUBMISSION_SECONDS, boxes
