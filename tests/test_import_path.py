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


@pytest.mark.parametrize("safe_path", [False, True])
def test_only_the_folder_python_put_first_is_dropped(tmp_path, safe_path):
    """With -P (or -I, PYTHONSAFEPATH) Python puts no current folder first: the first entry is then the user's own
    (a PYTHONPATH folder of dependencies, say) and stays (a review)."""
    probe = ("import atexit, runpy, sys\n"
             f"sys.path.insert(0, {str(tmp_path)!r})\n"
             "atexit.register(lambda: print('FIRST', sys.path[0]))\n"
             "sys.argv = ['grader', '--help']\n"
             "runpy.run_module('grader', run_name='__main__')\n")
    done = subprocess.run([sys.executable, *(["-P"] if safe_path else []), "-c", probe], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first = done.stdout.strip().splitlines()[-1]
    assert (first == f"FIRST {tmp_path}") is safe_path, first


def test_a_reference_linked_into_the_checkout_counts_as_the_checkouts(tmp_path, monkeypatch):
    """An instructor may link reference/ into the checkout from a private repository: the hidden tests still run."""
    import importlib.machinery
    import importlib.util

    from grader.properties import oracle

    (tmp_path / "private" / "reference").mkdir(parents=True)
    (tmp_path / "private" / "reference" / "vectorised.py").write_text("")
    (tmp_path / "checkout").mkdir()
    (tmp_path / "checkout" / "reference").symlink_to(tmp_path / "private" / "reference")
    (tmp_path / "elsewhere" / "reference").mkdir(parents=True)
    (tmp_path / "elsewhere" / "reference" / "vectorised.py").write_text("")
    monkeypatch.setattr(oracle, "PACKAGE_ROOT", tmp_path / "checkout")
    for folder, ours in (("checkout", True), ("elsewhere", False)):
        origin = str(tmp_path / folder / "reference" / "vectorised.py")
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a, origin=origin: importlib.machinery.ModuleSpec(name, None, origin=origin))
        oracle._ours.cache_clear()
        assert oracle._ours("reference.vectorised") is ours, folder
    oracle._ours.cache_clear()
