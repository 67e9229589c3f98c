"""The physics scenarios grade the student's functions together, with messages to act on."""

from .conftest import Grader
from .test_grader_corpus import BUGS, TEXTBOOK, assert_blamed_on_its_function_only, mutate

BUG = {name: (source, changes) for name, source, _, changes in BUGS}


def failures(report, item):
    return [r.message for r in report.results if r.prop.item == item and r.status == "failed"]


def test_a_collision_law_bug_shows_in_the_c12_table_and_the_dem_velocities(tmp_path, graded: Grader):
    source, changes = BUG["restitution missing between grains"]
    report = graded(mutate(tmp_path, source, changes))
    assert_blamed_on_its_function_only(report, "restitution missing between grains", "contact_solve_grains")
    table = report.by_item()
    assert table["c12_row"][0] == 0 and table["dem_pair"][0] < table["dem_pair"][1]
    c12 = failures(report, "c12_row")
    assert any("the benchmark has 13" in m and "the first difference is collision 2" in m and "(pair 2-3)" in m
               for m in c12), c12
    assert any("hard-sphere solution is (-0.735, -0.98), (-0.265, -0.02)" in m for m in failures(report, "dem_pair"))


def test_a_helper_bug_costs_its_own_points_and_sets_its_callers_cases_aside(tmp_path, graded: Grader):
    # contact_time_grains off by R2. minimum_contact_time is right but calls it: its failing cases
    # are set aside (the traced excuse is off by default: it earns nothing until the helper is fixed).
    # update relies on it in every case: its tests earn nothing and say which helper to fix first (the
    # helper, not minimum_contact_time, whose tests were only set aside). The scenarios see the bug.
    report = graded(mutate(tmp_path, TEXTBOOK, BUG["missing radius"][1]))
    assert_blamed_on_its_function_only(report, "missing radius", "contact_time_grains")
    table = report.by_item()
    assert table["contact_time_grains"][0] == 0
    mct = [r for r in report.results if r.prop.item == "minimum_contact_time" and r.outcome != "passed"]
    assert mct and all(r.outcome == "set aside" and "fix contact_time_grains first" in r.message for r in mct)
    update = [r for r in report.results if r.prop.item == "update"]
    assert update and all(r.outcome == "set aside" and r.score == 0 for r in update)
    assert all("fix contact_time_grains first" in r.message and "the reference gives" in r.message for r in update)
    assert table["c12_row"][0] < table["c12_row"][1] and table["dem_pair"][0] < table["dem_pair"][1]
    assert any("touch at t = 0.5" in m for m in failures(report, "dem_pair"))
