"""Grade one submission: run every property in the sandbox, score, explain.

Each property's drawn cases (the ones Hypothesis ``find`` draws) are called in
the grading's box, every one whatever the answers, so that what the file sees
does not depend on the grader's verdicts. Where one fails, ``find`` then
shrinks it to the smallest failing input, in a box of its own once the
grading's is closed; that case is run once more for its message and turned
into a reproduction snippet. Settings are derandomized and use no example
database, so the same file always gets the same grade.

The submission's functions call their own helpers; nothing of the reference
reaches its process. A failing test whose reported case rests on a helper
proved wrong (see :mod:`grader.grading.set_aside`) is set aside, naming the
helper to fix first; those audits come once the grading's box is closed. A
timeout or a crash ends the search of its property only: that test fails, the
child is restarted, and the other tests still run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader import spec
from grader.errors import IsolationTooWeak, UsageError
from grader.grading import set_aside
from grader.grading.cases import CaseBook
from grader.grading.causes import NO_IMPORT, Cause, wrong_helper
from grader.grading.paths import SearchPaths
from grader.grading.report import CRASHED, FAILED, PASSED, SET_ASIDE, TIMEOUT, GradeReport, TestResult, Verdict
from grader.grading.search import Replayed, replay_property, search_failure
from grader.grading.session import Audits
from grader.grading.tracing import FreshBox, ReplayBox, share_caps
from grader.properties import oracle
from grader.properties.property import Property
from grader.sandbox import isolation, self_test
from grader.sandbox.client import CallTimeout, ChildDied, ProtocolViolation, Sandbox, SubmissionError
from grader.spec import rubric
from grader.spec.limits import Limits

#: The order in which items are graded (the public tests, then the hidden ones): a function after the helpers it
#: may call, so that a helper's own failures are known when its callers are graded.
GRADING_ORDER: tuple[str, ...] = ("contact_time_grains", "contact_time_walls", "contact_solve_wall",
                                  "contact_solve_grains", "minimum_contact_time", "update", *spec.SCENARIO_NAMES)
GRADING_INDEX = {name: k for k, name in enumerate(GRADING_ORDER)}




def all_properties(hidden: bool) -> list[Property]:
    """The public properties, and the hidden ones if asked (and installed), in the statement's order."""
    from grader.properties import contacts as contact_props
    from grader.properties import physics as physics_props
    from grader.properties import system as system_props

    properties = contact_props.PROPERTIES + system_props.PROPERTIES + physics_props.PROPERTIES
    if hidden:
        from grader.properties import hidden as hidden_props  # absent from the student kit

        properties = properties + hidden_props.PROPERTIES
    order = {name: k for k, name in enumerate(spec.STATEMENT_ORDER)}
    return sorted(properties, key=lambda p: (order[p.item], p.hidden))


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
    #: Check the sandbox on a tiny correct file whenever this one fails a test (a batch does it once, before its
    #: workers).
    selftest: bool = True
    #: A minimum_contact_time test whose failures are all traced to a wrong helper still earns its points
    #: (the rubric's [grading] excuse_traced, rubric.Rubric.excuse_traced; off by default).
    excuse_traced: bool = False


def chosen(only: tuple[str, ...]) -> tuple[str, ...]:
    """The items named in ``only``, with the functions a named scenario uses (its tests count only once they pass
    tests of their own), in the statement's order, without repeats; UsageError for a wrong name."""
    wrong = [name for name in only if name not in spec.ITEM_NAMES]
    if wrong:
        raise UsageError(f"--only {wrong[0]}: not a function or scenario of the assignment; choose from "
                         + ", ".join(spec.STATEMENT_ORDER))
    used = {function for scenario in spec.SCENARIOS if scenario.name in only for function in scenario.uses}
    return tuple(name for name in spec.STATEMENT_ORDER if name in only or name in used)


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


def cases_on_disk(strong: bool, hidden: bool) -> bool:
    """Whether to use the cache of drawn cases: a submission under weak isolation may write the user's files, so
    the cache is not trusted with hidden tests then (they draw their cases afresh)."""
    return strong or not hidden


