"""The TA's batch: layouts, grades.csv, pages, re-runs, interruption, and submissions that attack the batch.

Real runs throughout. Most grade tiny files on the public tests only
(``hidden=False``): what is tested is the batch around the grading.
"""

import csv
import dataclasses
import hashlib
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grader import errors
from grader.commands.batch import pool as batch
from grader.commands.batch import signing
from grader.commands.batch.submissions import MAX_BYTES, DiscoveryError, Submission, discover, safe_name, scan, shown
from grader.commands.batch.worker import WorkerRequest, options_from_json, options_to_json
from grader.grading.runner import GradeOptions
from grader.sandbox import isolation
from grader.spec import ITEM_LEGEND, ITEM_NAMES, STATEMENT_ORDER
from grader.spec.limits import Limits

from .test_grader_corpus import BUGS, TEXTBOOK, mutate
from .test_hostile import FAST, needs_namespaces, processes_matching

REPO = Path(__file__).resolve().parents[1]
# What would make a browser fetch something: a page must hold all it shows.
LOADS_FROM_NETWORK = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//|@import""", re.I)
TINY = "x = 1\n"  # imports, defines nothing: graded fast, 0 points
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to drop to another uid)")


def read_grades(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", "score", "max_score", *STATEMENT_ORDER, "status"]  # as every report
    return {r["student"]: r for r in rows}


def run_batch(submissions: Path, out: Path, extra: tuple[Submission, ...] = (), **options) -> tuple[list, str]:
    stream = io.StringIO()
    found = scan(submissions, exclude=(out,))
    chosen = {"jobs": 2, "limits": FAST, "hidden": False, "animations": False, **options}
    outcomes = batch.run([*found.submissions, *extra], submissions, out, batch.Options(**chosen), stream,
                         skipped=found.skipped)
    return outcomes, stream.getvalue()


def student_files(out: Path, student: str) -> Path:
    return out / "students" / safe_name(student)


# -- finding submissions ---------------------------------------------------------
def test_folders_and_files_per_student_are_both_found_and_the_rest_is_listed(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "granularGas.py").write_text("x = 1\n")
    (tmp_path / "bob.py").write_text("y = 2\n")
    (tmp_path / "carol").mkdir()
    (tmp_path / "notes.txt").write_text("not a submission")
    (tmp_path / "_hidden").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "last_week").mkdir()  # another batch's output (a review's was a student "missing: no granularGas.py")
    (tmp_path / "last_week" / batch.MARKER).write_text("written by python -m grader batch\n")
    (tmp_path / "alice" / batch.MARKER).write_text("")  # a student's copy of the marker changes nothing
    (tmp_path / "frank").mkdir()
    (tmp_path / "frank" / batch.MARKER).write_text("")  # nor with a file under another name: told to rename it
    (tmp_path / "frank" / "hw3.py").write_text("z = 3\n")
    (tmp_path / "dave.zip").write_bytes(b"PK\x03\x04")  # archives: named as such (a review saw only "skipped")
    (tmp_path / "erin").mkdir()
    (tmp_path / "erin" / "submission.zip").write_bytes(b"PK\x03\x04")
    found = scan(tmp_path)
    by_student = {s.student: s for s in found.submissions}
    assert "an archive: unpack it into the student's folder" in by_student.pop("erin").problem
    assert "another batch's output folder" in by_student.pop("last_week").problem
    assert "but hw3.py: rename it to granularGas.py" in by_student.pop("frank").problem
    assert sorted(by_student) == ["alice", "bob", "carol"]
    assert by_student["alice"].source == b"x = 1\n" and by_student["bob"].source == b"y = 2\n"
    assert by_student["carol"].source is None and by_student["carol"].problem == "no granularGas.py"
    reasons = {s.path.name: s.reason for s in found.skipped}
    assert set(reasons) == {"notes.txt", "_hidden", ".git", "dave.zip"}
    assert "an archive, which the batch does not unpack" in reasons["dave.zip"]
    assert "hidden" in reasons["_hidden"] and "not a submission" in reasons[".git"]
    assert "neither a folder nor a .py file" in reasons["notes.txt"]


