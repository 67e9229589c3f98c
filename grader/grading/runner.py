"""Grade one submission: run every property in the sandbox, score, explain.

Each property is searched with Hypothesis ``find``: the first failing input is
shrunk to the smallest one, which is then run once more for its message and
turned into a reproduction snippet. Settings are derandomized and use no
example database, so the same file always gets the same grade.

The submission's functions call their own helpers; nothing of the reference
reaches its process. A failing case that rests on a helper proved wrong (see
:mod:`grader.grading.audit`) is set aside instead of counting against the
function. A timeout or a crash ends the search of its property only: that
test fails, the child is restarted, and the other tests still run.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import Flaky, NoSuchExample, Unsatisfiable

from grader import spec
from grader.errors import IsolationTooWeak, UsageError
from grader.grading import audit
from grader.grading.causes import Cause, cause_of, wrong_helper
from grader.grading.snippets import snippet
from grader.properties import oracle
from grader.properties.property import Discard, Property, PropertyFailed
from grader.sandbox import client as sandboxes
from grader.sandbox import isolation
from grader.sandbox.calls import AUDIT_CALLS_KEPT, Returned
from grader.sandbox.client import CallTimeout, ChildDied, ProtocolViolation, Sandbox, SubmissionError
from grader.spec import rubric
from grader.spec.limits import Limits

#: The order in which items are graded: a function after the helpers it may
#: call, so that a helper's own failures are known when its callers are graded.
GRADING_ORDER: tuple[str, ...] = ("contact_time_grains", "contact_time_walls", "contact_solve_wall",
                                  "contact_solve_grains", "minimum_contact_time", "update", *spec.SCENARIO_NAMES)

#: Reports follow the statement's order (declared in the spec).
STATEMENT_ORDER = spec.STATEMENT_ORDER

#: How a test ended, beyond passed/failed: for the grades table's status.
PASSED, FAILED, TIMEOUT, CRASHED, SET_ASIDE = "passed", "failed", "timeout", "crashed", "set aside"


def all_properties(hidden: bool) -> list[Property]:
    """The public properties, and the hidden ones if asked (and installed), in the statement's order."""
    from grader.properties import contacts as contact_props
    from grader.properties import physics as physics_props
    from grader.properties import system as system_props

    properties = contact_props.PROPERTIES + system_props.PROPERTIES + physics_props.PROPERTIES
    if hidden:
        from grader.properties import hidden as hidden_props  # absent from the student kit

        properties = properties + hidden_props.PROPERTIES
    order = {name: k for k, name in enumerate(STATEMENT_ORDER)}
    return sorted(properties, key=lambda p: (order[p.item], p.hidden))


@dataclass
class TestResult:
    prop: Property
    status: str  # "passed" or "failed"
    score: float
    max_score: float
    message: str = ""
    snippet: str = ""
    seconds: float = 0.0
    #: How it ended: passed, failed, timeout, crashed or set aside (helper wrong).
    outcome: str = PASSED
    #: One cause shared by many tests (not written yet, missing, no import, a wrong helper), if it is one.
    cause: Cause | None = None


@dataclass
class GradeReport:
    submission: str
    results: list[TestResult]
    hidden_run: bool
    import_error: str | None = None
    output: str = ""
    seconds: float = 0.0
    points: dict[str, float] = field(default_factory=rubric.default_points)
    #: "graded", or what went wrong: "timeout at import", "timeout: update", ...
    status: str = "graded"
    #: The operating-system protections that fenced the submission in.
    protections: tuple[str, ...] = ()
    #: Protections that were NOT in force, and why (empty when the isolation is strong).
    weaknesses: tuple[str, ...] = ()
    #: Hidden tests ran although the isolation was weak, because the TA asked for it.
    weak_isolation_allowed: bool = False
    #: The items graded when only some were chosen (GradeOptions.only); () for all.
    only: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        return sum(r.score for r in self.results)

    @property
    def max_score(self) -> float:
        return sum(r.max_score for r in self.results)

    def by_item(self) -> dict[str, tuple[float, float]]:
        """(score, max_score) of every function and scenario."""
        table = {name: [0.0, 0.0] for name in spec.ITEM_NAMES}
        for r in self.results:
            table[r.prop.item][0] += r.score
            table[r.prop.item][1] += r.max_score
        return {k: (v[0], v[1]) for k, v in table.items()}

    @property
    def all_passed(self) -> bool:
        return all(r.status != "failed" for r in self.results)


