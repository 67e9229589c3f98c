"""What correct answers satisfy: the Hypothesis property suite.

``property`` says what a graded test is; ``readers`` read the submission's
returned values into failures with bounded messages; ``geometry`` holds
statement-level geometry; ``strategies`` generate inputs; ``contacts``,
``system``, ``physics`` (public) and ``hidden`` (instructors only: absent from
the student kit) are the suites; ``oracle`` is the reference's answers, for the
hidden tests, computed in the grader's process only. It may import
``grader.spec`` and the sandbox's data types (``calls``, ``wire``).
"""
