"""The grader on a corpus: single bugs lose exactly the points of their
function, broken files fail only what they break (that the correct variants
get 100 is pinned and checked in test_corpus.py).

Buggy submissions are mutations of the correct ones in tests/submissions:
each names the function it breaks and the text it changes. Gradings are
shared through the ``graded`` fixture (tests/conftest.py): a file is graded
once per test process for every test that reads its grade.
"""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from grader.grading.report import FAILED, PASSED, SET_ASIDE
from grader.grading.runner import GradeOptions, grade_file, status_of
from grader.properties import oracle
from grader.sandbox.calls import AUDIT_CALLS_KEPT, HELPER_CALLS_KEPT
from grader.sandbox.client import Sandbox
from grader.spec import FUNCTION_NAMES, ITEM_NAMES
from grader.spec.limits import Limits

from .conftest import Grader, attack_and_control, corpus_params

HERE = Path(__file__).parent / "submissions"
TEXTBOOK, VECTORISED = HERE / "correct_textbook.py", HERE / "correct_vectorised.py"

# (bug, source, function it breaks, [(old text, new text), ...])
BUGS = [
    ("wrong root", TEXTBOOK, "contact_time_grains", [("(-b - np.sqrt(disc))", "(-b + np.sqrt(disc))")]),
    ("missing radius", TEXTBOOK, "contact_time_grains", [("- (R1 + R2) ** 2", "- R1 ** 2")]),
    ("negative times", TEXTBOOK, "contact_time_grains",
     [("if c < 0 or b >= 0", "if b >= 0"), ("    if tc < 0:\n        return sys.float_info.max\n", "")]),
    ("inf instead of float max", TEXTBOOK, "contact_time_grains",
     [("or a == 0:\n        return sys.float_info.max", "or a == 0:\n        return float('inf')")]),
    ("stable root with a sign slip", VECTORISED, "contact_time_grains", [("c / (-b + math.sqrt", "c / (b - math.sqrt")]),
    ("projection without the square", TEXTBOOK, "contact_time_walls", [("/ np.dot(t, t)", "/ np.linalg.norm(t)")]),
    ("wall radius ignored", TEXTBOOK, "contact_time_walls", [("(R1 - d) / vn", "(-d) / vn")]),
    ("wall approach ignored", VECTORISED, "contact_time_walls", [("h * rate >= 0", "rate == 0")]),
    ("grain assumed left of the wall", VECTORISED, "contact_time_walls",
     [("abs(h) < R1 or h * rate >= 0", "h < R1 or rate >= 0")]),
    ("indexOld ignored", TEXTBOOK, "minimum_contact_time",
     [("if (indexOld[0] == i and indexOld[1] == j) or (indexOld[0] == j and indexOld[1] == i):", "if False:"),
      ("if indexOld[0] == i and indexOld[1] == -(k + 1):", "if False:")]),
    ("indexOld in one grain order only", TEXTBOOK, "minimum_contact_time",
     [(" or (indexOld[0] == j and indexOld[1] == i)", "")]),
    ("wall index off by one", TEXTBOOK, "minimum_contact_time",
     [("index = np.array([i, -(k + 1)])", "index = np.array([i, -k])"),
      ("indexOld[1] == -(k + 1)", "indexOld[1] == -k")]),
    ("walls never searched", TEXTBOOK, "minimum_contact_time", [("for k in range(len(w)):\n            if indexOld", "for k in range(0):\n            if indexOld")]),
    ("restitution missing at walls", TEXTBOOK, "contact_solve_wall", [("-(1 + r) * np.dot(v1, n) * n", "-2 * np.dot(v1, n) * n")]),
    ("restitution misplaced at walls", VECTORISED, "contact_solve_wall", [("-(1.0 + r) * (v1 @ normal)", "-(1.0 + r) * r * (v1 @ normal)")]),
    ("wall argument modified", TEXTBOOK, "contact_solve_wall",
     [("def contact_solve_wall(wall, x1, v1, r):\n", "def contact_solve_wall(wall, x1, v1, r):\n    wall[:] = wall[::-1]\n")]),
    ("equal-mass formula", TEXTBOOK, "contact_solve_grains",
     [("(1 + r) * m2 / (m1 + m2)", "(1 + r) / 2"), ("(1 + r) * m1 / (m1 + m2)", "(1 + r) / 2")]),
    ("mass ratio swapped", TEXTBOOK, "contact_solve_grains",
     [("(1 + r) * m2 / (m1 + m2)", "(1 + r) * M1 / (m1 + m2)"), ("(1 + r) * m1 / (m1 + m2)", "(1 + r) * m2 / (m1 + m2)"),
      ("M1", "m1")]),
    ("restitution missing between grains", VECTORISED, "contact_solve_grains", [("impulse = (1 + r)", "impulse = 2")]),
    ("velocity argument modified", VECTORISED, "contact_solve_grains",
     [("    return -impulse / m1 * n, impulse / m2 * n",
       "    dv = (-impulse / m1 * n, impulse / m2 * n)\n    v1[:] = 0.0\n    return dv")]),
    ("time not subtracted", TEXTBOOK, "update", [("dt = dt - tc", "dt = dt")]),
    ("indexOld rebound instead of updated", VECTORISED, "update", [("indexOld[0], indexOld[1] = i, j", "indexOld = np.array([i, j])")]),
    ("x rebound instead of updated", VECTORISED, "update", [("x += v * left\n", "x = x + v * left\n")]),
    ("no move before the contact", VECTORISED, "update", [("        x += v * tc\n", "")]),
]


