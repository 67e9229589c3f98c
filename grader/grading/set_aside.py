"""Whether a failing case rests on a wrong helper: its calls audited (grader.grading.audit) in a box for replays.

Two moments use it:

- with the traced excuse off (the default), after the grading's box is closed, in the searches' box once its searches
  are over (tracing.ReplayBox): the reported case of each failing
  test, so that its message names the helper to fix first (:func:`reported_cases`). A test with a failing case
  earns nothing whether the case rests on a wrong helper or not, so nothing is lost by looking only then; and
  what the audit does can no longer reach a graded answer (in the grading's box, how long the audits took told a
  red team's file which of its answers the reference disagrees with).
- with it on, during the search (grader.grading.search): a case set aside does not count against its caller, and
  one traced to the helper may be excused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from itertools import islice
from typing import Any

from grader.grading import audit, tracing
from grader.grading.causes import wrong_helper
from grader.grading.report import FAILED, PASSED, SET_ASIDE, CaseCalls, Verdict
from grader.grading.snippets import snippet
from grader.properties import oracle
from grader.properties.property import Property
from grader.sandbox.calls import AUDIT_CALLS_KEPT, HELPER_CALLS_KEPT, Returned
from grader.sandbox.client import SubmissionError

#: The calls of a reported case kept for its audit, at most: the first of the function's own calls that made helper
#: calls. What the audit reads of a call is bounded (its reply, calls.AUDIT_CALLS_KEPT records); this bounds how many
#: such replies the grading keeps until its box is closed (a red team's file made every reported case hold 200 of
#: the largest: 1.2 GB in the grader's process).
REPORTED_CALLS_KEPT = 8


def audited_calls(calls: Iterable[tuple[str, tuple[Any, ...], Returned]], item: str) -> CaseCalls:
    """Of a reported case's calls, those its audit reads (spoiled_by): the first REPORTED_CALLS_KEPT calls of
    ``item`` itself that made helper calls."""
    return tuple(islice(((name, args, returned) for name, args, returned in calls
                         if name == item and returned.helper_calls_total), REPORTED_CALLS_KEPT))


def spoiled_by(calls: CaseCalls, item: str, suspects: frozenset[str], auditor: tracing.Recorder,
               confirmer: audit.Replayer | None = None) -> audit.Spoiled | None:
    """The helper proved wrong in a failing case of ``item`` whose calls were ``calls``, if it is one of
    ``suspects`` (only with the reference installed). confirmer: where the trace of a traceable caller is confirmed
    (tracing.explained, for the traced excuse); None: it is not worked out."""
    if not suspects or not oracle.available():
        return None
    replayed: dict[int, Returned] = {}  # the calls replayed with more records, by their place in the case
    for k, (name, args, returned) in enumerate(calls):
        if name != item or not returned.helper_calls_total:
            continue
        graded = returned
        spoiled = audit.audit(auditor, name, args, returned, suspects)
        # The wrong answer may lie past the recorded calls (none while searching): replay this call recording the
        # first few, then, if none of them is proved wrong, as many as an audit reads. The audit reads the calls in
        # order, so it finds what one long replay would find; and the first few nearly always tell (a long replay
        # costs some 50 records to send and decode). A traceable caller's case, once set aside, is read in full
        # anyway (tracing.explained), so it is replayed recording them all at once.
        for kept in (AUDIT_CALLS_KEPT,) if name in tracing.TRACEABLE else (HELPER_CALLS_KEPT, AUDIT_CALLS_KEPT):
            if spoiled is not None or returned.helper_calls_total <= len(returned.helper_calls):
                break
            if kept <= len(returned.helper_calls):
                continue
            again = _replay(auditor, name, args, graded, kept)
            if again is None:
                break
            returned = replayed[k] = again
            spoiled = audit.audit(auditor, name, args, returned, suspects)
        if spoiled is not None:
            explained = confirmer is not None and _explained(calls, name, replayed, auditor, confirmer)
            return replace(spoiled, explained=explained)
    return None


def _explained(calls: CaseCalls, name: str, replayed: dict[int, Returned], auditor: tracing.Recorder,
               confirmer: audit.Replayer) -> bool:
    """tracing.explained on this case's calls of ``name`` (their replays with more records, if any), each replayed
    recording all its helper calls if need be."""
    if name not in tracing.TRACEABLE:
        return False
    read = []
    for k, (called, args, returned) in enumerate(calls):
        if called != name:
            continue
        returned = replayed.get(k, returned)
        if len(returned.helper_calls) < min(returned.helper_calls_total, AUDIT_CALLS_KEPT):
            again = _replay(auditor, name, args, returned, AUDIT_CALLS_KEPT)
            if again is None:
                return False
            returned = again
        read.append((args, returned))
    return tracing.explained(name, read, confirmer)


def _replay(auditor: tracing.Recorder, name: str, args: tuple[Any, ...], graded: Returned,
            record: int) -> Returned | None:
    """The call replayed in the auditor's box recording ``record`` helper calls, if it gives the answer graded (None if
    it fails or answers otherwise: a file that knows where it is replayed must not get a case set aside by another
    answer than the one that failed)."""
    try:
        again = auditor.call(name, *args, record=record)
    except SubmissionError:
        return None
    same = audit.same_value(again.value, graded.value) and len(again.args_after) == len(graded.args_after) and all(
        audit.same_value(a, b) for a, b in zip(again.args_after, graded.args_after))
    return again if same else None


def reported_cases(graded: Sequence[tuple[Property, Verdict]],
                   auditor: Callable[[Property], tracing.Recorder]) -> list[Verdict]:
    """The verdicts of ``graded`` (in the grading's order: a helper before its callers), each failing test whose
    reported case rests on a wrong answer of a function that failed tests of its own turned into SET_ASIDE, naming
    that function: its points are nothing either way. Called once the grading's box is closed; ``auditor(prop)``:
    where that test's case is replayed (its search's box: a public test's never sees a hidden case)."""
    suspects: set[str] = set()  # the functions that failed tests of their own
    verdicts = []
    for prop, verdict in graded:
        if verdict.outcome == FAILED and verdict.reported:
            spoiled = spoiled_by(verdict.reported, prop.item, frozenset(suspects - {prop.item}), auditor(prop))
            if spoiled is not None:
                verdict = Verdict(SET_ASIDE, f"its smallest failing case rests on a wrong helper: {spoiled.message()}",
                                  snippet([(spoiled.helper, spoiled.args)]), wrong_helper(spoiled.helper))
        if suspect(verdict):
            suspects.add(prop.item)
        verdicts.append(verdict)
    return verdicts


def suspect(verdict: Verdict) -> bool:
    """Whether a test's verdict makes its function a suspect, whose wrong answers may set its callers' cases aside:
    it failed. A function whose tests were only set aside is no suspect itself: its callers' cases are then laid on
    the helper it rests on, the one to fix first."""
    return verdict.outcome not in (PASSED, SET_ASIDE)
