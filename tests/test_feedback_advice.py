"""The advice a failure message gives fits the failure (a review, Nov 2026, found the channel test telling a loop
to stop recursing)."""

from __future__ import annotations

from pathlib import Path

from grader.grading import runner

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "granularGas.py"


def test_grains_leaving_the_channel_are_blamed_on_the_walls_not_on_recursion(tmp_path):
    source = REFERENCE.read_text()
    bounce = "    return -(1.0 + r) * float(v1 @ normal) * normal\n"
    assert bounce in source
    path = tmp_path / "granularGas.py"
    path.write_text(source.replace(bounce, "    return 0.0 * normal  # walls that do not bounce\n"))
    graded = runner.grade_file(path, runner.GradeOptions(only=("update",)))
    channel = [t for t in graded.results if "bounce along a channel" in t.message]
    assert channel, [t.message for t in graded.results]
    message = channel[0].message
    assert "ended outside the channel" in message and "contact_solve_wall" in message, message
    assert "recursive" not in message, message