def mutate(tmp_path, source, changes, name="granularGas.py"):
    text = source.read_text()
    for old, new in changes:
        assert text.count(old) >= 1, f"mutation text not found: {old!r}"
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return path


def test_at_least_twenty_bugs_over_all_six_functions():
    assert len({name for name, *_ in BUGS}) >= 20
    assert {function for _, _, function, _ in BUGS} == set(FUNCTION_NAMES)


def assert_blamed_on_its_function_only(report, bug: str, function: str) -> None:
    """The bug costs its own function; a caller may lose points only through cases set aside
    because they rest on the buggy helper, and its feedback then says to fix that helper first."""
    table = report.by_item()
    assert table[function][0] < table[function][1], f"{bug}: {function} kept all its points"
    for r in report.results:
        if r.status != "failed":
            continue
        assert r.message and r.prop.name, "a failure must name its property and say what went wrong"
        if r.prop.item in FUNCTION_NAMES and r.prop.item != function:
            # A call that runs out of time takes its records with it: that case cannot be audited.
            assert r.outcome == "timeout" or (r.outcome == "set aside" and f"fix {function} first" in r.message), (
                f"{bug} blamed {r.prop.id}: {r.message}")


#: Graded in CI: a bug of contact_time_walls, minimum_contact_time, update (its time bookkeeping) and an argument
#: modified. Elsewhere: contact_time_grains and contact_solve_grains in test_scenarios.py (with this check),
#: contact_solve_wall in test_hostile.py (a wrong normal), update by rebinding in test_properties.py.
BUG_SAMPLE = {"projection without the square", "indexOld in one grain order only", "velocity argument modified",
              "time not subtracted"}
#: Also graded by test_scenarios.py, with this check.
SCENARIO_BUGS = {"missing radius", "restitution missing between grains"}
#: The bug whose grade two tests below share.
PROJECTION = next(b for b in BUGS if b[0] == "projection without the square")


@pytest.mark.parametrize("bug, source, function, changes",
                         corpus_params(BUGS, [b[0] for b in BUGS], BUG_SAMPLE - SCENARIO_BUGS))
def test_a_single_bug_is_blamed_on_its_function_only(tmp_path, graded: Grader, bug, source, function, changes):
    assert_blamed_on_its_function_only(graded(mutate(tmp_path, source, changes)), bug, function)


def test_template_stub_gets_zero_with_a_friendly_message():
    report = grade_file(Path(__file__).parents[1] / "student_template" / "granularGas.py")
    assert report.score == 0
    assert all("not written yet" in r.message for r in report.results)


def test_an_argument_changed_through_a_view_is_caught_in_the_sandbox(tmp_path):
    """The child reports an argument left as sent in a word (SAME); one changed in place, here through a view and
    without changing the answer, is still sent in full and fails the no-mutation check: a real file, a real box."""
    sneaky = tmp_path / "granularGas.py"
    sneaky.write_text(TEXTBOOK.read_text().replace(
        "def contact_solve_wall(wall, x1, v1, r):\n",
        "def contact_solve_wall(wall, x1, v1, r):\n    wall.reshape(-1)[:] = wall[::-1].reshape(-1)  # same line\n"))
    report = grade_file(sneaky, GradeOptions(hidden=False, only=("contact_solve_wall",)))
    failed = [r for r in report.results if r.outcome != PASSED]
    assert failed and all("modified its argument wall" in r.message for r in failed), [r.message for r in failed]
    assert report.score == 0


