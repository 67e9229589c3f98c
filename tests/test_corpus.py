"""The grader on a corpus of whole submissions, each checked against the grade its first line claims.

Every file of tests/submissions that starts with ``# EXPECT <claim>: <what it is>`` is a complete
granularGas.py written for this test:

* ``<=5``: trivial, delegating or stand-in thief files: at most 5 of 100, whatever they try;
* ``100``: honest files in different styles: every point;
* ``bug <function>``: one bug of a clause of the statement: full marks on every other function,
  less than full on that one (the scenarios may lose points too).

Grading is slow (about 15 s a file): these tests carry the ``corpus`` marker (``-m "not corpus"``
skips them). The fast checks at the end need no grading.
"""

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from grader import spec
from grader.grading.runner import GradeReport, grade_file

from .conftest import corpus_params

HERE = Path(__file__).parent / "submissions"
HEADER = re.compile(r"^# EXPECT (<=5|100|bug (\w+)): (.+)$")
LOW_CEILING = 5.0


@dataclass(frozen=True)
class Claim:
    path: Path
    kind: str  # "low", "full" or "bug"
    function: str | None
    what: str


def claims() -> list[Claim]:
    found = []
    for path in sorted(HERE.glob("*.py")):
        first = path.read_text().split("\n", 1)[0]
        match = HEADER.match(first)
        if match:
            kind = {"<=5": "low", "100": "full"}.get(match.group(1), "bug")
            found.append(Claim(path, kind, match.group(2), match.group(3)))
    return found


CLAIMS = claims()


@cache
def graded(path: Path) -> GradeReport:
    return grade_file(path)


def summary(report: GradeReport) -> str:
    items = ", ".join(f"{spec.ITEM_ABBREVIATIONS[k]} {s:g}/{m:g}" for k, (s, m) in report.by_item().items())
    failed = [f"{r.prop.item}: {r.message[:200]}" for r in report.results if r.status != "passed"][:6]
    return (f"{report.score:g}/{report.max_score:g} ({items}); status {report.status}; import error "
            f"{report.import_error!r}; failed: {failed}; output: {report.output[:600]!r}")


#: Graded in CI (the trivial files are also checked without the sandbox in test_properties.py).
SAMPLE = {"trivial_pass", "trivial_free_flight", "delegating_cycle", "thief_frames", "honest_handout_loop",
          "honest_keywords", "honest_vectorised_pairs", "honest_event_table", "honest_own_search",
          "honest_matplotlib", "bug_recursive_update", "bug_capped_update", "bug_inf_along_wall",
          "bug_float_indices"}


def sampled(kind: str) -> list:
    chosen = [c for c in CLAIMS if c.kind == kind]
    return corpus_params(chosen, [c.path.stem for c in chosen], SAMPLE & {c.path.stem for c in chosen})


@pytest.mark.corpus
@pytest.mark.parametrize("claim", sampled("low"))
def test_files_that_compute_nothing_earn_at_most_five_points(claim):
    report = graded(claim.path)
    assert report.max_score == pytest.approx(100.0)
    assert report.score <= LOW_CEILING, f"{claim.path.name} ({claim.what}) got {summary(report)}"
    # The thieves print what they found: nothing of the grader's side may be among it.
    found = [line for line in report.output.splitlines() if line.startswith("THIEF FOUND")]
    leaks = [line for line in found if any(word in line.lower() for word in ("reference", "oracle", "grader"))]
    assert not leaks, f"{claim.path.name} found {leaks}"


@pytest.mark.corpus
@pytest.mark.parametrize("claim", sampled("full"))
def test_honest_files_earn_every_point(claim):
    report = graded(claim.path)
    assert report.import_error is None
    assert report.score == pytest.approx(100.0) == report.max_score, f"{claim.path.name} got {summary(report)}"


@pytest.mark.corpus
@pytest.mark.parametrize("claim", sampled("bug"))
def test_a_single_bug_costs_only_its_function(claim):
    report = graded(claim.path)
    table = report.by_item()
    for name in spec.FUNCTION_NAMES:
        score, top = table[name]
        if name == claim.function:
            assert score < top, f"{claim.path.name}: its bug in {name} went unnoticed; {summary(report)}"
        else:
            assert score == pytest.approx(top), f"{claim.path.name}: {name} lost points; {summary(report)}"


# -- fast checks of the corpus itself (no grading) ----------------------------------------------------


def test_the_corpus_has_every_kind_of_file():
    kinds = {c.kind for c in CLAIMS}
    assert kinds == {"low", "full", "bug"}
    stems = {c.path.stem.split("_")[0] for c in CLAIMS}
    assert {"trivial", "delegating", "thief", "honest", "bug"} <= stems
    bugs = {c.function for c in CLAIMS if c.kind == "bug"}
    assert {"update", "contact_time_walls", "minimum_contact_time"} <= bugs


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.path.stem)
def test_each_file_defines_the_six_functions_with_their_signatures(claim):
    tree = ast.parse(claim.path.read_text(), str(claim.path))
    defined = {node.name: [a.arg for a in node.args.args] for node in tree.body if isinstance(node, ast.FunctionDef)}
    for function in spec.FUNCTIONS:
        assert defined.get(function.name) == list(function.params), \
            f"{claim.path.name}: {function.name}{tuple(defined.get(function.name) or ())}"
    if claim.kind == "bug":
        assert claim.function in spec.FUNCTION_NAMES


def test_every_file_with_a_header_is_claimed():
    for path in HERE.glob("*.py"):
        first = path.read_text().split("\n", 1)[0]
        if first.startswith("# EXPECT"):
            assert HEADER.match(first), f"{path.name}: malformed header {first!r}"
