"""Grade one submission: run every property in the sandbox, score, explain.

Each property is searched with Hypothesis ``find``: the first failing input is
shrunk to the smallest one, which is then run once more for its message and
turned into a reproduction snippet. Settings are derandomized and use no
example database, so the same file always gets the same grade.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample, Unsatisfiable

from grader import oracle, rubric, spec
from grader.checks import Discard, Property, PropertyFailed, fmt
from grader.sandbox import CallTimeout, ChildDied, Limits, Sandbox, SubmissionError


def all_properties(hidden: bool) -> list[Property]:
    """The public properties, and the hidden ones if asked (and installed)."""
    from grader import tests_contacts, tests_scenarios, tests_system

    properties = tests_contacts.PROPERTIES + tests_system.PROPERTIES + tests_scenarios.PROPERTIES
    if hidden:
        from grader import tests_hidden  # absent from the student kit

        properties = properties + tests_hidden.PROPERTIES
    order = {name: k for k, name in enumerate(spec.ITEM_NAMES)}
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


@dataclass
class GradeReport:
    submission: str
    results: list[TestResult]
    hidden_run: bool
    import_error: str | None = None
    output: str = ""
    seconds: float = 0.0
    points: dict[str, float] = field(default_factory=rubric.default_points)
    #: "graded", or what went wrong: "timeout at import", "crashed: update", ...
    status: str = "graded"
    #: The operating-system protections that fenced the submission in.
    protections: tuple[str, ...] = ()

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


def _draw_without_local_constants() -> None:
    """Make what Hypothesis draws depend on the strategies only.

    Hypothesis mixes into its draws the literals it finds in the source of
    the "local" modules loaded (those outside site-packages), so one property
    could draw other inputs in the student kit (installed, without the hidden
    tests) than at grading (a checkout), or after any edit of the grader.
    There is no setting for it: replace the internal collector by an empty
    pool (checked by tests/test_grader_corpus.py).
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


_draw_without_local_constants()


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


def run_property(sandbox: Sandbox, prop: Property) -> tuple[str, str]:
    """(message, snippet) of the smallest failure, or ("", "") if it holds."""
    if prop.item in sandbox.broken:
        return str(sandbox.broken[prop.item]) + " (earlier test)", snippet(
            [sandbox.broken_call[prop.item]])

    def fails(case) -> bool:
        sandbox.trace = []
        try:
            prop.check(sandbox, case)
        except (PropertyFailed, SubmissionError):
            return True
        except Discard:
            return False
        return False

    try:
        smallest = find(prop.strategy, fails, settings=hypothesis_settings(prop.examples))
    except (NoSuchExample, Unsatisfiable):
        return "", ""
    if prop.item in sandbox.broken:
        return str(sandbox.broken[prop.item]), snippet([sandbox.broken_call[prop.item]])
    sandbox.trace = []
    try:
        prop.check(sandbox, smallest)
    except (PropertyFailed, SubmissionError) as exc:
        return str(exc), snippet(sandbox.trace[-3:])
    except Discard:
        pass
    return "failed on some inputs but not reproducibly (does the function keep state between calls?)", ""


def snippet(calls: list[tuple[str, tuple]]) -> str:
    """Python lines that repeat the calls against the student's file."""
    names = sorted({name for name, _ in calls})
    lines = ["import sys", "import numpy as np", f"from granularGas import {', '.join(names)}", ""]
    for name, args in calls:
        params = spec.function_spec(name).params
        for param, value in zip(params, args):
            if isinstance(value, np.ndarray):
                dtype = ", dtype=int" if value.dtype.kind in "iu" else ""
                lines.append(f"{param} = np.array({fmt(value.tolist())}{dtype})")
            else:
                lines.append(f"{param} = {fmt(value)}")
        call = f"{name}({', '.join(params)})"
        if name == "update":
            lines += [call, "print('x =', x, 'v =', v, 'indexOld =', indexOld)"]
        else:
            lines.append(f"print({call})")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def status_of(sandbox: Sandbox) -> str:
    """One phrase for the grades table: graded, or how the submission broke."""
    kinds = {CallTimeout: "timeout", ChildDied: "crashed"}
    if sandbox.import_failure is not None:
        return f"{kinds.get(type(sandbox.import_failure), 'error')} at import"
    parts = []
    for kind in ("timeout", "crashed"):
        names = [n for n in spec.FUNCTION_NAMES if kinds.get(type(sandbox.broken.get(n))) == kind]
        if names:
            parts.append(f"{kind}: {', '.join(names)}")
    return "; ".join(parts) or "graded"


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


def grade_file(path: str | Path, options: GradeOptions = GradeOptions()) -> GradeReport:
    """Grade the granularGas.py at ``path``: the one grading function every command calls.

    Raises errors.IsolationTooWeak (before running anything) when hidden
    tests would run without isolation strong enough and the options do not
    allow it; errors.SandboxFault when the sandbox cannot start.
    """
    return grade(path, options.points, options.limits, options.hidden, options.hide)


def grade(
    path: str | Path,
    points: dict[str, float] | None = None,
    limits: Limits = Limits(),
    hidden: bool | None = None,
    hide: tuple[Path, ...] = (),
) -> GradeReport:
    """Grade the granularGas.py at ``path``.

    hidden: run the hidden tests (None: whenever the reference is installed).
    hide: folders the submission must not see (other submissions, the output).
    """
    points = points or rubric.default_points()
    hidden = oracle.available() if hidden is None else hidden
    properties = all_properties(hidden)
    per_item = {name: sum(p.item == name for p in properties) for name in spec.ITEM_NAMES}
    started = time.monotonic()
    results: list[TestResult] = []
    with Sandbox(path, limits, hide) as sandbox:
        if hidden:
            # Each function is graded on its own: its calls to the other five
            # are answered by the reference, so one bug costs points once.
            helpers = {name: getattr(oracle.reference(), name) for name in spec.FUNCTION_NAMES}
        for prop in properties:
            if hidden:
                sandbox.helpers = helpers if prop.isolated else None
            weight = points[prop.item] / per_item[prop.item]
            t0 = time.monotonic()
            message, repro = run_property(sandbox, prop)
            results.append(TestResult(prop, "failed" if message else "passed", 0.0 if message else weight, weight,
                                      message, repro, time.monotonic() - t0))
        report = GradeReport(str(path), results, hidden, sandbox.import_error, sandbox.output(),
                             time.monotonic() - started, points, status_of(sandbox), sandbox.protections)
    return report
