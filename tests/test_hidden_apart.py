"""What a file sees of the hidden tests' cases reaches none of the public tests' results.

Gradescope shows the public tests' messages (and the top-level output made of them) before the hidden tests are
published, batch --withhold-hidden hands out pages without the hidden details: neither may carry a hidden case. The
grading's box grades every public test before any hidden one, and the hidden tests' searches and audits run in a
box of their own (grader.grading.runner._searched)."""

from pathlib import Path

import pytest

from grader.grading import runner
from grader.properties import oracle

SAMPLES = Path(__file__).parent / "attack_samples"

needs_reference = pytest.mark.skipif(not oracle.available(), reason="the hidden tests need the reference")


def public_results(path: Path, hidden: bool) -> dict[str, tuple[str, str, str, str]]:
    report = runner.grade_file(path, runner.GradeOptions(hidden=hidden))
    return {r.prop.id: (r.status, r.outcome, r.message, r.snippet) for r in report.results if not r.prop.hidden}


@needs_reference
def test_a_file_that_quotes_the_cases_it_saw_shows_no_hidden_case_in_a_public_test():
    path = SAMPLES / "hidden_cases_into_public_errors.py"
    alone, beside_hidden = public_results(path, hidden=False), public_results(path, hidden=True)
    walls = [message for test, (_, _, message, _) in beside_hidden.items() if test.startswith("contact_time_walls")]
    assert walls and all("SEEN" in message for message in walls)  # the file's error is shown, as it should be
    assert beside_hidden == alone
