"""Running a submission: the grader's side of the sandbox and the child inside it.

Owns isolation (bubblewrap allow-list, a uid per box, CPU-time limits,
quotas: ``isolation``, ``allow_list``, ``host``), the child that imports the
submission (``child``, run as a script, importing nothing of the grader), the
bounded channel and the wire format (``channel``, ``wire``), what a call
gives back (``calls``), and the sandbox's self-test (``self_test``). It may import ``grader.spec`` only.
"""