def draw_cases(options: GradeOptions = GradeOptions()) -> None:
    """Draw the cases of every property these options grade into the cache now, if grading would use it (a
    batch does it once before its workers; a Gradescope image when it is built)."""
    hidden = oracle.available() if options.hidden is None else options.hidden
    if cases_on_disk(isolation.probe(options.limits.namespaces).strong, hidden):
        CaseBook.drawn(all_properties(hidden), on_disk=True)


@contextlib.contextmanager
def search_box(path: str | Path, options: GradeOptions, wanted: bool = True) -> Iterator[Sandbox | None]:
    """A box, not started, for grade_file's searches (``searches_in``), closed on leaving: its caller may go on in
    it once the grading is over (the feedback animation: Sandbox.new_budgets), one box less to start. None where not
    ``wanted`` (no animation to come): the searches then run in a box of their own, closed after them."""
    if not wanted:
        yield None
        return
    box = Sandbox(path, options.limits, options.hide)
    try:
        yield box
    finally:
        box.close()


# The grader's arithmetic on a file's answers (an energy of 1e400, a nan) is checked with isfinite where it matters;
# numpy's warnings about it only reached the student's terminal as noise (a red team's gas blew up to inf).
@np.errstate(all="ignore")
def grade_file(path: str | Path, options: GradeOptions = GradeOptions(),
               searches_in: Sandbox | None = None) -> GradeReport:
    """Grade the granularGas.py at ``path``: the one grading function every command calls.

    searches_in: the box the searches for the cases to report run in (search_box), left open; by default one of
    their own, closed after them.
    Raises errors.IsolationTooWeak (before running anything) when hidden
    tests would run without isolation strong enough and the options do not
    allow it; errors.SandboxFault when the sandbox cannot start, or when the file fails a test and the sandbox
    then fails its self-test (the failure may be the sandbox's).
    """
    selected = chosen(options.only)  # a wrong name is refused before anything runs
    if searches_in is not None and searches_in.started:  # its child would carry what it ran into the searches
        raise UsageError("searches_in: give a box that has not started (runner.search_box), not one in use")
    points = options.points or rubric.default_points()
    hidden = oracle.available() if options.hidden is None else options.hidden
    probe = check_isolation(options, hidden)
    properties = [p for p in all_properties(hidden) if p.item in (selected or spec.ITEM_NAMES)]
    per_item = {name: sum(p.item == name for p in properties) for name in spec.ITEM_NAMES}
    started = time.monotonic()
    graded: list[tuple[Property, Verdict, float]] = []
    on_disk = cases_on_disk(probe.strong, hidden)
    # Drawn before the box starts: a file's processes busy between its calls are charged to the next one, and the
    # drawing (seconds, with no cases kept yet) made a red team's file time out in a fresh cache only.
    drawn = CaseBook.drawn(properties, on_disk=on_disk)
    with (Sandbox(path, options.limits, options.hide, remember=True) as sandbox,
          FreshBox(path, options.limits, options.hide) as confirmer,
          FreshBox(path, options.limits, options.hide) as auditor):
        book = None if sandbox.import_failure is not None else drawn
        paths = SearchPaths.kept(on_disk and probe.strong)  # trees steer searches: never where the file may write
        failures: dict[int, tuple[frozenset[str], Replayed]] = {}
        # Every public test before any hidden one: what the file sees in a hidden test's cases must reach no public
        # test's verdict or message (a red team's file showed a hidden case in a later public test's error).
        for prop in sorted(properties, key=lambda p: (p.hidden, GRADING_INDEX[p.item])):
            t0 = time.monotonic()
            if book is None:
                # Final, and the same for every test: no search (it would only repeat the failure).
                verdict = Verdict(FAILED, str(sandbox.import_error), "", Cause(NO_IMPORT))
            else:
                verdict = _graded_property(sandbox, prop, (book, confirmer, auditor), options, graded, failures)
            graded.append((prop, verdict, time.monotonic() - t0))
        graded = [(prop, _proved(prop, verdict, graded), seconds) for prop, verdict, seconds in graded]
        output = sandbox.output()
        sandbox.close()  # before the searches and audits below: nothing they do may reach the file's graded answers
        if options.excuse_traced:  # their children saw the hidden tests' cases: the searches start them afresh
            confirmer.close()
            auditor.close()
        graded = _searched(graded, failures, (sandbox, searches_in), paths,
                           Audits(confirmer, auditor, options.excuse_traced))
    statement_order = {id(p): k for k, p in enumerate(properties)}
    results = [_result(prop, verdict, seconds, points[prop.item] / per_item[prop.item])
               for prop, verdict, seconds in sorted(graded, key=lambda g: statement_order[id(g[0])])]
    graded_report = GradeReport(str(path), results, hidden, sandbox.import_error, output, time.monotonic() - started,
                                points, status_of(results, sandbox.import_failure), probe.protections,
                                probe.weaknesses, options.allow_weak_isolation and hidden and not probe.strong,
                                selected)
    if options.selftest and (graded_report.import_error or not graded_report.all_passed):
        # A file that passes every test proves the sandbox sound; a failure is only the student's once a tiny
        # correct file is seen to pass in the same sandbox (SandboxFault otherwise: no grade is given).
        self_test.selftest(options.limits)
    return graded_report


