"""Results → what people read: the terminal text, the feedback page, the student's view, results.json.

Gradescope's schema lives here only, at the edge. It may import
``grader.spec`` and ``grader.grading`` (the typed results).
"""
