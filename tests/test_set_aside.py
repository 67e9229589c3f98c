"""With the traced excuse off (the default), the reported case of each failing test is audited once the grading's
box is closed (grader.grading.set_aside.reported_cases), and the box is never renewed: nothing an audit does can
reach a graded answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grader.grading import runner, set_aside, tracing
from grader.grading.causes import WRONG
from grader.grading.report import FAILED, PASSED, SET_ASIDE, Verdict
from grader.properties import oracle
from grader.properties.property import Property
from grader.sandbox import client
from grader.sandbox.calls import Returned

from .conftest import attack_and_control, scaled_sample
from .test_grader_corpus import BUGS
from .test_helper_audit import REQUEST, FakeReplayer, ctg_call, returned_with

pytestmark = pytest.mark.skipif(not oracle.available(), reason="the audit needs the reference")


def prop(item: str) -> Property:
    return Property(item, "t", "t", lambda: None, lambda session, case: None)  # type: ignore[arg-type, return-value]


#: A failing minimum_contact_time case whose one helper call answered 5.0 where the reference answers 1.0.
WRONG_HELPER_CASE = (("minimum_contact_time", REQUEST, returned_with(ctg_call(5.0))),)


def test_a_reported_case_resting_on_a_helper_that_failed_its_tests_is_set_aside_naming_it():
    auditor = FakeReplayer(5.0)  # the helper, replayed alone, answers what its record says: the record is confirmed
    verdicts = set_aside.reported_cases([(prop("contact_time_grains"), Verdict(FAILED, "wrong root")),
                                         (prop("minimum_contact_time"), Verdict(FAILED, "late", "",
                                                                                None, WRONG_HELPER_CASE))],
                                        lambda _: auditor)  # type: ignore[arg-type, return-value]
    assert verdicts[0] == Verdict(FAILED, "wrong root")
    assert verdicts[1].outcome == SET_ASIDE and verdicts[1].cause is not None
    assert verdicts[1].cause.kind == WRONG and verdicts[1].cause.function == "contact_time_grains"
    assert "fix contact_time_grains first" in verdicts[1].message and "contact_time_grains(" in verdicts[1].snippet


@pytest.mark.parametrize("helper", [Verdict(PASSED), Verdict(SET_ASIDE, "rests on another")])
def test_a_helper_that_failed_no_test_of_its_own_is_never_blamed(helper: Verdict):
    """A helper that passed, or whose tests were only set aside (they rest on its own helper), is no suspect: the
    caller's case stays its own failure, audited by nobody."""
    auditor = FakeReplayer(5.0)
    failing = Verdict(FAILED, "late", "", None, WRONG_HELPER_CASE)
    verdicts = set_aside.reported_cases([(prop("contact_time_grains"), helper),
                                         (prop("minimum_contact_time"), failing)],
                                        lambda _: auditor)  # type: ignore[arg-type, return-value]
    assert verdicts == [helper, failing] and auditor.calls == 0


def test_a_record_the_replay_does_not_confirm_leaves_the_failure_standing():
    auditor = FakeReplayer(1.0)  # replayed, the helper answers right: its record lied
    failing = Verdict(FAILED, "late", "", None, WRONG_HELPER_CASE)
    verdicts = set_aside.reported_cases([(prop("contact_time_grains"), Verdict(FAILED, "wrong root")),
                                         (prop("minimum_contact_time"), failing)],
                                        lambda _: auditor)  # type: ignore[arg-type, return-value]
    assert verdicts[1] == failing and auditor.calls == 1


def wrong_root_file(tmp_path: Path) -> Path:
    bug, source, _, changes = BUGS[0]
    assert bug == "wrong root"
    text = source.read_text()
    for old, new in changes:
        text = text.replace(old, new)
    path = tmp_path / "granularGas.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize("excuse", [False, True])
