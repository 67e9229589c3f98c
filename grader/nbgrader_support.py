"""nbgrader: the course's source notebook, its autograder cells, and the gradebook.

The source notebook (assignment/nbgrader/source/granular_gas/) has one
autograder test cell per rubric item (the six functions, the two scenarios),
with the rubric's points. Each cell calls :func:`score`, which grades the
student's ``granularGas.py`` once (through ``python -m grader check``, whose
sandbox runs the student's code), caches the result next to it, and returns
the item's points: nbgrader takes a number output by a test cell as partial
credit. Nothing is written to stderr (nbgrader zeroes a test cell that does).

:func:`export_batch` writes a batch's grades into an nbgrader gradebook
through nbgrader's own API, so that ``nbgrader export`` produces the
course's CSV.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from grader import spec

NOTEBOOK = "granular_gas.ipynb"
NOTEBOOK_NAME = NOTEBOOK.removesuffix(".ipynb")  # as the gradebook names it
ASSIGNMENT = "granular_gas"
CACHE = ".granular_grader_results.json"
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "assignment" / "nbgrader"

CONFIG = f"""\
# nbgrader configuration of the granular-gas course (written by granular-grader).
c = get_config()
c.CourseDirectory.course_id = "granular-gas"
c.CourseDirectory.db_assignments = [dict(name="{ASSIGNMENT}")]
# Students hand in granularGas.py next to the released notebook: the released
# template of the same name must not overwrite it when autograding.
c.Autograde.exclude_overwriting = {{"{ASSIGNMENT}": ["granularGas.py"]}}
# The first test cell grades the whole file (a few seconds to a minute).
c.Execute.timeout = 1800
"""


class CourseError(ValueError):
    """The course folder cannot be written as asked; the message says why."""


def write_course(out: Path, points: dict[str, float]) -> Path:
    """A course folder: nbgrader_config.py and source/granular_gas/ (notebook and template)."""
    import nbformat

    if out.exists() and any(out.iterdir()) and not (out / "nbgrader_config.py").exists():
        raise CourseError(f"{out} is not empty and is not an nbgrader course; give a new folder")
    source = out / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    (out / "nbgrader_config.py").write_text(CONFIG)
    nbformat.write(build_notebook(points), source / NOTEBOOK)
    template = ROOT / "student_template" / "granularGas.py"
    if not template.exists():
        raise CourseError("the course is built from a checkout of granular-grader; student_template/ is missing")
    (source / "granularGas.py").write_text(template.read_text())
    return out


def grade_id(item: str) -> str:
    return f"grade_{item}"


def build_notebook(points: dict[str, float]):
    """The source notebook: instructions, a setup cell, one test cell per item."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    def meta(cell_id: str, grade: bool, item_points: float | None = None) -> dict:
        data = {"grade": grade, "grade_id": cell_id, "locked": True, "schema_version": 3, "solution": False,
                "task": False}
        if grade:
            data["points"] = item_points
        return {"nbgrader": data}

    cells = [new_markdown_cell(
        "# Event-driven granular gas\n\n"
        "Write the six functions of the statement in `granularGas.py`, next to this notebook, and submit the "
        "folder. The cells below grade that file with granular-grader, the same tests as "
        "`python -m grader check granularGas.py`; each test cell shows the points earned for one function or "
        "scenario. Do not edit them.", metadata=meta("instructions", False))]
    cells.append(new_code_cell("from grader.nbgrader_support import score, report\nreport()",
                               metadata=meta("setup", False)))
    for item in spec.ITEM_NAMES:
        cells.append(new_code_cell(f"score({item!r}, points={points[item]:g})",
                                   metadata=meta(grade_id(item), True, points[item])))
    notebook = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                  "language": "python"}})
    nbformat.validate(notebook)
    return notebook


def _results(path: Path) -> dict | None:
    """The grade of ``path``, computed once per content and cached beside it."""
    if not path.is_file():
        return None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cache = path.with_name(CACHE)
    try:
        cached = json.loads(cache.read_text())
        if cached.get("sha256") == digest:
            return cached["results"]
    except (OSError, ValueError, KeyError):
        pass
    out = path.with_name(".granular_grader_check.json")
    subprocess.run([sys.executable, "-m", "grader", "check", str(path), "--json", str(out), "--quiet"],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
    try:
        results = json.loads(out.read_text())
    except (OSError, ValueError):
        return None
    try:
        cache.write_text(json.dumps({"sha256": digest, "results": results}))
    except OSError:
        pass
    return results


def score(item: str, points: float, path: str = "granularGas.py") -> float:
    """``points`` times the fraction of the item's tests that ``path`` passes (0 if it cannot be graded)."""
    if item not in spec.ITEM_NAMES:
        print(f"unknown item {item!r}; the items are {', '.join(spec.ITEM_NAMES)}")
        return 0.0
    results = _results(Path(path))
    if results is None:
        print(f"{path} could not be graded: is it next to this notebook?")
        return 0.0
    earned, maximum = results["extra_data"]["items"][item]
    failed = [t for t in results["tests"] if t["tags"][0] == item and t["status"] != "passed"]
    for t in failed:
        print(f"FAILED {t['name']}\n{t['output']}\n")
    return round(points * earned / maximum, 6) if maximum else 0.0


def report(path: str = "granularGas.py") -> None:
    """Print the points table (the setup cell's output)."""
    results = _results(Path(path))
    if results is None:
        print(f"{path} could not be graded: is it next to this notebook?")
        return
    print(f"{path}: {results['score']:g} / {results['max_score']:g} points ({results['extra_data']['status']})")
    for item, (earned, maximum) in results["extra_data"]["items"].items():
        print(f"  {item:<22} {earned:6.2f} / {maximum:g}")


def export_batch(db_url: str, assignment: str, outcomes: Iterable, points: dict[str, float]) -> int:
    """Write batch outcomes into the gradebook at ``db_url``; the number of students written.

    The assignment's notebook and grade cells must be known to the gradebook
    (``nbgrader generate_assignment`` on the course source does that); if
    they are not, they are created from the source notebook's definition.
    """
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gb:
        gb.update_or_create_assignment(assignment)
        try:
            gb.find_notebook(NOTEBOOK_NAME, assignment)
        except MissingEntry:
            gb.update_or_create_notebook(NOTEBOOK_NAME, assignment)
            for item in spec.ITEM_NAMES:
                gb.update_or_create_grade_cell(grade_id(item), NOTEBOOK_NAME, assignment,
                                               max_score=points[item], cell_type="code")
        written = 0
        for outcome in outcomes:
            gb.update_or_create_student(outcome.student)
            try:
                gb.find_submission(assignment, outcome.student)
            except MissingEntry:
                gb.add_submission(assignment, outcome.student)
            items = outcome.results["extra_data"]["items"] if outcome.results is not None else {}
            for item in spec.ITEM_NAMES:
                grade = gb.find_grade(grade_id(item), NOTEBOOK_NAME, assignment, outcome.student)
                grade.auto_score = float(items[item][0]) if item in items else 0.0
                grade.manual_score = None
            gb.db.commit()
            written += 1
    return written
