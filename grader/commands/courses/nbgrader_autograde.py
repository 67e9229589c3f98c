"""nbgrader's autograde, made safe: our preprocessors, set by the course's nbgrader_config.py.

nbgrader's own autograde runs the submitted notebook in a kernel, as the TA,
in a folder holding every file the student shipped: a cell the student adds,
or a shipped module that shadows one the cells import, runs with the TA's
rights. Here nothing of the student's runs outside the sandbox:

* :class:`ReleasedCells` (sanitizing, before nbgrader's OverwriteCells) puts
  the released notebook's cells in place of the submitted ones;
* :class:`GradeOutsideNotebook` (instead of nbgrader's Execute) starts no
  kernel: it grades the submitted granularGas.py with
  :func:`grader.commands.courses.nbgrader_course.grade_folder` and writes the outputs a
  student may see (points; public tests' messages) into the released cells.
  When grading fails (the grader's fault) it raises: nbgrader then records no
  grade for that student and says so, instead of nbgrader's full marks for a
  test cell without output;
* a folder with granularGas.py and no notebook nbgrader can read gets a copy
  of the released notebook before nbgrader looks for notebooks
  (:func:`supply_released_notebooks`).
"""

from __future__ import annotations

import fnmatch
import glob
import shutil
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbformat.v4 import new_output
from nbgrader.converters import Autograde
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    IgnorePattern,
    LimitOutput,
    NbGraderPreprocessor,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)

from grader import spec
from grader.commands.courses import nbgrader_course as nbs
from grader.errors import GraderError
from grader.reports.student_view import StudentView, item_text, summary_text


class CourseSetupError(GraderError):
    """The course is not set up as autograde needs (no released notebook, say); the message says what to run."""


def _coursedir(preprocessor: NbGraderPreprocessor):
    """The converter's CourseDirectory (preprocessor -> exporter -> converter)."""
    node = preprocessor.parent
    while node is not None and not hasattr(node, "coursedir"):
        node = node.parent
    if node is None:
        raise CourseSetupError("granular-grader's preprocessors run inside nbgrader autograde only")
    return node.coursedir


def released_notebook(coursedir, assignment: str, notebook: str) -> Path:
    path = Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / f"{notebook}.ipynb"
    if not path.is_file():
        raise CourseSetupError(f"no released notebook {path}: run nbgrader generate_assignment {assignment} first")
    return path


class ReleasedCells(NbGraderPreprocessor):
    """Sanitizing: the released notebook's cells replace every submitted cell (added ones are dropped)."""

    def preprocess(self, nb, resources):
        coursedir = _coursedir(self)
        info = resources["nbgrader"]
        released = nbformat.read(released_notebook(coursedir, info["assignment"], info["notebook"]), as_version=4)
        nb.cells = released.cells
        return nb, resources


def fill_outputs(nb, view: StudentView) -> None:
    """Write the view into the released cells: the summary in the setup cell, points in each test cell."""
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        cell_id = meta.get("grade_id", "")
        count += 1
        cell.execution_count = count
        cell.outputs = []
        if cell_id == "setup":
            cell.outputs.append(new_output("stream", name="stdout", text=summary_text(view)))
            continue
        item = nbs.item_of(cell_id)
        if item is None:
            if meta.get("grade"):
                # nbgrader gives a graded cell without output full marks: refuse instead.
                raise CourseSetupError(f"test cell {cell_id!r} is not one of granular-grader's items "
                                       f"({', '.join(nbs.grade_id(i) for i in spec.ITEM_NAMES)})")
            continue
        text = item_text(view.item(item))
        if text:
            cell.outputs.append(new_output("stream", name="stdout", text=text))
        earned = round(float(meta.get("points", 0.0)) * view.item(item).fraction, 6)
        cell.outputs.append(new_output("execute_result", data={"text/plain": repr(earned)}, execution_count=count))


class GradeOutsideNotebook(NbGraderPreprocessor):
    """Autograding, instead of Execute: grade granularGas.py in the sandbox; no kernel, no student cell runs."""

    def preprocess(self, nb, resources):
        coursedir = _coursedir(self)
        info = resources["nbgrader"]
        folder = Path(coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"]))
        view = nbs.grade_folder(Path(coursedir.root), folder)
        fill_outputs(nb, view)
        return nb, resources


def supply_released_notebooks(coursedir, assignment: str) -> list[Path]:
    """Give each submitted folder holding granularGas.py the released notebook where it has none nbgrader can read.

    Its cells never run (ReleasedCells replaces them), but nbgrader finds a student's work by that notebook alone
    and stops at one it cannot parse: a correct file beside an empty granular_gas.ipynb, or beside Jupyter's
    Untitled.ipynb with no granular_gas.ipynb, got 0 and an error blaming the course. An unreadable notebook is
    kept, renamed (nothing of the student's is lost); a link in its place is removed."""
    if not fnmatch.fnmatch(assignment, coursedir.assignment_id):
        return []
    supplied = []
    for found in sorted(glob.glob(coursedir.format_path(coursedir.submitted_directory, coursedir.student_id,
                                                        assignment))):
        folder = Path(found)
        target = folder / nbs.NOTEBOOK
        if nbs.submitted_file(folder) is None or _readable(target):
            continue
        if target.is_symlink():
            target.unlink()  # a link holds nothing of the student's; renamed, nbgrader would copy what it points to
        elif target.exists():
            target.rename(_free_name(target.with_name(target.name + ".unreadable")))
        shutil.copyfile(released_notebook(coursedir, assignment, nbs.NOTEBOOK_NAME), target)
        supplied.append(target)
    return supplied


def _readable(path: Path) -> bool:
    """Whether nbgrader can read ``path`` as a notebook (a plain file, valid JSON, a notebook's format)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        nbformat.read(path, as_version=nbformat.NO_CONVERT)
    except Exception:  # noqa: BLE001 - whatever nbformat fails on, nbgrader fails on too
        return False
    return True


def _free_name(path: Path) -> Path:
    """``path``, or ``path.1``, ``path.2``, ...: the first that does not exist."""
    candidate, k = path, 0
    while candidate.exists() or candidate.is_symlink():
        k += 1
        candidate = path.with_name(f"{path.name}.{k}")
    return candidate


_ASSIGNMENTS: set[str] = set()


def _init_notebooks_with_supply(original):
    def init_notebooks(self) -> None:
        for assignment in sorted(_ASSIGNMENTS):
            for path in supply_released_notebooks(self.coursedir, assignment):
                self.log.info("%s: %s with no notebook nbgrader reads; supplied the released one", path.parent,
                              spec.FILE_NAME)
        original(self)

    init_notebooks.granular_grader = True  # type: ignore[attr-defined]  # marks the method as ours
    return init_notebooks


def configure(c, assignment: str) -> None:
    """Set the course's nbgrader configuration ``c`` so that autograde grades ``assignment`` safely."""
    c.Autograde.exclude_overwriting = {assignment: [spec.FILE_NAME]}
    c.Autograde.sanitize_preprocessors = [ReleasedCells, ClearOutput, DeduplicateIds, OverwriteKernelspec,
                                          OverwriteCells, CheckCellMetadata]
    c.Autograde.autograde_preprocessors = [GradeOutsideNotebook, IgnorePattern, ClearMetadataPreprocessor,
                                           LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    _ASSIGNMENTS.add(assignment)
    # nbgrader finds a student's folder by its notebooks only, and has no hook early enough.
    if not getattr(Autograde.init_notebooks, "granular_grader", False):
        Autograde.init_notebooks = _init_notebooks_with_supply(Autograde.init_notebooks)
