"""The batch as a TA meets it: misnamed files, the progress shown, the time left, one rounding, bad --out.

Fast tests on a temporary folder and on fake clocks; one test grades two tiny files for real.
"""

import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.commands import cli
from grader.commands.batch import pool as batch
from grader.commands.batch import progress as shown_progress
from grader.commands.batch.outcome import Outcome
from grader.commands.batch.submissions import MAX_BYTES, scan
from grader.grading.results import PASSED, ItemScore, Results, TestRecord
from grader.reports.feedback import points
from grader.spec import ITEM_NAMES, STATEMENT_ORDER
from grader.spec.limits import Limits

from .test_self_check import WALLS_OF_LENGTH_ONE_ONLY

REPO = Path(__file__).resolve().parents[1]
TINY = "x = 1\n"


def problems(folder: Path, accept: bool = False) -> dict[str, tuple[str, str, bool]]:
    """student: (problem, note, has a source)."""
    return {s.student: (s.problem, s.note, s.source is not None)
            for s in scan(folder, accept_single_py=accept).submissions}


# -- misnamed files ------------------------------------------------------------------
def misnamed_folder(root: Path) -> Path:
    for student, name, text in [("caps", "GranularGas.py", TINY), ("lower", "granulargas.py", TINY),
                                ("hw", "hw3_solution.py", TINY), ("notebook", "granularGas.ipynb", "{}"),
                                ("linked", "hw3.py", None), ("big", "hw3.py", "#" * (MAX_BYTES + 1)),
                                ("evil", "evil\x1b[31m.py", TINY), ("empty", None, None)]:
        (root / student).mkdir(parents=True)
        if name and text is not None:
            (root / student / name).write_text(text)
        elif name:
            (root / student / name).symlink_to("/etc/passwd")
    (root / "two").mkdir()
    for name in ("a.py", "b.py"):
        (root / "two" / name).write_text(TINY)
    (root / "dora.PY").write_text(TINY)
    return root


def test_a_misnamed_file_is_named_with_the_fix_never_a_bare_missing(tmp_path):
    found = problems(misnamed_folder(tmp_path))
    assert not any(has for _, _, has in found.values())
    assert found["caps"][0] == ("no granularGas.py, but GranularGas.py: rename it to granularGas.py (capitals matter), "
                                "or grade it as it is with --accept-single-py")  # which grades it (a review)
    assert found["lower"][0].startswith("no granularGas.py, but granulargas.py: rename it to granularGas.py")
    assert found["hw"][0] == ("no granularGas.py, but hw3_solution.py: rename it to granularGas.py, or grade it as "
                              "it is with --accept-single-py")
    assert "granularGas.ipynb: hand in the Python file itself" in found["notebook"][0]
    assert "hw3.py, a link" in found["linked"][0]
    assert found["two"][0].startswith("no granularGas.py, but 2 .py files (a.py, b.py): rename the one to grade")
    assert found["dora"][0].startswith("dora.PY: the name must end in .py, in lower case; rename it to dora.py")
    assert found["empty"][0] == "no granularGas.py"
    # The student's file name is the student's text: escaped before it reaches any status.
    assert "\x1b" not in found["evil"][0] and "evil\\x1b[31m.py" in found["evil"][0]


def test_a_file_name_in_a_status_is_escaped_once_on_the_terminal(tmp_path):
    # The status carries the name escaped already: the terminal line and table must not escape it again
    # (they showed a\\x1bb.py and c\\\\d.py for a\x1bb.py and c\d.py).
    (tmp_path / "alice").mkdir()
    for name in ("a\x1bb.py", "c\\d.py"):
        (tmp_path / "alice" / name).write_text(TINY)
    submission = scan(tmp_path).submissions[0]
    outcome = Outcome("alice\x1b", f"missing: {submission.problem}", None, note="x\x1by")
    line = shown_progress.student_line(outcome, 1, 1)
    table = batch.grades_table([outcome])
    for text in (line, table):
        assert "a\\x1bb.py" in text and "c\\\\d.py" in text and "a\\\\x1bb.py" not in text, text
        assert "\x1b" not in text and "alice\\x1b" in text
    assert "(x\\x1by)" in line