def _graded_property(sandbox: Sandbox, prop: Property, boxes: tuple[CaseBook, FreshBox, FreshBox],
                     options: GradeOptions, graded: list[tuple[Property, Verdict, float]],
                     failures: dict[int, tuple[frozenset[str], Replayed]]) -> Verdict:
    """One property's verdict, given those of the properties graded before it: its drawn cases called in the
    grading's box (search.replay_property). A property some case failed is FAILED here; its search for the case to
    report comes later, in a box of its own (_searched), and its place in ``graded`` is kept in ``failures``.

    With the traced excuse, a failing case that rests on a wrong answer of a function that failed tests of its own
    is set aside as the search meets it, and the grading's box is renewed if the audit replayed anything (the
    audit's work, timed from the grading's box, told a red team's file which answers were wrong). Without it (the
    default), the search audits nothing: the reported cases are audited once the box is closed
    (set_aside.reported_cases).
    """
    book, confirmer, auditor = boxes
    suspects: frozenset[str] = frozenset()
    if options.excuse_traced:
        suspects = frozenset(p.item for p, verdict, _ in graded if set_aside.suspect(verdict) and p.item != prop.item)
    replays = auditor.calls + confirmer.calls
    audits = Audits(confirmer, auditor, options.excuse_traced)
    cases = book.replay(prop)
    assert cases is not None, f"no cases drawn for {prop.id}"  # grade_file draws them for every property it grades
    replayed = replay_property(sandbox, prop, suspects, cases, audits)
    if replayed.verdict is None:
        failures[len(graded)] = (suspects, replayed)
    verdict = replayed.verdict or Verdict(FAILED, "")
    if auditor.calls + confirmer.calls > replays:
        sandbox.renew()
    return verdict


def _proved(prop: Property, verdict: Verdict, graded: list[tuple[Property, Verdict, float]]) -> Verdict:
    """A scenario's verdict once every test is graded (the hidden ones come last): a pass is set aside while a
    function it uses has not passed all its own tests (_unproved)."""
    if verdict.outcome == PASSED and (unproved := _unproved(prop, graded)):
        return Verdict(SET_ASIDE, f"right answers, but {unproved} did not pass all its own tests on drawn inputs: a "
                       f"scenario's inputs are fixed (a table of its answers would pass it), so its points count "
                       f"once the functions it uses pass their tests", "", wrong_helper(unproved))
    return verdict


