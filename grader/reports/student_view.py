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

from grader import spec
from grader.grading.report import SET_ASIDE
from grader.grading.results import Results, TestRecord, boolean, number, objects, optional, string, strings
from grader.reports.feedback import points

#: The runner's outcome of a test whose cases rested on a wrong helper: its
#: message quotes the reference's answer for that helper call.
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
        """The view back; ValueError (ResultsError naming the field) if it is not what to_json wrote."""
        data = json.loads(text)
        items = tuple(ItemView(string(i, f"items[{k}]", "item"), number(i, f"items[{k}]", "earned"),
                               number(i, f"items[{k}]", "maximum"), strings(i, f"items[{k}]", "public_failures"),
                               int(number(i, f"items[{k}]", "hidden_failed")))
                      for k, i in enumerate(objects(data, "", "items")))
        return cls(string(data, "", "submission"), number(data, "", "score"), number(data, "", "max_score"),
                   string(data, "", "status"), optional(data, "", "import_error", string),
                   boolean(data, "", "hidden_run"), items)


#: The margin of a failed test's message in the text a student sees (the snippet's is "    | ").
MESSAGE_MARGIN = "  > "


def public_failure(test: TestRecord) -> str:
    """A failed public test as a student may see it (a set-aside test without the reference's answer)."""
    if test.outcome == SET_ASIDE:
        return f"FAILED {test.id} ({test.description})\n  {SET_ASIDE_MESSAGE}"
    # Every line of the message behind a margin: it quotes the file's own error text, whose line breaks could
    # otherwise lay out a points table of its own under the real one (a red team's "100 / 100 points").
    text = f"FAILED {test.id} ({test.description})\n{textwrap.indent(test.message, MESSAGE_MARGIN, lambda _: True)}"
    if test.snippet:
        text += "\n  smallest failing input, to reproduce:\n" + textwrap.indent(test.snippet.rstrip(), "    | ")
    return text


def student_view(results: Results, name: str) -> StudentView:
    """The view of ``results`` (``name``: the file name to show, never the grader's paths)."""
    items = []
    for item in results.items:
        failed = [t for t in results.tests_of(item.item) if not t.passed]
        items.append(ItemView(item.item, item.score, item.max_score,
                              tuple(public_failure(t) for t in failed if not t.hidden), sum(t.hidden for t in failed)))
    return StudentView(name, results.score, results.max_score, results.status, results.import_error,
                       results.hidden_run, tuple(items))


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
    shown = sorted(view.items, key=lambda v: spec.STATEMENT_ORDER.index(v.item))  # as every report lists them
    lines += [f"  {v.item:<{width}}  {points(v.earned):>5} / {points(v.maximum)}" for v in shown]
    details = [item_text(v).rstrip() for v in shown if item_text(v)]
    if details:
        lines += ["", *"\n\n".join(details).splitlines()]
    if not view.hidden_run:
        lines += ["", "Public tests only: the hidden tests run when your submission is graded."]
    return "\n".join(lines) + "\n"
