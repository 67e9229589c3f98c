"""The student kit: built, then installed and run from its own README, word for word, in a fresh venv.

One kit and one virtual environment for the whole module: the README's shell blocks create and fill it.
"""

import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
import tomllib

from grader.commands.kit import INSTRUCTOR_ONLY, PUBLIC_REFERENCE, build, is_instructor_only, package_data

ROOT = Path(__file__).resolve().parents[1]
MARK = "@@kit-step@@"
#: Instructor commands, each needing a module the kit leaves out.
INSTRUCTOR_COMMANDS = ("batch", "nbgrader-course", "gradescope-zip", "student-kit")


@dataclass(frozen=True)
class Step:
    command: str
    returncode: int
    output: str


def shell_blocks(readme: str) -> list[str]:
    """The README's ```sh blocks, in order: what a student types."""
    return re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)


def commands(blocks: list[str]) -> list[str]:
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    found = [line for line in lines if line and not line.startswith("#")]
    assert not [line for line in found if line.endswith("\\")], "one command per line, please"
    return found


def run_in_one_shell(lines: list[str], cwd: Path, env: dict[str, str]) -> list[Step]:
    """Run the lines one after the other in one bash (so `source` carries over), recording each one's exit code."""
    script = "".join(f"echo {MARK} {shlex.quote(line)}\n{line}\necho {MARK}rc=$?\n" for line in lines)
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800,
                          stdin=subprocess.DEVNULL)
    chunks = done.stdout.split(f"{MARK} ")[1:]
    steps = []
    for chunk, line in zip(chunks, lines):
        body, _, rc = chunk.partition(f"{MARK}rc=")
        steps.append(Step(line, int(rc.strip() or -1), body.split("\n", 1)[-1]))
    assert len(steps) == len(lines), done.stdout[-3000:] + done.stderr[-3000:]
    return steps


