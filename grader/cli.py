"""Command line: a thin layer over importable main functions.

    python -m grader check PATH/granularGas.py [--json FILE] [--rubric FILE]
    python -m grader student-kit --out DIR

Exit codes of check: 0 every test passed, 1 some failed, 2 the grader could
not run (bad path, not a Python file, malformed rubric).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader import rubric
from grader.sandbox import Limits

EXIT_PASSED, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2


class UsageError(Exception):
    """The command cannot run as asked; the message says what to fix."""


def submission_path(text: str) -> Path:
    path = Path(text)
    if not path.exists():
        raise UsageError(f"{text}: no such file; give the path of a granularGas.py")
    if path.is_dir():
        raise UsageError(f"{text} is a folder; give the path of the granularGas.py inside it")
    if path.suffix != ".py":
        raise UsageError(f"{text} is not a Python file (.py); give the path of a granularGas.py")
    return path


def check_main(path: str, json_path: str | None = None, rubric_path: str | None = None,
               call_seconds: float = Limits.call_seconds) -> int:
    """Grade one file, print the report, maybe write results.json; the exit code."""
    from grader import report, runner

    submission = submission_path(path)
    points = rubric.load(rubric_path)
    if call_seconds <= 0:
        raise UsageError(f"--timeout {call_seconds}: give a number of seconds > 0")
    grade = runner.grade(submission, points, Limits(call_seconds=call_seconds))
    print(report.as_text(grade), end="")
    if json_path:
        report.write_json(grade, json_path)
        print(f"results written to {json_path}")
    return EXIT_PASSED if grade.all_passed and not grade.import_error else EXIT_FAILED


def kit_main(out: str) -> int:
    from grader import kit

    try:
        folder = kit.build(Path(out))
    except kit.KitError as exc:
        raise UsageError(str(exc)) from None
    print(f"student kit written to {folder}")
    return EXIT_PASSED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="granular-grade", description="Grade granularGas.py submissions.")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="grade one granularGas.py")
    check.add_argument("path", help="the granularGas.py to grade")
    check.add_argument("--json", dest="json_path", metavar="FILE", help="write Gradescope results.json here")
    check.add_argument("--rubric", metavar="FILE", help="TOML file with a [points] table (see grader/rubric.py)")
    check.add_argument("--timeout", type=float, default=Limits.call_seconds, metavar="S",
                       help="seconds allowed for one call of a function (default %(default)s)")
    kit = commands.add_parser("student-kit", help="build what students download (no reference inside)")
    kit.add_argument("--out", required=True, metavar="DIR", help="folder to write the kit into")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return check_main(args.path, args.json_path, args.rubric, args.timeout)
        return kit_main(args.out)
    except (UsageError, rubric.RubricError) as exc:
        print(f"granular-grade: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE


if __name__ == "__main__":
    sys.exit(main())