@dataclass(frozen=True)
class GradeOptions:
    """How to grade one file: the same for check, batch, nbgrader and Gradescope."""

    #: Points per rubric item (None: the spec's).
    points: dict[str, float] | None = None
    limits: Limits = Limits()
    #: Run the hidden tests (None: whenever the reference is installed).
    hidden: bool | None = None
    #: Run the hidden tests even when the sandbox cannot keep them secret
    #: (written into every result).
    allow_weak_isolation: bool = False
    #: Folders the submission must not see (other submissions, the output).
    hide: tuple[Path, ...] = ()
    #: Grade only these functions and scenarios (check --only); () for all.
    only: tuple[str, ...] = ()


def chosen(only: tuple[str, ...]) -> tuple[str, ...]:
    """The items named in ``only``, in the statement's order, without repeats; UsageError for a wrong name."""
    wrong = [name for name in only if name not in spec.ITEM_NAMES]
    if wrong:
        raise UsageError(f"--only {wrong[0]}: not a function or scenario of the assignment; choose from "
                         + ", ".join(STATEMENT_ORDER))
    return tuple(name for name in STATEMENT_ORDER if name in only)


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


class _Stopped(Exception):
    """A call timed out or killed the child: the property's search ends at this case."""

    def __init__(self, error: SubmissionError, trace: list[tuple[str, tuple[Any, ...]]]):
        super().__init__(str(error))
        self.error, self.trace = error, trace


@dataclass
class _Tally:
    passed: int = 0
    spoiled: list[audit.Spoiled] = field(default_factory=list)


def _draw_without_local_constants() -> None:
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


def run_property(sandbox: Sandbox, prop: Property,
                 suspects: frozenset[str] = frozenset()) -> tuple[str, str, str, Cause | None]:
    """(outcome, message, snippet, cause) of one property: PASSED with empty texts when it holds.

    suspects: functions that already failed one of their own tests; a failing
    case that rests on a wrong answer of one of them is set aside.
    """
    session = Session(sandbox)
    tally = _Tally()
    stopped: list[_Stopped] = []
    shrinking = [0]  # cases tried since the first failure
    failed: set[bytes] = set()  # the cases that failed (pickled), to answer for them once shrinking stops

    def fails(case: Any) -> bool:
        if shrinking[0]:
            shrinking[0] += 1
            if shrinking[0] > prop.shrink_cases:
                # Enough shrinking: new candidates "hold", cases that failed still fail (Hypothesis replays its
                # smallest one), so the search ends on a real failure, verified again below.
                return _case_key(case) in failed
        if stopped:
            # The child timed out or died: no more calls. Every example now
            # "fails", so Hypothesis ends at once (raising out of find would
            # make it replay the case and call the results inconsistent).
            return True
        session.new_case()
        try:
            prop.verify(session, case)
        except Discard:
            return False
        except (CallTimeout, ChildDied, ProtocolViolation) as exc:
            stopped.append(_Stopped(exc, list(session.trace)))
            return True
        except (PropertyFailed, SubmissionError):
            spoiled = _set_aside(session, prop, suspects)
            if spoiled is None:
                shrinking[0] = max(shrinking[0], 1)
                failed.add(_case_key(case))
                return True
            tally.spoiled.append(spoiled)
            return False
        tally.passed += 1
        return False

    try:
        smallest = find(prop.strategy, fails, settings=hypothesis_settings(prop.examples))
    except (NoSuchExample, Unsatisfiable):
        return _verdict_without_failure(prop, tally)
    except Flaky:
        return FAILED, ("failed on some inputs but gave other answers when the same inputs were tried again "
                        "(does the function keep state between calls, or use randomness?)"), "", None
    if stopped:
        stop = stopped[0]
        kind = TIMEOUT if isinstance(stop.error, CallTimeout) else CRASHED
        return kind, str(stop.error), snippet(stop.trace[-1:]), None
    session.new_case()
    try:
        prop.verify(session, smallest)
    except (PropertyFailed, SubmissionError) as exc:
        called = session.trace[-1][0] if session.trace else ""
        return FAILED, str(exc), snippet(session.trace[-3:]), cause_of(exc, called)
    except Discard:
        pass
    return FAILED, "failed on some inputs but not reproducibly (does the function keep state between calls?)", "", None