def test_accept_single_py_grades_the_only_python_file_and_says_so(tmp_path):
    found = problems(misnamed_folder(tmp_path), accept=True)
    for student, name in [("caps", "GranularGas.py"), ("lower", "granulargas.py"), ("hw", "hw3_solution.py")]:
        assert found[student] == ("", f"graded {name} as granularGas.py, by --accept-single-py", True), student
    assert found["dora"] == ("", "graded dora.PY as a .py file, by --accept-single-py", True)
    # What it cannot use is named with the reason; two files are never guessed between.
    assert found["linked"][0].startswith("hw3.py is a link, which the batch does not follow") and not found["linked"][2]
    assert found["big"][0].startswith("hw3.py has more than") and not found["big"][2]
    assert "2 .py files" in found["two"][0] and "takes a folder's only .py file" in found["two"][0]
    assert found["notebook"][2] is False and found["empty"][0] == "no granularGas.py"


def test_the_hint_reaches_an_nbgrader_assignment_folder(tmp_path):
    folder = tmp_path / "submitted" / "ann" / "gas"
    folder.mkdir(parents=True)
    (folder / "Granulargas.py").write_text(TINY)
    (ann,) = scan(tmp_path, "gas").submissions
    assert ann.source is None and "but Granulargas.py: rename it to granularGas.py" in ann.problem
    (ann,) = scan(tmp_path, "gas", accept_single_py=True).submissions
    assert ann.source == TINY.encode() and ann.path == folder / "Granulargas.py"


# -- progress and time left ------------------------------------------------------------
class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def screen(written: str) -> list[str]:
    """The lines a terminal shows for ``written`` (carriage return, erase to end of line, newline)."""
    lines, cursor = [""], 0
    for piece in re.split(r"(\r|\n|\x1b\[K)", written):
        if piece == "\r":
            cursor = 0
        elif piece == "\n":
            lines.append("")
            cursor = 0
        elif piece == "\x1b[K":
            lines[-1] = lines[-1][:cursor]
        elif piece:
            lines[-1] = lines[-1][:cursor] + piece + lines[-1][cursor + len(piece):]
            cursor += len(piece)
    return lines


def graded(student: str, score: float, reused: bool = False) -> Outcome:
    return Outcome(student, "graded", typed_results(score, [0.0] * len(ITEM_NAMES)), reused=reused)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_every_finished_student_stays_above_the_bar_as_they_finish():
    terminal, clock = FakeTerminal(), Clock()
    progress = shown_progress.Progress(3, terminal, clock, columns=lambda: 200)
    progress.begin(3)
    progress.update(2)
    clock.now += 20
    progress.update(2, graded("evil\x1b[2J\nmallory", 33.333333))
    first = screen(terminal.getvalue())
    assert first[0] == "[1/3] evil\\x1b[2J\\nmallory: 33.33/100 graded" and first[1].startswith("[##########")
    assert "\x1b[2J" not in terminal.getvalue()
    clock.now += 20
    progress.update(1, graded("bob", 50))
    progress.update(0, Outcome("carol", "timeout at import", None))
    progress.finish()
    shown = screen(terminal.getvalue())
    assert shown[:3] == ["[1/3] evil\\x1b[2J\\nmallory: 33.33/100 graded", "[2/3] bob: 50/100 graded",
                         "[3/3] carol: timeout at import"]
    assert shown[3].startswith(f"[{'#' * 30}] 3/3 done, 0 running") and shown[4] == ""


def test_without_a_terminal_plain_lines_and_no_bar():
    pipe = io.StringIO()
    progress = shown_progress.Progress(2, pipe, Clock())
    progress.kept(graded("alice", 100, reused=True))
    progress.begin(1)
    progress.update(1)
    progress.update(0, graded("bob", 12.5))
    progress.finish()
    assert pipe.getvalue() == "[1/2] alice: 100/100 graded (unchanged, kept)\n[2/2] bob: 12.5/100 graded\n"


def test_the_time_left_after_a_resume_counts_only_this_runs_grading():
    terminal, clock = FakeTerminal(), Clock()
    progress = shown_progress.Progress(10, terminal, clock, columns=lambda: 200)
    for k in range(8):  # kept at once: they say nothing about the rate
        progress.kept(graded(f"s{k}", 100, reused=True))
    progress.begin(2)
    clock.now += 0.5
    progress.update(2)
    assert progress.eta() is None and screen(terminal.getvalue())[-1].endswith("estimating time left")
    clock.now += 29.5
    progress.update(1, graded("s8", 50))
    assert progress.eta() == pytest.approx(30.0)
    assert screen(terminal.getvalue())[-1].endswith("~30 s left")
    clock.now += 45  # slower than the estimate: the estimate grows, it never reaches 0 while work remains
    progress.update(1)
    assert progress.eta() == pytest.approx(75.0) and "~1 min 15 s left" in screen(terminal.getvalue())[-1]