def test_the_sandbox_self_test_runs_when_a_file_fails_and_a_failing_self_test_gives_no_grade(tmp_path, monkeypatch):
    """A file that passes every test proves the sandbox sound; one that fails is graded only once the sandbox
    passes its self-test (a sandbox that breaks correct files must not give zeros)."""
    from grader import errors
    from grader.sandbox import self_test

    checked: list[Limits] = []

    def broken(limits: Limits) -> None:
        checked.append(limits)
        raise errors.SandboxFault("the sandbox self-test failed (test)")

    monkeypatch.setattr(self_test, "selftest", broken)
    options = GradeOptions(hidden=False, only=("contact_time_grains",))
    assert grade_file(TEXTBOOK, options).all_passed and checked == []
    renamed = tmp_path / "granularGas.py"
    renamed.write_text(TEXTBOOK.read_text().replace("def contact_time_grains(", "def contact_time_grainz("))
    with pytest.raises(errors.SandboxFault, match="self-test failed"):
        grade_file(renamed, options)
    assert checked == [options.limits]
    renamed.write_text("import numpy as np\nraise ImportError('as if the sandbox had no numpy')\n")
    with pytest.raises(errors.SandboxFault, match="self-test failed"):
        grade_file(renamed, options)


@pytest.mark.parametrize("text, fragment", [
    ("def contact_time_grains(x1, x2, v1, v2, R1, R2)\n    return 0\n", "SyntaxError"),
    ("import sys\nsys.exit(3)\n", "SystemExit"),
    ("import tkinter.nonexistent\n", "ModuleNotFoundError"),
    ("from reference.granularGas import *\n", "No module named 'reference'"),
])
def test_a_file_that_does_not_import_says_why(tmp_path, text, fragment):
    """The sandbox's import error, and the status it gives; that such a file scores 0 end to end is checked by
    test_hostile.py (an import that hangs) and the pin (examples/submissions/cleo.py)."""
    path = tmp_path / "granularGas.py"
    path.write_text(text)
    with Sandbox(path) as sandbox:
        assert sandbox.import_error is not None and fragment in sandbox.import_error
        assert status_of([], sandbox.import_failure) == "error at import"


def test_a_hang_or_a_crash_costs_the_test_where_it_happened(tmp_path):
    text = TEXTBOOK.read_text()
    # Hangs only on the 'no contact' cases (a grain already overlapping the wall line).
    text = text.replace("def contact_time_walls(w, x1, v1, R1):\n",
                        "def contact_time_walls(w, x1, v1, R1):\n    if abs(_height(w, x1)) < R1:\n"
                        "        while True:\n            pass\n")
    text += ("\n\ndef _height(w, x1):\n    t = w[1] - w[0]\n    s = x1 - w[0]\n"
             "    return (t[0] * s[1] - t[1] * s[0]) / np.linalg.norm(t)\n")
    text = text.replace("def contact_solve_wall(wall, x1, v1, r):\n",
                        "def contact_solve_wall(wall, x1, v1, r):\n    import os\n    os._exit(1)\n")
    text = text.replace("def contact_time_grains(", "def misspelled_contact_time_grains(")
    path = tmp_path / "granularGas.py"
    path.write_text(text)
    report = grade_file(path, GradeOptions(limits=replace(Limits(), call_seconds=1.0)))
    outcomes = {r.prop.id: (r.outcome, r.message) for r in report.results}
    walls = {k: v for k, v in outcomes.items() if k.startswith("contact_time_walls")}
    assert any(o == "timeout" and "CPU time" in m for o, m in walls.values()), walls
    # The child was restarted: the tests after the hang still ran, and the contact cases pass.
    assert any(o == "passed" for o, _ in walls.values()), walls
    assert any("exit code 1" in m for k, (o, m) in outcomes.items() if k.startswith("contact_solve_wall"))
    assert any("defines no function contact_time_grains" in m for k, (_, m) in outcomes.items()
               if k.startswith("contact_time_grains"))
    table = report.by_item()
    assert table["contact_solve_grains"][0] == table["contact_solve_grains"][1]
    assert report.status.startswith("timeout: contact_time_walls") and "crashed: contact_solve_wall" in report.status


