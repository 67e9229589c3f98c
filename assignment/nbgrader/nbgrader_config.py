# nbgrader configuration of the granular-gas course (written by granular-grader).
c = get_config()
c.CourseDirectory.course_id = "granular-gas"
c.CourseDirectory.db_assignments = [dict(name="granular_gas")]
# Students hand in granularGas.py next to the released notebook: the released
# template of the same name must not overwrite it when autograding.
c.Autograde.exclude_overwriting = {"granular_gas": ["granularGas.py"]}
# The first test cell grades the whole file (a few seconds to a minute).
c.Execute.timeout = 1800