@pytest.mark.parametrize("to_grade, graded_, elapsed, expected", [
    (10, 0, 5.0, None), (10, 9, 0.001, 1.0), (10, 5, 50.0, 50.0), (4, 4, 80.0, 0.0), (3, 1, 0.0, None)])
def test_eta_is_a_rate_of_this_runs_grades_never_zero_while_work_remains(to_grade, graded_, elapsed, expected):
    assert shown_progress.eta_seconds(to_grade, graded_, elapsed) == expected
    text = shown_progress.eta_text(expected)
    assert ("~0 s" not in text) and (text == "done") == (expected == 0.0)


def test_durations_and_a_bar_that_never_wraps():
    assert [shown_progress.duration(s) for s in (0.2, 59.5, 60, 185, 3725)] == \
        ["1 s", "1 min 00 s", "1 min 00 s", "3 min 05 s", "1 h 02 min"]
    bar = shown_progress.bar_line(5, 10, 2, 100.0, 100.0, columns=40)
    assert len(bar) == 39 and bar.startswith("[" + "#" * 15 + "." * 15 + "]")


# -- one rounding -------------------------------------------------------------------------
def typed_results(score: float, items: list[float]) -> Results:
    """A hand-built grade: the numbers as stored (4 decimals), before any report rounds them."""
    test = TestRecord(ITEM_NAMES[0], "t", "a test", False, PASSED, PASSED, 1.0, 1.0)
    return Results("granularGas.py", score, 100.0,
                   tuple(ItemScore(n, v, 20.0) for n, v in zip(ITEM_NAMES, items, strict=True)), "graded", None,
                   False, (), (), False, "", 1.0, (test,))


def test_points_are_rounded_once_the_same_in_csv_table_and_summary():
    values = [33.333333, 12.345, 0.005, 99.99999999, 7.1, 0.0, 66.666666, 19.995][:len(ITEM_NAMES)]
    values += [1.0] * (len(ITEM_NAMES) - len(values))
    outcome = Outcome("alice", "graded", typed_results(62.678901, values))
    by_item = dict(zip(ITEM_NAMES, values, strict=True))
    want = [points(62.678901), "100", *(points(by_item[name]) for name in STATEMENT_ORDER)]
    (row,) = list(csv.reader(io.StringIO(batch.grades_csv([outcome]).decode())))[1:]
    assert row[1:-1] == want
    assert batch.grades_table([outcome]).splitlines()[1].split()[1:-1] == want
    assert batch.grades_table([outcome]).splitlines()[-1] == "ctg: contact_time_grains  ctw: contact_time_walls  " \
        "csg: contact_solve_grains  csw: contact_solve_wall  mct: minimum_contact_time  c12: c12_row  dem: dem_pair"
    from grader.commands.batch import summary

    page = summary.page([outcome])
    assert f"{points(62.678901)} / 100" in page and "62.6789" not in page
    assert f"median {points(62.678901)} of 100" in page
    for value in values:
        assert f"<td>{points(value)}</td>" in page


# -- --out ---------------------------------------------------------------------------------
def batch_exit(capsys, subs: Path, out: Path | str) -> tuple[int, str]:
    code = cli.main(["batch", str(subs), "--out", str(out), "--jobs", "1"])
    return code, capsys.readouterr().err


def test_every_bad_out_is_a_clean_error_naming_it_and_the_fix(tmp_path, capsys, monkeypatch):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.py").write_text(TINY)
    (tmp_path / "notes.txt").write_text("precious")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "thesis.tex").write_text("precious")
    (tmp_path / "nowhere").symlink_to(tmp_path / "absent")
    graded_anyone = []
    monkeypatch.setattr(batch, "_grade_all", lambda *args: graded_anyone.append(args))
    cases = {tmp_path / "notes.txt": "is a file, not a folder", tmp_path / "notes.txt" / "sub": "notes.txt is a file",
             subs: "would hold the submissions", tmp_path: "would hold the submissions",
             subs / "out": "is inside the submissions folder", tmp_path / "busy": "is not empty",
             tmp_path / "nowhere": "a link to nothing"}
    for out, fragment in cases.items():
        code, err = batch_exit(capsys, subs, out)
        assert code == 2 and f"--out {out}" in err and fragment in err and "give" in err, (out, err)
        assert "Traceback" not in err
    assert not graded_anyone and not (subs / "out").exists() and (tmp_path / "notes.txt").read_text() == "precious"
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["thesis.tex"]


