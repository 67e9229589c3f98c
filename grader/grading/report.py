"""The grade of one file as the runner made it, in memory: each test with its property, score and message.

:mod:`grader.grading.results` turns it into typed results that can be stored and read back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader import spec
from grader.grading.causes import Cause
from grader.properties.property import Property
from grader.sandbox.calls import Returned
from grader.spec import rubric

PASSED, FAILED = "passed", "failed"
#: How a test ended, beyond passed/failed (the grades table's status): a call timed out, the child died, or the
#: failing cases rested on a helper proved wrong.
TIMEOUT, CRASHED, SET_ASIDE = "timeout", "crashed", "set aside"

#: The calls of one case, in order: the function's name, its arguments and what came back.
CaseCalls = tuple[tuple[str, tuple[Any, ...], Returned], ...]


@dataclass(frozen=True)
class Verdict:
    """How one property's search ended: its outcome, with the message, the reproduction snippet and the cause of a
    failure (empty when it passed)."""

    outcome: str
    message: str = ""
    snippet: str = ""
    cause: Cause | None = None
    #: The reported failing case's calls, its first helper calls recorded: what grader.grading.set_aside audits
    #: once the grading's box is closed.
    reported: CaseCalls = field(default=(), compare=False, repr=False)


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
