"""The Gradescope bundle, run in a folder laid out as Gradescope's /autograder."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .test_grader_corpus import BUGS, VECTORISED, mutate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    done = subprocess.run([sys.executable, "-m", "grader", "gradescope-zip", "--out", str(out),
                           "--hidden-visibility", "after_published"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def autograder_root(tmp_path: Path, bundle: Path, submission_text: str | None) -> Path:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(root / "source")
        for info in z.infolist():  # zipfile drops the mode bits: restore them
            mode = info.external_attr >> 16
            if mode:
                os.chmod(root / "source" / info.filename, mode & 0o777)
    (root / "submission").mkdir()
    if submission_text is not None:
        (root / "submission" / "granularGas.py").write_text(submission_text)
    return root


def run_autograder(root: Path) -> dict:
    # setup.sh would pip-install the bundle; here the extracted source is used as it is.
    env = dict(os.environ, PYTHONPATH=str(root / "source"))
    done = subprocess.run([str(root / "source" / "run_autograder"), str(root)], capture_output=True, text=True,
                          env=env, timeout=900, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def test_bundle_has_what_gradescope_needs(bundle):
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    assert {"setup.sh", "run_autograder", "pyproject.toml", "grader/runner.py", "reference/granularGas.py"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111


def test_a_submission_is_graded_into_results_json_with_visibility(tmp_path, bundle):
    probe = "import os\nprint('graded as uid', os.getuid())\n"
    buggy = mutate(tmp_path, BUGS[0][1], BUGS[0][3]).read_text()
    results = run_autograder(autograder_root(tmp_path, bundle, probe + buggy))
    assert 0 < results["score"] < 100
    assert results["visibility"] == "visible" and results["stdout_visibility"] == "hidden"
    visibility = {t["visibility"] for t in results["tests"] if "hidden" in t["tags"]}
    assert visibility == {"after_published"}
    assert {t["visibility"] for t in results["tests"] if "public" in t["tags"]} == {"visible"}
    printed = results["extra_data"]["printed"]
    assert "graded as uid" in printed
    if os.geteuid() == 0:
        assert "graded as uid 0\n" not in printed  # the student's code never runs as root


def test_a_correct_submission_gets_full_marks(tmp_path, bundle):
    results = run_autograder(autograder_root(tmp_path, bundle, VECTORISED.read_text()))
    assert results["score"] == pytest.approx(100.0)


def test_a_missing_file_gets_zero_and_says_what_to_upload(tmp_path, bundle):
    root = autograder_root(tmp_path, bundle, None)
    (root / "submission" / "gas.py").write_text("x = 1\n")
    results = run_autograder(root)
    assert results["score"] == 0 and "granularGas.py" in results["output"]


def test_bad_bundle_options_are_refused(tmp_path):
    done = subprocess.run([sys.executable, "-m", "grader", "gradescope-zip", "--out", str(tmp_path / "a.zip"),
                           "--hidden-visibility", "sometimes"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "after_published" in done.stderr and "Traceback" not in done.stderr
