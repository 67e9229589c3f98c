"""The corpus's grades, pinned: tests/corpus_grades.json holds, for every file of tests/submissions/*.py and
examples/submissions/*, its score, its points per rubric item, its status, the outcome of every test and the
message and snippet of every failing test.

    python tests/pin_corpus.py --write        # grade every file, write the pin
    python tests/pin_corpus.py --check        # grade every file, print what differs from the pin
    python tests/pin_corpus.py --check ben    # only the files whose name contains "ben"

It grades with whatever ``grader`` Python imports, so the pin can be written by an older checkout
(``PYTHONPATH=/path/to/old/checkout python tests/pin_corpus.py --write``) and checked by the current code:
the reorganisation of the package was proved not to change a grade that way. It uses only what both the old
(``grader.runner``) and the new (``grader.grading.runner``) layout offer. tests/test_corpus.py compares the
grades of a sample of these files with the pin in CI (every file with GRANULAR_FULL_CORPUS=1).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PIN = ROOT / "tests" / "corpus_grades.json"
#: Scores are sums of fractions of points: compared to this many decimals.
DECIMALS = 6


def corpus_files() -> list[Path]:
    """Every file of the corpus: the test submissions and the examples (a folder is graded as its granularGas.py)."""
    files = sorted((ROOT / "tests" / "submissions").glob("*.py"))
    for entry in sorted((ROOT / "examples" / "submissions").iterdir()):
        if entry.is_dir():
            entry = entry / "granularGas.py"
        if entry.suffix == ".py" and entry.is_file():
            files.append(entry)
    return files


def key_of(path: Path) -> str:
    """The file's name in the pin: its path from the repository's root."""
    return path.resolve().relative_to(ROOT).as_posix()


def _grade_file():
    try:
        from grader.grading.runner import grade_file
    except ImportError:  # the layout before the reorganisation
        from grader.runner import grade_file  # type: ignore[no-redef]
    return grade_file


def record_of(report: Any) -> dict[str, Any]:
    """What the pin keeps of a grade: nothing that depends on time, paths or the machine."""
    return {
        "score": round(report.score, DECIMALS),
        "max_score": round(report.max_score, DECIMALS),
        "status": report.status,
        "imports": report.import_error is None,
        "items": {item: [round(s, DECIMALS), round(m, DECIMALS)] for item, (s, m) in report.by_item().items()},
        "tests": {r.prop.id: r.outcome for r in report.results},
        # What the student reads: the same smallest failing case, message and reproduction.
        "reports": {r.prop.id: [r.message, r.snippet] for r in report.results if r.message or r.snippet},
    }


def grade_record(path: Path) -> dict[str, Any]:
    """The pin's record of the file at ``path``, graded with the default options."""
    return record_of(_grade_file()(path))


def load_pin() -> dict[str, dict[str, Any]]:
    return json.loads(PIN.read_text())["grades"]


def differences(pinned: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """What differs between two records, one line per field (empty: the same grade)."""
    lines = [f"{field}: pinned {pinned.get(field)!r}, now {fresh.get(field)!r}"
             for field in ("score", "max_score", "status", "imports") if pinned.get(field) != fresh.get(field)]
    for group in ("items", "tests", "reports"):
        before, after = pinned.get(group, {}), fresh.get(group, {})
        for name in sorted(set(before) | set(after)):
            if before.get(name) != after.get(name):
                lines.append(f"{group}[{name}]: pinned {before.get(name)!r}, now {after.get(name)!r}")
    return lines


def _grader_version() -> str:
    """The checkout whose grader wrote the pin, and its commit (for the record only)."""
    import subprocess

    try:
        import grader
    except ImportError:  # seen: an editable install left pointing at a checkout since removed
        raise SystemExit("no grader to grade with: Python imports none (run pip install -e . in a checkout, or set "
                         "PYTHONPATH=/path/to/checkout)") from None
    checkout = Path(grader.__file__).resolve().parents[1]
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return f"{checkout} at {commit or 'an unknown commit'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="grade every file and write tests/corpus_grades.json")
    mode.add_argument("--check", action="store_true", help="grade and print the differences from the pin")
    parser.add_argument("only", nargs="*", help="only the files whose path contains one of these words")
    parser.add_argument("--jobs", type=int, default=2, help="files graded at once (default 2)")
    args = parser.parse_args(argv)
    files = [f for f in corpus_files() if not args.only or any(word in key_of(f) for word in args.only)]
    if args.write and args.only:
        parser.error("--write grades the whole corpus; drop the file names")
    # Whichever grader Python imports (an editable install may point at another checkout): said first.
    print(f"grading with the grader of {_grader_version()}", flush=True)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        fresh = dict(zip(map(key_of, files), pool.map(grade_record, files)))
    if args.write:
        PIN.write_text(json.dumps({"graded_by": _grader_version(), "grades": fresh},
                                  indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(fresh)} grades to {PIN}")
        return 0
    pinned, changed = load_pin(), 0
    for key, record in fresh.items():
        lines = differences(pinned[key], record) if key in pinned else ["not in the pin"]
        changed += bool(lines)
        print(f"{key}: {'same grade' if not lines else 'DIFFERS'}")
        for line in lines:
            print(f"    {line}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
