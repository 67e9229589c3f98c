"""The self-check's text: one line per cause, what ran first, the statement's order, --only, short failures.

Most tests build GradeReport objects by hand (fast); a few grade real files,
each once per module.
"""

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from grader import spec
from grader.commands import cli
from grader.errors import UsageError
from grader.grading import runner
from grader.grading.causes import MISSING, NO_IMPORT, NOT_WRITTEN, WRONG, Cause, cause_of, wrong_helper
from grader.grading.report import FAILED, PASSED
from grader.reports import terminal
from grader.reports.text import as_text
from grader.sandbox.calls import HelperCall
from grader.sandbox.client import CallRaised, FunctionMissing, ImportFailed

ROOT = Path(__file__).parents[1]
TEMPLATE = ROOT / "student_template" / "granularGas.py"
TEXTBOOK = ROOT / "tests" / "submissions" / "correct_textbook.py"
PROPERTIES = runner.all_properties(hidden=True)


def _points() -> dict[str, float]:
    from grader.spec import rubric

    return rubric.default_points()


def _result(prop, passed=False, message="", snippet="", cause=None, pool=PROPERTIES):
    weight = _points()[prop.item] / sum(p.item == prop.item for p in pool)
    return runner.TestResult(prop, "passed" if passed else "failed", weight if passed else 0.0, weight, message,
                             snippet, 0.0, PASSED if passed else FAILED, cause)


def _report(results, hidden=True, only=(), import_error=None):
    return runner.GradeReport("hw/granularGas.py", results, hidden, import_error, points=_points(), only=only)


def _template_report():
    """What grading the untouched template gives: every function raises NotImplementedError."""
    results = []
    for prop in PROPERTIES:
        function = prop.item if prop.item in spec.FUNCTION_NAMES else spec.SCENARIOS[
            spec.SCENARIO_NAMES.index(prop.item)].uses[0]
        results.append(_result(prop, message=f"{function} raised NotImplementedError: not written yet",
                               snippet="import sys\nprint(1)\n", cause=Cause(NOT_WRITTEN, function)))
    return _report(results)


# -- one line per cause ---------------------------------------------------------------------------------------

def test_an_unwritten_function_is_one_line_and_the_template_is_short():
    text = as_text(_template_report())
    for f in spec.FUNCTIONS:
        assert text.count(f"not written yet: {f.name} — {f.points} points\n") == 1
        assert text.count(f.name) <= 4  # its line, and in the lines of the scenarios and the advice
    assert "FAILED" not in text and "smallest failing input" not in text
    assert len(text.splitlines()) < 20


def test_a_scenario_that_waits_for_unwritten_functions_names_them_once():
    text = as_text(_template_report())
    c12 = spec.SCENARIOS[spec.SCENARIO_NAMES.index("c12_row")]
    assert f"needs minimum_contact_time (not written yet): c12_row — {c12.points} points" in text


def test_a_function_waiting_for_an_unwritten_helper_is_one_line_and_the_advice_names_the_helper():
    results = [_result(p, passed=p.item != "update",
                       cause=None if p.item != "update" else Cause(NOT_WRITTEN, "minimum_contact_time"),
                       message="update raised NotImplementedError") for p in PROPERTIES]
    text = as_text(_report(results))
    assert "needs minimum_contact_time (not written yet): update — 20 points" in text
    assert "FAILED" not in text
    assert "Next: write minimum_contact_time" in text


def test_a_missing_function_is_one_line():
    results = [_result(p, passed=p.item != "contact_solve_wall",
                       cause=Cause(MISSING, "contact_solve_wall") if p.item == "contact_solve_wall" else None,
                       message="granularGas.py defines no function contact_solve_wall()") for p in PROPERTIES]
    text = as_text(_report(results))
    assert text.count("missing: contact_solve_wall — 10 points") == 1 and "FAILED" not in text


def test_an_import_error_is_reported_once():
    error = "importing granularGas.py raised ModuleNotFoundError: No module named 'scipy'"
    results = [_result(p, message=f"{error} (again)", cause=Cause(NO_IMPORT)) for p in PROPERTIES]
    text = as_text(_report(results, import_error=error))
    assert text.count("scipy") == 1 and "FAILED" not in text and len(text.splitlines()) < 8


