"""nbgrader end to end, with the real commands: generate_assignment, autograde, generate_feedback, export.

The attacks: a student adds a cell that redefines ``score`` (and one that
writes a file, to see whether it ran as the TA), edits a test cell, ships a
forged cache of results and a module that shadows the grader's; another
submits granularGas.py alone, as the statement asks.
"""

import csv
import hashlib
import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader import spec
from grader.commands.courses import nbgrader_course as nbs
from grader.commands.courses import settings as course_settings
from grader.spec import rubric

from .test_grader_corpus import VECTORISED

pytest.importorskip("nbgrader")
STUB = "def contact_time_walls(w, x1, v1, R1):\n    return None\n"


def nbgrader(course: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True, text=True,
                          timeout=600)
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def exported(course: Path) -> dict[str, dict]:
    nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def lines_of(texts) -> list[str]:
    """Lines without indentation or the snippets' "| " margin, to compare texts laid out differently."""
    return [line.strip().removeprefix("|").strip() for text in texts for line in text.splitlines()]


def attack(folder: Path, marker: Path) -> None:
    """Eve's notebook: cells added and a test cell edited; a forged cache and a shadowing module shipped."""
    notebook = nbformat.read(folder / nbs.NOTEBOOK, as_version=4)
    added = [nbformat.v4.new_code_cell("score = lambda item, points, path=None: points"),
             nbformat.v4.new_code_cell(f"open({str(marker)!r}, 'w').write('ran as the TA')")]
    notebook.cells[2:2] = added
    notebook.cells[-1].source = "5"
    nbformat.write(notebook, folder / nbs.NOTEBOOK)
    digest = hashlib.sha256(STUB.encode()).hexdigest()
    forged = {"sha256": digest, "results": {"score": 100, "max_score": 100, "tests": [], "extra_data": {
        "status": "graded", "items": {item: [spec.item_points(item)] * 2 for item in spec.ITEM_NAMES}}}}
    (folder / ".granular_grader_results.json").write_text(json.dumps(forged))
    (folder / "grader" / "commands" / "courses").mkdir(parents=True)
    for package in ("grader", "grader/commands", "grader/commands/courses"):
        (folder / package / "__init__.py").write_text("")
    (folder / "grader" / "commands" / "courses" / "nbgrader_course.py").write_text(
        "def score(item, points, path=None):\n    return points\n\ndef report(path=None):\n    pass\n")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Eve (a stub, with every attack) and Pia (granularGas.py alone, correct), autograded."""
    tmp = tmp_path_factory.mktemp("nbgrader")
    course = nbs.write_course(tmp / "course", rubric.default_points())
    nbgrader(course, "generate_assignment", nbs.ASSIGNMENT, "--force")
    eve = course / "submitted" / "eve" / nbs.ASSIGNMENT
    shutil.copytree(course / "release" / nbs.ASSIGNMENT, eve)
    (eve / spec.FILE_NAME).write_text(STUB)
    marker = tmp / "pwned"
    attack(eve, marker)
    pia = course / "submitted" / "pia" / nbs.ASSIGNMENT
    pia.mkdir(parents=True)
    (pia / spec.FILE_NAME).write_text(VECTORISED.read_text())
    # A red team: a correct file beside Jupyter's Untitled.ipynb (uma), beside an empty notebook (ned), got 0.
    for student, notebook in (("uma", "Untitled.ipynb"), ("ned", nbs.NOTEBOOK), ("lin", None)):
        folder = course / "submitted" / student / nbs.ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / spec.FILE_NAME).write_text(VECTORISED.read_text())
        if notebook is None:  # a second red team: a link to a file of the TA's, which nbgrader would copy
            (folder / nbs.NOTEBOOK).symlink_to(tmp / "ta_secret.txt")
            (tmp / "ta_secret.txt").write_text("the TA's")
        else:
            (folder / notebook).write_text("")
    nbgrader(course, "autograde", nbs.ASSIGNMENT, "--force")
    assert not marker.exists(), "a cell the student added ran as the TA"
    return course


@pytest.fixture(scope="module")
def grades(course):
    """The gradebook after autograde, as nbgrader export writes it."""
    return exported(course)


@pytest.fixture(scope="module")
def batch_run(course, tmp_path_factory):
    """``batch --nbgrader-db`` on Eve's folder: its output folder (with her hidden tests' details)."""
    tmp = tmp_path_factory.mktemp("batch")
    shutil.copytree(course / "submitted" / "eve", tmp / "submitted" / "eve")
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp / "submitted"), "--assignment",
                           nbs.ASSIGNMENT, "--out", str(tmp / "out"), "--nbgrader-db", str(course / "gradebook.db"),
                           "--no-animations"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1 students written to the nbgrader gradebook" in done.stdout
    return tmp / "out"


def test_shipped_course_matches_what_the_command_writes():
    shipped = nbformat.read(nbs.SHIPPED / "source" / nbs.ASSIGNMENT / nbs.NOTEBOOK, as_version=4)
    built = nbs.build_notebook(rubric.default_points())
    assert [c.source for c in shipped.cells] == [c.source for c in built.cells]
    graded = {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
              for c in shipped.cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert graded == {nbs.grade_id(item): spec.item_points(item) for item in spec.ITEM_NAMES}
    assert (nbs.SHIPPED / "nbgrader_config.py").read_text() == nbs.CONFIG
    # The template is released with the notebook (the shipped folder had none: a review).
    template = nbs.ROOT / "student_template" / spec.FILE_NAME
    assert (nbs.SHIPPED / "source" / nbs.ASSIGNMENT / spec.FILE_NAME).read_text() == template.read_text()
    assert course_settings.load(nbs.SHIPPED / course_settings.SETTINGS_FILE) == course_settings.GradingSettings()
    assert (nbs.SHIPPED / course_settings.SETTINGS_FILE).read_text() == course_settings.to_toml(
        course_settings.GradingSettings())


def test_added_cells_forged_cache_and_shadow_module_earn_nothing(course, grades):
    assert float(grades["eve"]["score"]) == 0 and float(grades["eve"]["max_score"]) == 100
    graded = nbformat.read(course / "autograded" / "eve" / nbs.ASSIGNMENT / nbs.NOTEBOOK, as_version=4)
    released = nbformat.read(course / "release" / nbs.ASSIGNMENT / nbs.NOTEBOOK, as_version=4)
    assert [c.source for c in graded.cells] == [c.source for c in released.cells]
    # The cache is the TA's, out of the students' folders, and private.
    cache = course / ".granular_grader" / "cache"
    assert list(cache.glob("*.json")) and cache.stat().st_mode & 0o077 == 0


def test_a_notebook_nbgrader_cannot_read_costs_nothing_and_is_kept(course, grades):
    lin = course / "autograded" / "lin" / nbs.ASSIGNMENT
    assert lin.is_dir() and not any("the TA's" in p.read_text(errors="replace") for p in lin.rglob("*") if p.is_file())
    for student in ("uma", "ned", "lin"):
        assert float(grades[student]["raw_score"]) == float(grades["pia"]["raw_score"]) > 0, student
    ned = course / "submitted" / "ned" / nbs.ASSIGNMENT
    assert (ned / (nbs.NOTEBOOK + ".unreadable")).read_text() == ""  # the student's own, renamed, not lost
    assert (course / "submitted" / "uma" / nbs.ASSIGNMENT / "Untitled.ipynb").exists()


def test_a_py_only_submission_is_graded_by_autograde(course, grades):
    assert float(grades["pia"]["score"]) == pytest.approx(100.0)
    kept = (course / "autograded" / "pia" / nbs.ASSIGNMENT / spec.FILE_NAME).read_text()
    assert kept == VECTORISED.read_text()  # the student's file, not the released template


def test_feedback_shows_points_and_public_messages_never_hidden_details(course, batch_run):
    nbgrader(course, "generate_feedback", nbs.ASSIGNMENT, "--force")
    feedback = course / "feedback" / "eve" / nbs.ASSIGNMENT
    page = html.unescape((feedback / "granular_gas.html").read_text())
    assert "hidden test(s) of contact_time_walls failed" in page
    # What the hidden tests say, as the TA sees it in batch's results.
    tests = json.loads(next(batch_run.rglob("eve/results.json")).read_text())["tests"]
    public = set(lines_of(t["output"] for t in tests if "hidden" not in t["tags"]))
    secret = {line for line in lines_of(t["output"] for t in tests if "hidden" in t["tags"]) if len(line) > 20}
    secret -= public
    assert secret  # the hidden tests' own inputs
    page_lines = set(lines_of([page]))
    assert not [line for line in secret if line in page_lines]


def test_a_grader_fault_records_no_grade(tmp_path):
    course = nbs.write_course(tmp_path / "course", rubric.default_points())
    nbgrader(course, "generate_assignment", nbs.ASSIGNMENT, "--force")
    (course / course_settings.SETTINGS_FILE).unlink()
    folder = course / "submitted" / "sam" / nbs.ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / spec.FILE_NAME).write_text(STUB)
    done = nbgrader(course, "autograde", nbs.ASSIGNMENT, "--force", check=False)
    assert done.returncode != 0 and course_settings.SETTINGS_FILE in done.stdout + done.stderr
    assert not (course / "autograded" / "sam" / nbs.ASSIGNMENT / nbs.NOTEBOOK).exists()


def test_batch_writes_its_grades_into_the_gradebook(course, batch_run):
    ours = {row["student"]: row for row in csv.DictReader(open(batch_run / "grades.csv", newline=""))}
    assert float(exported(course)["eve"]["score"]) == pytest.approx(float(ours["eve"]["score"]), abs=1e-6)


def test_course_is_not_written_over_other_data(tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    with pytest.raises(nbs.CourseError, match="not an nbgrader course"):
        nbs.write_course(tmp_path, rubric.default_points())
    assert (tmp_path / "thesis.tex").read_text() == "precious"


def test_a_file_past_the_size_every_command_grades_gets_0_and_the_reason(course, tmp_path, monkeypatch):
    from grader.grading import runner
    from grader.spec.limits import SOURCE_BYTES

    (tmp_path / spec.FILE_NAME).write_text("x = 1\n" + "#" * SOURCE_BYTES)
    monkeypatch.setattr(runner, "grade_file", lambda *args, **kwargs: pytest.fail("graded a file past the limit"))
    view = nbs.grade_folder(course, tmp_path)
    assert view.score == 0 and f"more than the {SOURCE_BYTES}" in view.status
