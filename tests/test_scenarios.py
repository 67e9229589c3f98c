"""The physics scenarios grade the student's functions together, with messages to act on."""

from grader.runner import grade

from .test_grader_corpus import BUGS, TEXTBOOK, mutate

BUG = {name: (source, changes) for name, source, _, changes in BUGS}


def failures(report, item):
    return [r.message for r in report.results if r.prop.item == item and r.status == "failed"]


def test_a_collision_law_bug_shows_in_the_c12_table_and_the_dem_velocities(tmp_path):
    source, changes = BUG["restitution missing between grains"]
    report = grade(mutate(tmp_path, source, changes))
    table = report.by_item()
    assert table["c12_row"][0] == 0 and table["dem_pair"][0] < table["dem_pair"][1]
    c12 = failures(report, "c12_row")
    assert any("the benchmark has 13" in m and "the first difference is collision 2" in m and "(pair 2-3)" in m
               for m in c12), c12
    assert any("hard-sphere solution is (-0.735, -0.98), (-0.265, -0.02)" in m for m in failures(report, "dem_pair"))


def test_scenarios_use_the_students_own_functions(tmp_path):
    # contact_time_grains off by R2: graded alone, update keeps its points (the
    # reference answers its calls); the scenarios, which run the student's
    # functions together, see the bug.
    report = grade(mutate(tmp_path, TEXTBOOK, BUG["missing radius"][1]))
    table = report.by_item()
    assert table["update"][0] == table["update"][1]
    assert table["c12_row"][0] < table["c12_row"][1] and table["dem_pair"][0] < table["dem_pair"][1]
    assert any("touch at t = 0.5" in m for m in failures(report, "dem_pair"))
