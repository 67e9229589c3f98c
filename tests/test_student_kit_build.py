"""The student kit: no reference inside, installs and self-tests in a clean venv."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from grader.commands.kit import build

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    return build(tmp_path_factory.mktemp("kit") / "granular-gas-kit")


def test_kit_contains_no_reference_solution(kit):
    files = [p for p in kit.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"README.md", "granularGas.py", "granularGasTest.py"} <= names
    assert "hidden.py" not in names
    # The benchmark solutions only: not the reference granularGas.py nor its core.
    assert sorted(p.name for p in (kit / "reference").iterdir()) == ["__init__.py", "c12.py", "dem.py"]
    reference_markers = ["reference.contacts", "reference.events", "def grain_impulse",
                         "def earliest_contact", "def wall_contact_times"]
    for p in files:
        text = p.read_text(errors="replace")
        for marker in reference_markers:
            assert marker not in text, f"{p.name} contains {marker!r}"


def test_kit_refuses_to_overwrite_a_folder_that_is_not_a_kit(tmp_path):
    (tmp_path / "notes.txt").write_text("precious")
    done = subprocess.run([sys.executable, "-m", "grader", "student-kit", "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "not empty" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "precious"


def test_kit_installs_and_runs_public_tests_in_a_clean_venv(kit, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(kit)], capture_output=True, text=True,
                             timeout=900)
    assert install.returncode == 0, install.stderr[-2000:]
    # Grade a correct submission from the kit's folder, as a student would.
    (tmp_path / "work").mkdir()
    submission = tmp_path / "work" / "granularGas.py"
    submission.write_text((ROOT / "tests" / "submissions" / "correct_vectorised.py").read_text())
    done = subprocess.run([str(python), "-m", "grader", "check", str(submission)], capture_output=True, text=True,
                          cwd=tmp_path / "work", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "100 / 100" in done.stdout and "Public tests only" in done.stdout
    probe = subprocess.run([str(python), "-c", "import reference.granularGas"], capture_output=True, text=True,
                           cwd=tmp_path / "work")
    assert probe.returncode != 0
    benchmarks = subprocess.run([str(python), "-m", "reference.c12", "--e", "0.3", "--digits", "30", "--json"],
                                capture_output=True, text=True, cwd=tmp_path / "work")
    assert benchmarks.returncode == 0 and '"n": 6' in benchmarks.stdout