def test_good_outs_pass_the_check(tmp_path):
    subs, course = tmp_path / "subs", tmp_path / "course"
    subs.mkdir()
    (course / "submitted").mkdir(parents=True)
    batch.check_output(tmp_path / "new" / "deeper", subs)
    (tmp_path / "again").mkdir()
    (tmp_path / "again" / batch.MARKER).write_text("")
    (tmp_path / "again" / "grades.csv").write_text("")
    batch.check_output(tmp_path / "again", subs)
    batch.check_output(course / "grades", course)  # beside submitted/ in an nbgrader course
    with pytest.raises(batch.BatchError, match="inside the submissions folder"):
        batch.check_output(course / "submitted" / "grades", course)


def test_an_out_the_user_may_not_write_is_a_clean_error():
    # Root may write anywhere: the check runs as another uid, the way a TA's account would.
    root = Path(tempfile.mkdtemp(prefix="granular-test-"))
    try:
        root.chmod(0o755)
        (root / "subs").mkdir()
        (root / "subs" / "a.py").write_text(TINY)
        (root / "locked").mkdir(mode=0o755)
        if os.geteuid() != 0:
            (root / "locked").chmod(0o555)
        drop = "os.setgid(65534); os.setuid(65534); " if os.geteuid() == 0 else ""
        script = ("import os, sys; from grader.commands import cli; from grader.commands.batch import pool; "
                  f"{drop}sys.exit(cli.main(['batch', sys.argv[1], '--out', sys.argv[2]]))")
        for out in (root / "locked", root / "locked" / "new"):
            done = subprocess.run([sys.executable, "-c", script, str(root / "subs"), str(out)], capture_output=True,
                                  text=True, timeout=120, cwd=REPO)
            assert done.returncode == 2, done.stderr
            assert f"--out {out}: {root / 'locked'} is a folder you may not write" in done.stderr
            assert "Traceback" not in done.stderr
        assert list((root / "locked").iterdir()) == []
    finally:
        (root / "locked").chmod(0o755)
        shutil.rmtree(root)


# -- one real batch -------------------------------------------------------------------------
def test_a_real_batch_grades_a_misnamed_file_when_asked_and_keeps_it_on_resume(tmp_path, monkeypatch):
    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "ann").mkdir(parents=True)
    (subs / "ann" / "hw3.py").write_text(TINY)
    (subs / "stub.py").write_text(TINY)
    # The grader's own files change while other work goes on in this tree: the resume must not depend on it.
    monkeypatch.setattr(batch, "fingerprint", lambda options: "fixed")
    options = batch.Options(jobs=1, limits=Limits(call_seconds=5.0, import_seconds=10.0), hidden=False,
                            animations=False)
    found = scan(subs, accept_single_py=True)
    stream = io.StringIO()
    outcomes = batch.run(list(found.submissions), subs, out, options, stream)
    by_student = {o.student: o for o in outcomes}
    assert by_student["ann"].row["score"] == 0 and by_student["ann"].status == "graded"
    assert by_student["ann"].note == "graded hw3.py as granularGas.py, by --accept-single-py"
    assert stream.getvalue().splitlines() == [
        "[1/2] ann: 0/100 graded (graded hw3.py as granularGas.py, by --accept-single-py)", "[2/2] stub: 0/100 graded"]
    assert "graded hw3.py as granularGas.py" in (out / "summary.html").read_text()
    again = io.StringIO()
    batch.run(list(found.submissions), subs, out, options, again)
    assert again.getvalue().splitlines() == [
        "[1/2] ann: 0/100 graded (unchanged, kept) (graded hw3.py as granularGas.py, by --accept-single-py)",
        "[2/2] stub: 0/100 graded (unchanged, kept)"]


def test_the_fingerprint_covers_every_file_of_the_grader_and_the_reference(tmp_path, monkeypatch):
    """A change anywhere in the packages (a sub-package's module, a data file) forces a regrade."""
    for package in ("grader", "reference"):
        (tmp_path / package / "sub").mkdir(parents=True)
        (tmp_path / package / "sub" / "module.py").write_text("A = 1\n")
        (tmp_path / package / "sub" / "data.npz").write_bytes(b"1")
    monkeypatch.setattr(batch, "PACKAGE_ROOT", tmp_path)
    options = batch.Options(jobs=1)
    before = batch.fingerprint(options)
    (tmp_path / "reference" / "sub" / "__pycache__").mkdir()
    (tmp_path / "reference" / "sub" / "__pycache__" / "module.engine.nbi").write_bytes(b"a run-time cache")
    assert batch.fingerprint(options) == before
    for changed in ("grader/sub/module.py", "reference/sub/module.py", "grader/sub/data.npz"):
        (tmp_path / changed).write_bytes(b"2")
        after = batch.fingerprint(options)
        assert after != before, changed
        before = after


