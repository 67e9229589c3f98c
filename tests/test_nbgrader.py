"""nbgrader end to end: the real generate_assignment, autograde, generate_feedback and export."""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import nbgrader_support as nbs
from grader import rubric, spec

from .test_grader_corpus import BUGS, VECTORISED, mutate

pytest.importorskip("nbgrader")
ROOT = Path(__file__).resolve().parents[1]


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def exported(course: Path) -> dict[str, dict]:
    nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "grades.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def test_shipped_course_source_matches_the_rubric():
    import nbformat

    shipped = nbformat.read(nbs.SHIPPED / "source" / nbs.ASSIGNMENT / nbs.NOTEBOOK, as_version=4)
    built = nbs.build_notebook(rubric.default_points())
    assert [c.source for c in shipped.cells] == [c.source for c in built.cells]
    graded = {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
              for c in shipped.cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert graded == {nbs.grade_id(item): spec.item_points(item) for item in spec.ITEM_NAMES}
    assert (nbs.SHIPPED / "nbgrader_config.py").read_text() == nbs.CONFIG


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course with two students: one correct, one with a bug in contact_solve_grains."""
    tmp = tmp_path_factory.mktemp("nbgrader")
    course = nbs.write_course(tmp / "course", rubric.default_points())
    nbgrader(course, "generate_assignment", nbs.ASSIGNMENT, "--force")
    release = course / "release" / nbs.ASSIGNMENT
    buggy = next(b for b in BUGS if b[0] == "restitution missing between grains")
    files = {"ann": VECTORISED.read_text(), "ben": mutate(tmp, buggy[1], buggy[3]).read_text()}
    for student, text in files.items():
        folder = course / "submitted" / student / nbs.ASSIGNMENT
        shutil.copytree(release, folder)
        (folder / "granularGas.py").write_text(text)
    return course


def test_autograde_feedback_and_export_with_the_real_commands(course):
    nbgrader(course, "autograde", nbs.ASSIGNMENT, "--force")
    # The student's file was kept, not replaced by the released template.
    kept = (course / "autograded" / "ann" / nbs.ASSIGNMENT / "granularGas.py").read_text()
    assert kept == VECTORISED.read_text()
    nbgrader(course, "generate_feedback", nbs.ASSIGNMENT, "--force")
    page = (course / "feedback" / "ben" / nbs.ASSIGNMENT / "granular_gas.html").read_text()
    assert "contact_solve_grains" in page
    grades = exported(course)
    assert float(grades["ann"]["score"]) == pytest.approx(100.0)
    assert 0 < float(grades["ben"]["score"]) < 100 and float(grades["ben"]["max_score"]) == 100


def test_batch_writes_its_grades_into_the_gradebook(course, tmp_path):
    db = course / "gradebook.db"
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(course), "--assignment", nbs.ASSIGNMENT,
                           "--out", str(tmp_path / "out"), "--nbgrader-db", str(db)],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr
    assert "2 students written to the nbgrader gradebook" in done.stdout
    ours = {row["student"]: row for row in csv.DictReader(open(tmp_path / "out" / "grades.csv", newline=""))}
    grades = exported(course)
    for student in ("ann", "ben"):
        assert float(grades[student]["score"]) == pytest.approx(float(ours[student]["score"]), abs=1e-6)
    results = json.loads((tmp_path / "out" / "ben" / "results.json").read_text())
    assert results["extra_data"]["items"]["contact_solve_grains"][0] < 15


def test_a_gradebook_in_a_missing_folder_is_refused_before_grading(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.py").write_text("x = 1\n")
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "subs"), "--out",
                           str(tmp_path / "out"), "--nbgrader-db", str(tmp_path / "nowhere" / "gradebook.db")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "folder does not exist" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_course_is_not_written_over_other_data(tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    done = subprocess.run([sys.executable, "-m", "grader", "nbgrader-course", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "not an nbgrader course" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "thesis.tex").read_text() == "precious"
