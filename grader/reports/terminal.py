"""A grade as the student reads it in the terminal: short, in the statement's order, one line per cause.

The first lines say what was checked (public tests only, or public and
hidden; everything, or the items chosen with ``--only``) and the points. An
item whose every test fails for one cause (not written yet, missing, needing
a helper that is not written or wrong) is one line. Other failures keep the
function, the property, the smallest failing input and the lines that repeat
it, but only the first failure of an item shows its input; the next ones are
a few lines each, and the same error again is one name on an "also" line. Only
the first items that fail are shown in full; the later ones, and scenarios
whose functions fail their own tests, name their failed tests and the first
message (``--only`` shows any item in full).

Everything the submission controls in this text (exception messages, values)
was capped by the sandbox and the properties; it is capped again here.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from dataclasses import dataclass

from grader import spec
from grader.grading.causes import MISSING, NOT_WRITTEN, WRONG, Cause
from grader.grading.report import GradeReport, TestResult
from grader.reports.feedback import points
from grader.spec import STATEMENT_ORDER
from grader.spec.text import shown

#: Characters of a failure's message shown after the first failure of an item.
SHORT_MESSAGE = 330  # three lines: what the code returned fits (a review saw "got dv1 = [ ..." at 240)
#: Characters of a message shown at all (the first failure of an item).
LONG_MESSAGE = 900
#: Width the messages are wrapped to.
WIDTH = 110
#: Items whose failures are shown in full (with the smallest failing input); the later ones are named.
DETAILED_ITEMS = 2


@dataclass(frozen=True)
class Item:
    """One function or scenario of the report: its tests and, if one cause explains them all, that cause."""

    name: str
    results: tuple[TestResult, ...]
    #: Set when every test failed for causes of this kind: own (this item) or helpers (others).
    causes: tuple[Cause, ...] = ()

    @property
    def score(self) -> float:
        return sum(r.score for r in self.results)

    @property
    def max_score(self) -> float:
        return sum(r.max_score for r in self.results)

    @property
    def failed(self) -> tuple[TestResult, ...]:
        return tuple(r for r in self.results if r.status == "failed")


def items(report: GradeReport) -> list[Item]:
    """The items graded, in the order the statement builds them, each with its one cause if it has one."""
    found = []
    for name in STATEMENT_ORDER:
        results = tuple(r for r in report.results if r.prop.item == name)
        if not results:
            continue
        causes: tuple[Cause, ...] = ()
        if all(r.status == "failed" and r.cause is not None for r in results):
            unique = {r.cause for r in results if r.cause is not None}
            own = tuple(c for c in unique if c.function == name)
            causes = own or tuple(sorted(unique, key=_order))
        found.append(Item(name, results, causes))
    return found


def _order(cause: Cause) -> tuple[int, str]:
    return (STATEMENT_ORDER.index(cause.function) if cause.function in STATEMENT_ORDER else -1, cause.kind)


def cause_line(item: Item) -> str:
    """The one line of an item explained by its cause, e.g. "not written yet: contact_time_walls — 10 points"."""
    worth = f"{item.name} — {points(item.max_score)} points"
    first = item.causes[0]
    if first.function == item.name:
        if first.kind == MISSING:
            return f"missing: {worth} (granularGas.py defines no function {item.name}(); check its name)"
        return f"{first.kind}: {worth}"
    return f"needs {helpers(item.causes)}: {worth}"


def helpers(causes: tuple[Cause, ...]) -> str:
    """The functions of ``causes`` grouped by kind: "minimum_contact_time, update (not written yet)"."""
    kinds = dict.fromkeys(c.kind for c in causes)
    return "; ".join(", ".join(c.function for c in causes if c.kind == kind) + f" ({kind})" for kind in kinds)


def header(report: GradeReport, tests: int) -> list[str]:
    """The first lines: the score, which tests ran, what was checked."""
    lines = [f"{shown(report.submission)}: {points(report.score)} / {points(report.max_score)} points"]
    if report.hidden_run:
        lines.append(f"Tests run: public and hidden, {tests} tests (the hidden ones compare your functions with the "
                     "reference solution).")
    else:
        lines += [f"Tests run: public only, {tests} tests: this is not your grade. The hidden tests, which compare",
                  "your functions with the reference solution, run when your submission is graded."]
    if report.only:
        total = sum(report.points.values())
        lines.append(f"Checked only {', '.join(report.only)} ({points(report.max_score)} of {points(total)} "
                     "points); the rest was not run.")
    if report.weak_isolation_allowed:
        lines.append("WARNING: hidden tests ran with weak isolation (--allow-weak-isolation): "
                     + "; ".join(report.weaknesses))
    if report.status not in ("graded",) and not report.import_error:
        lines.append(f"Calls stopped ({report.status}): the tests where it happened failed, the others ran.")
    return lines


def table(graded: list[Item]) -> list[str]:
    """Score lines of the items that ran, then one line per item explained by one cause."""
    lines = []
    tried = [item for item in graded if not item.causes]
    width = max((len(item.name) for item in tried), default=0)
    for item in tried:
        failed = len(item.failed)
        state = (f"all {len(item.results)} tests passed" if not failed
                 else f"{failed} of {len(item.results)} tests failed (below)")
        lines.append(f"  {item.name:<{width}}  {points(item.score):>5} / {points(item.max_score):<3}  {state}")
    explained = [cause_line(item) for item in graded if item.causes]
    if tried and explained:
        lines.append("")
    return lines + explained


def _cap(text: str, limit: int) -> str:
    """One paragraph (numpy's line breaks joined), at most ``limit`` characters, wrapped and indented. (Numbers keep
    every digit: shortened, "got 1.000003" read "got 1" beside "expected 1.0", a red team found.)"""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 4].rstrip() + " ..."
    return textwrap.fill(text, WIDTH, initial_indent="  ", subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


def _shape(message: str) -> str:
    """A message with its numbers blanked: two failures of the same shape are the same error."""
    return re.sub(r"[-+]?\d[\d.eE+-]*", "#", message)


def failures(item: Item, leads: bool = True) -> list[str]:
    """The failures of an item: the first in full, the next ones short, the same error again as one name.

    Failures that rest on another function (not written, missing, wrong) are one line per function.
    leads: False for an item that is not where to start (its tests are then named, with the first
    message only): a scenario whose functions fail their own tests, or a function after the first few.
    """
    own: list[TestResult] = []
    waiting: dict[Cause, list[str]] = {}
    for r in item.failed:
        if r.cause is None or r.cause.function == item.name:
            own.append(r)
        else:
            waiting.setdefault(r.cause, []).append(r.prop.name)
    lines = _detailed(own) if leads else (
        ["", f"FAILED {item.name}: {', '.join(r.prop.name for r in own)}", _cap(own[0].message, SHORT_MESSAGE)]
        if own else [])
    for cause, names in waiting.items():
        lines += ["", f"FAILED {item.name}: {', '.join(names)}: needs {helpers((cause,))}"]
    return lines


def _detailed(failed: list[TestResult]) -> list[str]:
    """Each failure with its message, the first with its smallest input; the same error again by name only, right
    under the failure it repeats (one line at the end read as repeating the first failure, which a review found
    wrong: the tests it named had failed with the second error)."""
    groups: dict[str, list[TestResult]] = {}  # message shape -> the tests that failed that way, in order
    for r in failed:
        groups.setdefault(_shape(r.message), []).append(r)
    lines: list[str] = []
    for k, (first, *same) in enumerate(groups.values()):
        lines += ["", f"FAILED {first.prop.id} ({first.prop.description})"]
        if k == 0:
            lines.append(_cap(first.message, LONG_MESSAGE))
            if first.snippet:
                lines += ["  smallest failing input, to reproduce:", textwrap.indent(first.snippet.rstrip(), "    | ")]
        else:
            lines.append(_cap(first.message, SHORT_MESSAGE))
        if same:
            lines.append(_cap(f"also failed with the same error: {', '.join(r.prop.name for r in same)}",
                              SHORT_MESSAGE))
    return lines


def as_text(report: GradeReport) -> str:
    """The report printed by ``check``."""
    lines = header(report, len(report.results))
    if report.import_error:
        lines += ["", f"granularGas.py does not import, so none of its {points(report.max_score)} points could be "
                      "tested. Fix this first:", _cap(report.import_error, LONG_MESSAGE)]
        return "\n".join(lines) + "\n"
    graded = items(report)
    lines += [""] + table(graded)
    functions = [item for item in graded if item.name in spec.FUNCTION_NAMES]
    if len(functions) > 1 and all(item.causes and item.causes[0] == Cause(MISSING, item.name) for item in functions):
        # A review's empty file got six "missing" lines and not a word about being empty.
        lines += ["", f"{shown(report.submission)} defines none of these functions: is it the file you meant, and "
                      "saved? (an empty file imports, and defines nothing)"]
    failing = {item.name: item for item in graded if item.failed}
    detailed = 0
    for item in graded:
        if item.causes or not item.failed:
            continue
        scenario = spec.SCENARIOS[spec.SCENARIO_NAMES.index(item.name)] if item.name in spec.SCENARIO_NAMES else None
        blocked = sorted(set(scenario.uses) & set(failing), key=STATEMENT_ORDER.index) if scenario else []
        leads = not blocked and detailed < DETAILED_ITEMS
        detailed += leads and any(r.cause is None or r.cause.function == item.name for r in item.failed)
        lines += failures(item, leads)
        if blocked:
            lines.append(_cap(blocked_line(item.name, [failing[name] for name in blocked]), SHORT_MESSAGE))
    lines += ["", *advice(report, graded)]
    return "\n".join(lines) + "\n"


def blocked_line(scenario: str, blocked: list[Item]) -> str:
    """The line under a scenario that runs failing functions: which to fix first. A function whose failures all
    rest on others (its tests set aside for a wrong helper, or waiting on an unwritten one) sends to those."""
    first: list[str] = []
    for item in blocked:
        causes = [r.cause for r in item.failed]
        if all(cause is not None and cause.function != item.name for cause in causes):
            first += [cause.function for cause in causes if cause is not None]
        else:
            first.append(item.name)
    fix = sorted(dict.fromkeys(first), key=lambda name: STATEMENT_ORDER.index(name) if name in STATEMENT_ORDER else -1)
    return f"({scenario} runs {', '.join(item.name for item in blocked)}: fix {', '.join(fix)} first)"


#: What to do about an item's cause.
_VERBS = {NOT_WRITTEN: "write", MISSING: "add", WRONG: "fix"}


def advice(report: GradeReport, graded: list[Item]) -> list[str]:
    """What to do next: every test passed, or the first item to work on and how to check it alone."""
    todo = [item for item in graded if item.failed]
    if not todo:
        return ["Every test passed."]
    first = todo[0]
    # An item whose failures all rest on another function: that function comes first.
    waits = first.causes or tuple(r.cause for r in first.failed if r.cause is not None)
    if waits and all(r.cause is not None and r.cause.function != first.name for r in first.failed):
        name, verb = waits[0].function, _VERBS.get(waits[0].kind, "fix")
    else:
        name, verb = first.name, _VERBS.get(waits[0].kind, "fix") if first.causes else "fix"
    command = f"  python -m grader check {shlex.quote(report.submission)} --only {name}"
    if verb == "fix":
        return [f"Next: fix {name}; to see all its failures in full, check it alone:", command]
    return [f"Next: {verb} {name}, then check it alone:", command]