def student_env() -> dict[str, str]:
    """A terminal without a display, and without the developer's environment leaking into the venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith("PYTEST")}
    env["MPLBACKEND"] = "Agg"
    # The `python` a student types is the machine's Python: ours, whatever PATH says.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    return build(tmp_path_factory.mktemp("kit") / "granular-gas-kit")


@dataclass(frozen=True)
class Followed:
    kit: Path
    steps: list[Step]


def follow_readme(kit: Path) -> list[Step]:
    """The kit's README followed word for word, with a correct granularGas.py written in (as a student would)."""
    shutil.copyfile(ROOT / "tests" / "submissions" / "correct_vectorised.py", kit / "granularGas.py")
    return run_in_one_shell(commands(shell_blocks((kit / "README.md").read_text())), kit, student_env())


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    """One kit and one venv for the module, shared by pytest-xdist's workers (the first one builds, under a lock)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    with open(shared / "student-kit.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kit, record = shared / "followed-kit" / "granular-gas-kit", shared / "followed-kit" / "steps.json"
        if not record.exists():
            steps = follow_readme(build(kit))
            record.write_text(json.dumps([asdict(s) for s in steps]))
        return Followed(kit, [Step(**s) for s in json.loads(record.read_text())])


def kit_python(kit: Path) -> str:
    return str(kit / ".venv" / "bin" / "python")


def step(steps: list[Step], prefix: str) -> Step:
    found = [s for s in steps if s.command.startswith(prefix)]
    assert found, f"the kit's README has no step {prefix!r}"
    return found[0]


def test_kit_contains_no_reference_solution_and_no_instructor_code(kit):
    files = [p for p in kit.rglob("*") if p.is_file() and ".venv" not in p.parts]
    names = {p.name for p in files}
    assert {"README.md", "STATEMENT.md", "granularGas.py", "granularGasTest.py", "pyproject.toml"} <= names
    assert "hidden.py" not in names and "kit.py" not in names
    assert not (kit / "grader" / "commands" / "courses").exists() and not (kit / "grader" / "commands" / "batch").exists()
    assert not list(kit.rglob("*.pyc"))
    # The benchmark solutions only: not the reference granularGas.py nor its core.
    assert sorted(p.name for p in (kit / "reference").iterdir()) == sorted(PUBLIC_REFERENCE)
    assert not {"granularGas.py", "vectorised.py", "contacts.py", "events.py"} & set(PUBLIC_REFERENCE)
    reference_markers = ["reference.contacts", "reference.events", "def grain_impulse",
                         "def earliest_contact", "def wall_contact_times"]
    for p in files:
        if p.suffix in (".py", ".md", ".toml"):
            text = p.read_text(errors="replace")
            for marker in reference_markers:
                assert marker not in text, f"{p.name} contains {marker!r}"


def test_kit_has_every_data_file_of_the_grader_and_declares_it(kit):
    package = ROOT / "grader"
    data = sorted(p.relative_to(package) for p in package.rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
                  and not is_instructor_only(p.relative_to(package)))
    for relative in data:
        assert (kit / "grader" / relative).read_bytes() == (package / relative).read_bytes(), relative
    declared = tomllib.loads((kit / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert declared == package_data(data, package)


def test_kit_declares_the_dependencies_and_no_jupyter(kit):
    project = tomllib.loads((kit / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[<>=;\s]", d, maxsplit=1)[0] for d in project["dependencies"]}
    assert {"numpy", "matplotlib", "hypothesis", "mpmath"} <= names
    assert not names & {"nbgrader", "jupyter", "jupyterlab", "notebook"}


def test_instructor_only_parts_are_recognised():
    assert is_instructor_only(Path("commands/courses/gradescope.py")) and is_instructor_only(Path("properties/hidden.py"))
    assert not is_instructor_only(Path("commands/cli.py")) and not is_instructor_only(Path("properties/contacts.py"))
    assert len(INSTRUCTOR_ONLY) == 4


def test_kit_refuses_to_overwrite_a_folder_that_is_not_a_kit(tmp_path):
    (tmp_path / "notes.txt").write_text("precious")
    done = subprocess.run([sys.executable, "-m", "grader", "student-kit", "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "not empty" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "precious"


def test_readme_steps_install_and_run_word_for_word(followed):
    commands_run = [s.command for s in followed.steps]
    assert commands_run[:3] == ["python -m venv .venv", "source .venv/bin/activate", "python -m pip install ."]
    for s in followed.steps:
        assert s.returncode == 0, f"{s.command} exited with {s.returncode}:\n{s.output[-3000:]}"
        assert "Traceback" not in s.output, s.output[-3000:]


def test_readme_check_runs_the_public_tests_only_and_passes_a_correct_file(followed):
    check = step(followed.steps, "python -m grader check")
    assert check.returncode == 0, check.output[-3000:]
    assert "100 / 100" in check.output
    # Said at the top (or the bottom) of the report: "public only" / "Public tests only".
    assert re.search(r"\bpublic (tests )?only\b", check.output, re.IGNORECASE), check.output[:2000]


def test_readme_animation_step_writes_the_gif(followed):
    kit = followed.kit
    animation = step(followed.steps, "python granularGasTest.py")
    assert "granularGas.gif" in animation.output  # it says where the animation went
    assert (kit / "granularGas.gif").stat().st_size > 0


def test_kit_cli_offers_only_check_and_animate(followed):
    kit = followed.kit
    python = kit_python(kit)
    helped = subprocess.run([python, "-m", "grader", "--help"], capture_output=True, text=True, cwd=kit)
    assert helped.returncode == 0 and "check" in helped.stdout and "animate" in helped.stdout
    for name in INSTRUCTOR_COMMANDS:
        assert name not in helped.stdout, helped.stdout
        refused = subprocess.run([python, "-m", "grader", name, "--out", "x"], capture_output=True, text=True,
                                 cwd=kit)
        assert refused.returncode == 2 and "invalid choice" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr


def test_kit_venv_has_no_jupyter_nor_reference_solution(followed):
    kit = followed.kit
    python = kit_python(kit)
    listed = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True)
    installed = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert "numpy" in installed and not installed & {"nbgrader", "jupyterlab", "notebook", "jupyter-core"}
    elsewhere = kit.parent  # not the kit's folder: import what pip installed
    for module in ("reference.granularGas", "reference.vectorised", "grader.properties.hidden",
                   "grader.commands.courses", "grader.commands.batch"):
        probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True, cwd=elsewhere)
        assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr, module
    benchmarks = subprocess.run([python, "-m", "reference.c12", "--e", "0.3", "--digits", "30", "--json"],
                                capture_output=True, text=True, cwd=elsewhere)
    assert benchmarks.returncode == 0 and json.loads(benchmarks.stdout)["window"] == 6


def test_kit_check_of_the_untouched_template_fails_cleanly(followed, tmp_path):
    shutil.copyfile(ROOT / "student_template" / "granularGas.py", tmp_path / "granularGas.py")
    done = subprocess.run([kit_python(followed.kit), "-m", "grader", "check", "granularGas.py"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=900)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"\b0(\.0+)? / 100\b", done.stdout) and "Traceback" not in done.stdout + done.stderr


def test_kit_tried_beside_the_instructors_install_runs_the_public_tests_only(kit, tmp_path):
    """A TA tries the kit in its folder with the python that has the checkout installed (editable): the checkout's
    reference is found through that install, not the kit's. The kit's check must run its public tests, as on a
    student's machine; it stopped with an ImportError for the hidden tests the kit leaves out (review, Nov 2026)."""
    env = student_env()
    probe = subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                            "s = u.find_spec('reference.vectorised'); print(s and s.origin)"],
                           capture_output=True, text=True, cwd=kit, env=env, timeout=120)
    if not probe.stdout.strip().startswith(str(ROOT)):
        pytest.skip("the checkout is not installed here (pip install -e .): nothing from it reaches the kit")
    shutil.copyfile(ROOT / "student_template" / "granularGas.py", tmp_path / "granularGas.py")
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(tmp_path / "granularGas.py"), "--only",
                           "contact_time_walls"], capture_output=True, text=True, cwd=kit, env=env, timeout=600)
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr[-2000:]
    assert "Tests run: public only" in done.stdout and "not written yet" in done.stdout, done.stdout


def test_the_course_notebooks_cells_run_with_the_kit(followed, tmp_path):
    """A review: the nbgrader notebook's setup cell imported grader.commands.courses, which the kit leaves out, so a
    student running the released notebook got ModuleNotFoundError. Its code cells, run in order with the kit's
    python beside a correct file, print the points table and score every item."""
    import nbformat

    notebook = nbformat.read(ROOT / "assignment" / "nbgrader" / "source" / "granular_gas" / "granular_gas.ipynb",
                             as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    shutil.copyfile(ROOT / "tests" / "submissions" / "correct_vectorised.py", tmp_path / "granularGas.py")
    (tmp_path / "cells.py").write_text(code)
    done = subprocess.run([kit_python(followed.kit), "cells.py"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=900, env=student_env())
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "granularGas.py: 100 / 100 points" in done.stdout, done.stdout[-3000:]