def test_grading_is_deterministic(tmp_path, graded: Grader):
    path = mutate(tmp_path, TEXTBOOK, PROJECTION[3])
    first, second = graded(path), grade_file(path)
    assert any(r.status == "failed" for r in first.results)
    assert [(r.status, r.message) for r in first.results] == [(r.status, r.message) for r in second.results]


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_check_command_exit_codes_rubric_and_results_json(tmp_path):
    """One graded run of the command (exit code 0 on a correct file: test_student_kit_build.py runs it)."""
    buggy = mutate(tmp_path, TEXTBOOK, BUGS[0][3])
    (tmp_path / "rubric.toml").write_text("[points]\ncontact_solve_grains = 40\n")
    done = run_cli("check", str(buggy), "--json", str(tmp_path / "out" / "results.json"),
                   "--rubric", str(tmp_path / "rubric.toml"))
    assert done.returncode == 1, done.stderr
    assert "FAILED contact_time_grains" in done.stdout and "from granularGas import" in done.stdout
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    # The rubric gives contact_solve_grains 40 points instead of 15.
    assert results["max_score"] == pytest.approx(125) and 0 < results["score"] < 125
    for test in results["tests"]:
        assert {"name", "score", "max_score", "status", "output", "tags"} <= set(test)
        assert test["status"] in ("passed", "failed") and test["tags"][0] in ITEM_NAMES
    assert sum(t["max_score"] for t in results["tests"] if t["tags"][0] == "contact_solve_grains") == pytest.approx(40)
    for bad in (str(tmp_path / "missing.py"), str(tmp_path), str(tmp_path / "out" / "results.json")):
        done = run_cli("check", bad)
        assert done.returncode == 2 and "Traceback" not in done.stderr and "granular-grade:" in done.stderr


@pytest.mark.parametrize("text, fragment", [
    ("[points]\nupdate = 'many'\n", "must be a number"),
    ("[points]\nupdat = 5\n", "neither a function nor a scenario"),
    ("points = 3\n", "[points] table"),
    ("[points\n", "not valid TOML"),
    # A review: nan and inf made every score nan or inf (and the batch's summary crash); 1e308 a 309-digit score.
    ("[points]\nupdate = nan\n", "points for update must be a number from 0 to 1000; got nan"),
    ("[points]\nupdate = inf\n", "got inf"),
    ("[points]\nupdate = 1e308\n", "got 1e+308"),
    ("[points]\nupdate = 5\n[bonus]\npoints = -inf\n", "[bonus] points must be a number"),
    # Entries a rubric does not set were ignored without a word.
    ("[points]\nupdate = 5\n[limits]\ncall_seconds = 0.001\n", "limits is not set by a rubric but by the limit"),
    ("[points]\nupdate = 5\n[grading]\nhidden_visibility = 'hidden'\n", "by gradescope-zip's --hidden-visibility"),
    ("[points]\nupdate = 5\n[grading]\nexcuse_trace = true\n", "[grading] names 'excuse_trace'"),
    ("[points]\nupdate = 5\n[pionts]\nupdate = 5\n", "has a table or entry 'pionts'"),
    ("grading = 5\nfoo = 1\n[points]\nupdate = 1\n", "grading must be a table"),  # was a TypeError (review)
])
def test_malformed_rubric_is_refused_clearly(tmp_path, text, fragment):
    (tmp_path / "rubric.toml").write_text(text)
    done = run_cli("check", str(VECTORISED), "--rubric", str(tmp_path / "rubric.toml"))
    assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr


