"""Gradescope: the autograder bundle, and what runs inside it.

``python -m grader gradescope-zip --out autograder.zip`` writes a bundle with
``setup.sh`` (installs this package and its dependencies), ``run_autograder``
and the grader with the reference, so hidden tests run. Gradescope runs
``run_autograder`` as root; it grades ``ROOT/submission/granularGas.py`` into
``ROOT/results/results.json`` with :func:`main`. ROOT is ``/autograder``, or
the script's first argument (to try the bundle anywhere). The student's code
runs in the grader's sandbox, never as root.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

from grader.kit import pyproject

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
CONFIG = "granular_grader_gradescope.json"

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this as root. The root folder is a parameter (default
# /autograder) so that the bundle can be tried in any folder.
set -uo pipefail
ROOT="${1:-/autograder}"
SOURCE="$(cd "$(dirname "$0")" && pwd)"
cd "$SOURCE"
exec python3 -m grader.gradescope --root "$ROOT" --config "$SOURCE/granular_grader_gradescope.json"
"""

SETUP_SH = """#!/usr/bin/env bash
# Gradescope's image setup: Python 3.10+ with pip, then this package.
set -euo pipefail
cd "$(dirname "$0")"
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q python3-pip
fi
python3 -m pip install --no-cache-dir .
"""



class BundleError(ValueError):
    """The bundle cannot be built as asked; the message says what to fix."""


def build_zip(out: Path, hidden_visibility: str = "after_published", rubric_text: str | None = None) -> Path:
    """Write the autograder bundle to ``out`` (a .zip)."""
    if hidden_visibility not in VISIBILITIES:
        raise BundleError(f"--hidden-visibility {hidden_visibility}: choose one of {', '.join(VISIBILITIES)}")
    if out.suffix != ".zip":
        raise BundleError(f"--out {out}: give a file name ending in .zip")
    if not (PACKAGE_ROOT / "reference" / "granularGas.py").exists():
        raise BundleError("the bundle holds the reference solution: build it from an instructor's checkout")
    out.parent.mkdir(parents=True, exist_ok=True)
    config = {"hidden_visibility": hidden_visibility, "rubric": rubric_text}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (("run_autograder", RUN_AUTOGRADER), ("setup.sh", SETUP_SH)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o100755 << 16  # executable
            bundle.writestr(info, text)
        bundle.writestr("pyproject.toml", pyproject("granular-grader-autograder",
                                                    "Gradescope autograder of the granular-gas homework"))
        bundle.writestr(CONFIG, json.dumps(config, indent=2) + "\n")
        for package in ("grader", "reference"):
            for source in sorted((PACKAGE_ROOT / package).glob("*.py")):
                bundle.write(source, f"{package}/{source.name}")
    return out


def find_submission(folder: Path) -> Path | None:
    """granularGas.py in the submission (at the top, or the only one below)."""
    direct = folder / "granularGas.py"
    if direct.is_file():
        return direct
    found = sorted(folder.rglob("granularGas.py"))
    return found[0] if len(found) == 1 else None


def results_for(root: Path, hidden_visibility: str = "after_published", points: dict | None = None) -> dict:
    """Grade ROOT/submission; Gradescope's results.json as a dict."""
    from grader import report, runner

    submission = find_submission(root / "submission")
    if submission is None:
        return {"score": 0.0, "output": "No granularGas.py in your submission: upload the file granularGas.py "
                                        "(exactly this name).", "tests": [], "visibility": "visible"}
    grade = runner.grade(submission, points)
    results = report.as_gradescope(grade)
    for test, result in zip(results["tests"], grade.results):
        test["visibility"] = hidden_visibility if result.prop.hidden else "visible"
    results["visibility"] = "visible"
    results["stdout_visibility"] = "hidden"
    results["output"] = report.as_text(grade)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.gradescope", description="Gradescope's run_autograder")
    parser.add_argument("--root", default="/autograder", help="Gradescope's folder (default /autograder)")
    parser.add_argument("--config", help="the bundle's settings (hidden tests' visibility, rubric)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    config = json.loads(Path(args.config).read_text()) if args.config else {}
    points = None
    if config.get("rubric"):
        from grader import rubric

        rubric_file = root / "results" / ".rubric.toml"
        rubric_file.parent.mkdir(parents=True, exist_ok=True)
        rubric_file.write_text(config["rubric"])
        points = rubric.load(rubric_file)
    results = results_for(root, config.get("hidden_visibility", "after_published"), points)
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"graded: {results['score']:g} points; results in {root / 'results' / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
