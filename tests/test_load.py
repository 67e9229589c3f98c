"""The same file gets the same grade on a quiet and on a busy machine.

Limits count the CPU time of the submission, not the wall clock: four
CPU-bound processes beside the grader on two cores slow every call down
about threefold, and must change nothing. The quiet grade is the one pinned
in tests/corpus_grades.json (tests/pin_corpus.py).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from grader.grading.runner import grade_file
from grader.sandbox.client import Sandbox
from grader.spec.limits import Limits

from . import pin_corpus

HERE = Path(__file__).parent / "submissions"
BURNERS = 4

#: A contact_time_grains that burns about 0.3 s of CPU, then answers right.
SLOW_BUT_CORRECT = '''
import sys, time
import numpy as np

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    start = time.process_time()
    while time.process_time() - start < 0.3:
        pass
    dx, dv = np.subtract(x1, x2), np.subtract(v1, v2)
    a, b, c = dv @ dv, dx @ dv, dx @ dx - (R1 + R2) ** 2
    disc = b * b - a * c
    if a == 0 or b >= 0 or disc < 0 or c < 0:
        return sys.float_info.max
    return c / (-b + np.sqrt(disc))
'''


@contextmanager
def busy_machine() -> Iterator[None]:
    """Four processes spinning on the CPU for as long as the block runs, each in a session of its own: with the
    kernel's autogroups (on here) CPU time is shared out between sessions first, and the box has one of its own (a
    red team found spinners started in pytest's session hardly slowed it: 2.02 s for a 2 s call, 5.09 s so)."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
               for _ in range(BURNERS)]
    try:
        yield
    finally:
        for p in burners:
            p.kill()
            p.wait()


def test_a_call_within_its_cpu_limit_passes_however_busy_the_machine(tmp_path):
    path = tmp_path / "granularGas.py"
    path.write_text(SLOW_BUT_CORRECT)
    args = ([0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [0.0, 0.0], 1.0, 1.0)
    import numpy as np

    arrays = tuple(np.array(a) if isinstance(a, list) else a for a in args)
    limits = replace(Limits(), call_seconds=0.6)
    with busy_machine(), Sandbox(path, limits) as sandbox:
        for _ in range(4):
            returned = sandbox.call("contact_time_grains", *arrays)
            assert float(returned.value.array.reshape(())) == 1.0
            # The wall clock may well pass 0.6 s here; the CPU time must not.
            assert 0.25 < returned.cpu_seconds < 0.6


def test_same_grade_alone_and_beside_four_cpu_bound_processes():
    path = HERE / "correct_vectorised.py"
    with busy_machine():
        busy = grade_file(path)
    quiet = pin_corpus.load_pin()[pin_corpus.key_of(path)]
    assert pin_corpus.differences(quiet, pin_corpus.record_of(busy)) == []
    # A correct file: every test passes, without a message that could differ.
    assert busy.score == quiet["score"] == quiet["max_score"]
    assert all(r.outcome == "passed" and not r.message for r in busy.results)


def test_a_file_failing_public_and_hidden_tests_gets_its_pinned_report_on_a_busy_machine():
    """ben.py fails public and hidden tests: graded, searched in two boxes (the hidden tests' of their own) and
    audited beside four CPU-bound processes, every score, outcome, message and snippet is the pinned one."""
    path = Path(__file__).resolve().parents[1] / "examples" / "submissions" / "ben.py"
    with busy_machine():
        busy = grade_file(path)
    quiet = pin_corpus.load_pin()[pin_corpus.key_of(path)]
    assert pin_corpus.differences(quiet, pin_corpus.record_of(busy)) == []
    assert any(r.prop.hidden and r.outcome != "passed" for r in busy.results)
    assert any(not r.prop.hidden and r.outcome != "passed" for r in busy.results)