def test_nbgrader_layout_needs_the_assignment_name(tmp_path):
    for student in ("ann", "ben"):
        folder = tmp_path / "submitted" / student / "gas"
        folder.mkdir(parents=True)
        (folder / "granularGas.py").write_text(f"name = {student!r}\n")
    with pytest.raises(DiscoveryError, match="--assignment"):
        discover(tmp_path)
    for root in (tmp_path, tmp_path / "submitted"):
        found = discover(root, assignment="gas")
        assert [s.student for s in found] == ["ann", "ben"] and all(s.source for s in found)
    other = discover(tmp_path, assignment="other")
    assert all(s.source is None and s.problem == "no other/granularGas.py" for s in other)


@pytest.mark.parametrize("setup, fragment", [
    (lambda p: None, "no submissions"),
    (lambda p: ((p / "dan").mkdir(), (p / "dan" / "granularGas.py").write_text(""), (p / "dan.py").write_text("")),
     "two submissions for dan"),
])
def test_unusable_submission_folders_are_refused_clearly(tmp_path, setup, fragment):
    setup(tmp_path)
    with pytest.raises(DiscoveryError, match=fragment):
        discover(tmp_path)
    with pytest.raises(DiscoveryError, match="no such folder"):
        discover(tmp_path / "absent")


def plant_links_and_oddities(subs: Path) -> dict[str, str]:
    """Files a student could hand in to read what is not theirs or to stop the batch; their expected problem."""
    (subs / "alice").mkdir(parents=True, exist_ok=True)
    (subs / "alice" / "granularGas.py").write_text(TINY)
    (subs / "shadow.py").symlink_to("/etc/shadow")
    (subs / "environ").mkdir()
    (subs / "environ" / "granularGas.py").symlink_to("/proc/self/environ")
    (subs / "copycat").mkdir()
    (subs / "copycat" / "granularGas.py").symlink_to(subs / "alice" / "granularGas.py")
    (subs / "twin").symlink_to(subs / "alice")
    reference = Path(importlib.util.find_spec("reference").submodule_search_locations[0]) / "granularGas.py"
    (subs / "solution.py").symlink_to(reference)
    (subs / "fifo").mkdir()
    os.mkfifo(subs / "fifo" / "granularGas.py")
    (subs / "nested").mkdir()
    (subs / "nested" / "granularGas.py").mkdir()
    (subs / "huge.py").write_bytes(b"#" * (MAX_BYTES + 1))
    (subs / "dangling.py").symlink_to(subs / "absent.py")
    return {"shadow": "shadow.py is a link", "environ": "granularGas.py is a link",
            "copycat": "granularGas.py is a link", "twin": "granularGas.py is in a folder that is a link",
            "solution": "solution.py is a link", "fifo": "granularGas.py is not a regular file",
            "nested": "granularGas.py is a folder, not a file", "huge": "huge.py has more than",
            "dangling": "dangling.py is a link"}


def test_links_and_unreadable_files_cost_their_student_only(tmp_path):
    expected = plant_links_and_oddities(tmp_path)
    found = {s.student: s for s in discover(tmp_path)}
    assert found["alice"].source == TINY.encode()
    assert sorted(found) == sorted([*expected, "alice"])
    for student, problem in expected.items():
        assert found[student].source is None, student
        assert found[student].problem.startswith(problem), (student, found[student].problem)


