"""The search for a failing input of one property: Hypothesis ``find`` over the submission's answers.

Two steps, which the grading runs in two boxes: replay_property calls the drawn cases (the ones ``find`` draws),
every one and each whole, whatever the answers; search_failure then shrinks a failure to the case to report.
Settings are derandomized and use no example database, so the same file always
gets the same grade; what Hypothesis draws depends on the strategies only. Given
suspects (with the traced excuse only: grader.grading.runner), a failing case
that rests on a wrong answer of one of them (grader.grading.set_aside) is set
aside; a timeout or a crash ends the search of its property only.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.grading import audit, set_aside
from grader.grading.cases import case_key, find_with_grading_settings
from grader.grading.causes import cause_of, wrong_helper
from grader.grading.paths import Call, SearchPaths
from grader.grading.report import CRASHED, FAILED, PASSED, SET_ASIDE, TIMEOUT, Verdict
from grader.grading.session import Audits, Session
from grader.grading.snippets import snippet
from grader.properties.property import Discard, Property, PropertyFailed, checked_whole, messages_unread
from grader.sandbox.calls import HELPER_CALLS_KEPT
from grader.sandbox.client import (
    CallRaised,
    CallTimeout,
    ChildDied,
    FunctionMissing,
    ProtocolViolation,
    Sandbox,
    SubmissionError,
)


class Stopped(Exception):
    """The property's search ends at this case: a call timed out or killed the child, or a function is missing or
    not written (it fails whatever the input: no smaller case would say more)."""

    def __init__(self, error: SubmissionError, trace: list[tuple[str, tuple[Any, ...]]], case: Any = None):
        super().__init__(str(error))
        self.error, self.trace, self.case = error, trace, case


class _Abort(BaseException):
    """Ends Hypothesis's search at once (a BaseException: Hypothesis neither catches nor shrinks it)."""


def _unwritten(error: Exception) -> bool:
    """A function the file does not define, or one that raises NotImplementedError (the template's)."""
    return isinstance(error, FunctionMissing) or (isinstance(error, CallRaised)
                                                   and error.error == "NotImplementedError")


@dataclass
class Tally:
    passed: int = 0
    spoiled: list[audit.Spoiled] = field(default_factory=list)


def _set_aside(session: Session, prop: Property, suspects: frozenset[str]) -> audit.Spoiled | None:
    """The helper proved wrong in this failing case, if any: set_aside.spoiled_by on the case's calls, the trace
    worked out only for the traced excuse."""
    return set_aside.spoiled_by(tuple(session.returns), prop.item, suspects, session.auditor,
                                session.confirmer if session.excuse_traced else None)


#: What one case gave: the property held (or the case could not test it), it failed, it was set aside, or the
#: child stopped (timeout, crash).
HELD, BROKEN, SPOILED, STOPPED = "held", "broken", "spoiled", "stopped"


