"""The grader on a corpus of whole submissions, each checked against the grade its first line claims
and against the grade pinned in tests/corpus_grades.json.

Every file of tests/submissions that starts with ``# EXPECT <claim>: <what it is>`` is a complete
granularGas.py written for this test:

* ``<=5``: trivial, delegating or stand-in thief files: at most 5 of 100, whatever they try;
* ``100``: honest files in different styles: every point;
* ``bug <function>``: one bug of a clause of the statement: full marks on every other function,
  less than full on that one (the scenarios may lose points too).

tests/pin_corpus.py wrote the pin (score, points per item, status and the outcome of every test of every
file of tests/submissions and examples/submissions). Every claim is checked on the pin (no grading, every
run); a sample of files is graded afresh and must get its pinned grade and its claim (about 10 s of CPU a
file; GRANULAR_FULL_CORPUS=1 grades every file). These carry the ``corpus`` marker (``-m "not corpus"``
skips them).
"""

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader import spec
from grader.grading.runner import GradeReport

from . import pin_corpus
from .conftest import Grader, corpus_params

HERE = Path(__file__).parent / "submissions"
HEADER = re.compile(r"^# EXPECT (<=5|100|bug (\w+)): (.+)$")
LOW_CEILING = 5.0
#: The correct variants the other tests mutate: every point.
CORRECT = ("correct_textbook", "correct_vectorised")


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
        elif path.stem in CORRECT:
            found.append(Claim(path, "full", None, "a correct variant the other tests mutate"))
    return found


CLAIMS = claims()
CLAIMED = {c.path.stem: c for c in CLAIMS}


def claim_broken(claim: Claim, score: float, items: dict[str, tuple[float, float]], imports: bool) -> list[str]:
    """How a grade breaks the file's claim (empty: it holds)."""
    if claim.kind == "low":
        return [f"{score:g} points, more than {LOW_CEILING:g}"] if score > LOW_CEILING else []
    if claim.kind == "full":
        top = sum(m for _, m in items.values())
        return [] if imports and score == pytest.approx(top) else [f"{score:g} of {top:g} points"]
    broken = []
    for name in spec.FUNCTION_NAMES:
        got, top = items[name]
        if name == claim.function and got >= top:
            broken.append(f"its bug in {name} went unnoticed")
        if name != claim.function and got != pytest.approx(top):
            broken.append(f"{name} lost points ({got:g} of {top:g})")
    return broken


def summary(report: GradeReport) -> str:
    items = ", ".join(f"{spec.ITEM_ABBREVIATIONS[k]} {s:g}/{m:g}" for k, (s, m) in report.by_item().items())
    failed = [f"{r.prop.item}: {r.message[:200]}" for r in report.results if r.status != "passed"][:6]
    return (f"{report.score:g}/{report.max_score:g} ({items}); status {report.status}; import error "
            f"{report.import_error!r}; failed: {failed}; output: {report.output[:600]!r}")


def test_every_file_of_the_corpus_is_pinned_and_every_claim_holds_in_the_pin():
    pinned = pin_corpus.load_pin()
    assert sorted(pinned) == sorted(map(pin_corpus.key_of, pin_corpus.corpus_files())), \
        "the pin is out of date: python tests/pin_corpus.py --write"
    for claim in CLAIMS:
        record = pinned[pin_corpus.key_of(claim.path)]
        items = {k: (s, m) for k, (s, m) in record["items"].items()}
        assert record["max_score"] == pytest.approx(100.0)
        broken = claim_broken(claim, record["score"], items, record["imports"])
        assert not broken, f"{claim.path.name} ({claim.what}): {broken}; pinned {record}"


#: Graded afresh in CI: every kind of file (trivial, delegating, thief with the leak check, honest, bug), an
#: update with its own search, vectorised helpers, a recursion and float indices. The others' claims are checked
#: on the pin only (correct_vectorised is graded afresh by test_load.py).
SAMPLE = {"trivial_pass", "thief_frames", "thief_scenario_table", "delegating_cycle", "honest_own_search",
          "honest_vectorised_pairs", "bug_float_indices", "bug_recursive_update"}
FILES = pin_corpus.corpus_files()
STEMS = [pin_corpus.key_of(f).removesuffix(".py").replace("/granularGas", "").rsplit("/", 1)[-1] for f in FILES]


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params(FILES, STEMS, SAMPLE))
def test_a_fresh_grade_is_the_pinned_one_and_keeps_the_files_claim(path: Path, graded: Grader):
    report = graded(path)
    differs = pin_corpus.differences(pin_corpus.load_pin()[pin_corpus.key_of(path)], pin_corpus.record_of(report))
    assert not differs, f"{path.name} is graded differently from the pin: {differs}; {summary(report)}"
    claim = CLAIMED.get(path.stem)
    if claim is not None:
        broken = claim_broken(claim, report.score, report.by_item(), report.import_error is None)
        assert not broken, f"{path.name} ({claim.what}): {broken}; {summary(report)}"
    # The thieves print what they found: nothing of the grader's side may be among it.
    found = [line for line in report.output.splitlines() if line.startswith("THIEF FOUND")]
    leaks = [line for line in found if any(word in line.lower() for word in ("reference", "oracle", "grader"))]
    assert not leaks, f"{path.name} found {leaks}"


def test_a_changed_grade_is_named_field_by_field():
    pinned = pin_corpus.load_pin()[pin_corpus.key_of(HERE / "correct_textbook.py")]
    changed = {**pinned, "score": pinned["score"] - 5, "items": {**pinned["items"], "update": [15.0, 20.0]},
               "tests": {**pinned["tests"], "update: gas physics": "timeout"}}
    assert pin_corpus.differences(pinned, pinned) == []
    lines = pin_corpus.differences(pinned, changed)
    assert len(lines) == 3 and lines[0].startswith("score: pinned 100")
    assert any(line.startswith("items[update]") for line in lines)
    assert any(line.startswith("tests[update: gas physics]: pinned 'passed', now 'timeout'") for line in lines)


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