@needs_root
def test_a_file_the_grader_cannot_read_costs_its_student_only():
    # Root reads a mode-000 file: discovery runs as another uid here, the way a TA's account would.
    folder = Path(tempfile.mkdtemp(prefix="granular-test-"))
    try:
        folder.chmod(0o755)
        (folder / "ok.py").write_text(TINY)
        (folder / "ok.py").chmod(0o644)
        (folder / "secret.py").write_text(TINY)
        (folder / "secret.py").chmod(0)
        # Everything imported first: the interpreter's own files may be closed to that uid.
        script = ("import os, sys; from pathlib import Path; from grader.commands.batch.submissions import discover; "
                  "os.setgid(65534); os.setuid(65534); "
                  "print({s.student: s.problem for s in discover(Path(sys.argv[1]))})")
        done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True,
                              timeout=120, cwd=REPO)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str({"ok": "", "secret": "cannot read secret.py: permission denied"})
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=True)


def test_names_become_safe_distinct_folders_and_escaped_text():
    names = ["alice", "grades.csv", "summary.html", "..", ".", "../../etc", "=1+1", '=HYPERLINK("x")',
             "evil\x1b[31m\nmallory", "a b", "a_b", "Zoë", "students", "x" * 300, "a-0123456789"]
    folders = [safe_name(n) for n in names]
    assert len(set(folders)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", f) for f in folders)
    assert safe_name("alice") == "alice" and safe_name("a-0123456789") != "a-0123456789"
    assert shown("evil\x1b[31m\nmallory") == "evil\\x1b[31m\\nmallory" and shown("Zoë") == "Zoë"
    assert shown("back\\slash\u202e") == "back\\\\slash\\u202e"


def test_csv_cells_that_would_be_formulas_are_neutralised():
    for cell in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", '=HYPERLINK("x")'):
        assert batch.csv_cell(cell) == "'" + cell
    assert batch.csv_cell("\rx") == "'\\rx"  # a carriage return shown, not obeyed (wire.printable)
    assert batch.csv_cell("alice") == "alice" and batch.csv_cell(-1) == -1


def test_worker_options_survive_json_exactly():
    every = Limits(call_seconds=1.5, import_seconds=3.5, memory_bytes=900 * 1024**2, cpu_seconds=300,
                   file_bytes=2 * 1024**2, disk_bytes=16 * 1024**2, files=500, processes=9, function_seconds=60.0,
                   namespaces=False)
    options = GradeOptions({name: 10.0 for name in ITEM_NAMES}, every, False, True, (Path("/a"), Path("/b")))
    request = WorkerRequest("=1+1\n", Path("/s/granularGas.py"), Path("/s/reply.json"), options, False, "f", 7)
    assert WorkerRequest.from_json(request.to_json()) == request
    assert set(options_to_json(options)["limits"]) == {f.name for f in dataclasses.fields(Limits)}
    broken = options_to_json(options)
    del broken["limits"]["disk_bytes"]
    with pytest.raises(ValueError, match="disk_bytes"):
        options_from_json(broken)


# -- whole batches ----------------------------------------------------------------
def test_hostile_names_and_links_in_one_batch(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    expected = plant_links_and_oddities(subs)
    (subs / "alice" / "granularGas.py").unlink()
    expected["alice"] = "no granularGas.py"
    names = ["grades.csv", "summary.html", "evil\x1b[31m\nmallory,100,forged"]
    for name in names:
        (subs / name).mkdir()
        (subs / name / "granularGas.py").write_text(TINY)
    (subs / '=HYPERLINK("x").py').write_text(TINY)
    (subs / "=1+1").mkdir()
    expected["=1+1"] = "no granularGas.py"
    dotdot = Submission("..", subs / "..", TINY.encode())  # as nbgrader or an API caller could name one

    outcomes, progress = run_batch(subs, out, extra=(dotdot,))

    graded = [*names, '=HYPERLINK("x")', ".."]
    by_student = {o.student: o for o in outcomes}
    assert sorted(by_student) == sorted([*graded, *expected])
    for name in graded:
        assert by_student[name].results is not None and by_student[name].status == "graded", name
        assert json.loads((student_files(out, name) / "results.json").read_text())["extra_data"]["student"] == name
    for name, problem in expected.items():
        word = "too large" if name == "huge" else "missing"  # a file there, past the limit, is not "missing"
        assert by_student[name].status.startswith(f"{word}: {problem}") and by_student[name].results is None
    # The batch's own files are its own; nothing written beside OUT.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "subs"]
    assert {p.name for p in out.iterdir()} == {".grader-key", ".granular-grader-batch", "grades.csv",
                                               "summary.html", "students"}
    assert {p.name for p in (out / "students").iterdir()} == {safe_name(n) for n in graded}
    assert (out / "summary.html").read_text().startswith("<!DOCTYPE html>")
    # grades.csv: a row per student, read back exactly; no cell a spreadsheet would run.
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    assert len(rows) == len(by_student)
    assert {r[0] for r in rows} == {batch.csv_cell(n) for n in by_student}
    assert not [cell for row in rows for cell in row if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    # The terminal: one line per student, no control character.
    table = batch.grades_table(outcomes)
    for text in (table, progress):
        assert "\x1b" not in text and "mallory,100,forged" in text
        assert "evil\\x1b[31m\\nmallory" in text
    assert table.splitlines()[len(outcomes) + 1:] == ["", ITEM_LEGEND]  # one line per student, then the legend
    # Nothing a link pointed to reached any output.
    shadow = Path("/etc/shadow").read_bytes().splitlines()[0]
    for path in out.rglob("*"):
        if path.is_file():
            assert shadow not in path.read_bytes(), path


def forge(out: Path, student: str, score: float) -> None:
    path = student_files(out, student) / "results.json"
    results = json.loads(path.read_text())
    results["score"] = score
    results["tests"][0]["score"] = score
    path.write_text(json.dumps(results, indent=2) + "\n")


def test_reruns_keep_only_verified_unchanged_records_and_follow_no_link_in_out(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(TINY)
    (subs / "bob.py").write_text("y = 2\n")
    first, _ = run_batch(subs, out)
    assert [o.status for o in first] == ["graded"] * 2 and not any(o.reused for o in first)
    # What a process left behind by a submission, or anyone but the grader, could do to OUT.
    forge(out, "alice", 100)
    outside = tmp_path / "precious.txt"
    outside.write_text("precious")
    page = student_files(out, "bob") / "feedback.html"
    page.unlink()
    page.symlink_to(outside)
    (out / "grades.csv").unlink()
    (out / "grades.csv").symlink_to(outside)

    code = batch.fingerprint(batch.Options(limits=FAST, hidden=False, animations=False))
    second, progress = run_batch(subs, out)

    assert [(o.reused, o.note) for o in second] == [(False, batch.FORGED_NOTE)] * 2
    assert progress.count(batch.FORGED_NOTE) == 2 and batch.FORGED_NOTE in (out / "summary.html").read_text()
    assert read_grades(out)["alice"]["score"] == "0"
    assert json.loads((student_files(out, "alice") / "results.json").read_text())["score"] == 0
    assert outside.read_text() == "precious"
    assert not (out / "grades.csv").is_symlink() and not page.is_symlink()
    # Unchanged and verified: kept at once; a changed file only is regraded.
    started = time.monotonic()
    third, progress = run_batch(subs, out)
    if batch.fingerprint(batch.Options(limits=FAST, hidden=False, animations=False)) != code:
        pytest.skip("the grader's own files changed while this test ran: nothing can be reused")
    assert all(o.reused for o in third) and "unchanged, kept" in progress and "record changed" not in progress
    assert time.monotonic() - started < 10 and [o.row for o in third] == [o.row for o in second]
    (subs / "bob.py").write_text("y = 3\n")
    fourth, _ = run_batch(subs, out)
    assert [o.reused for o in fourth] == [True, False]
    # Another rubric, other limits or other options: another grade, nothing reused.
    plain = batch.fingerprint(batch.Options(limits=FAST, hidden=False, animations=False))
    for changed in ({"points": {name: 10.0 for name in ITEM_NAMES}}, {"limits": Limits(call_seconds=3.0)},
                    {"hidden": True}, {"allow_weak_isolation": True}, {"animations": True}):
        assert batch.fingerprint(batch.Options(**{"limits": FAST, "hidden": False, "animations": False,
                                                  **changed})) != plain, changed


def test_a_rerun_leaves_no_record_of_a_file_gone_and_names_folders_of_no_student_of_its_own(tmp_path):
    """A review: emma was graded, her file removed, the batch run again into the same OUT: grades.csv said
    "missing", her results.json still said her old score. And another class run into a copy of that OUT left the
    first class's folders, unmentioned."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "emma.py").write_text(TINY)
    (subs / "finn.py").write_text(TINY)
    run_batch(subs, out)
    assert (student_files(out, "emma") / "results.json").exists()
    (subs / "emma.py").unlink()
    (subs / "emma").mkdir()  # her folder, emptied: a student of this batch with nothing handed in
    (subs / "finn.py").unlink()  # gone altogether: his folder in OUT is no student's of this batch
    (subs / "gus.py").write_text(TINY)
    outcomes, progress = run_batch(subs, out)
    by_student = {o.student: o.status for o in outcomes}
    assert by_student == {"emma": "missing: no granularGas.py", "gus": "graded"}
    assert not any((student_files(out, "emma") / name).exists() for name in ("results.json", "feedback.html",
                                                                              "record.sig"))
    assert (student_files(out, "finn") / "results.json").exists()  # kept: never deleted, but named
    assert "1 folder of students/ holds no student of this batch" in progress and "finn" in progress
    assert set(read_grades(out)) == {"emma", "gus"}


def test_every_option_reaches_grade_file(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(TINY)
    every = Limits(call_seconds=1.5, import_seconds=3.5, memory_bytes=900 * 1024**2, cpu_seconds=300,
                   file_bytes=2 * 1024**2, disk_bytes=16 * 1024**2, files=500, processes=9, function_seconds=60.0,
                   namespaces=True)
    points = {name: 10.0 for name in ITEM_NAMES}
    (outcome,), _ = run_batch(subs, out, limits=every, points=points, allow_weak_isolation=True)
    assert outcome.options is not None
    # The sandbox's self-test ran once, in the batch, before its workers.
    assert dataclasses.replace(outcome.options, hide=()) == GradeOptions(points, every, False, True, (),
                                                                         selftest=False)
    assert outcome.options.hide[:2] == (subs.resolve(), out.resolve()) and len(outcome.options.hide) == 3
    assert read_grades(out)["alice"]["max_score"] == "80"


def test_hidden_tests_without_strong_isolation_stop_the_batch_before_anyone_is_graded(tmp_path):
    weak = dataclasses.replace(FAST, namespaces=False)
    probe = getattr(isolation, "probe", None)
    if probe is not None and probe(False).strong:
        pytest.skip("this machine's sandbox is strong even without namespaces")
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(TINY)
    with pytest.raises(errors.IsolationTooWeak, match="--allow-weak-isolation"):
        run_batch(subs, out, limits=weak, hidden=True)
    assert not out.exists()


def test_a_sandbox_fault_is_the_graders_error_never_a_zero(tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    # Every worker's grade_file fails the way a sandbox that cannot start does.
    (hook / "sitecustomize.py").write_text(textwrap.dedent("""
        import os
        if os.environ.get("GRANULAR_TEST_FAULT"):
            from grader import errors
            from grader.grading import runner
            def grade_file(path, options=None, searches_in=None):
                raise errors.SandboxFault("bwrap: cannot start the sandbox (test)")
            runner.grade_file = grade_file
    """))
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(TINY)
    env = dict(os.environ, GRANULAR_TEST_FAULT="1", PYTHONPATH=os.pathsep.join([str(REPO), str(hook)]))
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out), "--jobs", "1"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    row = read_grades(out)["alice"]
    assert row["status"] == "grader error: bwrap: cannot start the sandbox (test)" and row["score"] == ""
    assert not (student_files(out, "alice") / "results.json").exists()


def test_a_sandbox_that_fails_its_self_test_stops_the_batch_before_anyone_is_graded(tmp_path, monkeypatch):
    from grader.sandbox import self_test

    def broken(limits: Limits) -> None:
        raise errors.SandboxFault("the sandbox could not start: bwrap is broken (test)")

    monkeypatch.setattr(self_test, "selftest", broken)
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(TINY)
    with pytest.raises(errors.SandboxFault, match="bwrap is broken"):
        run_batch(subs, out)
    assert not (out / "grades.csv").exists() and not (out / "students").exists()


def batch_script(subs: Path, out: Path) -> list[str]:
    code = ("import sys; from pathlib import Path; from grader.commands.batch import pool as batch; "
            "from grader.commands.batch.submissions import scan; "
            "from grader.spec.limits import Limits; subs, out = Path(sys.argv[1]), Path(sys.argv[2]); "
            "found = scan(subs, exclude=(out,)); "
            "outcomes = batch.run(list(found.submissions), subs, out, batch.Options(jobs=1, hidden=False, "
            "limits=Limits(call_seconds=2.0, import_seconds=4.0), animations=False)); "
            "print(*[o.status for o in outcomes], sep='\\n')")
    return [sys.executable, "-c", code, str(subs), str(out)]


def children(pid: int, text: str) -> list[int]:
    return [p for p in processes_matching(text) if Path(f"/proc/{p}/stat").read_text().split()[3] == str(pid)]


FORK_SERVER = "grader.commands.batch.forkserver"


def batch_workers(batch: int) -> list[int]:
    """The workers of a running batch: children of the batch's fork server (and so named like it)."""
    return [worker for server in children(batch, FORK_SERVER) for worker in children(server, FORK_SERVER)]


def batch_worker(batch: int) -> int:
    (worker,) = batch_workers(batch)
    return worker


def wait_for(predicate, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.1)


@needs_namespaces
def test_a_killed_worker_or_batch_leaves_nothing_behind_and_is_graded_next_time(tmp_path):
    tmp = Path(tempfile.mkdtemp(prefix="granular-test-"))  # the batch's TMPDIR, to see what is left in it
    tmp.chmod(0o711)
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    marker = f"linger{812000 + os.getpid() % 90000}"
    # A process that outlives the submission's import unless the sandbox kills it; the import lasts a few seconds
    # (asleep), so that the worker is still there to be killed. A box starts no program: it names itself.
    # (Its setsid is refused in a box with the seccomp filter, and it goes on without.)
    (subs / "lingers.py").write_text(f"import ctypes, os, sys, time\nif os.fork() == 0:\n"
                                     "    try:\n        os.setsid()\n    except PermissionError:\n        pass\n"
                                     f"    ctypes.CDLL(None).prctl(15, b'{marker}', 0, 0, 0)\n"
                                     "    while True:\n        time.sleep(1000)\n"
                                     "time.sleep(3)\n")
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(REPO))
    try:
        # 1. The worker is killed: its student is a grader error, its sandbox and processes are gone.
        process = subprocess.Popen(batch_script(subs, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, cwd=REPO, env=env)
        wait_for(lambda: processes_matching(marker) or process.poll() is not None)
        assert process.poll() is None, process.communicate()[1]
        worker = batch_worker(process.pid)
        os.kill(worker, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        assert stdout.strip() == "grader error: the worker was killed by signal 9 (SIGKILL)"
        wait_for(lambda: not processes_matching(marker), 20)
        assert list(tmp.iterdir()) == []
        # 2. The whole batch is killed: its workers and their sandboxes die with it.
        process = subprocess.Popen(batch_script(subs, out), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        wait_for(lambda: processes_matching(marker))
        worker = batch_worker(process.pid)
        (server,) = children(process.pid, FORK_SERVER)
        process.kill()
        process.wait()
        wait_for(lambda: not processes_matching(marker) and not Path(f"/proc/{worker}").exists()
                 and not Path(f"/proc/{server}").exists(), 20)
        assert list(tmp.iterdir()), "the killed batch should have left its staging folder"
        # 3. The next batch removes what was left and grades the student.
        done = subprocess.run(batch_script(subs, out), capture_output=True, text=True, cwd=REPO, env=env,
                              timeout=180)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "graded" and read_grades(out)["lingers"]["score"] == "0"
        assert list(tmp.iterdir()) == [] and not processes_matching(marker)
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=True)


def hostile_neighbour(subs: Path, out: Path, marker: str) -> str:
    """A submission that forges its neighbour's grade now and, from a process left behind, after the batch."""
    targets = [student_files(out, "victim") / "results.json", out / "grades.csv",
               subs / "victim" / "results.json", subs / "victim" / "granularGas.py"]
    fake = json.dumps({"score": 100, "max_score": 100, "tests": []})
    forger = (f"import time\ntime.sleep({marker})\nfor p in {[str(t) for t in targets]!r}:\n"
              f"    open(p, 'w').write({fake!r})\n")
    lines = ["import os, sys", f"for p in {[str(t) for t in targets]!r}:", "    try:",
             f"        open(p, 'w').write({fake!r})", "        print('WROTE', p)",
             "    except OSError as exc:", "        print('BLOCKED', exc)",
             "if os.fork() == 0:", "    try:", "        os.setsid()", "    except PermissionError:",  # seccomp
             "        pass",  # a box starts no program: the process left behind names itself and runs the forger
             f"    import ctypes; ctypes.CDLL(None).prctl(15, b'forger{marker}', 0, 0, 0); exec({forger!r})",
             "def contact_time_grains(x1, x2, v1, v2, R1, R2):",
             "    os.kill(os.getppid(), 9)", "    return 1.0"]
    return "\n".join(lines) + "\n"


@needs_namespaces
def test_a_batch_grades_everyone_and_a_hostile_neighbour_changes_nothing(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "victim").mkdir(parents=True)
    (subs / "victim" / "granularGas.py").write_text(TEXTBOOK.read_text())
    victim_hash = hashlib.sha256((subs / "victim" / "granularGas.py").read_bytes()).hexdigest()
    mutate(subs, TEXTBOOK, BUGS[0][3], name="buggy.py")
    marker = 890000 + os.getpid() % 90000
    (subs / "mallory.py").write_text(hostile_neighbour(subs, out, str(marker)))
    (subs / "nobody").mkdir()

    # Generous limits: the victim's 100 must not depend on how busy the machine is.
    roomy = Limits(call_seconds=10.0, import_seconds=10.0)
    outcomes, progress = run_batch(subs, out, hidden=None, animations=True, limits=roomy)

    grades = read_grades(out)
    assert grades["victim"]["score"] == "100" and grades["victim"]["status"] == "graded"
    assert float(grades["buggy"]["contact_time_grains"]) < 15 and float(grades["buggy"]["score"]) < 100
    assert float(grades["mallory"]["score"]) < 5 and grades["mallory"]["status"] == "graded"
    assert grades["nobody"]["score"] == "" and grades["nobody"]["status"] == "missing: no granularGas.py"
    # Nothing forged, nothing left behind.
    assert hashlib.sha256((subs / "victim" / "granularGas.py").read_bytes()).hexdigest() == victim_hash
    assert sorted(p.name for p in (subs / "victim").iterdir()) == ["granularGas.py"]
    victim = json.loads((student_files(out, "victim") / "results.json").read_text())
    assert victim["score"] == 100 and len(victim["tests"]) > 10
    mallory = json.loads((student_files(out, "mallory") / "results.json").read_text())
    assert "WROTE" not in mallory["extra_data"]["printed"] and "BLOCKED" in mallory["extra_data"]["printed"]
    assert not processes_matching(f"forger{marker}")
    assert "[4/4]" in progress
    # Pages: self-contained, with what a student and a TA need.
    page = (student_files(out, "buggy") / "feedback.html").read_text()
    assert "contact_time_grains" in page and "from granularGas import" in page and "15 / 15" in page
    assert page.count("data:image/gif;base64,") == 1  # its animation, made in the searches' box
    assert "data:image/gif" not in (student_files(out, "victim") / "feedback.html").read_text()
    summary = (out / "summary.html").read_text()
    assert "<svg" in summary and "missing: no granularGas.py" in summary and "Pass rate" in summary
    assert 'href="students/victim/feedback.html"' in summary
    for html in (page, summary):
        assert not LOADS_FROM_NETWORK.search(html)
    # A re-run finds every record as the grader wrote it (kept, or regraded if the grader's code changed).
    again, _ = run_batch(subs, out, hidden=None, animations=True, limits=roomy)
    assert not any(o.note for o in again) and read_grades(out) == grades


def test_output_folder_is_never_one_that_holds_other_data(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.py").write_text("")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "thesis.tex").write_text("precious")
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "subs"), "--out",
                           str(tmp_path / "busy")], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2 and "not empty" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "busy" / "thesis.tex").read_text() == "precious"
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "subs"), "--out",
                           str(tmp_path / "out"), "--jobs", "0"], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 2 and "--jobs 0" in done.stderr
    (tmp_path / "notes.txt").write_text("precious")
    for bad in (tmp_path / "notes.txt", tmp_path / "notes.txt" / "sub"):
        done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "subs"), "--out", str(bad)],
                              capture_output=True, text=True, timeout=120, cwd=REPO)
        assert done.returncode == 2 and f"--out {bad}" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "precious"


