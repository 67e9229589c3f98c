"""Gradescope: the autograder bundle, and what runs inside it.

``python -m grader gradescope-zip --out autograder.zip`` writes a bundle that
Gradescope uses as it is: it unzips it in ``/autograder/source``, runs
``setup.sh`` there once, then for each submission copies ``run_autograder``
to ``/autograder/run_autograder`` and runs that copy, as root, from
``/autograder``, with the student's files in ``/autograder/submission``; it
reads ``/autograder/results/results.json``. The script finds the bundle in
``<its folder>/source``, never next to the script's original.

The grade uses the rubric and limits the bundle was built with
(``granular_grader.toml``, :mod:`grader.commands.courses.settings`), through
:func:`grader.grading.runner.grade_file`. Students see the top-level ``output``
(points per item, public tests' messages: :mod:`grader.reports.student_view`) and
the public tests' entries; the hidden tests' entries, with their inputs and
the reference's answers, carry the bundle's visibility (``after_published``
by default). ``setup.sh`` makes the bundle's folder readable by root only:
the submission, run under another uid, cannot open the reference or the
hidden tests.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import sys
import zipfile
from pathlib import Path

from grader import spec
from grader.commands.courses import settings as course_settings
from grader.commands.courses.settings import VISIBILITIES, GradingSettings
from grader.errors import GraderError
from grader.grading.results import Results
from grader.reports import gradescope_json
from grader.spec import paths, rubric
from grader.spec.limits import ONE_THREAD, Limits, too_large
from grader.spec.text import shown

PACKAGE_ROOT = paths.PACKAGE_ROOT

_ONE_THREAD_EXPORTS = "\n".join(f'export {name}="${{{name}:-{value}}}"' for name, value in ONE_THREAD.items())
RUN_AUTOGRADER = f"""#!/usr/bin/env bash
# Gradescope copies this file to /autograder/run_autograder and runs the copy
# there, as root; the bundle is in /autograder/source, where setup.sh ran.
# The root is the folder of this copy (no argument needed).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
SOURCE="$ROOT/source"
if [ ! -f "$SOURCE/{course_settings.SETTINGS_FILE}" ]; then
  echo "run_autograder: $SOURCE/{course_settings.SETTINGS_FILE} is missing: the bundle must be unzipped in $SOURCE" >&2
  exit 2
fi
cd "$SOURCE"
# One BLAS thread, as the command line sets (grader.spec.limits.ONE_THREAD), unless the image says otherwise.
{_ONE_THREAD_EXPORTS}
PYTHONPATH="$SOURCE" exec python3 -m grader.commands.courses.gradescope --root "$ROOT" \\
  --settings "$SOURCE/{course_settings.SETTINGS_FILE}"
"""

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, to build the image.
# Supported: Python >= 3.10 with pip; Gradescope's Ubuntu 22.04 base image has
# python3.10, and pip comes from apt.
set -euo pipefail
SOURCE="$(cd "$(dirname "$0")" && pwd)"
cd "$SOURCE"
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update -q && apt-get install -y -q python3-pip
fi
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "granular-grader needs Python >= 3.10")'
if ! command -v bwrap >/dev/null 2>&1; then
  # The sandbox's strongest isolation; the grader says which protections were in force.
  # apt's lists may be empty in an image that already has pip: read them first.
  { apt-get update -q && apt-get install -y -q bubblewrap; } >/dev/null 2>&1 \\
    || echo "setup.sh: bubblewrap not installed" >&2
fi
python3 -m pip install --no-cache-dir -r requirements.txt
# The inputs of every test, drawn once into root's cache in the image (each submission's run would draw them again).
PYTHONPATH="$SOURCE" python3 -c 'from grader.grading.runner import draw_cases; draw_cases()' \
  || echo "setup.sh: the cases will be drawn at each run" >&2
# The grader runs from this folder (run_autograder puts it on PYTHONPATH), and
# the reference solution and the hidden tests are in it: root only, so that a
# submission, which runs under another uid, cannot open them.
chown -R 0:0 "$SOURCE"
chmod -R go-rwx "$SOURCE"
"""

