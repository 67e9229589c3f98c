"""A grade as text for the terminal and as Gradescope's results.json."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from grader.grading.runner import GradeReport
from grader.reports.feedback import points as _points


def as_text(report: GradeReport) -> str:
    lines = [f"{report.submission}: {_points(report.score)} / {_points(report.max_score)} points"]
    if report.weak_isolation_allowed:
        lines.append("  WARNING: hidden tests ran with weak isolation (--allow-weak-isolation): "
                     + "; ".join(report.weaknesses))
    if report.import_error:
        lines.append(f"  {report.import_error}")
    elif report.status != "graded":
        lines.append(f"  {report.status}")
    lines.append("")
    width = max(len(name) for name in report.by_item())
    for name, (score, maximum) in report.by_item().items():
        lines.append(f"  {name:<{width}}  {_points(score):>5} / {_points(maximum)}")
    failed = [r for r in report.results if r.status == "failed"]
    for r in failed:
        lines += ["", f"FAILED {r.prop.id} ({r.prop.description})", textwrap.indent(r.message, "  ")]
        if r.snippet:
            lines += ["  smallest failing input, to reproduce:", textwrap.indent(r.snippet.rstrip(), "    | ")]
    if not report.hidden_run:
        lines += ["", "Public tests only: the hidden tests, which compare your functions with the reference "
                      "solution, run when your submission is graded."]
    if not failed:
        lines += ["", "Every test passed."]
    return "\n".join(lines) + "\n"


def as_gradescope(report: GradeReport) -> dict:
    """Gradescope's results.json schema: score, max_score and one entry per test."""
    tests = []
    for r in report.results:
        output = r.message + ("\n\nTo reproduce:\n" + r.snippet if r.snippet else "")
        tests.append({
            "name": r.prop.id,
            "score": round(r.score, 4),
            "max_score": round(r.max_score, 4),
            "status": "passed" if r.status == "passed" else "failed",
            "output": output or r.prop.description,
            "tags": [r.prop.item, "hidden" if r.prop.hidden else "public"],
            "visibility": "visible",
        })
    return {
        "score": round(report.score, 4),
        "max_score": round(report.max_score, 4),
        "execution_time": round(report.seconds, 2),
        "output": report.import_error or "",
        "tests": tests,
        "extra_data": {
            "status": report.status,
            "items": {name: [round(a, 4), round(b, 4)] for name, (a, b) in report.by_item().items()},
            "hidden_tests_run": report.hidden_run,
            "protections": list(report.protections),
            "weaknesses": list(report.weaknesses),
            "weak_isolation_allowed": report.weak_isolation_allowed,
            "outcomes": {r.prop.id: r.outcome for r in report.results},
            "printed": report.output,
        },
    }


def write_json(results: GradeReport | dict, path: str | Path) -> None:
    """Write results.json (from a report, or from its as_gradescope dict)."""
    if isinstance(results, GradeReport):
        results = as_gradescope(results)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
