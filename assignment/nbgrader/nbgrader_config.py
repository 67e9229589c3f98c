# nbgrader configuration of the granular-gas course (written by granular-grader).
c = get_config()
c.CourseDirectory.course_id = "granular-gas"
# autograde grades granularGas.py with granular-grader, in its sandbox, with the
# rubric and limits of granular_grader.toml, and runs no notebook: cells a
# student adds never execute, the released cells replace the submitted ones,
# and a folder with granularGas.py alone gets the released notebook.
from grader.commands.courses.nbgrader_autograde import configure
configure(c, "granular_gas")