# -- the first lines ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("hidden, phrase", [(True, "Tests run: public and hidden"), (False, "Tests run: public only")])
def test_the_first_lines_say_which_tests_ran_and_the_points(hidden, phrase):
    props = [p for p in PROPERTIES if hidden or not p.hidden]
    text = as_text(_report([_result(p, passed=True, pool=props) for p in props], hidden=hidden))
    first, second = text.splitlines()[:2]
    assert first == "hw/granularGas.py: 100 / 100 points"
    assert second.startswith(phrase) and f"{len(props)} tests" in second
    assert "Every test passed." in text


def test_only_says_which_items_and_their_share_of_the_points():
    props = [p for p in PROPERTIES if p.item == "contact_time_walls"]
    text = as_text(_report([_result(p, passed=True, pool=props) for p in props], only=("contact_time_walls",)))
    assert text.splitlines()[0] == "hw/granularGas.py: 10 / 10 points"
    assert "Checked only contact_time_walls (10 of 100 points)" in text.splitlines()[2]
    assert "contact_time_grains" not in text


# -- order --------------------------------------------------------------------------------------------------

def test_the_statement_order_is_the_order_its_sections_build_the_functions():
    statement = (ROOT / "assignment" / "README.md").read_text()
    sections = {"### When do two grains touch?": "contact_time_grains",
                "### When does a grain touch a wall?": "contact_time_walls",
                "### What happens in a contact between two grains?": "contact_solve_grains",
                "### What happens in a contact with a wall?": "contact_solve_wall",
                "Find the next\ncontact time": "minimum_contact_time",
                "### Writing data at regular times": "update"}
    built = [sections[s] for s in sorted(sections, key=statement.index)]
    # minimum_contact_time is found inside update's section, before update's loop is complete.
    built.remove("minimum_contact_time")
    built.insert(built.index("update"), "minimum_contact_time")
    assert tuple(built) + spec.SCENARIO_NAMES == spec.STATEMENT_ORDER
    assert sorted(spec.STATEMENT_ORDER) == sorted(spec.ITEM_NAMES)


def test_the_statements_points_table_lists_the_functions_in_the_reports_order():
    statement = (ROOT / "assignment" / "README.md").read_text()
    table = statement[statement.index("| function | what it returns | points |"):]
    table = table[:table.index("\n\n")]
    listed = re.findall(r"^\| `(?:[\w, ]+ = )?(\w+)\(", table, re.MULTILINE)
    assert tuple(listed) == tuple(n for n in spec.STATEMENT_ORDER if n in spec.FUNCTION_NAMES)


def test_the_report_follows_the_statement_order():
    results = [_result(p, passed=p.item in ("contact_time_grains", "update")) for p in reversed(PROPERTIES)]
    text = as_text(_report(results))
    table = [line.split()[0] for line in text.splitlines() if re.match(r"  \w+ +[\d.]+ / ", line)]
    assert table == list(spec.STATEMENT_ORDER)
    failed = [line.split()[1].rstrip(":") for line in text.splitlines() if line.startswith("FAILED ")]
    assert failed == sorted(failed, key=spec.STATEMENT_ORDER.index) and failed


# -- failures -----------------------------------------------------------------------------------------------

def test_the_first_failure_of_an_item_shows_its_input_the_next_are_short_and_repeats_are_one_name():
    props = [p for p in PROPERTIES if p.item == "contact_time_grains"]
    long = "expected 1.0, got 2.0 " * 40
    messages = ["contact_time_grains raised ZeroDivisionError: division by zero (line 12)",
                long,
                "contact_time_grains raised ZeroDivisionError: division by zero (line 13)",
                "contact_time_grains raised ZeroDivisionError: division by zero (line 14)"]
    results = [_result(p, message=m, snippet="import sys\nx1 = 1\nprint(x1)\n") for p, m in zip(props, messages)]
    results += [_result(p, passed=True) for p in props[len(messages):]]
    text = as_text(_report(results))
    assert text.count("smallest failing input") == 1 and text.count("    | ") == 3
    assert text.count("FAILED contact_time_grains") == 2
    assert f"also failed with the same error: {props[2].name}, {props[3].name}" in text
    assert len(max(text.splitlines(), key=len)) <= terminal.SHORT_MESSAGE + 2


