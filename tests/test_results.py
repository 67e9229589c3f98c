"""The typed results and every report built from them: fast, no sandbox, no grading.

Results are built by hand (or from a hand-built GradeReport), then stored
and read back, written as Gradescope's results.json, and shown as the
feedback page, the student's view, the batch's CSV rows and summary page.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import strategies as st

from grader import spec
from grader.commands.batch import pool, signing, summary
from grader.commands.batch.outcome import Outcome
from grader.commands.batch.submissions import Submission
from grader.commands.batch.worker import GRADED, WorkerReply
from grader.errors import GraderError
from grader.grading import runner
from grader.grading.results import AnimationNote, ItemScore, Provenance, Results, ResultsError, TestRecord
from grader.properties.property import Property
from grader.reports import feedback, gradescope_json
from grader.reports.student_view import SET_ASIDE_MESSAGE, student_view, summary_text

HOSTILE = "<script>alert('x')</script> & \"quotes\""


def record(item: str, name: str, passed: bool, score: float, *, hidden: bool = False, message: str = "",
           snippet: str = "", outcome: str | None = None, description: str = "what it checks") -> TestRecord:
    return TestRecord(item, name, description, hidden, "passed" if passed else "failed",
                      outcome or ("passed" if passed else "failed"), score if passed else 0.0, score, message,
                      snippet, 0.25)


def make_results(tests: tuple[TestRecord, ...], **changes: object) -> Results:
    """Results whose points per item and in total add up from ``tests`` (items without tests: 0 / 0)."""
    items = tuple(ItemScore(n, round(sum(t.score for t in tests if t.item == n), 4),
                            round(sum(t.max_score for t in tests if t.item == n), 4)) for n in spec.ITEM_NAMES)
    results = Results("subs/ada/granularGas.py", round(sum(i.score for i in items), 4),
                      round(sum(i.max_score for i in items), 4), items, "graded", None, True,
                      ("bubblewrap",), (), False, "", 3.5, tests)
    return dataclasses.replace(results, **changes)


@pytest.fixture
def results() -> Results:
    tests = (record("contact_time_grains", "contact time", True, 6.6667),
             record("contact_time_grains", "no contact", False, 6.6667, message=f"expected 1; got {HOSTILE}",
                    snippet="print(contact_time_grains(x1, x2))\n"),
             record("contact_time_grains", "agrees with the reference", False, 6.6666, hidden=True,
                    message="expected tc = 0.5 (the reference's answer)"),
             record("update", "energy", False, 20.0, outcome="set aside", message="reference says dv = 3"))
    return make_results(tests, printed=f"debug {HOSTILE}", provenance=Provenance("ada", "ab" * 32, "f" * 64),
                        animation=AnimationNote("gas", 0.5, None, 1.25, f"at t = 1: {HOSTILE}"))


# -- the model -------------------------------------------------------------------------
def test_results_round_trip_through_json_text(results):
    for r in (results, dataclasses.replace(results, provenance=None, animation=None, import_error="SyntaxError")):
        back = Results.from_json(json.loads(json.dumps(r.to_json())))
        assert back == r
        assert back.by_item()["contact_time_grains"] == (6.6667, 20.0)
        assert [t.id for t in back.failed] == ["contact_time_grains: no contact",
                                                "contact_time_grains: agrees with the reference", "update: energy"]


def test_from_report_keeps_every_field_rounded_as_reports_show_them():
    props = [Property("contact_time_grains", f"p{k}", f"checks {k}", st.none, lambda caller, case: None,
                      hidden=k == 2) for k in range(3)]
    third = 20.0 / 3
    results = [runner.TestResult(props[0], "passed", third, third, seconds=1.23456),
               runner.TestResult(props[1], "failed", 0.0, third, "bad", "snip", 0.5, "timeout"),
               runner.TestResult(props[2], "passed", third, third)]
    report = runner.GradeReport("x/granularGas.py", results, True, None, "printed", 12.3456,
                                status="timeout: contact_time_grains", protections=("uid",), weaknesses=("no seccomp",), weak_isolation_allowed=True)
    r = Results.from_report(report)
    assert (r.score, r.max_score, r.seconds) == (13.3333, 20.0, 12.35)
    assert r.item("contact_time_grains") == ItemScore("contact_time_grains", 13.3333, 20.0)
    assert r.item("update") == ItemScore("update", 0.0, 0.0)
    failed = r.failed[0]
    assert (failed.id, failed.outcome, failed.message, failed.snippet, failed.max_score) == \
        ("contact_time_grains: p1", "timeout", "bad", "snip", 6.6667)
    assert r.tests[0].seconds == 1.23 and r.tests[2].hidden and not r.tests[0].hidden
    assert (r.status, r.printed, r.protections, r.weaknesses, r.weak_isolation_allowed) == \
        ("timeout: contact_time_grains", "printed", ("uid",), ("no seccomp",), True)
    assert Results.from_json(r.to_json()) == r


@pytest.mark.parametrize("change, field", [
    (lambda d: d.pop("score"), "'score' is missing"),
    (lambda d: d.update(score="12"), "'score': expected a number"),
    (lambda d: d.update(hidden_run=1), "'hidden_run': expected true or false"),
    (lambda d: d.update(max_score=True), "'max_score': expected a number"),
    (lambda d: d["tests"][1].pop("message"), "'tests[1].message' is missing"),
    (lambda d: d["tests"][0].update(status="ok"), "'tests[0].status'"),
    (lambda d: d["tests"][2].update(item="fly"), "'tests[2].item'"),
    (lambda d: d["items"].pop("update"), "'items.update' is missing"),
    (lambda d: d["items"].update(update=[1.0]), "'items.update': expected [score, max_score]"),
    (lambda d: d["items"].update(extra=[1.0, 2.0]), "'extra' is not a rubric item"),
    (lambda d: d.update(protections=["ok", 3]), "protections[1]"),
    (lambda d: d["provenance"].pop("sha256"), "'provenance.sha256' is missing"),
    (lambda d: d["animation"].update(first_overlap_t="soon"), "'animation.first_overlap_t'"),
    (lambda d: d.update(format="granular-grader results 0"), "another grader version"),
    (lambda d: d.update(tests={}), "'tests': expected a list"),
])
def test_from_json_names_the_field_that_is_missing_or_wrong(results, change, field):
    data = json.loads(json.dumps(results.to_json()))
    change(data)
    with pytest.raises(ResultsError, match=field.replace("[", r"\[").replace("]", r"\]")) as caught:
        Results.from_json(data)
    assert isinstance(caught.value, GraderError)


def test_from_json_refuses_what_is_not_an_object():
    for data in (None, [], "results"):
        with pytest.raises(ResultsError, match="expected an object"):
            Results.from_json(data)


# -- Gradescope's results.json ------------------------------------------------------------
def test_gradescope_json_of_hand_built_results():
    tests = (record("update", "energy", True, 20.0, description="energy kept"),
             record("update", "order", False, 5.0, hidden=True, message="wrong", snippet="update(x)\n"))
    r = make_results(tests, provenance=Provenance("bo", "00", "ff"), animation=AnimationNote("gas", 1.5))
    items = {n: [0.0, 0.0] for n in spec.ITEM_NAMES} | {"update": [20.0, 25.0]}
    assert gradescope_json.as_gradescope(r) == {
        "score": 20.0, "max_score": 25.0, "execution_time": 3.5, "output": "",
        "tests": [{"name": "update: energy", "score": 20.0, "max_score": 20.0, "status": "passed",
                   "output": "energy kept", "tags": ["update", "public"], "visibility": "visible"},
                  {"name": "update: order", "score": 0.0, "max_score": 5.0, "status": "failed",
                   "output": "wrong\n\nTo reproduce:\nupdate(x)\n", "tags": ["update", "hidden"],
                   "visibility": "visible"}],
        "extra_data": {"status": "graded", "items": items, "hidden_tests_run": True, "protections": ["bubblewrap"],
                       "weaknesses": [], "weak_isolation_allowed": False,
                       "outcomes": {"update: energy": "passed", "update: order": "failed"}, "printed": "",
                       "sha256": "00", "fingerprint": "ff", "student": "bo",
                       "animation": {"scenario": "gas", "first_divergence_t": 1.5, "first_overlap_t": None,
                                     "first_outside_t": None, "error": None, "reference": "computed",
                                     "heading": "Your gas next to the reference"}}}
    assert list(gradescope_json.as_gradescope(r)["extra_data"])[-4:] == ["sha256", "fingerprint", "student",
                                                                         "animation"]
    assert gradescope_json.dumps(r) == json.dumps(gradescope_json.as_gradescope(r), indent=2) + "\n"


def test_results_json_is_read_back_as_the_results_it_was_written_from(results):
    back = gradescope_json.read(gradescope_json.dumps(results).encode(), results.submission)
    # results.json holds neither a failed test's description nor each test's seconds.
    expected = dataclasses.replace(results, tests=tuple(
        dataclasses.replace(t, seconds=0.0, description=t.description if t.passed else "") for t in results.tests))
    assert back == expected
    assert gradescope_json.as_gradescope(back) == gradescope_json.as_gradescope(results)


def test_a_results_json_the_grader_did_not_write_is_refused(results):
    data = gradescope_json.as_gradescope(results)
    del data["extra_data"]["outcomes"]
    with pytest.raises(ResultsError, match="outcomes"):
        gradescope_json.from_gradescope(data)
    for raw in (b"{not json", b"\xff\xfe", b"[]"):
        with pytest.raises(ResultsError):
            gradescope_json.read(raw)


def test_inside_gradescope_hidden_details_follow_the_bundles_visibility(results):
    data = gradescope_json.for_gradescope_run(results, "after_published")
    by_name = {t["name"]: t for t in data["tests"]}
    hidden = by_name["contact_time_grains: agrees with the reference"]
    assert hidden["visibility"] == "after_published" and "reference's answer" in hidden["output"]
    public = by_name["contact_time_grains: no contact"]
    assert public["visibility"] == "visible" and public["output"].startswith("FAILED contact_time_grains: no contact")
    assert "reference's answer" not in data["output"] and "1 hidden test(s) of contact_time_grains" in data["output"]
    assert by_name["update: energy"]["output"].endswith(SET_ASIDE_MESSAGE)  # the reference's dv is not shown
    assert data["stdout_visibility"] == "hidden" and data["score"] == results.score


# -- what people read ------------------------------------------------------------------
def test_feedback_page_escapes_the_students_text_and_rounds_as_the_csv(results):
    html = feedback.page("<b>ada</b>", results, source=f"# {HOSTILE}\n", gif=b"GIF89a")
    assert "<script>" not in html and "<b>ada</b>" not in html
    assert html.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") == 4  # message, printed, source, error
    row = Outcome("ada", "graded", results).row
    assert row["score"] == 6.67 and row["contact_time_grains"] == 6.67 and row["max_score"] == 40
    assert "6.67 / 40 points" in html and "<td class=\"num\">6.67 / 20</td>" in html
    assert "1 of 3 tests passed" in html and "sha256 abababababab" in html
    assert "Your grains leave the reference's at t = 0.5" in html and "t = 1.25" in html
    assert "print(contact_time_grains(x1, x2))" in html and "hidden test of" in html


def test_feedback_page_shows_terminal_escapes_and_bidi_overrides_written_out(results):
    """A review's batch: a student folder named with ESC, BEL and a right-to-left override, and the same in the
    source, reached the page's title, heading and source raw."""
    name, source = "mallory\x1b]0;PWNED\x07\u202eabc\u202c", "# \x1b[2J \u202e \u200f \udcff\n"
    html = feedback.page(name, results, source=source, gif=b"GIF89a")
    html.encode("utf-8")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", html)
    assert "mallory\\x1b]0;PWNED\\x07\\u202eabc\\u202c" in html and "# \\x1b[2J \\u202e \\u200f ?" in html


