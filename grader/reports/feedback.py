"""A student's feedback page: one self-contained HTML file, nothing loaded from the network.

Built from the typed results (:class:`grader.grading.results.Results`) that
results.json is written from, so the page and the grade can never disagree.
"""

from __future__ import annotations

import base64
import html

from grader import spec
from grader.grading.results import AnimationNote, Results
from grader.spec.text import printable


def escape(text: str) -> str:
    """Text for the page: printable first (spec.text.printable: terminal escapes, bidirectional overrides and lone
    surrogates in a student's name, source or messages are written out), then HTML-escaped."""
    return html.escape(printable(text))


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; } td, th { padding: .25rem .75rem; border-bottom: 1px solid #ddd; }
th { text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.full td.num { color: #176317; } tr.lost td.num { color: #a11; font-weight: bold; }
pre { background: #f6f6f6; padding: .75rem; overflow-x: auto; font-size: .85rem; white-space: pre-wrap; }
.failure { border-left: 4px solid #a11; padding-left: 1rem; margin: 1.5rem 0; }
.status { font-weight: bold; } .small { color: #666; font-size: .85rem; }
th { background: #3b6ea8; color: white; }
img.animation { border: 4px solid #2a9d8f; max-width: 100%; }
"""


def html_document(title: str, body: str, style: str = STYLE) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{escape(title)}</title>\n"
            f"<style>{style}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def points(x: float) -> str:
    """Points as every report shows them: at most two decimals, none when whole (shares of an
    item's points add up to 99.99999... in floating point)."""
    return f"{round(x, 2):.2f}".rstrip("0").rstrip(".")


def function_table(results: Results) -> str:
    rows = []
    for item in sorted(results.items, key=lambda i: spec.STATEMENT_ORDER.index(i.item)):  # as check prints them
        tests = results.tests_of(item.item)
        passed = sum(t.passed for t in tests)
        css = "full" if item.score >= item.max_score else "lost"
        label = spec.item_label(item.item)
        label = f"<code>{escape(label)}</code>" if item.item in spec.FUNCTION_NAMES else f"scenario: {escape(label)}"
        rows.append(f"<tr class=\"{css}\"><td>{label}</td>"
                    f"<td class=\"num\">{points(item.score)} / {points(item.max_score)}</td>"
                    f"<td class=\"num\">{passed} of {len(tests)} tests passed</td></tr>")
    return ("<table><tr><th>function or scenario</th><th>points</th><th>tests</th></tr>\n" + "\n".join(rows)
            + "\n</table>")


def failures(results: Results, withhold_hidden: bool = False) -> str:
    """Each failure with its message and smallest input; a message already shown is not repeated: the tests that
    failed with it are named under it (a review counted one syntax error shown 25 times on a page).

    withhold_hidden: the hidden tests that failed are named with their points, without their message or input (they
    hold the hidden cases and the reference's answers), in one block at the end."""
    if not results.failed:
        return "<p>Every test passed.</p>"
    withheld = [t for t in results.failed if t.hidden and withhold_hidden]
    groups: dict[str, list] = {}
    for t in results.failed:
        if not (t.hidden and withhold_hidden):
            groups.setdefault(t.message or t.description, []).append(t)
    parts = []
    for message, (t, *same) in groups.items():
        kind = "scenario" if t.item in spec.SCENARIO_NAMES else f"{'hidden' if t.hidden else 'public'} test of"
        part = (f"<div class=\"failure\"><h3><code>{escape(t.id)}</code></h3>"
                f"<p class=\"small\">{escape(kind)} <code>{escape(t.item)}</code>, "
                f"{points(t.max_score)} points</p><pre>{escape(message)}</pre>")
        if t.snippet:
            part += ("<p>The smallest failing input, ready to paste next to your granularGas.py:</p>"
                     f"<pre>{escape(t.snippet)}</pre>")
        if same:
            part += (f"<p class=\"small\">{len(same)} more test{'s' if len(same) > 1 else ''} failed with this same "
                     "message: " + ", ".join(f"<code>{escape(o.id)}</code>" for o in same) + "</p>")
        parts.append(part + "</div>")
    if withheld:
        named = "".join(f"<li><code>{escape(t.id)}</code>, {points(t.max_score)} points</li>" for t in withheld)
        parts.append(f"<div class=\"failure\"><h3>Hidden tests failed: {len(withheld)}</h3><p>{HIDDEN_WITHHELD}</p>"
                     f"<ul>{named}</ul></div>")
    return "\n".join(parts)


#: What a page made with withheld hidden details says in their place.
HIDDEN_WITHHELD = ("Their inputs and the reference's answers are withheld for now; the public tests above, the "
                   "statement and your own cases are where to look.")


def animation_section(note: AnimationNote, gif: bytes) -> str:
    if note.reference == "absent":
        said = [f"Scenario <code>{escape(note.scenario)}</code>: your <code>update</code> alone (the kit holds the "
                "reference's runs of the standard scenarios only); grains coloured by speed."]
    else:
        said = [f"Scenario <code>{escape(note.scenario)}</code>: your <code>update</code> (left) next to the "
                "reference's (right), from the same start, at the same frame times; grains coloured by speed."]
    if note.first_divergence_t is not None:
        said.append(f"Your grains leave the reference's at t = {note.first_divergence_t:.3g}.")
    if note.first_overlap_t is not None:
        said.append(f"Grains overlap from t = {note.first_overlap_t:.3g} (red outline).")
    if note.first_outside_t is not None:
        said.append(f"A grain leaves the box at t = {note.first_outside_t:.3g} (red outline).")
    if note.error:
        said.append(f"Your update stopped {escape(note.error)}.")
    data = base64.b64encode(gif).decode("ascii")
    return (f"<h2>{escape(note.heading)}</h2><p>{' '.join(said)}</p>"
            f"<img class=\"animation\" alt=\"animation of the {escape(note.scenario)} scenario\" "
            f"src=\"data:image/gif;base64,{data}\">")


def page(student: str, results: Results, source: str = "", gif: bytes | None = None,
         no_animation: str | None = None, withhold_hidden: bool = False) -> str:
    """The whole feedback page of one student (gif: the animation of the first failing scenario; no_animation: why
    there is none, said where it would be when the file failed a test; withhold_hidden: no hidden test's input or
    answer, and not what the file printed, which may show them: a page handed out before the deadline)."""
    status = "" if results.status == "graded" else f" &middot; {escape(results.status)}"
    body = [f"<h1>Feedback for {escape(student)}</h1>",
            f"<p><span class=\"status\">{points(results.score)} / {points(results.max_score)} points</span>"
            f"{status} &middot; graded in {results.seconds:g} s</p>"]
    if results.import_error:
        body.append(f"<pre>{escape(results.import_error)}</pre>")
    body += ["<h2>Points per function and scenario</h2>", function_table(results)]
    if gif and results.animation is not None:
        body.append(animation_section(results.animation, gif))
    elif no_animation and not results.import_error and results.score < results.max_score:
        body.append(f"<h2>Your gas next to the reference's</h2><p>No animation: {escape(no_animation)}.</p>")
    body += ["<h2>What failed, and why</h2>", failures(results, withhold_hidden)]
    if results.efficiency is not None:
        from grader.reports import efficiency_view

        body.append(efficiency_view.section(results.efficiency))
    passed = [t for t in results.tests if t.passed]
    if passed:
        items = "".join(f"<li><code>{escape(t.id)}</code>: {escape(t.message or t.description)}</li>"
                        for t in passed)
        body.append(f"<details><summary>{len(passed)} tests passed</summary><ul>{items}</ul></details>")
    if not results.hidden_run:
        body.append("<p class=\"small\">Public tests only: the hidden tests run when your submission is graded.</p>")
    if results.printed and withhold_hidden:
        body.append("<p class=\"small\">What your file printed is withheld with the hidden tests' details (it may "
                    "show their inputs).</p>")
    elif results.printed:
        body.append(f"<details><summary>What your file printed</summary><pre>{escape(results.printed)}</pre>"
                    "</details>")
    if source:
        sha = results.provenance.sha256 if results.provenance is not None else ""
        named = f" (sha256 {escape(sha[:12])})" if sha else ""  # check's results name no file digest
        body.append(f"<details><summary>The file that was graded{named}</summary><pre>{escape(source)}</pre>"
                    "</details>")
    if results.protections or results.weaknesses:
        items = "".join(f"<li>{escape(p)}</li>" for p in results.protections)
        items += "".join(f"<li>not in force: {escape(p)}</li>" for p in results.weaknesses)
        body.append(f"<details class=\"small\"><summary>How your code was run</summary><ul>{items}</ul></details>")
    return html_document(f"Feedback for {student}", "\n".join(body))