def test_the_nbgrader_cache_key_changes_with_any_file_of_the_grader(tmp_path, monkeypatch):
    from grader.commands.courses import settings as course_settings

    (tmp_path / "grader" / "properties").mkdir(parents=True)
    (tmp_path / "reference").mkdir()
    (tmp_path / "grader" / "properties" / "hidden.py").write_text("A = 1\n")
    monkeypatch.setattr(course_settings, "PACKAGE_ROOT", tmp_path)
    key = course_settings.cache_key(b"submission", course_settings.GradingSettings())
    (tmp_path / "grader" / "properties" / "hidden.py").write_text("A = 2\n")
    assert course_settings.cache_key(b"submission", course_settings.GradingSettings()) != key


def test_a_file_one_folder_too_deep_is_pointed_to_but_not_through_a_link(tmp_path):
    (tmp_path / "deep" / "hw3").mkdir(parents=True)
    (tmp_path / "deep" / "hw3" / "granularGas.py").write_text(TINY)
    (tmp_path / "linked").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "granularGas.py").write_text(TINY)
    (tmp_path / "linked" / "sub").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "evil" / "\x1b[31mhw").mkdir(parents=True)
    (tmp_path / "evil" / "\x1b[31mhw" / "granularGas.py").write_text(TINY)
    found = {s.student: s for s in scan(tmp_path).submissions}
    assert found["deep"].problem == ("no granularGas.py, but hw3/granularGas.py one folder down: move it up, into "
                                     "the student's folder") and found["deep"].source is None
    assert found["linked"].problem == "no granularGas.py"
    # The folder's name is the student's text: escaped before it reaches the status.
    assert "\x1b" not in found["evil"].problem and "\\x1b[31mhw/granularGas.py" in found["evil"].problem


# -- --withhold-hidden -----------------------------------------------------------------------
#: Walls of length 1 only (the hand-out's |t| slip), printing its arguments: passes the public wall tests whose
#: walls have length 1, fails the hidden agreement test on walls of any length.
PRINTS_AND_FAILS_HIDDEN = WALLS_OF_LENGTH_ONE_ONLY.replace(
    "    t = w[1] - w[0]\n", '    print("ARGUMENTS", w.tolist(), x1.tolist(), v1.tolist(), R1)\n    t = w[1] - w[0]\n', 1)


def test_withheld_pages_name_the_hidden_failures_without_their_inputs_answers_or_output(tmp_path, capsys):
    from grader.reports import feedback, gradescope_json

    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "walt").mkdir(parents=True)
    reference = Path(__file__).resolve().parents[1] / "reference" / "granularGas.py"
    (subs / "walt" / "granularGas.py").write_text(reference.read_text() + PRINTS_AND_FAILS_HIDDEN)
    args = ["batch", str(subs), "--out", str(out), "--jobs", "1", "--no-animations"]
    assert cli.main([*args, "--withhold-hidden"]) == 0
    folder = next((out / "students").iterdir())
    results = gradescope_json.read((folder / "results.json").read_bytes(), "walt")
    hidden = [t for t in results.failed if t.hidden]
    assert hidden, "the file was meant to fail a hidden test"
    withheld = (folder / "feedback.html").read_text()
    full = feedback.page("walt", results)  # the same results, nothing withheld
    for t in hidden:
        assert feedback.escape(t.id) in withheld and feedback.escape(t.message) in full
        assert feedback.escape(t.message) not in withheld
        assert not t.snippet or feedback.escape(t.snippet) not in withheld
    assert "ARGUMENTS [[" in full and "ARGUMENTS [[" not in withheld and feedback.HIDDEN_WITHHELD in withheld
    # Pages made without the option are another grade's pages: the next run makes them again, in full.
    capsys.readouterr()
    assert cli.main(args) == 0
    assert "kept" not in capsys.readouterr().err
    again = (folder / "feedback.html").read_text()
    assert all(feedback.escape(t.message) in again for t in hidden) and "ARGUMENTS [[" in again
