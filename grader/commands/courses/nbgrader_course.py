"""nbgrader: the course folder, its notebook, grading a submitted folder, and the gradebook.

The course's notebook has one test cell per rubric item, with the rubric's
points. When the TA runs ``nbgrader autograde``, no kernel runs: the
course's configuration (:func:`grader.commands.courses.nbgrader_autograde.configure`) puts the
released cells in place of the submitted ones and fills their outputs from
:func:`grade_folder`, which grades the student's ``granularGas.py`` in the
sandbox with the rubric and limits the course was built with
(``granular_grader.toml``). The outputs hold what a student may see only
(:mod:`grader.reports.student_view`), so ``generate_feedback`` carries no hidden test.

The cells call :func:`grader.commands.notebook.score` and ``report``, which the student kit ships: a
student who runs the notebook on their own machine gets the public tests' points.

:func:`export_batch` writes a batch's grades into an nbgrader gradebook
through nbgrader's own API, so that ``nbgrader export`` produces the
course's CSV.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from grader import spec
from grader.commands.courses import settings as course_settings
from grader.commands.courses.cache import CACHE_DIR, ResultCache
from grader.errors import GraderError
from grader.grading.results import Results
from grader.reports.student_view import ItemView, StudentView, student_view
from grader.spec import paths
from grader.spec.limits import Limits, too_large

if TYPE_CHECKING:
    from grader.commands.batch.outcome import Outcome

NOTEBOOK = "granular_gas.ipynb"
NOTEBOOK_NAME = NOTEBOOK.removesuffix(".ipynb")  # as the gradebook names it
ASSIGNMENT = "granular_gas"
ROOT = paths.PACKAGE_ROOT
SHIPPED = ROOT / "assignment" / "nbgrader"

CONFIG = f"""\
# nbgrader configuration of the granular-gas course (written by granular-grader).
c = get_config()
c.CourseDirectory.course_id = "granular-gas"
# autograde grades granularGas.py with granular-grader, in its sandbox, with the
# rubric and limits of granular_grader.toml, and runs no notebook: cells a
# student adds never execute, the released cells replace the submitted ones,
# and a folder with granularGas.py alone gets the released notebook.
from grader.commands.courses.nbgrader_autograde import configure
configure(c, "{ASSIGNMENT}")
"""


class CourseError(GraderError):
    """The course folder cannot be written as asked; the message says why."""


def write_course(out: Path, points: dict[str, float], limits: Limits = Limits(),
                 allow_weak_isolation: bool = False, excuse_traced: bool = False) -> Path:
    """A course folder: nbgrader_config.py, granular_grader.toml and source/granular_gas/."""
    try:
        import nbformat
    except ImportError:  # the extra is not installed: say which, as batch --nbgrader-db does
        raise CourseError('nbgrader-course needs nbgrader: pip install "granular-grader[nbgrader]"') from None

    if out.exists() and any(out.iterdir()) and not (out / "nbgrader_config.py").exists():
        raise CourseError(f"{out} is not empty and is not an nbgrader course; give a new folder")
    template = ROOT / "student_template" / spec.FILE_NAME
    if not template.exists():
        raise CourseError("the course is built from a checkout of granular-grader; student_template/ is missing")
    source = out / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    (out / "nbgrader_config.py").write_text(CONFIG)
    settings = course_settings.GradingSettings(dict(points), limits, allow_weak_isolation,
                                               excuse_traced=excuse_traced)
    (out / course_settings.SETTINGS_FILE).write_text(course_settings.to_toml(settings))
    nbformat.write(build_notebook(points), source / NOTEBOOK)
    (source / spec.FILE_NAME).write_text(template.read_text())
    return out


def grade_id(item: str) -> str:
    return f"grade_{item}"


def item_of(cell_grade_id: str) -> str | None:
    """The rubric item of a test cell's grade_id (None: not a test cell of ours)."""
    item = cell_grade_id.removeprefix("grade_")
    return item if cell_grade_id.startswith("grade_") and item in spec.ITEM_NAMES else None


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
        f"Write the six functions of the statement in `{spec.FILE_NAME}`, next to this notebook, and submit it. "
        "The cells below grade that file with granular-grader, the same tests as "
        f"`python -m grader check {spec.FILE_NAME}`; each test cell shows the points earned for one function or "
        "scenario. Do not edit them: the course grades with its own copy of these cells.",
        metadata=meta("instructions", False))]
    cells.append(new_code_cell("from grader.commands.notebook import score, report\nreport()",
                               metadata=meta("setup", False)))
    for item in spec.ITEM_NAMES:
        cells.append(new_code_cell(f"score({item!r}, points={points[item]:g})",
                                   metadata=meta(grade_id(item), True, points[item])))
    notebook = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                  "language": "python"}})
    nbformat.validate(notebook)
    return notebook


def missing_view(reason: str, points: dict[str, float]) -> StudentView:
    """The view of a folder without a gradable file: 0 on every item, and why."""
    items = tuple(ItemView(item, 0.0, points[item], (), 0) for item in spec.ITEM_NAMES)
    return StudentView(spec.FILE_NAME, 0.0, sum(points.values()), reason, None, False, items)


def submitted_file(folder: Path) -> Path | None:
    """The student's granularGas.py in ``folder``: a regular file, never a link (it could point anywhere)."""
    path = folder / spec.FILE_NAME
    return path if path.is_file() and not path.is_symlink() else None


def grade_folder(course: Path, folder: Path) -> StudentView:
    """Grade ``folder``/granularGas.py as the course at ``course`` says; what the student may see.

    The grade of an unchanged file is reused from the TA-only cache. Raises
    GraderError (the grader's fault: weak isolation, a sandbox that cannot
    start, unusable settings), never a 0 for the student.
    """
    from grader.grading import runner

    settings = course_settings.load(course / course_settings.SETTINGS_FILE)
    path = submitted_file(folder)
    if path is None:
        return missing_view(f"no {spec.FILE_NAME} in the submission (a regular file of exactly this name)",
                            settings.points)
    refused = too_large(spec.FILE_NAME, path.stat().st_size)  # check and the batch grade no such file either
    if refused:
        return missing_view(refused, settings.points)
    cache = ResultCache(course / CACHE_DIR)
    key = course_settings.cache_key(path.read_bytes(), settings)
    view = cache.get(key)
    if view is None:
        # The whole course is hidden from the submission: other students' files, the gradebook, the cache.
        report = runner.grade_file(path, settings.options(hide=(course.resolve(),)))
        view = student_view(Results.from_report(report), spec.FILE_NAME)
        cache.put(key, view)
    return view


def export_batch(db_url: str, assignment: str, outcomes: Iterable[Outcome], points: dict[str, float]) -> int:
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
            results: Results | None = outcome.results
            for item in spec.ITEM_NAMES:
                grade = gb.find_grade(grade_id(item), NOTEBOOK_NAME, assignment, outcome.student)
                grade.auto_score = results.item(item).score if results is not None else 0.0
                grade.manual_score = None
            gb.db.commit()
            written += 1
    return written