class Search:
    """The condition Hypothesis ``find`` searches with: does the submission fail the property on this case?

    Counts what passed and what was set aside, ends the search at a timeout, a crash or a function not written
    (it raises _Abort: a case that "failed" instead would be shrunk, drawing candidates for minutes while the child is
    no longer called), and stops shrinking after
    ``prop.shrink_cases`` cases (_Abort again: the smallest failing case so far is reported; Hypothesis would go on
    drawing candidates, with no limit but its own five minutes).

    known: what the cases already replayed gave, by case key: ``find`` then meets them again without calling the
    child, and every count comes out as if it had searched from the start.
    """

    def __init__(self, sandbox: Sandbox, prop: Property, suspects: frozenset[str],
                 known: dict[bytes, tuple[str, audit.Spoiled | None]] | None = None, audits: Audits = Audits(),
                 whole: bool = False) -> None:
        self.session = Session(sandbox, audits, prop.item)
        self.whole = whole  # each case checked whole (property.checked_whole): the grading's box
        self.prop, self.suspects = prop, suspects
        self.tally = Tally()
        self.stopped: list[Stopped] = []
        self.shrinking = 0  # cases tried since the first failure
        self.smallest: Any = None
        self.known = known or {}
        self.seen: dict[bytes, tuple[str, audit.Spoiled | None]] = {}
        self.calls: list[Call] = []  # every call, in order, with its answer (grader.grading.paths)
        self.started = time.monotonic()
        self.rewound: list[Call] = []  # calls answered already, which find asks again first (rewind)
        self.given = 0
        self.diverged = False  # find asked another case than the rewound one: keep nothing

    def rewind(self) -> None:
        """``find`` is about to ask again, in order, the cases this search has answered along kept paths (the walk
        left them): they get the answers they got, without calling the child again or counting them twice, so the
        child sees the calls ``find`` alone would make."""
        self.rewound, self.given = list(self.calls), 0

    def __call__(self, case: Any, key: bytes | None = None) -> bool:
        """Whether the case fails; key: its case_key, if known already."""
        key = case_key(case) if key is None else key
        if self.given < len(self.rewound):
            asked = self.rewound[self.given]
            self.given += 1
            if asked.case == key and asked.failed is not None:
                return asked.failed
            self.diverged, self.rewound = True, []  # only a forged tree leads elsewhere than find goes
        self.calls.append(Call(key, None))
        failed = self._answer(case, key)
        self.calls[-1].failed = failed
        return failed

    def answer_only(self, case: Any, key: bytes) -> None:
        """Call the case and keep its verdict for the search to come, counting nothing (a case after the first
        failure: replay_property, which hands the search no stop)."""
        self.seen[key] = self._verify(case)

    def _answer(self, case: Any, key: bytes) -> bool:
        if self.shrinking:
            self.shrinking += 1
            if self.shrinking > self.prop.shrink_cases:
                raise _Abort  # the smallest failing case so far is the one reported
        if self.stopped:
            raise _Abort
        verdict = self.known.get(key) or self._verify(case)
        self.seen[key] = verdict
        kind, spoiled = verdict
        if kind == HELD:
            return False
        if kind == SPOILED:
            assert spoiled is not None
            self.tally.spoiled.append(spoiled)
            return False
        if kind == STOPPED:
            raise _Abort
        self.shrinking = max(self.shrinking, 1)
        self.smallest = case  # Hypothesis tries a candidate only when it is smaller than the smallest so far
        return True

    def _verify(self, case: Any) -> tuple[str, audit.Spoiled | None]:
        self.session.new_case()
        error: Exception | None = None
        whole: contextlib.AbstractContextManager[list[str]] = (checked_whole() if self.whole
                                                                else contextlib.nullcontext([]))
        # Checked whole, a case goes on from wrong answers: numpy's warnings about them are no one's business.
        quiet = np.errstate(all="ignore") if self.whole else contextlib.nullcontext()
        with whole as failures, quiet, messages_unread():  # the verdict alone is kept
            try:
                self.prop.verify(self.session, case)
            except (Discard, PropertyFailed, SubmissionError) as exc:
                error = exc
            except Exception:
                if not failures:
                    raise  # the grader's own fault
        if failures:  # checked whole: the first failure decides, as it would have ended the case
            stop = error if isinstance(error, SubmissionError) and _stops(error) else None
            error = PropertyFailed(failures[0])
            if stop is not None:  # what comes after a stop must not depend on the failure before it
                self.stopped.append(Stopped(stop, list(self.session.trace)))
        return self._verdict(case, error)

    def _verdict(self, case: Any, error: Exception | None) -> tuple[str, audit.Spoiled | None]:
        if isinstance(error, Discard):
            return HELD, None
        if isinstance(error, _CUT_SHORT):
            self.stopped.append(Stopped(error, list(self.session.trace)))
            return STOPPED, None
        if isinstance(error, (PropertyFailed, SubmissionError)):
            spoiled = _set_aside(self.session, self.prop, self.suspects)
            if spoiled is not None:
                return SPOILED, spoiled
            if isinstance(error, SubmissionError) and _unwritten(error):
                self.stopped.append(Stopped(error, list(self.session.trace), case))
                return STOPPED, None
            return BROKEN, None
        self.tally.passed += 1
        return HELD, None


#: Errors that end a call and the child with it: a timeout, a crash, a breach of the protocol.
_CUT_SHORT = (CallTimeout, ChildDied, ProtocolViolation)


def _stops(error: SubmissionError) -> bool:
    """Whether the error ends a property's calls: a timeout, a crash, a breach, a function not written."""
    return isinstance(error, _CUT_SHORT) or _unwritten(error)


@dataclass(frozen=True)
class Replayed:
    """What a box answered to a property's drawn cases (replay_property): the verdict when none failed or the child
    stopped; else None, and the verdict of every case, from which the search for the case to report starts
    (search_failure)."""

    verdict: Verdict | None
    known: dict[bytes, tuple[str, audit.Spoiled | None]] = field(default_factory=dict)


