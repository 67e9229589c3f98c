"""The sandbox's self-test: a tiny correct file started in a box and called, so that a broken sandbox is the
grader's fault (SandboxFault), never students' zeros. Split from :mod:`grader.sandbox.client`."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from grader import spec
from grader.errors import SandboxFault
from grader.sandbox import wire
from grader.sandbox.client import Sandbox, SubmissionError
from grader.spec.limits import Limits

SELFTEST_SOURCE = '''import numpy as np


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return float(np.dot(x1, x2) + R1 * R2)
'''

_selftested: set[Limits] = set()


def selftest(limits: Limits) -> None:
    """Start a sandbox on a tiny correct file and call it; SandboxFault naming the cause if that fails.

    Cached per process (per limits): run it before a failing file's grade is given (grading.runner.grade_file;
    a batch runs it once, before its workers), so that a broken sandbox is reported as the grader's fault and
    never as students' zeros.
    """
    if limits in _selftested:
        return
    import numpy as np

    x1, x2 = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with tempfile.TemporaryDirectory(prefix="granular-selftest-") as folder:
        path = Path(folder) / spec.FILE_NAME
        path.write_text(SELFTEST_SOURCE)
        try:
            with Sandbox(path, limits) as sandbox:
                if sandbox.import_failure is not None:
                    raise SandboxFault(f"the sandbox self-test could not import a correct file: {sandbox.import_error}")
                returned = sandbox.call("contact_time_grains", x1, x2, x1, x2, 0.5, 2.0)
        except SubmissionError as exc:
            raise SandboxFault(f"the sandbox self-test failed: {exc}") from None
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxFault(f"the sandbox self-test could not run: {exc}") from None
    value = returned.value
    if not (isinstance(value, wire.Numeric) and value.array.shape == () and float(value.array) == 12.0):
        raise SandboxFault(f"the sandbox self-test got a wrong answer: {wire.describe(value)} instead of 12.0")
    _selftested.add(limits)
