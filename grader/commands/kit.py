"""Build what students download: statement, template and a public-only grader.

The kit holds no reference solution: it leaves out the reference
granularGas.py and its core and the hidden tests, so its grader runs the
public tests only. It keeps the benchmark solutions (reference/c12.py and
reference/dem.py), which the physics scenarios compare with.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.errors import GraderError
from grader.spec import paths

ROOT = paths.PACKAGE_ROOT
MARKER = ".granular-grader-kit"
#: Grader files that must not reach students (the hidden tests), relative to the package.
INSTRUCTOR_ONLY = {Path("properties/hidden.py")}
#: Reference modules students get: published benchmarks, not the homework's answer.
PUBLIC_REFERENCE = ("__init__.py", "c12.py", "dem.py")

def pyproject(name: str, description: str) -> str:
    """pyproject.toml of a bundle that installs the grader and the reference package."""
    return f"""\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "{description}"
requires-python = ">=3.10"
dependencies = ["numpy>=1.24", "matplotlib>=3.7", "hypothesis>=6.80", "mpmath>=1.3",
                "tomli>=2; python_version < '3.11'"]

[tool.setuptools]
packages = {{find = {{include = ["grader*", "reference*"]}}}}
"""


class KitError(GraderError):
    """The kit cannot be built as asked."""


def build(out: Path) -> Path:
    """Write the kit into ``out`` (new, empty, or a previous kit) and return it."""
    sources = [ROOT / "assignment" / "README.md", ROOT / "student_template" / "granularGas.py",
               ROOT / "student_template" / "granularGasTest.py"]
    missing = [str(p) for p in sources if not p.exists()]
    if missing:
        raise KitError(f"the kit is built from a checkout of granular-grader; missing {', '.join(missing)}")
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise KitError(f"{out} is not empty and is not a previous kit; give a new folder so nothing is overwritten")
    if out.exists():
        shutil.rmtree(out)
    (out / "grader").mkdir(parents=True)
    (out / "reference").mkdir()
    for name in PUBLIC_REFERENCE:
        shutil.copyfile(ROOT / "reference" / name, out / "reference" / name)
    shutil.copyfile(sources[0], out / "README.md")
    shutil.copyfile(sources[1], out / "granularGas.py")
    shutil.copyfile(sources[2], out / "granularGasTest.py")
    for module in sorted(paths.PACKAGE_DIR.rglob("*.py")):
        relative = module.relative_to(paths.PACKAGE_DIR)
        if relative not in INSTRUCTOR_ONLY:
            (out / "grader" / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(module, out / "grader" / relative)
    (out / "pyproject.toml").write_text(pyproject("granular-grader-student-kit",
                                                  "Self-test kit of the granular-gas homework (public tests only)"))
    (out / MARKER).write_text("built by python -m grader student-kit\n")
    return out
