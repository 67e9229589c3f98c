"""A graded result as data: what every report reads, and what is stored and read back.

:class:`Results` is built once from the runner's in-memory
:class:`~grader.grading.runner.GradeReport` (:meth:`Results.from_report`)
and is all that reports, the batch and the course commands see of a grade.
Its JSON form (:meth:`Results.to_json`, :meth:`Results.from_json`) is the
grader's own; Gradescope's results.json is written (and read back) at the
edge only, by :mod:`grader.reports.gradescope_json`.

Numbers are kept as results.json has always shown them (points to 4
decimals, seconds to 2), so that every report, the CSV and results.json
agree to the digit. Reading is strict: a field missing or of the wrong type
raises :class:`ResultsError` naming it. JSON written by another grader
version, or by anyone else, is data to check, never trusted beyond its
signature (see :mod:`grader.commands.batch.signing`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from grader import spec
from grader.errors import GraderError
from grader.grading.report import FAILED, PASSED, GradeReport

#: The version of :meth:`Results.to_json`'s layout; another is refused (the grade is then made again).
FORMAT = "granular-grader results 1"
#: Decimals of points and of seconds in every stored result (results.json's since its first version).
POINT_DECIMALS, SECOND_DECIMALS = 4, 2
T = TypeVar("T")


class ResultsError(GraderError):
    """Stored results cannot be read (a field missing or of the wrong type); the message names the field."""


# -- strict readers of JSON values (also results.json's, in grader.reports.gradescope_json) ---------
def _where(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def field(data: object, path: str, name: str) -> Any:
    if not isinstance(data, dict):
        raise ResultsError(f"results {path or 'top level'}: expected an object, got {type(data).__name__}; "
                           "these results were not written by this grader version: grade the file again")
    if name not in data:
        raise ResultsError(f"results field {_where(path, name)!r} is missing; these results were not written by "
                           "this grader version: grade the file again")
    return data[name]


def typed(data: object, path: str, name: str, kinds: tuple[type, ...], what: str) -> Any:
    value = field(data, path, name)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise ResultsError(f"results field {_where(path, name)!r}: expected {what}, got {value!r:.60}; grade the "
                           "file again")
    return value


def string(data: object, path: str, name: str) -> str:
    return typed(data, path, name, (str,), "a string")


def boolean(data: object, path: str, name: str) -> bool:
    return typed(data, path, name, (bool,), "true or false")


def number(data: object, path: str, name: str) -> float:
    return float(typed(data, path, name, (int, float), "a number"))


def optional(data: object, path: str, name: str, read: Callable[[object, str, str], T]) -> T | None:
    return None if field(data, path, name) is None else read(data, path, name)


def strings(data: object, path: str, name: str) -> tuple[str, ...]:
    values = typed(data, path, name, (list,), "a list of strings")
    for k, value in enumerate(values):
        if not isinstance(value, str):
            raise ResultsError(f"results field {_where(path, name)}[{k}]: expected a string, got {value!r:.60}")
    return tuple(values)


def objects(data: object, path: str, name: str) -> list[object]:
    return typed(data, path, name, (list,), "a list")


# -- the records --------------------------------------------------------------------
@dataclass(frozen=True)
class TestRecord:
    """One graded test: which property, how it ended, the points it earned, and why it failed."""

    __test__ = False  # not a pytest test class, despite its name

    item: str  # the function or scenario whose points the test shares
    name: str
    description: str
    hidden: bool
    status: str  # PASSED or FAILED
    #: How it ended: passed, failed, timeout, crashed or set aside (see grader.grading.runner).
    outcome: str
    score: float
    max_score: float
    message: str = ""
    snippet: str = ""
    seconds: float = 0.0

    @property
    def id(self) -> str:
        """The test's name in every report: ``item: name``."""
        return f"{self.item}: {self.name}"

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object, path: str = "tests") -> TestRecord:
        item = string(data, path, "item")
        if item not in spec.ITEM_NAMES:
            raise ResultsError(f"results field {_where(path, 'item')!r}: {item!r:.60} is not a rubric item "
                               f"({', '.join(spec.ITEM_NAMES)}); grade the file again")
        status = string(data, path, "status")
        if status not in (PASSED, FAILED):
            raise ResultsError(f"results field {_where(path, 'status')!r}: {status!r:.60}; expected {PASSED!r} "
                               f"or {FAILED!r}")
        return cls(item, string(data, path, "name"), string(data, path, "description"), boolean(data, path, "hidden"),
                   status, string(data, path, "outcome"), number(data, path, "score"), number(data, path, "max_score"),
                   string(data, path, "message"), string(data, path, "snippet"), number(data, path, "seconds"))


