"""A reported snippet, pasted by the student next to their file, shows the failure it reports.

A review (Nov 2026) pasted the snippet of "contact_solve_grains modified its argument v1": it printed the
increments, which were right, and nothing of v1. The snippet now prints the modified argument after the call.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from grader.grading import runner

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "granularGas.py"


def test_the_snippet_of_an_argument_modified_in_place_prints_it_after_the_call(tmp_path):
    source = REFERENCE.read_text()
    last = "    return -((1.0 + r) * m2 / total * un) * n, ((1.0 + r) * m1 / total * un) * n\n"
    assert last in source
    mutating = source.replace(last, "    dv1 = -((1.0 + r) * m2 / total * un) * n\n    v1 += dv1\n"
                                    "    return dv1, ((1.0 + r) * m1 / total * un) * n\n")
    path = tmp_path / "granularGas.py"
    path.write_text(mutating)
    graded = runner.grade_file(path, runner.GradeOptions(only=("contact_solve_grains",)))
    modified = [t for t in graded.results if "modified its argument v1" in t.message]
    assert modified, [t.message for t in graded.results]
    text = modified[0].snippet
    assert "print('v1 =', v1)" in text, text
    given = re.search(r"^v1 = np\.array\((\[.*?\])\)$", text, re.MULTILINE)
    assert given is not None, text
    shown = subprocess.run([sys.executable, "-c", text], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert shown.returncode == 0, shown.stderr
    printed = re.search(r"^v1 = \[(.*)\]$", shown.stdout, re.MULTILINE)
    assert printed is not None, shown.stdout
    after = [float(value) for value in printed.group(1).split()]
    assert after != eval(given.group(1)), (after, given.group(1))  # the change the message reports, seen