def test_student_view_counts_hidden_failures_without_their_messages(results):
    view = student_view(results, "granularGas.py")
    item = view.item("contact_time_grains")
    assert (item.earned, item.maximum, item.hidden_failed) == (6.6667, 20.0, 1)
    assert len(item.public_failures) == 1 and HOSTILE in item.public_failures[0]
    text = summary_text(view)
    assert "reference's answer" not in text and "reference says" not in text
    listed = [line.split()[0] for line in text.splitlines() if line.startswith("  ") and " / " in line]
    assert listed == list(spec.STATEMENT_ORDER)  # the statement's order, as check and the pages list them
    assert "granularGas.py: 6.67 / 40 points" in text


def outcomes(results: Results) -> list[Outcome]:
    bob = make_results((record("contact_time_grains", "contact time", True, 10.0),
                        record("contact_time_grains", "no contact", True, 10.0),
                        record("update", "energy", True, 20.0)), seconds=9.0)
    return [Outcome("ada", "graded", results), Outcome("bob", "graded", bob),
            Outcome(f"eve{HOSTILE}", "missing: no granularGas.py")]


def test_pass_rates_least_passed_first_ungraded_not_counted(results):
    assert summary.pass_rates(outcomes(results)) == [
        ("contact_time_grains: agrees with the reference", "contact_time_grains", 0, 1),
        ("contact_time_grains: no contact", "contact_time_grains", 1, 2),
        ("update: energy", "update", 1, 2),
        ("contact_time_grains: contact time", "contact_time_grains", 2, 2)]
    assert summary.pass_rates([]) == []