@dataclass(frozen=True)
class ItemScore:
    """The points of one function or scenario: earned and possible."""

    item: str
    score: float
    max_score: float


@dataclass(frozen=True)
class Provenance:
    """What a batch grade is of: the student, the sha256 of the graded file, the grader's fingerprint."""

    student: str
    sha256: str
    fingerprint: str

    @classmethod
    def from_json(cls, data: object, path: str = "provenance") -> Provenance:
        return cls(string(data, path, "student"), string(data, path, "sha256"), string(data, path, "fingerprint"))


@dataclass(frozen=True)
class AnimationNote:
    """What the feedback page says of the animation of the first failing scenario (times: None if never)."""

    scenario: str
    first_divergence_t: float | None = None
    first_overlap_t: float | None = None
    first_outside_t: float | None = None
    error: str | None = None  # how the submission's update stopped, if it did
    #: Where the reference's run came from: "computed", "stored" (the kit's data) or "absent".
    reference: str = "computed"
    #: What the page calls the animation ("Your gas next to the reference", or why it is alone).
    heading: str = "Your gas next to the reference"

    @classmethod
    def from_json(cls, data: object, path: str = "animation") -> AnimationNote:
        return cls(string(data, path, "scenario"), optional(data, path, "first_divergence_t", number),
                   optional(data, path, "first_overlap_t", number), optional(data, path, "first_outside_t", number),
                   optional(data, path, "error", string),
                   optional(data, path, "reference", string) or "computed",
                   optional(data, path, "heading", string) or "Your gas next to the reference")