def test_a_short_message_shows_what_the_code_returned_with_every_digit():
    """A review saw a second failure cut at "got dv1 = [ ..." (240 characters); numbers shortened to make room then
    read "got 1" beside "expected 1.0" (a red team's answers were off by 3e-6). Three lines, every digit."""
    props = [p for p in PROPERTIES if p.item == "contact_solve_grains"]
    second = ("contact_solve_grains: swapping the grains swaps the increments, and the increments must follow the "
              "collision law: with m1 = 1.0, m2 = 2.0, r = 0.0, expected dv1 = [0.6666666666666666, 0.0], dv2 = "
              "[-0.3333333333333333, -0.0]; got dv1 = [0.6666686666666666, 0.0], dv2 = [-0.3333343333333333, -0.0]")
    results = [_result(props[0], message="contact_solve_grains: momentum changed by 0.1234567891 " + "x" * 300),
               _result(props[1], message=second)]
    text = " ".join(as_text(_report(results)).split())
    assert "got dv1 = [0.6666686666666666, 0.0], dv2 = [-0.3333343333333333, -0.0]" in text


def test_a_repeated_error_is_named_under_the_failure_it_repeats():
    """A review: ben.py's first failure said "expected sys.float_info.max", and the one "also failed with the same
    error" line, printed last, named three tests that had failed with the second error ("expected tc = ...")."""
    props = [p for p in PROPERTIES if p.item == "contact_time_grains"][:5]
    messages = ["expected sys.float_info.max; got 0.26", "expected tc = 1.0; got 1.38", "expected tc = 2.0; got 1.09",
                "expected tc = 3.0; got 5.5", "contact_time_grains raised ZeroDivisionError"]
    text = as_text(_report([_result(p, message=m, snippet="print(1)\n") for p, m in zip(props, messages)]))
    second, third = text.index(f"FAILED {props[1].id}"), text.index(f"FAILED {props[4].id}")
    also = text.index(f"also failed with the same error: {props[2].name}, {props[3].name}")
    assert text.index("expected sys.float_info.max") < second < also < third and text.count("also failed") == 1


def test_only_the_first_failing_items_are_in_full_the_later_ones_named():
    functions = [p for p in PROPERTIES if p.item in spec.FUNCTION_NAMES]
    results = [_result(p, message=f"{p.item} is wrong", snippet="print(1)\n") for p in functions]
    text = as_text(_report(results))
    assert text.count("smallest failing input") == terminal.DETAILED_ITEMS
    for name in spec.STATEMENT_ORDER[terminal.DETAILED_ITEMS:len(spec.FUNCTION_NAMES)]:
        tests = ", ".join(p.name for p in functions if p.item == name)
        assert f"FAILED {name}: {tests}\n  {name} is wrong\n" in text
    assert len(text.splitlines()) < 60


def test_a_test_waiting_for_a_helper_is_one_line_among_other_failures():
    props = [p for p in PROPERTIES if p.item == "c12_row"]
    results = [_result(props[0], message="wrong table", snippet="print(1)\n"),
               _result(props[1], message="x", cause=Cause(NOT_WRITTEN, "update"))]
    text = as_text(_report(results))
    assert f"FAILED c12_row: {props[1].name}: needs update (not written yet)" in text
    assert text.count("smallest failing input") == 1
    assert "Next: fix c12_row" in text
    waiting_only = as_text(_report([_result(props[0], passed=True), results[1]]))
    assert "Next: write update, then check it alone:" in waiting_only


