"""Build what students download: their own README, the statement, the template and a public-only grader.

The kit holds no reference solution: it leaves out the reference
granularGas.py and its core and the hidden tests, so its grader runs the
public tests only. It keeps the benchmark solutions (reference/c12.py and
reference/dem.py), which the physics scenarios compare with, and the
grader's data files (the reference trajectories the animations draw).
It leaves out the instructors' commands (batch, the course integrations
and this builder): the kit's command line offers check and animate only.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from grader import spec
from grader.errors import GraderError
from grader.spec import paths

ROOT = paths.PACKAGE_ROOT
MARKER = ".granular-grader-kit"
#: Parts of the grader that must not reach students, relative to the package: the hidden tests, and the
#: instructors' commands (which need nbgrader or a folder of submissions, and would only confuse).
INSTRUCTOR_ONLY = (Path("properties/hidden.py"), Path("commands/courses"), Path("commands/batch"),
                   Path("commands/kit.py"))
#: Reference modules students get: published benchmarks, not the homework's answer.
PUBLIC_REFERENCE = ("__init__.py", "c12.py", "dem.py", "figures.py", "c12_plots.py", "dem_plots.py")
#: (source relative to the checkout, name in the kit): what students read and edit.
STUDENT_FILES = (("student_template/KIT_README.md", "README.md"), ("assignment/README.md", "STATEMENT.md"),
                 (f"student_template/{spec.FILE_NAME}", spec.FILE_NAME),
                 ("student_template/granularGasTest.py", "granularGasTest.py"))


class KitError(GraderError):
    """The kit cannot be built as asked."""


def _toml_list(items: list[str] | tuple[str, ...]) -> str:
    # A JSON list of strings is a TOML array: quotes and backslashes escaped alike.
    return json.dumps(list(items))


def dependencies() -> list[str]:
    """The grader's run-time dependencies, as the checkout's pyproject.toml declares them (no extras: no Jupyter)."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def pyproject(name: str, description: str, package_data: dict[str, list[str]] | None = None) -> str:
    """pyproject.toml of a bundle that installs the grader, the reference package and the grader's data files."""
    data = "".join(f'"{package}" = {_toml_list(patterns)}\n'
                   for package, patterns in sorted((package_data or {}).items()))
    return f"""\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "{description}"
requires-python = ">=3.10"
dependencies = {_toml_list(dependencies())}

[tool.setuptools]
packages = {{find = {{include = ["grader*", "reference*"]}}}}

[tool.setuptools.package-data]
{data}"""


def is_instructor_only(relative: Path) -> bool:
    """Whether a file of the grader package (path relative to it) stays out of the kit."""
    return any(relative == part or part in relative.parents for part in INSTRUCTOR_ONLY)


def grader_files(package: Path) -> list[Path]:
    """The grader's files that go into the kit, relative to ``package``: sources and data, no bytecode."""
    files = [p.relative_to(package) for p in package.rglob("*") if p.is_file()]
    return sorted(f for f in files if f.suffix != ".pyc" and "__pycache__" not in f.parts
                  and not is_instructor_only(f))


def package_data(files: list[Path], package: Path, name: str = "grader") -> dict[str, list[str]]:
    """setuptools' package-data for the non-Python files: each under the nearest package holding it."""
    data: dict[str, list[str]] = {}
    for f in files:
        if f.suffix == ".py":
            continue
        owner = f.parent
        while owner != Path(".") and not (package / owner / "__init__.py").exists():
            owner = owner.parent
        dotted = ".".join((name, *owner.parts))
        data.setdefault(dotted, []).append(f.relative_to(owner).as_posix())
    return data


def build(out: Path) -> Path:
    """Write the kit into ``out`` (new, empty, or a previous kit) and return it."""
    missing = [str(ROOT / source) for source, _ in (*STUDENT_FILES, ("pyproject.toml", ""))
               if not (ROOT / source).exists()]
    if missing:
        raise KitError(f"the kit is built from a checkout of granular-grader (installed with pip install -e .); "
                       f"missing {', '.join(missing)}")
    if out.exists() and not out.is_dir():
        raise KitError(f"--out {out} is a file; give a new folder for the kit")
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise KitError(f"{out} is not empty and is not a previous kit; give a new folder so nothing is overwritten")
    if out.exists():
        shutil.rmtree(out)
    (out / "grader").mkdir(parents=True)
    (out / "reference").mkdir()
    for name in PUBLIC_REFERENCE:
        shutil.copyfile(ROOT / "reference" / name, out / "reference" / name)
    for source, name in STUDENT_FILES:
        shutil.copyfile(ROOT / source, out / name)
    files = grader_files(paths.PACKAGE_DIR)
    for relative in files:
        (out / "grader" / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(paths.PACKAGE_DIR / relative, out / "grader" / relative)
    (out / "pyproject.toml").write_text(pyproject("granular-grader-student-kit",
                                                  "Self-test kit of the granular-gas homework (public tests only)",
                                                  package_data(files, paths.PACKAGE_DIR)))
    (out / MARKER).write_text("built by python -m grader student-kit\n")
    return out
