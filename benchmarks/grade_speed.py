"""Time to grade one submission (target: under 10 s on one core).

    python benchmarks/grade_speed.py

Grades the two correct variants of the test corpus and three single-bug
mutations, and prints the wall time of each and of its slowest tests.
"""

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.grading.runner import grade  # noqa: E402
from tests.test_grader_corpus import BUGS, TEXTBOOK, VECTORISED  # noqa: E402


def main() -> None:
    cases = [("correct (textbook)", TEXTBOOK), ("correct (vectorised)", VECTORISED)]
    with tempfile.TemporaryDirectory() as tmp:
        for k, (bug, source, _, changes) in enumerate(BUGS[::8]):
            text = source.read_text()
            for old, new in changes:
                text = text.replace(old, new)
            path = Path(tmp) / f"bug{k}.py"
            path.write_text(text)
            cases.append((f"bug: {bug}", path))
        print(f"{'submission':<36} {'seconds':>8} {'score':>7}  slowest tests")
        for label, path in cases:
            start = time.perf_counter()
            report = grade(path)
            seconds = time.perf_counter() - start
            slow = sorted(report.results, key=lambda r: -r.seconds)[:2]
            slowest = ", ".join(f"{r.prop.id} {r.seconds:.1f}s" for r in slow)
            print(f"{label:<36} {seconds:8.2f} {report.score:7.1f}  {slowest}")


if __name__ == "__main__":
    main()
