"""The TA's batch: layouts, grades.csv, pages, re-runs, interruption, hostile neighbours."""

import csv
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import batch
from grader.spec import ITEM_NAMES
from grader.submissions import DiscoveryError, discover

from .test_grader_corpus import BUGS, TEXTBOOK, VECTORISED, mutate
from .test_hostile import FAST, needs_namespaces, processes_matching

REPO = Path(__file__).resolve().parents[1]
# What would make a browser fetch something: a page must hold all it shows.
LOADS_FROM_NETWORK = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?(https?:)?//|@import""", re.I)


def read_grades(out: Path) -> dict[str, dict]:
    with open(out / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", "score", "max_score", *ITEM_NAMES, "status"]
    assert [r["student"] for r in rows] == sorted(r["student"] for r in rows)
    return {r["student"]: r for r in rows}


def run_batch(submissions: Path, out: Path, **options) -> tuple[list[batch.Outcome], str]:
    stream = io.StringIO()
    outcomes = batch.run(discover(submissions, exclude=(out,)), submissions, out,
                         batch.Options(**{"jobs": 2, "limits": FAST, **options}), stream)
    return outcomes, stream.getvalue()


# -- finding submissions ---------------------------------------------------------
def test_folders_and_files_per_student_are_both_found(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "granularGas.py").write_text("x = 1\n")
    (tmp_path / "bob.py").write_text("y = 2\n")
    (tmp_path / "carol").mkdir()
    (tmp_path / "notes.txt").write_text("not a submission")
    found = {s.student: s for s in discover(tmp_path)}
    assert sorted(found) == ["alice", "bob", "carol"]
    assert found["alice"].source == b"x = 1\n" and found["bob"].source == b"y = 2\n"
    assert found["carol"].source is None and "no granularGas.py" in found["carol"].problem


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
    assert all(s.source is None for s in discover(tmp_path, assignment="other"))


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


def test_output_folder_is_never_one_that_holds_other_data(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.py").write_text("")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "thesis.tex").write_text("precious")
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "subs"), "--out",
                           str(tmp_path / "busy")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "not empty" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "busy" / "thesis.tex").read_text() == "precious"
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "subs"), "--out",
                           str(tmp_path / "out"), "--jobs", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--jobs 0" in done.stderr


# -- a whole batch ---------------------------------------------------------------
def hostile_neighbour(subs: Path, out: Path, marker: str) -> str:
    """A submission that tries to forge its neighbour's grade and leave a process behind."""
    targets = [out / "victim" / "results.json", out / "grades.csv", subs / "victim" / "results.json",
               subs / "victim" / "granularGas.py"]
    fake = json.dumps({"score": 100, "max_score": 100, "tests": []})
    lines = ["import os", f"for p in {[str(t) for t in targets]!r}:", "    try:",
             f"        open(p, 'w').write({fake!r})", "        print('WROTE', p)",
             "    except OSError as exc:", "        print('BLOCKED', exc)",
             "if os.fork() == 0:", "    os.setsid()", f"    os.execv('/bin/sh', ['sh', '-c', '{marker}; :'])",
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
    marker = f"sleep {800000 + os.getpid() % 90000}"
    (subs / "mallory.py").write_text(hostile_neighbour(subs, out, marker))
    (subs / "hangs.py").write_text("while True:\n    pass\n")
    (subs / "nobody").mkdir()

    outcomes, progress = run_batch(subs, out)

    grades = read_grades(out)
    assert grades["victim"]["score"] == "100" and grades["victim"]["status"] == "graded"
    assert float(grades["buggy"]["contact_time_grains"]) < 15 and float(grades["buggy"]["update"]) == 20
    assert float(grades["mallory"]["score"]) < 5 and grades["mallory"]["status"] == "graded"
    assert grades["hangs"]["status"] == "timeout at import" and grades["hangs"]["score"] == "0"
    assert grades["nobody"]["score"] == "" and grades["nobody"]["status"].startswith("missing")
    # Nothing forged, nothing left behind.
    assert hashlib.sha256((subs / "victim" / "granularGas.py").read_bytes()).hexdigest() == victim_hash
    assert sorted(p.name for p in (subs / "victim").iterdir()) == ["granularGas.py"]
    victim = json.loads((out / "victim" / "results.json").read_text())
    assert victim["score"] == 100 and len(victim["tests"]) > 10
    mallory = json.loads((out / "mallory" / "results.json").read_text())
    assert "WROTE" not in mallory["extra_data"]["printed"] and "BLOCKED" in mallory["extra_data"]["printed"]
    assert not processes_matching(marker)
    assert "[5/5]" in progress
    # Pages: self-contained, with what a student and a TA need.
    page = (out / "buggy" / "feedback.html").read_text()
    assert "contact_time_grains" in page and "from granularGas import" in page and "15 / 15" in page
    summary = (out / "summary.html").read_text()
    assert "<svg" in summary and "timeout at import" in summary and "Pass rate" in summary
    assert 'href="victim/feedback.html"' in summary
    for html in (page, summary):
        assert not LOADS_FROM_NETWORK.search(html)


def test_rerun_skips_unchanged_files_and_regrades_changed_ones(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "a.py").write_text(VECTORISED.read_text())
    (subs / "b.py").write_text("def update(x, v, R, m, w, indexOld, r, dt, t):\n    return t\n")
    first, _ = run_batch(subs, out)
    assert not any(o.reused for o in first)
    started = time.monotonic()
    second, progress = run_batch(subs, out)
    assert all(o.reused for o in second) and "unchanged, kept" in progress
    assert time.monotonic() - started < 5
    assert [o.row for o in first] == [o.row for o in second]
    (subs / "b.py").write_text(TEXTBOOK.read_text())
    third, _ = run_batch(subs, out)
    assert [o.reused for o in third] == [True, False] and read_grades(out)["b"]["score"] == "100"
    forced, _ = run_batch(subs, out, force=True)
    assert not any(o.reused for o in forced)
    # A different rubric is a different grade: nothing is reused.
    reweighted, _ = run_batch(subs, out, points={name: 10.0 for name in ITEM_NAMES})
    assert not any(o.reused for o in reweighted) and read_grades(out)["a"]["max_score"] == "80"


def test_an_interrupted_batch_keeps_every_finished_grade(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "a.py").write_text(VECTORISED.read_text())
    marker = f"sleep {700000 + os.getpid() % 90000}"
    (subs / "b.py").write_text(f"import os\nos.system('{marker}')\n")
    argv = [sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out), "--jobs", "1",
            "--import-timeout", "5"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 180
    while not (out / "a" / "results.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    while not processes_matching(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    grades = read_grades(out)
    assert grades["a"]["score"] == "100" and grades["b"]["status"] == "not graded (interrupted)"
    assert not processes_matching(marker)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "a: 100/100 graded (unchanged, kept)" in done.stderr
    assert read_grades(out)["b"]["status"] == "timeout at import"