def test_tests_set_aside_for_a_wrong_helper_are_one_line_and_scenarios_defer_to_failing_functions():
    csg = [p for p in PROPERTIES if p.item == "contact_solve_grains"]
    update = [p for p in PROPERTIES if p.item == "update"]
    dem = [p for p in PROPERTIES if p.item == "dem_pair"]
    wrong = Cause(WRONG, "contact_solve_grains")
    results = ([_result(p, message=f"wrong dv {k}", snippet="print(1)\n") for k, p in enumerate(csg)]
               + [_result(update[0], passed=True)]
               + [_result(p, message="cases set aside", snippet="print(2)\n", cause=wrong) for p in update[1:]]
               + [_result(p, message="wrong velocities", snippet="print(3)\n") for p in dem])
    text = as_text(_report(results))
    names = ", ".join(p.name for p in update[1:])
    assert f"FAILED update: {names}: needs contact_solve_grains (wrong answers: fix it first)" in text
    assert "print(2)" not in text and "print(3)" not in text and text.count("smallest failing input") == 1
    # update's failures all rest on contact_solve_grains: the one to fix first.
    assert "(dem_pair runs contact_solve_grains, update: fix contact_solve_grains first)" in text
    own = [replace(r, cause=None) if r.prop.item == "update" else r for r in results]
    assert "(dem_pair runs contact_solve_grains, update: fix contact_solve_grains, update first)" in as_text(
        _report(own))
    assert f"FAILED dem_pair: {', '.join(p.name for p in dem)}\n  wrong velocities" in text
    assert "Next: fix contact_solve_grains" in text


# -- causes -------------------------------------------------------------------------------------------------

def test_causes_come_from_what_the_calls_raised():
    helper = HelperCall("minimum_contact_time", (), raised="NotImplementedError")
    forged = HelperCall("os.system", (), raised="NotImplementedError")
    assert cause_of(CallRaised("m", "NotImplementedError"), "update") == Cause(NOT_WRITTEN, "update")
    assert cause_of(CallRaised("m", "NotImplementedError", (helper, forged), 2), "update") == Cause(
        NOT_WRITTEN, "minimum_contact_time")
    assert cause_of(CallRaised("m", "ZeroDivisionError", (helper,), 1), "update") is None
    assert cause_of(FunctionMissing("m"), "contact_solve_wall") == Cause(MISSING, "contact_solve_wall")
    assert cause_of(ImportFailed("m"), "update") == Cause(NO_IMPORT)
    called_missing = CallRaised("update raised NameError: name 'contact_solve_wall' is not defined", "NameError")
    assert cause_of(called_missing, "update") == Cause(MISSING, "contact_solve_wall")
    assert cause_of(CallRaised("update raised NameError: name 'helper' is not defined", "NameError"), "update") is None
    assert cause_of(CallRaised("m", "NotImplementedError"), "not_a_function") is None
    assert wrong_helper("update") == Cause(WRONG, "update") and wrong_helper("os.system") is None


def test_a_wrong_only_name_is_a_usage_error_listing_the_names():
    with pytest.raises(UsageError, match="contact_time_wall:.*contact_time_grains, contact_time_walls"):
        runner.chosen(("contact_time_wall",))
    assert runner.chosen(("update", "contact_time_grains", "update")) == ("contact_time_grains", "update")
    assert runner.chosen(()) == ()
    # A scenario brings the functions it uses: its tests count only once they pass tests of their own.
    assert set(runner.chosen(("dem_pair",))) == {"dem_pair", "contact_time_grains", "contact_solve_grains", "update"}


def test_check_refuses_a_wrong_only_name_cleanly(capsys):
    assert cli.main(["check", str(TEXTBOOK), "--only", "updat"]) == cli.EXIT_UNUSABLE
    err = capsys.readouterr().err
    assert "--only updat" in err and "dem_pair" in err and "Traceback" not in err


def test_check_refuses_a_file_past_the_batchs_size_limit_as_the_batch_does(tmp_path, capsys):
    """A 5 MB file (a review's: a correct file with long comments) got 100 from check and no grade from a batch."""
    from grader.spec.limits import SOURCE_BYTES

    big = tmp_path / "granularGas.py"
    big.write_text(TEXTBOOK.read_text() + "#" * SOURCE_BYTES)
    assert cli.main(["check", str(big)]) == cli.EXIT_UNUSABLE
    err = capsys.readouterr().err
    assert f"more than the {SOURCE_BYTES}" in err and "Traceback" not in err


