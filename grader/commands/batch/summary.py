"""The TA's summary page of a batch: distribution, pass rates, problems, slowest.

Self-contained like the feedback pages: the plot is inline SVG.
"""

from __future__ import annotations

import io
import re
import statistics
from collections.abc import Sequence
from html import escape
from urllib.parse import quote

from grader import spec
from grader.commands.batch.outcome import Outcome
from grader.commands.batch.submissions import Skipped
from grader.reports.feedback import html_document, points
from grader.spec.text import shown


def distribution_svg(scores: list[float], maximum: float) -> str:
    """Histogram of the scores as an inline SVG element."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(6, 2.8))
    ax = fig.subplots()
    bins = [maximum * k / 10 for k in range(11)] if maximum > 0 else 10
    ax.hist(scores, bins=bins, color="#3b6ea8", edgecolor="white")
    ax.set_xlabel("score")
    ax.set_ylabel("students")
    ax.set_xlim(0, maximum or 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole students
    fig.tight_layout()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)  # RDF boilerplate
    return svg[svg.index("<svg"):]


def pass_rates(graded: list[Outcome]) -> list[tuple[str, str, int, int]]:
    """(test, function, passed, total) for every test, the least passed first (ungraded outcomes: not counted)."""
    counts: dict[str, list] = {}
    for o in graded:
        for t in o.results.tests if o.results is not None else ():
            entry = counts.setdefault(t.id, [t.item, 0, 0])
            entry[1] += t.passed
            entry[2] += 1
    order = {name: k for k, name in enumerate(spec.STATEMENT_ORDER)}
    rows = [(name, f, p, n) for name, (f, p, n) in counts.items()]
    return sorted(rows, key=lambda r: (r[2] / r[3], order.get(r[1], 99), r[0]))


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>\n{body}\n</table>"


def page(outcomes: list[Outcome], skipped: Sequence[Skipped] = (), students: str = "students") -> str:
    """The summary page; ``students``: the folder of the per-student pages, relative to the page."""
    graded = [(o, o.results) for o in outcomes if o.results is not None]
    scores = [r.score for _, r in graded]
    maximum = max((r.max_score for _, r in graded), default=0.0)
    body = ["<h1>granular-grader: batch summary</h1>",
            f"<p>{len(outcomes)} students, {len(graded)} graded"
            + (f"; mean {points(statistics.mean(scores))}, median {points(statistics.median(scores))} "
               f"of {points(maximum)}"
               if scores else "") + "</p>"]
    if scores:
        body += ["<h2>Score distribution</h2>", distribution_svg(scores, maximum)]
    exponents = [r.efficiency.exponent for _, r in graded if r.efficiency is not None and r.efficiency.exponent
                 is not None]
    if exponents:
        from grader.reports import efficiency_view

        body += [f"<h2>Efficiency: exponent of the cost per event ({len(exponents)} measured)</h2>",
                 efficiency_view.histogram_svg(exponents)]
    problems = [o for o in outcomes if o.status != "graded" or o.note]
    body.append("<h2>Timeouts, crashes and other problems</h2>")
    body.append(_table(["student", "status", "note"],
                       [[escape(shown(o.student)), escape(o.status), escape(o.note)] for o in problems])
                if problems else "<p>None.</p>")
    if skipped:
        body += ["<h2>Skipped: not submissions</h2>",
                 _table(["entry", "reason"], [[escape(shown(str(s.path))), escape(s.reason)] for s in skipped])]
    rows = []
    for o in sorted(outcomes, key=lambda o: o.student):
        link = escape(shown(o.student))
        if o.results is not None:
            link = f"<a href=\"{quote(students)}/{quote(o.folder)}/feedback.html\">{link}</a>"
        score = "" if o.results is None else f"{points(o.results.score)} / {points(o.results.max_score)}"
        items = ([""] * len(spec.STATEMENT_ORDER) if o.results is None else
                 [points(o.results.item(n).score) for n in spec.STATEMENT_ORDER])
        rows.append([link, score, *items, escape(o.status)])
    abbreviated = [f"<abbr title=\"{name}\">{spec.ITEM_ABBREVIATIONS[name]}</abbr>" for name in spec.STATEMENT_ORDER]
    body += ["<h2>Grades</h2>", _table(["student", "score", *abbreviated, "status"], rows)]
    if graded:
        rates = [[f"<code>{escape(name)}</code>", escape(item), f"{passed} / {total}",
                  f"{100 * passed / total:.0f} %"] for name, item, passed, total in pass_rates([o for o, _ in graded])]
        body += ["<h2>Pass rate of every test</h2>", _table(["test", "function or scenario", "passed", "rate"],
                                                            rates)]
        slowest = sorted(graded, key=lambda pair: -pair[1].seconds)[:10]
        body += ["<h2>Slowest to grade</h2>",
                 _table(["student", "seconds"], [[escape(shown(o.student)), f"{r.seconds:g}"] for o, r in slowest])]
    return html_document("Batch summary", "\n".join(body))
