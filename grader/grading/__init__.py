"""Properties → a graded result: the one grading function ``runner.grade_file``.

Owns the grading order, outcomes (passed, failed, timeout, crashed, set
aside), the helper audit (``audit``) and the snippets that reproduce a failure.
It may import ``grader.spec``, ``grader.sandbox`` and ``grader.properties``.
"""