def test_audits_come_after_the_grading_box_is_closed_unless_the_excuse_needs_them_sooner(tmp_path, monkeypatch,
                                                                                         excuse: bool):
    """A real file with a wrong helper, whose callers' tests fail on cases resting on it. Without the excuse, every
    audit replay comes after the last call of the grading's box and its closing, and the box is never renewed; with
    it, the search audits as it goes, and the box is renewed after each test whose failures were audited (a red
    team's file timed the audits from the grading's box)."""
    events: list[str] = []
    boxes: list[client.Sandbox] = []

    class Grading(client.Sandbox):  # the grading's box (the first made here), then the box of the searches
        def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
            boxes.append(self) if all(box is not self for box in boxes) else None
            events.append("graded call" if self is boxes[0] else "search call")
            return super().call(name, *args, **kwargs)

        def renew(self) -> None:
            events.append("renewed")
            super().renew()

        def close(self) -> None:
            events.append("closed" if self is boxes[0] else "search box closed")
            super().close()

    replay = tracing.ReplayBox.call
    replayed_in: set[int] = set()  # the boxes the replays were made in

    def replayed(self: tracing.ReplayBox, name: str, *args: Any, record: int = 0) -> Any:
        events.append("replay")
        try:
            return replay(self, name, *args, record=record)
        finally:
            replayed_in.add(id(self.box))

    monkeypatch.setattr(runner, "Sandbox", Grading)
    monkeypatch.setattr(tracing.ReplayBox, "call", replayed)  # a FreshBox's replays too
    graded = runner.grade_file(wrong_root_file(tmp_path), runner.GradeOptions(excuse_traced=excuse))
    set_aside_tests = [r for r in graded.results if r.outcome == SET_ASIDE and r.prop.item == "update"]
    assert set_aside_tests and all("fix contact_time_grains first" in r.message for r in set_aside_tests)
    assert "replay" in events
    last_graded, first_replay = max(k for k, e in enumerate(events) if e == "graded call"), events.index("replay")
    # The searches come after the grading's last call, and its box is closed before them.
    assert last_graded < events.index("closed", last_graded) < events.index("search call")
    if excuse:
        assert first_replay < last_graded and "renewed" in events
    else:
        assert "renewed" not in events and last_graded < events.index("closed") < first_replay
        # In the searches' boxes, after their searches (they earn nothing either way): no box of their own to start.
        # The file fails hidden tests too: theirs are searched in a third box (tests/test_hidden_apart.py).
        last_replay = max(k for k, e in enumerate(events) if e == "replay")
        assert len(boxes) == 3 and id(boxes[1]) in replayed_in and replayed_in <= {id(boxes[1]), id(boxes[2])}
        assert last_replay < events.index("search box closed")


def test_a_reported_case_keeps_only_the_calls_its_audit_reads():
    """The function's own calls that made helper calls, the first REPORTED_CALLS_KEPT of them: a red team's file
    made every reported case hold 200 replies of the largest size until the box closed (1.2 GB in the grader)."""
    quiet = Returned(None, (), (), 0)  # made no helper call
    fat = returned_with(ctg_call(5.0))
    calls = [("minimum_contact_time", REQUEST, quiet), ("contact_time_grains", REQUEST, fat)]
    calls += [("minimum_contact_time", REQUEST, fat)] * (set_aside.REPORTED_CALLS_KEPT + 5)
    kept = set_aside.audited_calls(calls, "minimum_contact_time")
    assert len(kept) == set_aside.REPORTED_CALLS_KEPT and all(
        name == "minimum_contact_time" and returned is fat for name, _, returned in kept)
    assert set_aside.audited_calls(calls, "c12_row") == ()


def test_a_box_for_replays_stops_restarting_a_child_that_keeps_ending(tmp_path, boots):
    """A red team's file ended the auditor's child in every replay: each replay started a new child, charged to no
    budget, hundreds per audited call. After tracing.STOPS_ALLOWED such replays, the box refuses the next ones
    without starting anything (a refused replay confirms nothing)."""
    path = tmp_path / "granularGas.py"
    path.write_text("import os\n\n\ndef contact_time_grains(x1, x2, v1, v2, R1, R2):\n    os._exit(3)\n")
    with tracing.FreshBox(path, runner.GradeOptions().limits) as box:
        for _ in range(tracing.STOPS_ALLOWED + 4):
            with pytest.raises(client.ChildDied):
                box.call("contact_time_grains", *REQUEST[:2], *REQUEST[:2], 1.0, 1.0)
    assert len(boots) == tracing.STOPS_ALLOWED and box.stops == tracing.STOPS_ALLOWED


def test_a_session_keeps_the_helper_records_of_the_audited_function_only():
    """The records of other functions' calls are never audited: a red team's file sent the largest records in each
    of the 200 calls of a scenario's reported case, all held at once (5 GB in the grader's process)."""
    from grader.grading.session import Session

    fat = returned_with(ctg_call(5.0))

    class Child:
        def call(self, name: str, *args: Any, record: int = 0) -> Returned:
            return fat

    session = Session(Child(), audited="update")  # type: ignore[arg-type]
    assert session.call("minimum_contact_time") is fat and session.call("update") is fat
    assert [len(returned.helper_calls) for _, _, returned in session.returns] == [0, 1]
    assert session.returns[0][2].helper_calls_total == 1  # how many there were is kept


def test_a_file_ending_the_auditors_child_in_every_replay_starts_few_children(tmp_path, boots):
    """tests/audit_samples/auditor_crash_loop.py (a red team's): its wrong helper, replayed by the auditor on a
    made-up pair it asked about 520 times in each caller's case, ends the child. Each replay started a new child:
    a batch's grading of it ran past its 15-minute backstop ("grader error", no grade). Now the auditor refuses
    replays after three such ends; the file scores as without its trick."""
    scores = []
    attack, control = attack_and_control(tmp_path, Path(__file__).parent / "audit_samples" / "auditor_crash_loop.py")
    for name, path in (("attack", attack), ("control", control)):
        boots.clear()
        options = runner.GradeOptions(only=("contact_time_grains", "minimum_contact_time"))
        scores.append(runner.grade_file(path, options).score)
        if name == "attack":
            # The grading's box, the public and the hidden tests' searches' boxes, the auditor's start and restarts
            # (the caps of replays are shared by the boxes they are made in).
            assert len(boots) <= 4 + tracing.STOPS_ALLOWED, len(boots)
    assert scores[0] == scores[1]