def replay_property(sandbox: Sandbox, prop: Property, suspects: frozenset[str], replay: Iterable[tuple[bytes, Any]],
                    audits: Audits = Audits()) -> Replayed:
    """Call the property's drawn cases (CaseBook.replay), every one, whatever the answers before: what the box sees
    does not depend on the grader's verdicts. A red team's file switched to its other formula when the same case came
    again (Hypothesis shrinking, then the reported case run once more) and earned 24 points more on the tests after;
    a property that stopped at its first failure would tell a file which of its answers was wrong as well, and so
    would a case that stopped short (each is checked whole: property.checked_whole). A timeout, a crash or a
    function not written ends the calls, failure before it or not (the file's own doing, which it knows); a stopped
    case is never run again here (a red team's file raised NotImplementedError and watched for the case again)."""
    replayed = Search(sandbox, prop, suspects, audits=audits, whole=True)
    failed = False
    for key, case in replay:
        if replayed.stopped:
            break  # a stop ends the calls, whether a case failed before it or not
        if failed:
            replayed.answer_only(case, key)
            continue
        try:
            failed = replayed(case, key)
        except _Abort:
            break
    if not failed and replayed.stopped and not _unwritten(replayed.stopped[0].error):
        return Replayed(_stopped(replayed, replayed.stopped[0]))  # a timeout or a crash: reported without a call
    if not failed and not replayed.stopped:
        return Replayed(_verdict_without_failure(prop, replayed.tally, audits.excuse_traced))
    # A failure, or a function not written, whose report runs the case again: in the search's box, which calls a
    # stopped case again itself.
    return Replayed(None, {key: seen for key, seen in replayed.seen.items() if seen[0] != STOPPED})


def run_property(sandbox: Sandbox, prop: Property, suspects: frozenset[str] = frozenset(),
                 replay: Iterable[tuple[bytes, Any]] | None = None, paths: SearchPaths | None = None,
                 audits: Audits = Audits()) -> Verdict:
    """The verdict of one property, all in ``sandbox``: PASSED with empty texts when it holds.

    suspects: functions that already failed one of their own tests; a failing
    case that rests on a wrong answer of one of them is set aside.
    replay: (key, case) of the cases ``find`` draws for this property (CaseBook.replay), tried first
    (replay_property); Hypothesis searches only if one of them fails (search_failure). The grading
    (grader.grading.runner) runs the two in different boxes.
    paths: the kept searches of failing files (grader.grading.paths).
    audits: how the failing cases met are audited (Audits; none by default).
    """
    known: dict[bytes, tuple[str, audit.Spoiled | None]] = {}
    if replay is not None:
        replayed = replay_property(sandbox, prop, suspects, replay, audits)
        if replayed.verdict is not None:
            return replayed.verdict
        known = replayed.known
    return search_failure(sandbox, prop, suspects, known, paths, audits)


def search_failure(sandbox: Sandbox, prop: Property, suspects: frozenset[str],
                   known: dict[bytes, tuple[str, audit.Spoiled | None]], paths: SearchPaths | None = None,
                   audits: Audits = Audits()) -> Verdict:
    """The smallest failing case of the property and its report: Hypothesis's ``find``, which meets the cases
    ``known`` (replay_property's) again without calling ``sandbox``, or a kept search that ``find`` made before
    (grader.grading.paths: a search that follows one ends without Hypothesis; one that leaves them runs ``find`` and
    is kept)."""
    search = Search(sandbox, prop, suspects, known, audits)
    ended: bool | None = None
    if paths is not None:
        try:
            ended = paths.tree(prop).walk(search)
        except _Abort:
            return _ended(search)
        except Exception:  # noqa: BLE001 - a case the property cannot check: a forged tree
            ended = None
        # A kept search ends with a failure (it meets the replayed case that failed): an end without one, like a case
        # that cannot be checked, is a forged file's. It is deleted, and find searches afresh.
        if ended and search.shrinking:
            return _ended(search)
        if ended is not False:
            paths.forget(prop)
            search = Search(sandbox, prop, suspects, known, audits)
    # Hypothesis only now: a file that passes every replayed case never needs it.
    from hypothesis.errors import Flaky, NoSuchExample, Unsatisfiable

    search.rewind()
    try:
        smallest = find_with_grading_settings(prop, search)
    except (NoSuchExample, Unsatisfiable):
        _keep(paths, prop, search, ended=True)
        return _verdict_without_failure(prop, search.tally, audits.excuse_traced)
    except _Abort:
        _keep(paths, prop, search, ended=False)
        return _ended(search)
    except Flaky:
        return Verdict(FAILED, "failed on some inputs but gave other answers when the same inputs were tried again "
                       "(does the function keep state between calls, or use randomness?)")
    # find returns the last case that failed (Hypothesis tries a candidate only when it is smaller than the smallest
    # so far), which is what a walk of this path reports; checked rather than assumed.
    if case_key(smallest) == case_key(search.smallest):
        _keep(paths, prop, search, ended=True)
    return _ended(search, smallest)


