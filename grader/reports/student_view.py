"""What a student may see of a grade before the TA publishes the hidden tests.

The points per item, the public tests' messages, and how many hidden tests
failed: never a hidden test's input, the reference's answer or its message.
nbgrader's notebook cells (and so ``generate_feedback``) and Gradescope's
top-level ``output`` show this view only. It is plain data, so that the
TA-only cache (:mod:`grader.commands.courses.cache`) can keep it as JSON.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from grader import spec
from grader.reports.feedback import points

if TYPE_CHECKING:
    from grader.grading.runner import GradeReport, TestResult

#: The runner's outcome of a test whose cases rested on a wrong helper: its
#: message quotes the reference's answer for that helper call.
SET_ASIDE = "set aside"
SET_ASIDE_MESSAGE = ("set aside: its cases rested on a wrong answer of another of your functions, which fails its "
                     "own tests; fix that function first")


@dataclass(frozen=True)
class ItemView:
    """One function or scenario: points, public failures (name and message), hidden failures counted."""

    item: str
    earned: float
    maximum: float
    public_failures: tuple[str, ...]
    hidden_failed: int

    @property
    def fraction(self) -> float:
        return self.earned / self.maximum if self.maximum else 0.0


@dataclass(frozen=True)
class StudentView:
    submission: str
    score: float
    max_score: float
    status: str
    import_error: str | None
    hidden_run: bool
    items: tuple[ItemView, ...]

    def item(self, name: str) -> ItemView:
        for view in self.items:
            if view.item == name:
                return view
        raise KeyError(f"item {name!r}: the items are {', '.join(spec.ITEM_NAMES)}")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> StudentView:
        data = json.loads(text)
        items = tuple(ItemView(i["item"], float(i["earned"]), float(i["maximum"]), tuple(i["public_failures"]),
                               int(i["hidden_failed"])) for i in data["items"])
        return cls(str(data["submission"]), float(data["score"]), float(data["max_score"]), str(data["status"]),
                   data["import_error"], bool(data["hidden_run"]), items)


def public_failure(result: TestResult) -> str:
    """A failed public test as a student may see it (a set-aside test without the reference's answer)."""
    if getattr(result, "outcome", "") == SET_ASIDE:
        return f"FAILED {result.prop.id} ({result.prop.description})\n  {SET_ASIDE_MESSAGE}"
    text = f"FAILED {result.prop.id} ({result.prop.description})\n{textwrap.indent(result.message, '  ')}"
    if result.snippet:
        text += "\n  smallest failing input, to reproduce:\n" + textwrap.indent(result.snippet.rstrip(), "    | ")
    return text


def student_view(report: GradeReport, name: str) -> StudentView:
    """The view of ``report`` (``name``: the file name to show, never the grader's paths)."""
    items = []
    for item, (earned, maximum) in report.by_item().items():
        mine = [r for r in report.results if r.prop.item == item and r.status != "passed"]
        items.append(ItemView(item, earned, maximum, tuple(public_failure(r) for r in mine if not r.prop.hidden),
                              sum(r.prop.hidden for r in mine)))
    return StudentView(name, report.score, report.max_score, report.status, report.import_error, report.hidden_run,
                       tuple(items))




def item_text(view: ItemView) -> str:
    """A test cell's text: the item's public failures and the count of hidden ones."""
    parts = list(view.public_failures)
    if view.hidden_failed:
        parts.append(f"{view.hidden_failed} hidden test(s) of {view.item} failed: they compare your function with "
                     "the reference solution; their details are shown when the grades are published.")
    return "\n\n".join(parts) + ("\n" if parts else "")


def summary_text(view: StudentView) -> str:
    """The points table, then every item's text."""
    lines = [f"{view.submission}: {points(view.score)} / {points(view.max_score)} points"]
    if view.import_error:
        lines.append(f"  {view.import_error}")
    elif view.status != "graded":
        lines.append(f"  {view.status}")
    lines.append("")
    width = max(len(name) for name in spec.ITEM_NAMES)
    lines += [f"  {v.item:<{width}}  {points(v.earned):>5} / {points(v.maximum)}" for v in view.items]
    details = [item_text(v).rstrip() for v in view.items if item_text(v)]
    if details:
        lines += ["", *"\n\n".join(details).splitlines()]
    if not view.hidden_run:
        lines += ["", "Public tests only: the hidden tests run when your submission is graded."]
    return "\n".join(lines) + "\n"