REQUIREMENTS = """\
numpy>=1.24
matplotlib>=3.7
hypothesis>=6.170.17
mpmath>=1.3
tomli>=2; python_version < "3.11"
"""

README = f"""\
granular-grader: Gradescope autograder of the granular-gas homework.

Upload this zip as the assignment's autograder ("Zip file upload"), on the
Ubuntu 22.04 base image. setup.sh installs the dependencies (Python >= 3.10
with pip; tested with Python 3.11) and makes this folder readable by root only.
{course_settings.SETTINGS_FILE} holds the rubric, the limits and the hidden
tests' visibility the bundle was built with.
"""


class BundleError(GraderError):
    """The bundle cannot be built as asked; the message says what to fix."""


def settings_from(hidden_visibility: str, rubric_text: str | None, limits: Limits = Limits(),
                  allow_weak_isolation: bool = False) -> GradingSettings:
    """The bundle's settings from the command's values (a rubric's text: checked like a rubric file)."""
    if hidden_visibility not in VISIBILITIES:
        raise BundleError(f"--hidden-visibility {hidden_visibility}: choose one of {', '.join(VISIBILITIES)}")
    chosen = rubric.read(None) if rubric_text is None else rubric.parse(rubric_text, "given to gradescope-zip")
    return GradingSettings(chosen.points, limits, allow_weak_isolation, hidden_visibility, chosen.bonus,
                           chosen.excuse_traced)


