"""granular-grader: the autograder of the event-driven granular-gas homework.

The sub-packages are the layers of one flow; each imports only from the
layers before it (tests/test_layout.py checks it):

    spec        the contract: the six functions, limits, tolerances, rubric, scenarios
    sandbox     running the submission: isolation, the child, the wire format
    properties  what correct answers satisfy (Hypothesis), read from what the sandbox returned
    grading     properties → a graded result: the one grading function, the helper audit
    reports     results → what people read: terminal text, feedback pages, results.json
    animation   the submission's gas beside the reference's, as GIF/MP4/HTML
    commands    check, batch, animate, student-kit, nbgrader-course, gradescope-zip

``grader.errors`` holds the one error root every layer raises from.
"""

import os as _os

# Before numpy loads (every command imports this first): one BLAS thread, as in the boxes (sandbox.isolation).
# OpenBLAS's pool of threads spins for some 70 ms of CPU as numpy loads, in every check and every batch; nothing the
# grader computes is large enough to share out, and one thread keeps its sums in one order on any machine.
for _library in ("OPENBLAS", "OMP", "MKL"):
    _os.environ.setdefault(f"{_library}_NUM_THREADS", "1")