def test_an_interrupted_batch_keeps_every_finished_grade(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "a.py").write_text(TINY)
    (subs / "b.py").write_text("while True:\n    pass\n")
    argv = [sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out), "--jobs", "1",
            "--import-timeout", "2"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    wait_for(lambda: (student_files(out, "a") / signing.SIGNATURE).exists(), 180)
    wait_for(lambda: batch_workers(process.pid), 60)
    worker = batch_worker(process.pid)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    grades = read_grades(out)
    assert grades["a"]["status"] == "graded" and grades["b"]["status"] == "not graded (interrupted)"
    assert not Path(f"/proc/{worker}").exists()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "a: 0/100 graded (unchanged, kept)" in done.stderr
    assert read_grades(out)["b"]["status"] == "timeout at import"
    assert (student_files(out, "b") / "results.json").exists()
    # b changes and its regrading is interrupted: the earlier file's results and page must not stand beside
    # "not graded (interrupted)" (a review found them there).
    (subs / "b.py").write_text("while True:\n    pass  # changed\n")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    wait_for(lambda: batch_workers(process.pid), 60)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    grades = read_grades(out)
    assert grades["a"]["status"] == "graded" and grades["b"]["status"] == "not graded (interrupted)"
    assert (student_files(out, "a") / "results.json").exists()
    left = student_files(out, "b")
    assert not (left.exists() and [p.name for p in left.iterdir()]), list(left.iterdir())


def test_students_whose_folders_differ_only_by_case_are_refused_before_anyone_is_graded(tmp_path):
    """A review: Bob and bob got students/Bob and students/bob, one folder once OUT is copied to macOS or Windows."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "Bob.py").write_text(TINY)
    (subs / "bob.py").write_text(TINY)
    with pytest.raises(batch.BatchError, match="ignores case"):
        run_batch(subs, out)
    assert not (out / "grades.csv").exists()


def test_an_interrupt_just_after_a_grade_is_stored_keeps_that_grade(tmp_path, monkeypatch):
    """A review: the record is stored a moment before its outcome is noted; an interrupt in between must not drop
    the grade just made (it is kept as a re-run would keep it), while an earlier file's record is dropped."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "a.py").write_text(TINY)
    stored = batch._store

    def store_then_interrupt(*args, **kwargs):
        stored(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "_store", store_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_batch(subs, out, jobs=1)
    assert read_grades(out)["a"]["status"] == "graded"
    assert (student_files(out, "a") / "results.json").exists()