def _searched(graded: list[tuple[Property, Verdict, float]], failures: dict[int, tuple[frozenset[str], Replayed]],
              boxes: tuple[Sandbox, Sandbox | None], paths: SearchPaths | None,
              audits: Audits) -> list[tuple[Property, Verdict, float]]:
    """``graded`` with the verdict of every property in ``failures``: the smallest failing case, and its report
    (search.search_failure), searched in other boxes than the grading's once that one is closed (``boxes``: the
    grading's, and one lent for the searches, if any, left open and stopped). Their budgets go on from the grading's.
    The grading's box never sees a search: the calls it got did not depend on the grader's verdicts.

    The public tests' searches run in the lent box (else one of their own), the hidden tests' in one of their own,
    never lent, after them: what the file sees of a hidden case reaches no public test's message nor the feedback
    animation (a red team's file printed one in a later public test's error, shown before the hidden tests were).
    By default (no traced excuse) the reported cases are then audited (set_aside.reported_cases), each in its
    test's searches' box: those audits earn nothing either way, and a failing file's grading starts fewer boxes."""
    sandbox, lent = boxes
    searched = list(graded)
    searchers: dict[bool, Sandbox] = {}
    replays: dict[bool, ReplayBox] = {}
    earlier = sandbox
    try:
        for hidden in (False, True):
            side = {k: failure for k, failure in failures.items() if graded[k][0].hidden == hidden}
            if not side:
                continue
            # Not entered: its first call starts it, behind the budgets it takes on (entered, it imported before them).
            searcher = lent if lent is not None and not hidden else Sandbox(sandbox.path, sandbox.limits, sandbox.hide)
            searcher.carry_on_from(earlier)
            earlier = searchers[hidden] = searcher
            for k, (suspects, replayed) in side.items():
                prop, _, seconds = graded[k]
                t0 = time.monotonic()
                verdict = search_failure(searcher, prop, suspects, replayed.known, paths, audits)
                if verdict.outcome in (PASSED, SET_ASIDE):  # the grading's box failed it: no search can undo that
                    verdict = Verdict(FAILED, "failed on some inputs, which the search for a smaller case did not "
                                      "fail again (does the function keep state between calls, or use randomness?)")
                searched[k] = (prop, verdict, seconds + time.monotonic() - t0)
            if searcher is lent:
                searcher.pause()  # nothing of it runs while the hidden tests are searched
        if not audits.excuse_traced:
            # Each side's cases in its searches' box, else in a box of its own (started only if used).
            for hidden in (False, True):
                replays[hidden] = (ReplayBox(searchers[hidden]) if hidden in searchers
                                   else FreshBox(sandbox.path, sandbox.limits, sandbox.hide))
            share_caps(*replays.values())  # two boxes, the caps of one: a file's replays take no longer than before
            searched = _audited(searched, replays)
    finally:
        for replay in replays.values():
            if isinstance(replay, FreshBox):
                replay.close()
        for searcher in searchers.values():
            if searcher is lent:
                searcher.pause()  # lent: nothing of it runs until its owner's next call (efficiency timings first)
            else:
                searcher.close()
    return searched


def _audited(searched: list[tuple[Property, Verdict, float]],
             replays: dict[bool, ReplayBox]) -> list[tuple[Property, Verdict, float]]:
    """set_aside.reported_cases in the grading's order (a helper before its callers, its hidden tests beside its
    public ones), each test's case replayed in ``replays[its hidden]``."""
    walk = sorted(range(len(searched)), key=lambda k: (GRADING_INDEX[searched[k][0].item], searched[k][0].hidden))
    audited = set_aside.reported_cases([(searched[k][0], searched[k][1]) for k in walk],
                                       lambda prop: replays[prop.hidden])
    result = list(searched)
    for k, verdict in zip(walk, audited, strict=True):
        result[k] = (searched[k][0], verdict, searched[k][2])
    return result


def _unproved(prop: Property, graded: list[tuple[Property, Verdict, float]]) -> str | None:
    """The first function a scenario's test uses that did not pass every one of its own tests on drawn inputs (chosen()
    grades a scenario's functions with it). One passed test was not enough: a collision law
    right only for equal masses passed its restitution test, and a sample student's (ben.py) and a red team's table
    earned the C12 collision table with it."""
    for function in prop.uses:
        own = [verdict for p, verdict, _ in graded if p.item == function and not p.fixed_inputs]
        if not own or any(verdict.outcome != PASSED for verdict in own):
            return function
    return None


def _result(prop: Property, verdict: Verdict, seconds: float, weight: float) -> TestResult:
    passed = verdict.outcome == PASSED
    return TestResult(prop, "passed" if passed else "failed", weight if passed else 0.0, weight, verdict.message,
                      verdict.snippet, seconds, verdict.outcome, verdict.cause)


def grade(path: str | Path, points: dict[str, float] | None = None, limits: Limits = Limits(),
          hidden: bool | None = None, hide: tuple[Path, ...] = (), allow_weak_isolation: bool = False) -> GradeReport:
    """grade_file with its options as arguments."""
    return grade_file(path, GradeOptions(points, limits, hidden, allow_weak_isolation, tuple(hide)))
