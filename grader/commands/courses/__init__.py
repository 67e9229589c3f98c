"""Courses graded through nbgrader or Gradescope, with settings declared once (``settings``).

``nbgrader_course`` writes the course and scores its cells, ``nbgrader_autograde``
plugs the grader into nbgrader's autograde, ``cache`` keeps results per file,
``gradescope`` builds the autograder bundle and runs inside it.
"""