def test_draws_do_not_depend_on_the_modules_loaded(tmp_path, graded: Grader):
    """Hypothesis takes constants from local modules' source: the grader turns that off. The grade in this
    process (with the test modules loaded) is that of a process that loaded a module full of constants."""
    buggy = mutate(tmp_path, TEXTBOOK, PROJECTION[3])
    extra = tmp_path / "lib"
    extra.mkdir()
    (extra / "many_constants.py").write_text("VALUES = [" + ", ".join(f"{k / 7:.17g}" for k in range(1, 400))
                                             + ", 0.0615234375, -16.29795807948159, 1e-300, 3.5e12]\n")
    program = ("import sys, json\n"
               "from grader.grading.runner import grade_file\n"
               f"sys.path.insert(0, {str(extra)!r})\n"
               "import many_constants\n"
               "report = grade_file(sys.argv[1])\n"
               "print(json.dumps([r.message for r in report.results]))\n")
    run = subprocess.run([sys.executable, "-c", program, str(buggy)], capture_output=True, text=True,
                         timeout=900, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    here = [r.message for r in graded(buggy).results]
    assert any(here) and here == json.loads(run.stdout)


def test_a_constant_caller_of_a_wrong_helper_earns_nothing_from_the_audit(tmp_path, monkeypatch):
    """The audit sets aside a caller's failing cases when a helper it calls is proved wrong (short replay first,
    then long). A file that makes its helper wrong on purpose and answers constants from the caller, while calling
    the helper on every pair so that records exist, must not turn those set-aside cases into points."""
    source = TEXTBOOK.read_text().replace("(-b - np.sqrt(disc))", "(-b + np.sqrt(disc))")
    source += ("\n\n_honest = minimum_contact_time\n\n\ndef minimum_contact_time(x, v, R, w, indexOld):\n"
               "    _honest(x, v, R, w, indexOld)  # every pair's helper call recorded\n"
               "    return 1.0, np.array([0, 1])\n")
    path = tmp_path / "granularGas.py"
    path.write_text(source)
    recorded: list[int] = []
    call = Sandbox.call

    def counted(self, name, *args, record=0):
        recorded.append(record)
        return call(self, name, *args, record=record)

    monkeypatch.setattr(Sandbox, "call", counted)
    report = grade_file(path, GradeOptions(excuse_traced=True, only=("contact_time_grains", "minimum_contact_time")))
    assert {HELPER_CALLS_KEPT, AUDIT_CALLS_KEPT} <= set(recorded)  # both replays of the audit ran
    assert report.by_item()["contact_time_grains"][0] < report.by_item()["contact_time_grains"][1]
    assert report.by_item()["minimum_contact_time"][0] == 0, [(r.name, r.outcome) for r in report.results]


#: minimum_contact_time wrong on about a quarter of its inputs (its own bug), contact_solve_wall wrong.
OWN_BUG = ("\n\n_honest = minimum_contact_time\n\n\ndef minimum_contact_time(x, v, R, w, indexOld):\n"
           "    SHOW\n"
           "    if int(np.abs(x).sum() * 1e6) % 4 == 0:\n"
           "        return 0.123, np.array([0, 1])\n"
           "    return _honest(x, v, R, w, indexOld)\n\n\n"
           "def contact_solve_wall(wall, x1, v1, r):\n    return np.zeros(2)\n")
#: The red-team review's scapegoat: a call of the wrong helper, its answer ignored.
SCAPEGOAT = "contact_solve_wall(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([0.0, 1.0]), np.array([0.0, -1.0]), 0.5)"


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_calling_a_wrong_helper_for_show_hides_no_bug_of_the_caller(tmp_path):
    """A red-team review's attack: with a wrong helper called for show (answer ignored), the cases where the
    caller's own bug shows were set aside, and its tests passed (27.5 -> 57.5 points for the file)."""
    scores = {}
    for name, show in (("own bug", "pass"), ("scapegoat", SCAPEGOAT)):
        path = tmp_path / name.replace(" ", "_") / "granularGas.py"
        path.parent.mkdir()
        path.write_text(TEXTBOOK.read_text() + OWN_BUG.replace("SHOW", show))
        report = grade_file(path, GradeOptions(excuse_traced=True, only=("minimum_contact_time", "contact_solve_wall")))
        scores[name] = report.by_item()["minimum_contact_time"]
    assert scores["own bug"][0] < scores["own bug"][1]
    assert scores["scapegoat"] == scores["own bug"], scores


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_a_caller_wrong_only_through_its_helper_keeps_its_points(tmp_path):
    """One bug costs points once: contact_time_grains wrong for far pairs (half as late again), the textbook
    minimum_contact_time taking the least of its answers. Its few wrong times are traced to the helper's answers
    (tracing.explained), so its tests pass; the helper loses points in its own."""
    path = tmp_path / "granularGas.py"
    path.write_text(TEXTBOOK.read_text().replace(
        "    return float(tc)\n", "    if np.dot(dx, dx) > 16 * (R1 + R2) ** 2:\n        return float(tc) * 1.5\n"
        "    return float(tc)\n", 1))
    report = grade_file(path, GradeOptions(excuse_traced=True, only=("contact_time_grains", "minimum_contact_time")))
    table = report.by_item()
    assert table["contact_time_grains"][0] < table["contact_time_grains"][1]
    assert table["minimum_contact_time"][0] == table["minimum_contact_time"][1], [
        (r.prop.name, r.outcome, r.message) for r in report.results]
    assert any(r.outcome == PASSED and r.prop.item == "minimum_contact_time" for r in report.results)


@pytest.mark.parametrize("name, body", [("jitter", "x += 1e-9 * v"),
                                        ("ulp", "x += 1e-9 * v * dt\n    v[:] = np.nextafter(v, 0.0)"),
                                        ("flip", "x += 1e-9 * v * dt\n    v *= -1.0")])
def test_an_update_that_barely_moves_the_grains_earns_nothing_graded_for_real(tmp_path, name, body):
    """Reviews' files, graded end to end in the sandbox: grains nudged by 1e-9 v, velocities changed by an ulp or
    reversed (5 to 7.5 points before), and contact_time_grains answering the DEM pair's 0.5 as a constant."""
    path = tmp_path / "granularGas.py"
    path.write_text("import numpy as np\n\n\ndef contact_time_grains(x1, x2, v1, v2, R1, R2):\n    return 0.5\n\n\n"
                    f"def update(x, v, R, m, w, indexOld, r, dt, t):\n    {body}\n    return t + dt\n")
    report = grade_file(path, GradeOptions(excuse_traced=True, only=("update", "dem_pair", "contact_time_grains")))
    assert report.score == 0, [(r.prop.id, r.outcome) for r in report.results if r.outcome == PASSED]


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_a_helper_called_with_numbers_for_vectors_is_graded_not_a_grader_error(tmp_path):
    """A red team's file: contact_time_grains wrong (twice the time), and minimum_contact_time also calling it once
    with numbers for vectors. Explaining a set-aside case read those numbers as vectors: TypeError, the grading
    ended as a grader error. Now that call leaves the case untraced and the file gets its grade."""
    path = tmp_path / "granularGas.py"
    text = TEXTBOOK.read_text().replace("    return float(tc)\n", "    return float(2 * tc)\n", 1)
    text = text.replace("def minimum_contact_time(x, v, R, w, indexOld):\n",
                        "def minimum_contact_time(x, v, R, w, indexOld):\n"
                        "    contact_time_grains(0.0, 1.0, 0.0, 0.0, 0.5, 0.5)\n", 1)
    assert text.count("2 * tc") == 1 and text.count("0.0, 1.0, 0.0, 0.0") == 1
    path.write_text(text)
    report = grade_file(path, GradeOptions(excuse_traced=True, only=("contact_time_grains", "minimum_contact_time")))
    table = report.by_item()
    assert table["contact_time_grains"][0] < table["contact_time_grains"][1]
    assert all(r.outcome in (PASSED, FAILED, SET_ASIDE) for r in report.results), [
        (r.prop.name, r.outcome, r.message) for r in report.results]


def test_each_scenario_test_declares_the_functions_it_uses_as_the_spec_does():
    from grader.properties import physics
    from grader.spec import SCENARIOS

    for scenario in SCENARIOS:
        used = {f for p in physics.PROPERTIES if p.item == scenario.name for f in p.uses}
        assert used == set(scenario.uses), scenario.name
    assert all(p.uses for p in physics.PROPERTIES)


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_a_helper_called_with_arrays_of_grains_is_audited_like_one_called_pair_by_pair(tmp_path):
    """One bug costs once however the helper is called: the later root, in the textbook file (pair by pair), in a
    red team's file whose contact_time_grains takes one grain against an array of others, and in the honest
    vectorised file, which calls it once on all pairs at once. The second's minimum_contact_time lost its 15 points
    while the audit read no call about many pairs (audit.pieces), the third's while it read no call holding more
    numbers than the request."""
    textbook = tmp_path / "pairs" / "granularGas.py"
    textbook.parent.mkdir()
    textbook.write_text(TEXTBOOK.read_text().replace("(-b - np.sqrt(disc))", "(-b + np.sqrt(disc))"))
    samples = HERE.parent / "audit_samples"
    files = (textbook, samples / "broadcast_helper_root_bug.py", samples / "vectorised_pairs_root_bug.py")
    tables = [grade_file(path, GradeOptions(excuse_traced=True, only=("contact_time_grains", "minimum_contact_time"))).by_item()
              for path in files]
    assert all(table["contact_time_grains"][0] < 15.0 for table in tables), tables
    assert all(table["minimum_contact_time"] == (15.0, 15.0) for table in tables), tables


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_a_helper_called_on_a_huge_array_of_pairs_is_not_split_and_excuses_nothing(tmp_path):
    """The broadcast sample (a wrong contact_time_grains taking arrays of grains, an honest minimum_contact_time)
    also calling its helper on 5 000 copies of a pair of its request: the audit splits calls into pairs, at most 512
    a case, so this one is not split (no unbounded work for the grader, outside the box) and its cases stay
    untraced: minimum_contact_time loses the points it keeps with 5 copies (one bug costs once)."""
    sample = (HERE.parent / "audit_samples" / "broadcast_helper_root_bug.py").read_text()
    scores = {}
    for copies in (5, 5000):
        path = tmp_path / str(copies) / "granularGas.py"
        path.parent.mkdir()
        path.write_text(sample.replace(
            "def minimum_contact_time(x, v, R, w, indexOld):\n",
            "def minimum_contact_time(x, v, R, w, indexOld):\n"
            f"    if len(x) > 1:\n        many = np.ones({copies})\n"
            "        contact_time_grains(x[0], np.outer(many, x[1]), v[0], np.outer(many, v[1]), R[0], R[1] * many)\n",
            1))
        report = grade_file(path, GradeOptions(excuse_traced=True, only=("contact_time_grains", "minimum_contact_time")))
        assert report.status == "graded"
        scores[copies] = report.by_item()["minimum_contact_time"][0]
    assert scores == {5: 15.0, 5000: 0.0}, scores


ECHO_LINES = """        global _ECHO
        _ECHO = tc
        contact_time_walls(w[-(index[1] + 1)], x[index[0]], v[index[0]], R[index[0]])  # recorded, tied, never replayed
        _ECHO = None
"""


def assert_scores_as_without_its_trick(tmp_path: Path, sample: str, trick: str, attack: str, control: str) -> None:
    """The audit sample with ``trick`` (a run of its text) written as ``attack``, and as ``control`` (the file
    without the trick), get the same points on minimum_contact_time, fewer than all."""
    base = (HERE.parent / "audit_samples" / sample).read_text()
    assert trick in base
    paths = []
    for name, text in (("attack", attack), ("control", control)):
        path = tmp_path / name / "granularGas.py"
        path.parent.mkdir()
        path.write_text(base.replace(trick, text))
        paths.append(path)
    assert paths[0].read_text() != paths[1].read_text()
    only = GradeOptions(excuse_traced=True, only=("contact_time_walls", "minimum_contact_time"))
    scores = [grade_file(path, only).by_item()["minimum_contact_time"] for path in paths]
    assert scores[0] == scores[1] and scores[0][0] < 15.0, scores


HAIR_EARLIER = "tc[k] = tc[k] - 1e-6"


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
@pytest.mark.parametrize(("sample", "trick", "attack", "control"), [
    # On all pairs at once, the helper moves the least time a hair earlier where the caller names the wrong wall.
    ("array_helper_excuses_wrong_index.py", HAIR_EARLIER, HAIR_EARLIER, "tc[k] = tc[k]"),
    # ... or gives every pair that least time, so that any index names a pair at the least time.
    ("array_helper_excuses_wrong_index.py", HAIR_EARLIER, "tc[:] = tc[k] - 1e-6", "tc[k] = tc[k]"),
    # One more call, on the pair the wrong index names, answering exactly the least time (never replayed).
    ("echo_call_excuses_wrong_index.py", ECHO_LINES, ECHO_LINES, ""),
], ids=["hair-earlier", "all-tied", "echo-call"])
def test_a_helper_made_to_match_the_callers_own_wrong_index_excuses_nothing(tmp_path, sample, trick, attack,
                                                                            control):
    """Red teams' files: minimum_contact_time names the wrong wall for late wall contacts (its own bug), and a
    wrong helper's records were made to fit that index, so that it looked traced to the helper (11.25 or 15 points
    against 3.75). Now the index must name the one pair that gave the least time, and a pair of a call about many is
    confirmed alone too: each file scores as the same file without the trick."""
    assert_scores_as_without_its_trick(tmp_path, sample, trick, attack, control)


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
@pytest.mark.parametrize("sample", ["stateful_helper_lie.py", "helper_learns_from_whole_call.py"])
def test_a_helper_answering_from_state_confirms_nothing(tmp_path, sample):
    """Red teams' files. One: its minimum_contact_time, when its own bug names the wrong wall, stores the time its
    helper is to answer for that pair; the replay in the grading's box found it still set. Replays that confirm a
    traced answer now run in a fresh box where the caller never ran (tracing.FreshBox). Two: its helper, replayed
    the whole call about many pairs there first, worked out the lie and kept it for the pair alone; pairs are now
    replayed alone first. Each scored 15 against 3.75 without its trick; now as without it."""
    assert_scores_as_without_its_trick(tmp_path, sample, "TRICK = True", "TRICK = True", "TRICK = False")


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
@pytest.mark.parametrize("excuse", [False, True], ids=["audits-after-grading", "excuse-on"])
@pytest.mark.parametrize("sample", ["learns_from_audit_replays.py", "learns_from_audit_timing.py"])
def test_a_file_learns_nothing_from_an_audit_for_the_tests_that_follow(tmp_path, sample, excuse):
    """Red teams' files ask their helper about every pair with both roots; an audit replays only the answers the
    reference disagrees with. One counted which calls came back in its own box (78.75 points against 50): audits now
    replay in a box of their own, the auditor, and a replay counts only if it gives the answer graded. The other then
    timed, from the grading's box, the CPU its auditor burnt on those replays (78.75 against 50 again). By default
    the audits now come after the grading's box is closed (set_aside.reported_cases); with the traced excuse on, the
    search audits as it goes, and the grading's box is renewed after a test whose failures were audited."""
    paths = attack_and_control(tmp_path, HERE.parent / "audit_samples" / sample)
    attack, control = (grade_file(path, GradeOptions(excuse_traced=excuse)) for path in paths)
    assert control.score < 100 and attack.score <= control.score, (attack.score, control.score)
    assert attack.by_item()["update"][0] == 0.0 and attack.by_item()["c12_row"][0] == 0.0


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_a_helper_wrong_only_where_it_is_replayed_excuses_nothing_by_default(tmp_path):
    """A second red team's file tells the boxes apart and makes its helper wrong only in the auditor and the
    confirmer, where nothing is graded: its own minimum_contact_time bug was traced to the helper (77.25 against 61).
    A trace rests on such replays, so it earns points only where the rubric turns it on ([grading] excuse_traced);
    by default the file scores as without its trick."""
    scores = [grade_file(path).by_item()
              for path in attack_and_control(tmp_path, HERE.parent / "audit_samples" / "boxaware_helper_lie.py")]
    assert scores[0] == scores[1] and scores[0]["minimum_contact_time"][0] == 0.0, scores


FORGING = """    global _FORGE
    _FORGE = True  # records saying grain 0 meets no wall: the replay would say otherwise, but is it made?
    for k in range(len(w)):
        contact_time_walls(w[k], x[0], v[0], R[0])
    _FORGE = False
"""


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_records_never_replayed_trace_nothing(tmp_path, monkeypatch):
    """A file whose minimum_contact_time searches no wall of grain 0 records "no contact" for them (a flag makes its
    helper say so): only the least helper answer was replayed, so those records made 6 more of its wrong answers
    look traced. Every wrong answer a traced one rests on is now replayed: the file traces what it traces without
    the forged records."""
    from grader.grading import tracing

    attack = HERE.parent / "audit_samples" / "forged_no_contact_records.py"
    control = tmp_path / "granularGas.py"
    control.write_text(attack.read_text().replace(FORGING, ""))
    assert FORGING in attack.read_text() and control.read_text() != attack.read_text()
    real, seen = tracing.traced, []
    monkeypatch.setattr(tracing, "traced", lambda *args: seen.append(real(*args)) or seen[-1])
    counts = []
    for path in (attack, control):
        seen.clear()
        grade_file(path, GradeOptions(excuse_traced=True, only=("contact_time_grains", "contact_time_walls", "minimum_contact_time")))
        counts.append(seen.count(tracing.TRACED))
    assert counts[0] == counts[1] > 0, counts


@pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")
def test_a_call_about_many_pairs_that_no_replay_confirms_is_replayed_once_per_audit(monkeypatch):
    """A red team's file: a wrong contact_time_grains that never answers twice the same, called on 512 pairs at
    once. Each wrong pair replayed the whole call (some 11 800 replays). Now each recorded call is replayed at most
    once per audit (plus one replay to check a right answer left its arguments alone)."""
    from grader.grading import audit

    replays, audits = [0], [0]
    real_call, real_audit = Sandbox.call, audit.audit

    def counted_call(self: Sandbox, name: str, *args: Any, **kwargs: Any) -> Any:
        replays[0] += name == "contact_time_grains" and "record" not in kwargs  # the audit's replays
        return real_call(self, name, *args, **kwargs)

    def counted_audit(*args: Any, **kwargs: Any) -> Any:
        audits[0] += 1
        return real_audit(*args, **kwargs)

    monkeypatch.setattr(Sandbox, "call", counted_call)
    monkeypatch.setattr(audit, "audit", counted_audit)
    path = HERE.parent / "audit_samples" / "unconfirmed_all_pairs_helper.py"
    report = grade_file(path, GradeOptions(excuse_traced=True, only=("contact_time_grains", "minimum_contact_time")))
    assert report.by_item()["minimum_contact_time"][0] == 0.0 and audits[0] > 10
    assert replays[0] <= 3 * audits[0], (replays, audits)  # two recorded calls a case, one check of the arguments
