"""The search for a failing input of one property: Hypothesis ``find`` over the submission's answers.

Settings are derandomized and use no example database, so the same file always
gets the same grade; what Hypothesis draws depends on the strategies only. A
failing case that rests on a helper proved wrong (grader.grading.audit) is set
aside; a timeout or a crash ends the search of its property only.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import Flaky, NoSuchExample, Unsatisfiable

from grader.grading import audit
from grader.grading.causes import Cause, cause_of, wrong_helper
from grader.grading.report import CRASHED, FAILED, PASSED, SET_ASIDE, TIMEOUT
from grader.grading.snippets import snippet
from grader.properties import oracle
from grader.properties.property import Discard, Property, PropertyFailed
from grader.sandbox.calls import AUDIT_CALLS_KEPT, Returned
from grader.sandbox.client import CallTimeout, ChildDied, ProtocolViolation, Sandbox, SubmissionError


class Session:
    """What a property's check calls: the submission's functions, with the trace of the current case."""

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox
        self.trace: list[tuple[str, tuple[Any, ...]]] = []
        self.returns: list[tuple[str, tuple[Any, ...], Returned]] = []

    def call(self, name: str, *args: Any) -> Returned:
        self.trace.append((name, args))
        returned = self.sandbox.call(name, *args)
        self.returns.append((name, args, returned))
        return returned

    def new_case(self) -> None:
        self.trace, self.returns = [], []


class Stopped(Exception):
    """A call timed out or killed the child: the property's search ends at this case."""

    def __init__(self, error: SubmissionError, trace: list[tuple[str, tuple[Any, ...]]]):
        super().__init__(str(error))
        self.error, self.trace = error, trace


@dataclass
class Tally:
    passed: int = 0
    spoiled: list[audit.Spoiled] = field(default_factory=list)


def draw_without_local_constants() -> None:
    """Make what Hypothesis draws depend on the strategies only.

    Hypothesis mixes into its draws the literals it finds in the source of
    the "local" modules loaded (those outside site-packages), so one property
    could draw other inputs in the student kit (installed, without the hidden
    tests) than at grading (a checkout), or after any edit of the grader.
    There is no setting for it: replace the internal collector by an empty
    pool (checked by tests/test_grader_corpus.py). Done when grading starts,
    not at import.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - a Hypothesis without the feature
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if cache is not None:
        cache.cache.clear()


def hypothesis_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )


def _set_aside(session: Session, prop: Property, suspects: frozenset[str]) -> audit.Spoiled | None:
    """The helper proved wrong in this failing case, if any (only with the reference installed)."""
    if not suspects or not oracle.available():
        return None
    for name, args, returned in session.returns:
        if name != prop.item or not returned.helper_calls_total:
            continue
        spoiled = audit.audit(session.sandbox, name, args, returned, suspects)
        if spoiled is None and returned.helper_calls_total > len(returned.helper_calls):
            # The wrong answer may lie past the first recorded calls: replay
            # this call once, recording more of them.
            try:
                returned = session.sandbox.call(name, *args, record=AUDIT_CALLS_KEPT)
            except SubmissionError:
                continue
            spoiled = audit.audit(session.sandbox, name, args, returned, suspects)
        if spoiled is not None:
            return spoiled
    return None


def _case_key(case: Any) -> bytes:
    """A case's identity by value (Hypothesis replays its smallest failure as an equal, new object)."""
    try:
        return pickle.dumps(case)
    except Exception:  # noqa: BLE001 - a case pickle refuses: its repr is the next best identity
        return repr(case).encode()


class Search:
    """The condition Hypothesis ``find`` searches with: does the submission fail the property on this case?

    Counts what passed and what was set aside, stops calling the child after a timeout or a crash (every case then
    "fails", so that find ends at once: raising out of it would make it replay the case), and stops shrinking after
    ``prop.shrink_cases`` cases (new candidates then "hold" and cases that failed still fail, so the search ends on
    a real failure).
    """

    def __init__(self, sandbox: Sandbox, prop: Property, suspects: frozenset[str]) -> None:
        self.session, self.prop, self.suspects = Session(sandbox), prop, suspects
        self.tally = Tally()
        self.stopped: list[Stopped] = []
        self.shrinking = 0  # cases tried since the first failure
        self.failed: set[bytes] = set()

    def __call__(self, case: Any) -> bool:
        if self.shrinking:
            self.shrinking += 1
            if self.shrinking > self.prop.shrink_cases:
                return _case_key(case) in self.failed
        if self.stopped:
            return True
        self.session.new_case()
        try:
            self.prop.verify(self.session, case)
        except Discard:
            return False
        except (CallTimeout, ChildDied, ProtocolViolation) as exc:
            self.stopped.append(Stopped(exc, list(self.session.trace)))
            return True
        except (PropertyFailed, SubmissionError):
            spoiled = _set_aside(self.session, self.prop, self.suspects)
            if spoiled is None:
                self.shrinking = max(self.shrinking, 1)
                self.failed.add(_case_key(case))
                return True
            self.tally.spoiled.append(spoiled)
            return False
        self.tally.passed += 1
        return False


def run_property(sandbox: Sandbox, prop: Property,
                 suspects: frozenset[str] = frozenset()) -> tuple[str, str, str, Cause | None]:
    """(outcome, message, snippet, cause) of one property: PASSED with empty texts when it holds.

    suspects: functions that already failed one of their own tests; a failing
    case that rests on a wrong answer of one of them is set aside.
    """
    search = Search(sandbox, prop, suspects)
    try:
        smallest = find(prop.strategy, search, settings=hypothesis_settings(prop.examples))
    except (NoSuchExample, Unsatisfiable):
        return _verdict_without_failure(prop, search.tally)
    except Flaky:
        return FAILED, ("failed on some inputs but gave other answers when the same inputs were tried again "
                        "(does the function keep state between calls, or use randomness?)"), "", None
    if search.stopped:
        stop = search.stopped[0]
        kind = TIMEOUT if isinstance(stop.error, CallTimeout) else CRASHED
        return kind, str(stop.error), snippet(stop.trace[-1:]), None
    session = search.session
    session.new_case()
    try:
        prop.verify(session, smallest)
    except (PropertyFailed, SubmissionError) as exc:
        called = session.trace[-1][0] if session.trace else ""
        return FAILED, str(exc), snippet(session.trace[-3:]), cause_of(exc, called)
    except Discard:
        pass
    return FAILED, "failed on some inputs but not reproducibly (does the function keep state between calls?)", "", None


def _verdict_without_failure(prop: Property, tally: Tally) -> tuple[str, str, str, Cause | None]:
    """No counted case failed: the property holds, unless its cases were mostly set aside."""
    if not tally.spoiled or tally.passed > len(tally.spoiled):
        return PASSED, "", "", None
    first = tally.spoiled[0]
    return (SET_ASIDE, f"{len(tally.spoiled)} of {len(tally.spoiled) + tally.passed} cases set aside: "
            f"{first.message()}", snippet([(first.helper, first.args)]), wrong_helper(first.helper))