def _verdict_without_failure(prop: Property, tally: _Tally) -> tuple[str, str, str, Cause | None]:
    """No counted case failed: the property holds, unless its cases were mostly set aside."""
    if not tally.spoiled or tally.passed > len(tally.spoiled):
        return PASSED, "", "", None
    first = tally.spoiled[0]
    return (SET_ASIDE, f"{len(tally.spoiled)} of {len(tally.spoiled) + tally.passed} cases set aside: "
            f"{first.message()}", snippet([(first.helper, first.args)]), wrong_helper(first.helper))


def status_of(report_results: list[TestResult], import_failure: SubmissionError | None) -> str:
    """One phrase for the grades table: graded, or how the submission broke."""
    if import_failure is not None:
        kinds = {CallTimeout: "timeout", ChildDied: "crashed", ProtocolViolation: "crashed"}
        return f"{kinds.get(type(import_failure), 'error')} at import"
    parts = []
    for kind in (TIMEOUT, CRASHED):
        names = [n for n in spec.FUNCTION_NAMES if any(r.prop.item == n and r.outcome == kind
                                                       for r in report_results)]
        if names:
            parts.append(f"{kind}: {', '.join(names)}")
    return "; ".join(parts) or "graded"


def check_isolation(options: GradeOptions, hidden: bool) -> isolation.Probe:
    """The isolation in force; IsolationTooWeak when hidden tests would run without it and that is not allowed."""
    probe = isolation.probe(options.limits.namespaces)
    if hidden and not probe.strong and not options.allow_weak_isolation:
        raise IsolationTooWeak(
            "the hidden tests must stay secret, but this machine's sandbox cannot keep them from the submission: "
            + "; ".join(probe.weaknesses)
            + ". Install bubblewrap (apt-get install bubblewrap) and allow namespaces, or pass "
            "--allow-weak-isolation to run them anyway (every result then says so)")
    return probe


def grade_file(path: str | Path, options: GradeOptions = GradeOptions()) -> GradeReport:
    """Grade the granularGas.py at ``path``: the one grading function every command calls.

    Raises errors.IsolationTooWeak (before running anything) when hidden
    tests would run without isolation strong enough and the options do not
    allow it; errors.SandboxFault when the sandbox cannot start.
    """
    selected = chosen(options.only)  # a wrong name is refused before anything runs
    _draw_without_local_constants()
    points = options.points or rubric.default_points()
    hidden = oracle.available() if options.hidden is None else options.hidden
    probe = check_isolation(options, hidden)
    sandboxes.selftest(options.limits)
    properties = [p for p in all_properties(hidden) if p.item in (selected or spec.ITEM_NAMES)]
    per_item = {name: sum(p.item == name for p in properties) for name in spec.ITEM_NAMES}
    order = {name: k for k, name in enumerate(GRADING_ORDER)}
    started = time.monotonic()
    results: list[TestResult] = []
    failed_items: set[str] = set()
    with Sandbox(path, options.limits, options.hide) as sandbox:
        for prop in sorted(properties, key=lambda p: order[p.item]):
            weight = points[prop.item] / per_item[prop.item]
            t0 = time.monotonic()
            outcome, message, repro, cause = run_property(sandbox, prop, frozenset(failed_items - {prop.item}))
            if outcome != PASSED:
                failed_items.add(prop.item)
            results.append(TestResult(prop, "passed" if outcome == PASSED else "failed",
                                      weight if outcome == PASSED else 0.0, weight, message, repro,
                                      time.monotonic() - t0, outcome, cause))
        statement_order = {id(p): k for k, p in enumerate(properties)}
        results.sort(key=lambda r: statement_order[id(r.prop)])
        return GradeReport(str(path), results, hidden, sandbox.import_error, sandbox.output(),
                           time.monotonic() - started, points, status_of(results, sandbox.import_failure),
                           probe.protections, probe.weaknesses,
                           options.allow_weak_isolation and hidden and not probe.strong, selected)


def grade(path: str | Path, points: dict[str, float] | None = None, limits: Limits = Limits(),
          hidden: bool | None = None, hide: tuple[Path, ...] = (), allow_weak_isolation: bool = False) -> GradeReport:
    """grade_file with its options as arguments."""
    return grade_file(path, GradeOptions(points, limits, hidden, allow_weak_isolation, tuple(hide)))