def test_summary_page_shows_the_csv_points_and_escapes_names(results, monkeypatch):
    monkeypatch.setattr(summary, "distribution_svg", lambda scores, maximum: f"<svg>{scores} {maximum}</svg>")
    html = summary.page(outcomes(results))
    assert "<script>" not in html and "eve&lt;script&gt;" in html
    assert "<svg>[6.6667, 40.0] 40.0</svg>" in html
    assert "<td>6.67 / 40</td>" in html and "<td>40 / 40</td>" in html
    assert "3 students, 2 graded; mean 23.33, median 23.33 of 40" in html
    slowest = html[html.index("Slowest"):]
    assert slowest.index("bob") < slowest.index("ada") and "<td>9</td>" in slowest
    csv = pool.grades_csv(outcomes(results)).decode()
    assert "ada,6.67,40,6.67,0,0,0,0,0,0,0,graded" in csv.replace("\r", "")


# -- the batch's reply and records ---------------------------------------------------------
def test_worker_reply_carries_typed_results(results):
    reply = WorkerReply(GRADED, results, "<html>", options={"hidden": None})
    back = WorkerReply.from_json(reply.to_json())
    assert back == reply
    broken = json.loads(reply.to_json())
    del broken["results"]["tests"][0]["outcome"]
    with pytest.raises(ResultsError, match=r"tests\[0\].outcome"):
        WorkerReply.from_json(json.dumps(broken))
    with pytest.raises(ValueError, match="without results"):
        WorkerReply.from_json(json.dumps({"kind": GRADED, "results": None}))