@dataclass(frozen=True)
class Efficiency:
    """How the submission's cost grows with N (grader.grading.efficiency): CPU seconds per event, fitted exponent.

    sizes: the N measured (fewer than asked when a call passed its budget);
    event_seconds: the submission's CPU per event of ``update``, measured in the
    sandbox; search_seconds: its CPU per ``minimum_contact_time`` call;
    reference_seconds: the reference's per event, on the grader's machine.
    Exponents are None when fewer than two sizes were measured. bonus: points
    granted by the rubric's [bonus] table, never part of the score.
    """

    sizes: tuple[int, ...] = ()
    event_seconds: tuple[float, ...] = ()
    search_seconds: tuple[float, ...] = ()
    reference_seconds: tuple[float, ...] = ()
    exponent: float | None = None
    search_exponent: float | None = None
    reference_exponent: float | None = None
    right_at_largest: bool = False
    note: str = ""
    bonus: float = 0.0
    bonus_max: float = 0.0

    @property
    def measured(self) -> bool:
        return self.exponent is not None

    def to_json(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_json(cls, data: object, path: str = "efficiency") -> Efficiency:
        def numbers(name: str) -> tuple[float, ...]:
            values = objects(data, path, name)
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
                raise ResultsError(f"results field {_where(path, name)!r}: expected a list of numbers")
            return tuple(float(x) for x in values if isinstance(x, (int, float)))

        return cls(tuple(int(n) for n in numbers("sizes")), numbers("event_seconds"), numbers("search_seconds"),
                   numbers("reference_seconds"), optional(data, path, "exponent", number),
                   optional(data, path, "search_exponent", number), optional(data, path, "reference_exponent", number),
                   boolean(data, path, "right_at_largest"), string(data, path, "note"), number(data, path, "bonus"),
                   number(data, path, "bonus_max"))


@dataclass(frozen=True)
class Results:
    """A whole grade: points, per item and per test, and how the submission was run."""

    submission: str  # the graded file as the grader was given it
    score: float
    max_score: float
    items: tuple[ItemScore, ...]  # every rubric item, in the spec's order
    status: str  # "graded", or what went wrong: "timeout at import", "timeout: update", ...
    import_error: str | None
    hidden_run: bool  # the hidden tests ran
    protections: tuple[str, ...]  # the operating-system protections in force
    weaknesses: tuple[str, ...]  # protections NOT in force, and why
    weak_isolation_allowed: bool  # hidden tests ran with weak isolation because the TA asked
    printed: str  # what the submission printed (bounded by the sandbox)
    seconds: float
    tests: tuple[TestRecord, ...]  # in the statement's order
    provenance: Provenance | None = None  # batch grades only
    animation: AnimationNote | None = None  # when the feedback page shows one
    efficiency: Efficiency | None = None  # check/batch --efficiency only

    @property
    def bonus(self) -> float:
        """Bonus points (the rubric's [bonus] table), reported beside the score, never inside it."""
        return self.efficiency.bonus if self.efficiency is not None else 0.0

    @classmethod
    def from_report(cls, report: GradeReport) -> Results:
        """The runner's report as data, numbers rounded as every report shows them."""
        tests = tuple(TestRecord(r.prop.item, r.prop.name, r.prop.description, r.prop.hidden,
                                 PASSED if r.status == PASSED else FAILED, r.outcome, round(r.score, POINT_DECIMALS),
                                 round(r.max_score, POINT_DECIMALS), r.message, r.snippet,
                                 round(r.seconds, SECOND_DECIMALS)) for r in report.results)
        items = tuple(ItemScore(name, round(a, POINT_DECIMALS), round(b, POINT_DECIMALS))
                      for name, (a, b) in report.by_item().items())
        return cls(str(report.submission), round(report.score, POINT_DECIMALS),
                   round(report.max_score, POINT_DECIMALS), items, report.status, report.import_error,
                   report.hidden_run, tuple(report.protections), tuple(report.weaknesses),
                   report.weak_isolation_allowed, report.output, round(report.seconds, SECOND_DECIMALS), tests)

    def by_item(self) -> dict[str, tuple[float, float]]:
        """(score, max_score) of every function and scenario, as GradeReport.by_item."""
        return {i.item: (i.score, i.max_score) for i in self.items}

    def item(self, name: str) -> ItemScore:
        for i in self.items:
            if i.item == name:
                return i
        raise KeyError(f"item {name!r}: the items are {', '.join(i.item for i in self.items)}")

    def tests_of(self, item: str) -> tuple[TestRecord, ...]:
        return tuple(t for t in self.tests if t.item == item)

    @property
    def failed(self) -> tuple[TestRecord, ...]:
        return tuple(t for t in self.tests if not t.passed)

    @property
    def all_passed(self) -> bool:
        return not self.failed

    def with_provenance(self, provenance: Provenance) -> Results:
        return dataclasses.replace(self, provenance=provenance)

    def with_animation(self, animation: AnimationNote | None) -> Results:
        return dataclasses.replace(self, animation=animation)

    def with_efficiency(self, efficiency: Efficiency | None) -> Results:
        return dataclasses.replace(self, efficiency=efficiency)

    def to_json(self) -> dict:
        """JSON values only; :meth:`from_json` reads them back equal."""
        data = dataclasses.asdict(self)
        data |= {"items": {i.item: [i.score, i.max_score] for i in self.items},
                 "tests": [t.to_json() for t in self.tests], "protections": list(self.protections),
                 "weaknesses": list(self.weaknesses),
                 "efficiency": None if self.efficiency is None else self.efficiency.to_json()}
        return {"format": FORMAT, **data}

    @classmethod
    def from_json(cls, data: object) -> Results:
        """Results from :meth:`to_json`'s form; ResultsError naming the first field missing or wrong."""
        written = field(data, "", "format")
        if written != FORMAT:
            raise ResultsError(f"results field 'format': {written!r:.60} is not {FORMAT!r}; these results were "
                               "written by another grader version: grade the file again")
        tests = tuple(TestRecord.from_json(t, f"tests[{k}]") for k, t in enumerate(objects(data, "", "tests")))
        provenance = field(data, "", "provenance")
        animation = field(data, "", "animation")
        efficiency = data.get("efficiency") if isinstance(data, dict) else None  # absent before efficiency existed
        return cls(string(data, "", "submission"), number(data, "", "score"), number(data, "", "max_score"),
                   read_items(field(data, "", "items"), "items"), string(data, "", "status"),
                   optional(data, "", "import_error", string), boolean(data, "", "hidden_run"),
                   strings(data, "", "protections"), strings(data, "", "weaknesses"),
                   boolean(data, "", "weak_isolation_allowed"), string(data, "", "printed"),
                   number(data, "", "seconds"), tests, None if provenance is None else Provenance.from_json(provenance),
                   None if animation is None else AnimationNote.from_json(animation),
                   None if efficiency is None else Efficiency.from_json(efficiency))


def read_items(data: object, path: str) -> tuple[ItemScore, ...]:
    """The by-item table ``{item: [score, max_score]}``, every rubric item present, in the spec's order."""
    if not isinstance(data, dict):
        raise ResultsError(f"results field {path!r}: expected an object {{item: [score, max_score]}}, got "
                           f"{data!r:.60}; grade the file again")
    table = data
    items = []
    for name in spec.ITEM_NAMES:
        pair = field(table, path, name)
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair)):
            raise ResultsError(f"results field {_where(path, name)!r}: expected [score, max_score], got "
                               f"{pair!r:.60}; grade the file again")
        items.append(ItemScore(name, float(pair[0]), float(pair[1])))
    unknown = sorted(set(table) - set(spec.ITEM_NAMES))
    if unknown:
        raise ResultsError(f"results field {path!r}: {unknown[0]!r:.60} is not a rubric item "
                           f"({', '.join(spec.ITEM_NAMES)}); grade the file again")
    return tuple(items)