def test_a_file_whose_replays_wait_within_each_calls_limits_gets_few_replays(tmp_path, monkeypatch):
    """tests/audit_samples/auditor_slow_replays.py (a second red team's): each replay of its made-up pair spends a
    little CPU and sleeps, within one call's limits, and answers other than its record, so the audit goes on to the
    next: 21 minutes of replays after its tests had ended. A box for replays now stops after REPLAY_CPU_SECONDS of
    its child's CPU or REPLAY_ASLEEP_SECONDS waited (made 1 s here, the sleeps 0.3 s, to keep the test short)."""
    path = scaled_sample(tmp_path, Path(__file__).parent / "audit_samples" / "auditor_slow_replays.py",
                         "BURN = 0.45\nSLEEP = 4.2\n", "BURN = 0.05\nSLEEP = 0.3\n")
    monkeypatch.setattr(tracing, "REPLAY_ASLEEP_SECONDS", 1.0)
    replays = []
    call = client.Sandbox.call

    def counted(self: client.Sandbox, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "contact_time_grains" and float(args[1][0]) == 3.0 and float(args[4]) == 0.5:
            replays.append(name)  # the made-up pair, asked by the grader: an auditor's replay
        return call(self, name, *args, **kwargs)

    monkeypatch.setattr(client.Sandbox, "call", counted)
    graded = runner.grade_file(path, runner.GradeOptions(only=("contact_time_grains", "minimum_contact_time")))
    assert graded.status == "graded" and len(replays) <= 6, len(replays)


#: contact_time_grains with the right root, as _right_ctg: what the attacks below switch to.
RIGHT_ROOT = '''

def _right_ctg(x1, x2, v1, v2, R1, R2):
    dx, dv = x1 - x2, v1 - v2
    a, b, c = np.dot(dv, dv), 2 * np.dot(dx, dv), np.dot(dx, dx) - (R1 + R2) ** 2
    if c < 0 or b >= 0 or a == 0 or b * b - 4 * a * c < 0:
        return sys.float_info.max
    tc = (-b - np.sqrt(b * b - 4 * a * c)) / (2 * a)
    return sys.float_info.max if tc < 0 else float(tc)
'''

SEARCH_BOX_STATE = '''

# The attack: the reported cases' audits replay in the searches' box, after the searches. A replay asks a call this
# process has answered before: then minimum_contact_time and update answer with the right root, so that no replay
# gives the answer graded (and none of their cases is laid on the helper), or whatever else state might buy.
TRICK = True
_SEEN = set()
_WRONG_CTG, _OWN_MCT, _OWN_UPDATE = contact_time_grains, minimum_contact_time, update

''' + RIGHT_ROOT + '''

def _again(own, *args):
    global contact_time_grains
    key = (own.__name__, repr([np.asarray(a, float).tolist() if hasattr(a, "__len__") else a for a in args]))
    if TRICK and key in _SEEN:
        contact_time_grains = _right_ctg
        try:
            return own(*args)
        finally:
            contact_time_grains = _WRONG_CTG
    _SEEN.add(key)
    return own(*args)


def minimum_contact_time(x, v, R, w, indexOld):
    return _again(_OWN_MCT, x, v, R, w, indexOld)


def update(x, v, R, m, w, indexOld, r, dt, t):
    return _again(_OWN_UPDATE, x, v, R, m, w, indexOld, r, dt, t)
'''


def test_state_kept_from_the_searches_into_the_audits_of_the_reported_cases_earns_nothing(tmp_path):
    """The reported cases' audits replay in the searches' box (tracing.ReplayBox): one box less for a failing file.
    A file with a wrong helper whose callers answer right whenever a call comes again in the same process (a replay,
    after the searches) steers those audits: its score and points per item are those of the same file without the
    trick, as those audits can only set aside a case that earns nothing anyway."""
    source = wrong_root_file(tmp_path).read_text() + SEARCH_BOX_STATE
    attack, control = attack_and_control(tmp_path, _written(tmp_path / "sample.py", source))
    graded = [runner.grade_file(path) for path in (attack, control)]
    assert graded[1].score < 100 and any(r.outcome == SET_ASIDE for r in graded[1].results)
    assert graded[0].score == graded[1].score and graded[0].by_item() == graded[1].by_item()
    # The trick worked where it could: fewer of its failing cases laid on the helper, in the messages only.
    set_aside_counts = [sum(r.outcome == SET_ASIDE for r in g.results) for g in graded]
    assert set_aside_counts[0] < set_aside_counts[1], set_aside_counts


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