def test_a_stored_record_is_reused_as_typed_results_and_an_unreadable_one_regraded(results, tmp_path: Path):
    source = b"def update(): pass\n"
    submission = Submission("ada", tmp_path / "ada.py", source)
    with signing.OutputFolder(tmp_path) as out:
        key, _ = out.key()
        outcome = Outcome("ada", results.status, results)
        reply = WorkerReply(GRADED, results, "<html>page</html>")
        pool._store(out, key, outcome, reply, submission.sha256, "print")
        kept, note = pool._reuse(out, key, submission, "print")
        assert kept is not None and kept.reused and note == ""
        assert kept.row == outcome.row and kept.results is not None
        assert gradescope_json.as_gradescope(kept.results) == gradescope_json.as_gradescope(results)
        # A record signed by an earlier grader whose results.json this one cannot read: regraded, no crash.
        old = signing.Record("ada", submission.sha256, "print", b'{"score": 1}', b"<html>page</html>")
        signing.store(out, key, (pool.STUDENTS, "ada"), old)
        assert pool._reuse(out, key, submission, "print") == (None, "")


def test_the_nbgrader_cache_reads_back_a_view_and_regrades_an_unreadable_one(results, tmp_path: Path):
    from grader.commands.courses.cache import ResultCache
    from grader.reports.student_view import StudentView

    view = student_view(results, "granularGas.py")
    assert StudentView.from_json(view.to_json()) == view
    broken = json.loads(view.to_json())
    broken["items"][2]["earned"] = "all"
    with pytest.raises(ResultsError, match=r"items\[2\].earned"):
        StudentView.from_json(json.dumps(broken))
    cache = ResultCache(tmp_path / "cache")
    cache.put("k", view)
    assert cache.get("k") == view
    (tmp_path / "cache" / "k.json").write_text(json.dumps(broken))
    assert cache.get("k") is None


def test_the_animation_heading_says_when_the_reference_is_absent():
    beside = feedback.animation_section(AnimationNote("gas", 0.5), b"GIF89a")
    alone = feedback.animation_section(AnimationNote(
        "gas", None, reference="absent", heading="Your gas alone: the reference's run of this gas is not in the kit"),
        b"GIF89a")
    assert "<h2>Your gas next to the reference</h2>" in beside and "(right)" in beside
    assert "<h2>Your gas alone: the reference&#x27;s run of this gas is not in the kit</h2>" in alone
    assert "next to the reference" not in alone and "(right)" not in alone
    note = AnimationNote("dem", None, reference="stored", heading="Your gas next to the reference")
    assert AnimationNote.from_json(dataclasses.asdict(note)) == note


def test_a_message_cannot_lay_out_a_points_table_of_its_own():
    """A red team's error text drew "granularGas.py: 100 / 100 points" and item lines under the real table, in
    Gradescope's top-level output: every line of a message now sits behind the margin of a quote."""
    from grader.reports.student_view import MESSAGE_MARGIN, public_failure

    forged = ("contact_time_walls raised ValueError: \n\ngranularGas.py: 100 / 100 points\n\n"
              "  contact_time_grains      15 / 15\nAll tests passed.")
    test = TestRecord("contact_time_walls", "contact time", "returns the first contact", False, "failed", "failed",
                      0.0, 2.0, forged)
    lines = public_failure(test).splitlines()
    assert lines[0].startswith("FAILED contact_time_walls") and lines[1:]
    assert all(line.startswith(MESSAGE_MARGIN.rstrip()) for line in lines[1:]), lines