# -- real files, each graded once ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def template_text():
    return as_text(runner.grade_file(TEMPLATE))


@pytest.fixture(scope="module")
def one_bug(tmp_path_factory):
    path = tmp_path_factory.mktemp("one_bug") / "granularGas.py"
    path.write_text(TEXTBOOK.read_text().replace("/ np.dot(t, t)", "/ np.linalg.norm(t)"))
    return path, runner.grade_file(path)


def test_the_template_gets_one_line_per_function(template_text):
    for f in spec.FUNCTIONS:
        assert f"not written yet: {f.name} — {f.points} points" in template_text
    assert "FAILED" not in template_text and len(template_text.splitlines()) < 20


def test_a_one_bug_file_is_short_and_keeps_what_locates_the_bug(one_bug):
    _, report = one_bug
    text = as_text(report)
    assert 0 < report.score < 100 and len(text.splitlines()) <= 60
    assert "FAILED contact_time_walls" in text and "from granularGas import contact_time_walls" in text
    assert "not written" not in text


def test_check_only_grades_the_chosen_function(one_bug, capsys):
    path, _ = one_bug
    assert cli.main(["check", str(path), "--only", "contact_time_grains"]) == cli.EXIT_PASSED
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(": 15 / 15 points")
    assert "Checked only contact_time_grains (15 of 100 points)" in out
    assert "contact_time_walls" not in out


def test_a_function_calling_an_unwritten_helper_names_the_helper(tmp_path):
    """update written, minimum_contact_time still the template's: update's tests all wait for it (one line)."""
    text = TEXTBOOK.read_text()
    start = text.index("def minimum_contact_time(")
    end = text.index("\ndef ", start + 1)
    path = tmp_path / "granularGas.py"
    path.write_text(text[:start] + "def minimum_contact_time(x, v, R, w, indexOld):\n"
                    "    raise NotImplementedError(\"minimum_contact_time is not written yet\")\n\n" + text[end:])
    report = runner.grade_file(path, runner.GradeOptions(only=("update",)))
    assert {r.cause for r in report.results} == {Cause(NOT_WRITTEN, "minimum_contact_time")}
    assert "needs minimum_contact_time (not written yet): update — 20 points" in as_text(report)


def test_the_course_command_without_the_nbgrader_extra_says_what_to_install(tmp_path, monkeypatch, capsys):
    """A review ran it after the quick start's install: a ModuleNotFoundError traceback."""
    monkeypatch.setitem(sys.modules, "nbformat", None)  # import nbformat now raises ImportError
    assert cli.main(["nbgrader-course", "--out", str(tmp_path / "course")]) == cli.EXIT_UNUSABLE
    err = capsys.readouterr().err
    assert 'pip install "granular-grader[nbgrader]"' in err and "Traceback" not in err


#: The wall projection divided by |t| instead of |t|^2 (the hand-out's slip): right for walls of length 1, which
#: every feedback scenario's box has, so no scenario's gas goes wrong.
WALLS_OF_LENGTH_ONE_ONLY = """
def contact_time_walls(w, x1, v1, R1):
    t = w[1] - w[0]
    s = x1 - w[0]
    d = s - (s @ t) / np.linalg.norm(t) * t
    dist = np.linalg.norm(d)
    vn = float(v1 @ (d / dist))
    if vn >= 0 or dist < R1:
        return NO_CONTACT
    return float((dist - R1) / -vn)
"""


