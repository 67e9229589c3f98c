"""What the grading's box sees does not depend on the grader's verdicts (real files, real boxes).

A red team's file kept the hand-out's equal-mass collision law until it met the same arguments again, which the
grader's search for the smallest failing case brought (and the reported case run once more, and the next tests'
identical cases), then switched to the mass-weighted law: 97 points against its control's 73. The grading's box now
gets every drawn case of every test whatever the answers, each case whole (property.checked_whole), each different
call once (Sandbox(remember=True)), and the searches for the cases to report run in another box after it is closed
(grading.runner).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grader.grading import runner
from grader.grading.report import PASSED
from grader.sandbox import client

from .conftest import attack_and_control
from .test_grader_corpus import BUGS


def _mutated(bug_name: str, folder: Path) -> Path:
    bug, source, _, changes = next(b for b in BUGS if b[0] == bug_name)
    text = source.read_text()
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    folder.mkdir()
    path = folder / "granularGas.py"
    path.write_text(text)
    return path


def _graded_calls(path: Path, monkeypatch: pytest.MonkeyPatch, only: str) -> tuple[list[tuple[str, str]], Any]:
    """(the calls that reached the grading box's child, in order: name and arguments), and the report."""
    reached: list[tuple[str, str]] = []
    boxes: list[client.Sandbox] = []

    class Recorded(client.Sandbox):  # the first made is the grading's box; then the searches' box
        def _call(self, name: str, sent: tuple, body: str, record: int) -> Any:
            boxes.append(self) if not boxes else None
            if self is boxes[0]:
                reached.append((name, body))
            return super()._call(name, sent, body, record)

    monkeypatch.setattr(runner, "Sandbox", Recorded)
    report = runner.grade_file(path, runner.GradeOptions(only=(only,)))
    return reached, report


# "inf instead of float max" fails the first call of two-call cases (a no-contact pair, then a contact pair): a
# case stopped at its failure told a red team's file which formula to keep (88.5 points against 35).
@pytest.mark.parametrize("bug, function", [("equal-mass formula", "contact_solve_grains"),
                                           ("wrong root", "contact_time_grains"),
                                           ("inf instead of float max", "contact_time_grains")])
def test_a_wrong_file_s_grading_box_gets_the_calls_a_right_file_s_gets_each_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bug: str, function: str) -> None:
    right = _mutated("equal-mass formula", tmp_path / "right")
    right.write_text(next(b for b in BUGS if b[0] == bug)[1].read_text())  # the correct file the bug comes from
    wrong = _mutated(bug, tmp_path / "wrong")
    right_calls, right_report = _graded_calls(right, monkeypatch, function)
    wrong_calls, wrong_report = _graded_calls(wrong, monkeypatch, function)
    assert right_report.all_passed
    assert any(r.outcome != PASSED for r in wrong_report.results), "the bug was not caught: the test shows nothing"
    assert any(r.snippet for r in wrong_report.results if r.outcome != PASSED), "no failing case was reported"
    assert wrong_calls == right_calls, "the calls the grading's box got depend on the verdicts"
    assert len(set(wrong_calls)) == len(wrong_calls), "the grading's box got a call it had got before"


def test_a_search_that_does_not_fail_again_cannot_undo_the_grading_box_s_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The points come from the grading's box alone: its search box (the file's to fool: it can tell the two apart)
    only finds the case to report."""
    from grader.grading.report import Verdict

    wrong = _mutated("wrong root", tmp_path / "wrong")
    monkeypatch.setattr(runner, "search_failure", lambda *args: Verdict(PASSED))
    report = runner.grade_file(wrong, runner.GradeOptions(only=("contact_time_grains",)))
    failed = [r for r in report.results if r.outcome != PASSED]
    assert failed and all("did not fail again" in r.message for r in failed)
    assert report.score < 15


def test_a_case_stopped_in_the_grading_box_is_never_run_there_again(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A red team's file raised NotImplementedError in one call and watched whether the same case came again (the
    report's run of a stopped case, recording helper calls, past the box's memory): it did only when nothing had
    failed before. The report's run is now the search box's, and a stop ends a test's calls either way."""
    source = next(b for b in BUGS if b[0] == "wrong root")[1].read_text()
    header = "def contact_time_grains(x1, x2, v1, v2, R1, R2):\n"
    assert header in source
    stopping = source.replace(header, header + "    if R1 > 1.9:\n        raise NotImplementedError('not yet')\n", 1)
    path = tmp_path / "granularGas.py"
    path.write_text(stopping)
    calls, report = _graded_calls(path, monkeypatch, "contact_time_grains")
    assert any("not written yet" in r.message and r.snippet for r in report.results), "no test stopped"
    assert len(set(calls)) == len(calls), "the grading's box got a call it had got before"


def test_a_file_timing_the_grader_between_its_calls_learns_nothing(tmp_path: Path) -> None:
    """A file compared, on its own clock, the grader's time between its calls after answers it knew a formula gets
    right (equal masses) and after the others: a failure's message, formatted between two calls, took 234-418 us,
    and the file switched formula for the tests after (80.5 points against 60.5). Within the grading's box no
    message is read, so none is formatted (property.messages_unread); the file now scores as its control."""
    attack, control = (runner.grade_file(path).score for path in
                       attack_and_control(tmp_path, Path(__file__).parent / "verdict_samples" / "timing_switch.py"))
    assert control < 100 and attack == control, (attack, control)


def test_no_value_is_formatted_for_a_message_while_the_grading_box_is_open(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The deterministic side of the test above: formatting a failure's values is work only a failure costs, so
    none is done while the grading's box is open; the search's box formats the reported case's."""
    from grader.grading import search
    from grader.properties import readers

    formatted = {"grading box": 0, "after": 0}
    where = ["after"]
    real_number, real_replay = readers._number, search.replay_property

    def counted_number(x: float) -> str:
        formatted[where[0]] += 1
        return real_number(x)

    def replay(*args: Any, **kwargs: Any) -> Any:
        where[0] = "grading box"
        try:
            return real_replay(*args, **kwargs)
        finally:
            where[0] = "after"

    monkeypatch.setattr(readers, "_number", counted_number)
    monkeypatch.setattr(runner, "replay_property", replay)
    report = runner.grade_file(_mutated("equal-mass formula", tmp_path / "wrong"),
                               runner.GradeOptions(only=("contact_solve_grains",)))
    assert any(r.outcome != PASSED for r in report.results)
    assert formatted["after"] > 0, "no reported case formatted a value: the test shows nothing"
    assert formatted["grading box"] == 0, formatted
