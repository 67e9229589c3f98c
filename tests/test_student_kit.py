"""The student template, the statement and the README agree with the spec."""

import importlib.util
import inspect
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib
from PIL import Image

from grader.spec import FUNCTIONS, SCENARIOS, total_points

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "student_template" / "granularGas.py"
ANIMATION = ROOT / "student_template" / "granularGasTest.py"
STATEMENT = (ROOT / "assignment" / "README.md").read_text()


def load(path, name="granularGas_under_test"):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def template():
    return load(TEMPLATE)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.name)
def test_template_has_the_spec_signature_and_raises_not_implemented(template, f):
    function = getattr(template, f.name)
    assert tuple(inspect.signature(function).parameters) == f.params
    with pytest.raises(NotImplementedError, match=f.name):
        function(*[np.zeros(2)] * len(f.params))
    # Every parameter is described in the docstring.
    for p in f.params:
        assert re.search(rf"\b{p}\b", function.__doc__), f"{f.name} docstring does not describe {p}"


def test_template_states_every_convention(template):
    text = inspect.getsource(template)
    for phrase in ["sys.float_info.max", "-(k+1)", "w[-(index[1]+1)]", "[-1, -1]", "either order", "in place",
                   "must not modify", "already overlap", "infinite line", "Masses may differ", "recursion limit"]:
        assert phrase in text, phrase


def test_template_and_reference_define_the_same_functions(template):
    reference = load(ROOT / "reference" / "granularGas.py", "reference_granularGas_by_path")
    for f in FUNCTIONS:
        assert tuple(inspect.signature(getattr(reference, f.name)).parameters) == f.params


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.name)
def test_statement_lists_each_function_with_its_points(f):
    row = re.search(rf"^\| `{re.escape(f.signature)}` \|.*\| (\d+) \|$", STATEMENT, re.MULTILINE)
    assert row, f"no table row for {f.signature}"
    assert int(row.group(1)) == f.points


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_statement_lists_each_scenario_with_its_points(scenario):
    row = re.search(rf"^\| {re.escape(scenario.title)} \|.*\| (\d+) \|$", STATEMENT, re.MULTILINE | re.IGNORECASE)
    assert row, f"no table row for the scenario {scenario.title}"
    assert int(row.group(1)) == scenario.points


def test_statement_states_the_conventions_and_corrections():
    assert total_points() == 100
    for phrase in ["sys.float_info.max", "`[i, -(k+1)]`", "`w[-(index[1]+1)]`", "`[-1, -1]`", "in place",
                   "|\\mathbf{t}|^2", "**for any masses**", "RecursionError", "already overlap", "infinite lines",
                   "never modify their arguments", "either order", "$r \\in [0, 1]$"]:
        assert phrase in STATEMENT, phrase


def headless_env():
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env["MPLBACKEND"] = "Agg"
    return env


def test_animation_script_runs_headless_and_saves_a_gif(tmp_path):
    out = tmp_path / "anim.gif"
    done = subprocess.run(
        [sys.executable, str(ANIMATION), "--impl", str(ROOT / "examples" / "submissions" / "ada" / "granularGas.py"), "--scenario",
         "unequal", "--duration", "0.2", "--save", str(out)],
        capture_output=True, text=True, env=headless_env(), timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with Image.open(out) as gif:
        assert gif.n_frames == 11


def test_animation_script_without_display_saves_instead_of_showing(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ANIMATION), "--impl", str(ROOT / "examples" / "submissions" / "ada" / "granularGas.py"), "--duration", "0.1"],
        capture_output=True, text=True, env=headless_env(), timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "granularGas.gif").stat().st_size > 0


def test_animation_script_on_the_template_says_what_to_write(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ANIMATION), "--duration", "0.1", "--save", str(tmp_path / "a.gif")],
        capture_output=True, text=True, env=headless_env(), timeout=120,
    )
    assert done.returncode == 1
    assert "update is not written yet" in done.stderr and "Traceback" not in done.stderr


def quick_start_blocks():
    section = re.search(r"^## Quick start$(.*?)^## ", (ROOT / "README.md").read_text(), re.MULTILINE | re.DOTALL)
    assert section, "README has no 'Quick start' section"
    return re.findall(r"```(?:sh|bash|shell)\n(.*?)```", section.group(1), re.DOTALL)


def test_ci_runs_the_readme_test_command():
    setup, test_command = quick_start_blocks()[:2]
    install, run = (part.strip() for part in test_command.strip().split("&&"))
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci_lines[-1] == run
    assert install.replace("pip install", "pip install -q") in ci_lines
    # The main job needs no extra: the light install (no Jupyter) is enough for it.
    assert setup.strip().startswith("python -m pip install -e . &&")


def test_light_install_declares_no_jupyter_and_test_extra_brings_ci_tools():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = re.compile(r"[A-Za-z0-9_.-]+")
    base = {name.match(d).group().lower() for d in project["dependencies"]}
    extras = {k: {name.match(d).group().lower() for d in v} for k, v in project["optional-dependencies"].items()}
    assert {"numpy", "matplotlib", "hypothesis", "mpmath"} <= base
    assert not base & {"nbgrader", "jupyter", "jupyterlab", "notebook", "pytest"}
    assert "nbgrader" in extras["nbgrader"]
    assert {"pytest", "pytest-xdist", "ruff", "mypy", "nbgrader"} <= extras["test"]


def test_commands_of_the_light_install_import_without_jupyter():
    # An import hook that refuses Jupyter's packages, as in an environment without them.
    probe = (
        "import sys, importlib.abc\n"
        "class NoJupyter(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('nbgrader', 'nbformat', 'nbconvert', 'jupyter_core', 'traitlets'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, NoJupyter())\n"
        "import grader.commands.cli, grader.commands.kit, grader.animation.render\n"
        "import grader.commands.batch.pool, grader.commands.batch.worker, grader.commands.batch.submissions\n"
        "from grader.commands.cli import main\n"
        "sys.exit(main(['batch', '--help']))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--out" in done.stdout


def test_quick_start_main_job_grades_the_examples(tmp_path):
    setup = quick_start_blocks()[0].strip()
    # The install half already ran (we are importing the package); run the job.
    job = shlex.split(setup.split("&&", 1)[1])
    out = tmp_path / "batch"
    job[job.index("--out") + 1] = str(out)
    done = subprocess.run(job, capture_output=True, text=True, env=headless_env(), timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    table = {line.split()[0]: line for line in done.stdout.splitlines()[1:] if line.strip()}
    assert table["ada"].split()[1] == "100" and 0 < float(table["ben"].split()[1]) < 100
    assert table["cleo"].endswith("error at import") and table["dan"].endswith("timeout: update")
    assert table["eve"].split()[1] == "0"
    assert (out / "grades.csv").exists() and (out / "summary.html").exists()
    assert all((out / "students" / s / "feedback.html").exists() for s in ("ada", "ben", "cleo", "dan", "eve"))
