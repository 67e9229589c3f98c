"""The grader never imports a module from the folder it is run in (unless it is its own checkout).

A red team (Nov 2026) put a folder named ``reference`` holding ``__init__.py`` among the submissions; a TA who ran
``python -m grader batch .`` from inside the submissions folder ran it as root, outside every sandbox. Folders named
like the grader's dependencies would do the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check", "granularGas.py", "--only", "contact_time_grains"],
                                     ["batch", ".", "--out", "../out", "--jobs", "1", "--no-animations"]])
def test_folders_named_like_the_graders_modules_are_not_imported_from_the_current_folder(tmp_path, command):
    here = tmp_path / "submissions"
    here.mkdir()
    (here / "granularGas.py").write_text((ROOT / "student_template" / "granularGas.py").read_text())
    ran = tmp_path / "ran"
    for name in ("reference", "numpy", "hypothesis", "matplotlib"):
        (here / name).mkdir()
        (here / name / "__init__.py").write_text(f"open({str(ran / name)!r}, 'w').close()\n")
    ran.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if ROOT != Path(__import__("grader").__file__).resolve().parents[1]:
        pytest.skip("this checkout is not the grader python imports")
    done = subprocess.run([sys.executable, "-m", "grader", *command], cwd=here, env=env, capture_output=True,
                          text=True, timeout=900)
    assert sorted(p.name for p in ran.iterdir()) == [], done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