def _executable(bundle: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o100755 << 16
    bundle.writestr(info, text)


def build_bundle(out: Path, settings: GradingSettings) -> Path:
    """Write the autograder bundle to ``out`` (a .zip)."""
    if out.suffix != ".zip":
        raise BundleError(f"--out {out}: give a file name ending in .zip")
    if not (PACKAGE_ROOT / "reference" / spec.FILE_NAME).exists():
        raise BundleError("the bundle holds the reference solution: build it from an instructor's checkout")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        _executable(bundle, "run_autograder", RUN_AUTOGRADER)
        _executable(bundle, "setup.sh", SETUP_SH)
        # The efficiency bonus's cost bar is a multiple of the compiled reference engine's cost (efficiency.py).
        bundle.writestr("requirements.txt", REQUIREMENTS + ("numba>=0.59\n" if settings.bonus is not None else ""))
        bundle.writestr("README.txt", README)
        bundle.writestr(course_settings.SETTINGS_FILE, course_settings.to_toml(settings))
        for package in ("grader", "reference"):
            for source in sorted((PACKAGE_ROOT / package).rglob("*.py")):
                bundle.write(source, source.relative_to(PACKAGE_ROOT).as_posix())
    return out


def build_zip(out: Path, hidden_visibility: str = rubric.DEFAULT_HIDDEN_VISIBILITY, rubric_text: str | None = None,
              limits: Limits = Limits(), allow_weak_isolation: bool = False) -> Path:
    """The command's entry point: :func:`build_bundle` with settings from its values."""
    return build_bundle(out, settings_from(hidden_visibility, rubric_text, limits, allow_weak_isolation))


#: Entries of an upload looked at, breadth first: the upload is the student's, a tree of any size or depth (a
#: red team's ~1900 folders deep made a recursive walk raise RecursionError, an autograder failure).
MAX_UPLOAD_ENTRIES = 5000


def upload_files(folder: Path) -> list[Path]:
    """Plain files of the upload (no links followed or listed), breadth first, within its first
    MAX_UPLOAD_ENTRIES entries; sorted."""
    files: list[Path] = []
    waiting, seen = collections.deque([folder]), 0
    while waiting and seen < MAX_UPLOAD_ENTRIES:
        try:
            with os.scandir(waiting.popleft()) as entries:
                for entry in itertools.islice(entries, MAX_UPLOAD_ENTRIES - seen):
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        waiting.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        files.append(Path(entry.path))
        except OSError:
            continue  # unreadable or gone: nothing of it can be graded
    return sorted(files)


def find_submission(folder: Path) -> Path | None:
    """granularGas.py in the submission (at the top, or the only one below); never a link."""
    top = folder / spec.FILE_NAME
    if top.is_file() and not top.is_symlink():
        return top
    found = [p for p in upload_files(folder) if p.name == spec.FILE_NAME]
    return found[0] if len(found) == 1 else None


def missing_reason(folder: Path) -> str:
    """What the student is told when find_submission finds nothing to grade: what was uploaded, and the fix (a
    review: two granularGas.py in folders, and "granularGas (1).py", were told only that there was none)."""
    def named(paths_: list[Path]) -> str:
        shown_ = [shown(str(p.relative_to(folder)))[:80] for p in paths_[:3]]
        return ", ".join(shown_) + (", ..." if len(paths_) > 3 else "")

    files = upload_files(folder)
    same = [p for p in files if p.name == spec.FILE_NAME]
    if len(same) > 1:
        return (f"{len(same)} files named {spec.FILE_NAME} in your submission ({named(same)}), none at its top: "
                f"upload only the one to grade, {spec.FILE_NAME} itself.")
    python = [p for p in files if p.suffix.lower() == ".py"]
    if python:
        return (f"No {spec.FILE_NAME} in your submission, but {named(python)}: rename the file to grade to "
                f"{spec.FILE_NAME} (exactly this name) and upload it again.")
    archives = [p for p in files if p.name.lower().endswith(spec.ARCHIVE_SUFFIXES)]
    if archives:
        return (f"No {spec.FILE_NAME} in your submission, but {named(archives)}, an archive: upload the file "
                f"{spec.FILE_NAME} itself.")
    return f"No {spec.FILE_NAME} in your submission: upload the file {spec.FILE_NAME} (exactly this name)."


def grade_submission(root: Path, settings: GradingSettings) -> Results | str:
    """Grade ROOT/submission; or what the student is told when nothing in it can be graded (no granularGas.py, one
    past the size every command grades). Raises GraderError on the grader's faults."""
    from grader.grading import runner

    submission = find_submission(root / "submission")
    if submission is None:
        return missing_reason(root / "submission")
    refused = too_large(spec.FILE_NAME, submission.stat().st_size)  # check and the batch grade no such file either
    if refused:
        return f"{refused}, and upload it again."
    hide = (root / "source", root / "results")
    results = Results.from_report(runner.grade_file(submission, settings.options(hide=hide)))
    if settings.bonus is None:
        return results
    from grader.grading import efficiency

    return efficiency.assess(submission, results, settings.limits, hide, settings.bonus)


def _bonus_in_score(settings: GradingSettings) -> bool:
    return settings.bonus is not None and settings.bonus.in_gradescope_score


def results_for(root: Path, settings: GradingSettings) -> dict:
    """Grade ROOT/submission; Gradescope's results.json as a dict. Raises GraderError on the grader's faults."""
    return _results_json(grade_submission(root, settings), settings)


def _results_json(graded: Results | str, settings: GradingSettings) -> dict:
    """results.json of a grade, or of a submission with nothing to grade (``graded``: what the student is told)."""
    if isinstance(graded, str):
        return gradescope_json.missing_submission(graded)
    return gradescope_json.for_gradescope_run(graded, settings.hidden_visibility, _bonus_in_score(settings))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.commands.courses.gradescope",
                                     description="Gradescope's run_autograder")
    parser.add_argument("--root", default="/autograder", help="Gradescope's folder (default /autograder)")
    parser.add_argument("--settings", required=True, help=f"the bundle's {course_settings.SETTINGS_FILE}")
    args = parser.parse_args(argv)
    root = Path(args.root)
    try:
        settings = course_settings.load(Path(args.settings))
        graded = grade_submission(root, settings)
    except (GraderError, ValueError, OSError) as exc:
        # The grader's fault: no results.json, so Gradescope reports the autograder failed (never a 0).
        print(f"run_autograder: the grader could not grade this submission: {exc}", file=sys.stderr)
        return 1
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(json.dumps(_results_json(graded, settings), indent=2) + "\n")
    score = 0.0 if isinstance(graded, str) else graded.score
    print(f"graded: {score:g} points; results in {root / 'results' / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