def test_a_page_without_an_animation_says_why(tmp_path, capsys):
    """A review: a failing file's page had no animation and no word why (the terminal's --animation said it)."""
    path = tmp_path / "granularGas.py"
    path.write_text((ROOT / "reference" / "granularGas.py").read_text() + WALLS_OF_LENGTH_ONE_ONLY)
    page, target = tmp_path / "page.html", tmp_path / "anim.gif"
    assert cli.main(["check", str(path), "--only", "contact_time_walls", "--html", str(page), "--animation",
                     str(target), "--quiet"]) == cli.EXIT_FAILED
    text = page.read_text()
    assert "No animation: your update ran each feedback scenario (single, head_on" in text and not target.exists()
    assert "data:image/gif" not in text
    # The header says the status only when it is not plain "graded" (it read "graded &middot; graded in 6.4 s").
    assert "&middot; graded &middot;" not in text and "&middot; graded in " in text
    assert f"<h1>Feedback for {path}</h1>" in text  # not "granularGas.py: feedback for granularGas.py"


def test_check_says_where_the_animation_went_or_why_there_is_none(tmp_path, capsys):
    """A review: check --animation wrote its file without a word (and wrote nothing, silently, for a correct file)."""
    target = tmp_path / "anim.gif"
    assert cli.main(["check", str(TEXTBOOK), "--animation", str(target)]) == cli.EXIT_PASSED
    assert f"no animation written to {target}: every test passed" in capsys.readouterr().out
    assert not target.exists()


def test_output_piped_into_a_program_that_stops_reading_ends_without_a_traceback(tmp_path):
    """A review: batch ... | head -1 ended in a BrokenPipeError traceback. The read end is closed before the
    check prints anything."""
    import subprocess

    path = tmp_path / "granularGas.py"
    path.write_text((ROOT / "student_template" / "granularGas.py").read_text())
    process = subprocess.Popen([sys.executable, "-m", "grader", "check", str(path), "--only",
                                "contact_time_grains"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=300) == 141 and "Traceback" not in stderr and "Exception" not in stderr, stderr


def test_a_file_defining_none_of_the_functions_is_told_so_once(tmp_path, capsys):
    """A review's empty granularGas.py got six "missing ... check its name" lines and not a word about being empty.
    The template, whose functions are there but not written, is not told so."""
    empty = tmp_path / "granularGas.py"
    empty.write_text("")
    assert cli.main(["check", str(empty), "--only", "contact_time_grains", "--only", "update"]) == cli.EXIT_FAILED
    out = capsys.readouterr().out
    assert f"{empty} defines none of these functions: is it the file you meant, and saved?" in out
    assert "defines none of these functions" not in as_text(_template_report())


@pytest.mark.parametrize("update_body, said", [
    (None, "No animation: your update is not written yet."),
    ("    minimum_contact_time(x, v, R, w, indexOld)\n    return t + dt\n",
     "No animation: your update calls minimum_contact_time, which is not written yet: no gas of yours to animate."),
])
def test_an_update_that_cannot_move_a_grain_gets_no_animation(tmp_path, update_body, said):
    """The template's page showed a gas frozen at t = 0 beside the reference's, an animation of nothing."""
    text = TEMPLATE.read_text()
    if update_body is not None:
        head, tail = text.split("def update(", 1)
        signature = tail.split("\n", 1)[0]
        rest = tail.split("\ndef ", 1)
        text = head + "def update(" + signature + "\n" + update_body + ("\ndef " + rest[1] if len(rest) > 1 else "")
    path = tmp_path / "granularGas.py"
    path.write_text(text)
    page, target = tmp_path / "page.html", tmp_path / "anim.gif"
    assert cli.main(["check", str(path), "--only", "update", "--html", str(page), "--animation", str(target),
                     "--quiet"]) == cli.EXIT_FAILED
    shown_page = page.read_text()
    assert said in shown_page and "data:image/gif" not in shown_page and not target.exists()


def test_check_refuses_an_animation_name_that_is_not_a_gif(tmp_path, capsys):
    """A review: --animation ben.html wrote a GIF named ben.html and said "animation written"."""
    target = tmp_path / "ben.html"
    assert cli.main(["check", str(TEXTBOOK), "--animation", str(target)]) == cli.EXIT_UNUSABLE
    err = capsys.readouterr().err
    assert "--animation" in err and ".gif" in err and not target.exists() and "Traceback" not in err