#: A search that took longer is not kept: Hypothesis stops shrinking after five minutes of wall time (the one clock
#: that steers its search with our settings), so past that its path would depend on more than the answers. (A file
#: slow enough to take five minutes that walks a fast file's path gets the case shrunk as far as the fast file's:
#: its grade is the same, its reported case may be smaller than its own search would have found.)
KEEP_WITHIN_SECONDS = 60.0


def _keep(paths: SearchPaths | None, prop: Property, search: Search, ended: bool) -> None:
    if paths is not None and not search.diverged and time.monotonic() - search.started < KEEP_WITHIN_SECONDS:
        paths.add(prop, search.calls, ended)


#: No case given: the smallest is the last that failed (a case may be None itself: a property of a fixed scenario).
_LAST_FAILED = object()


def _ended(search: Search, smallest: Any = _LAST_FAILED) -> Verdict:
    """The verdict of a search that ended (``find`` returned ``smallest``, or the search stopped it, or a walk of
    a kept search ended: then the smallest case is the last that failed, if any did)."""
    if search.stopped:
        return _stopped(search, search.stopped[0])
    if smallest is _LAST_FAILED:
        if not search.shrinking:
            return _verdict_without_failure(search.prop, search.tally, search.session.excuse_traced)
        smallest = search.smallest
    return _failure_of(search, smallest) or Verdict(
        FAILED, "failed on some inputs but not reproducibly (does the function keep state between calls?)")


def _failure_of(search: Search, case: Any) -> Verdict | None:
    """The reported failure: the case run once more, recording the first helper calls (the cause may name the
    innermost helper); None if it does not fail this time."""
    session = search.session
    session.new_case()
    session.record = HELPER_CALLS_KEPT
    try:
        search.prop.verify(session, case)
    except (PropertyFailed, SubmissionError) as exc:
        called = session.trace[-1][0] if session.trace else ""
        shown_after = exc.shown_after if isinstance(exc, PropertyFailed) else ()
        return Verdict(FAILED, str(exc), snippet(session.trace[-3:], shown_after), cause_of(exc, called),
                       set_aside.audited_calls(session.returns, search.prop.item))
    except Discard:
        pass
    return None


def _stopped(search: Search, stop: Stopped) -> Verdict:
    if isinstance(stop.error, CallTimeout):
        return Verdict(TIMEOUT, str(stop.error), snippet(stop.trace[-1:]))
    if isinstance(stop.error, (ChildDied, ProtocolViolation)):
        return Verdict(CRASHED, str(stop.error), snippet(stop.trace[-1:]))
    # Not written: reported as any failure (the case once more, with its helper calls recorded).
    reported = _failure_of(search, stop.case)
    if reported is not None:
        return reported
    trace = search.session.trace or stop.trace
    return Verdict(FAILED, str(stop.error), snippet(trace[-3:]), cause_of(stop.error, trace[-1][0] if trace else ""))


def _verdict_without_failure(prop: Property, tally: Tally, traced: bool = False) -> Verdict:
    """No counted case failed: the property holds if no case was set aside, or if the cases set aside are all
    explained by the wrong helper (tracing.explained: worked out only with GradeOptions.excuse_traced) and fewer
    than those that passed; else it earns nothing. traced: whether the trace was worked out (it says so)."""
    unexplained = [s for s in tally.spoiled if not s.explained]
    if not tally.spoiled or (not unexplained and tally.passed > len(tally.spoiled)):
        return Verdict(PASSED)
    first = (unexplained or tally.spoiled)[0]
    why = ("" if tally.passed <= len(tally.spoiled) else
           f" ({first.caller}'s answer there does not follow from the helper's alone: this test counts once "
           f"{first.helper} is fixed)" if traced else f" (this test counts once {first.helper} is fixed)")
    return Verdict(SET_ASIDE, f"{len(tally.spoiled)} of {len(tally.spoiled) + tally.passed} cases set aside{why}: "
                   f"{first.message()}", snippet([(first.helper, first.args)]), wrong_helper(first.helper))
