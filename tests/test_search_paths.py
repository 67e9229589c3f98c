"""Kept searches (grader.grading.paths): a file that fails the way an earlier one did is searched without
Hypothesis and gets exactly the report Hypothesis's search gives; another failure leaves the kept paths and is
searched as before; a forged or oversized file of paths changes nothing but which cases are tried, and cannot make
a walk loop. Stand-in sandboxes, then real files in the real sandbox."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from grader.grading import paths, search
from grader.grading.cases import CaseBook, case_key
from grader.grading.paths import END, UNKNOWN, Call, SearchPaths, SearchTree
from grader.grading.report import FAILED, PASSED
from grader.grading.runner import GradeOptions, grade_file
from grader.properties.property import Property, fail
from grader.sandbox.calls import Returned

from .test_grader_corpus import BUGS
from .test_runner import Counting


def below(limit: int) -> Property:
    def check(caller: Any, case: list[int]) -> None:
        if caller.call("contact_time_grains", case).value > limit:
            fail(f"answer {caller.returns[-1][2].value} > {limit} for {case}")

    return Property("contact_time_grains", "sums below a limit", "lists",
                    lambda: st.lists(st.integers(0, 1000), min_size=1, max_size=8), check, shrink_cases=60)


def small_lists() -> st.SearchStrategy[list[int]]:
    """Cases built by a module-level function: the properties that use it with the same counts are searched alike."""
    return st.lists(st.integers(0, 1000), min_size=1, max_size=8)


def alike(name: str, limit: int) -> Property:
    searched_like_below = below(limit)
    return Property("contact_time_grains", name, "lists", small_lists, searched_like_below.verify, shrink_cases=60)


def no_find(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Hypothesis's find was called: the kept search was not walked")

    monkeypatch.setattr(hypothesis, "find", refused)


def verdict(sandbox: Counting, prop: Property, kept: SearchPaths | None) -> search.Verdict:
    book = CaseBook.drawn([prop], on_disk=True)
    return search.run_property(sandbox, prop, replay=book.replay(prop), paths=kept)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [300, 2500])
def test_a_kept_search_is_walked_without_hypothesis_to_the_same_report(limit: int, private_cache: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    prop = below(limit)
    searched, cold, warm = Counting(), Counting(), Counting()
    expected = verdict(searched, prop, None)
    assert expected.outcome == FAILED
    assert verdict(cold, prop, SearchPaths.kept(True)) == expected
    assert list(private_cache.glob("paths-*.pickle"))  # the search was kept
    no_find(monkeypatch)
    assert verdict(warm, prop, SearchPaths.kept(True)) == expected  # read back from the file
    assert warm.calls == cold.calls == searched.calls


def test_another_failure_leaves_the_kept_paths_and_is_searched_as_before(private_cache: Path,
                                                                        monkeypatch: pytest.MonkeyPatch):
    prop = below(300)
    expected = {factor: verdict(Counting(factor), prop, None) for factor in (1, 3)}
    assert expected[1] != expected[3]  # the second file fails on other cases: its search goes elsewhere
    verdict(Counting(1), prop, SearchPaths.kept(True))
    before = len(SearchPaths.kept(True).tree(prop).nodes)
    assert verdict(Counting(3), prop, SearchPaths.kept(True)) == expected[3]
    assert len(SearchPaths.kept(True).tree(prop).nodes) > before  # kept too
    no_find(monkeypatch)
    for factor in (1, 3):  # both are walked now
        assert verdict(Counting(factor), prop, SearchPaths.kept(True)) == expected[factor]


def test_a_file_that_passes_walks_nothing_and_passes(private_cache: Path):
    prop = below(300)
    verdict(Counting(1), prop, SearchPaths.kept(True))
    assert verdict(Counting(0), prop, SearchPaths.kept(True)).outcome == PASSED


def test_a_fixed_scenario_whose_case_is_none_is_reported_failing_from_a_walk(private_cache: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    """A property of a fixed scenario draws None: a walk must not take "the smallest case is None" for "no case
    failed" (a first version of the walk passed such a file)."""

    def always_wrong(caller: Any, case: None) -> None:
        caller.call("contact_time_grains", [1, 2])
        fail("the scenario goes wrong")

    prop = Property("contact_time_grains", "fixed scenario", "none", lambda: st.just(None), always_wrong)
    expected = search.run_property(Counting(), prop)  # type: ignore[arg-type]
    assert expected.outcome == FAILED
    assert search.run_property(Counting(), prop, paths=SearchPaths.kept(True)) == expected  # type: ignore[arg-type]
    no_find(monkeypatch)
    assert search.run_property(Counting(), prop, paths=SearchPaths.kept(True)) == expected  # type: ignore[arg-type]


def forge(private_cache: Path, prop: Property, rows: object) -> None:
    """Replace the property's file of kept paths (after one real search made it) with ``rows``, pickled."""
    verdict(Counting(1), prop, SearchPaths.kept(True))
    (kept,) = private_cache.glob("paths-*.pickle")
    kept.write_bytes(pickle.dumps(rows, protocol=4) if not isinstance(rows, bytes) else rows)


class Spell:
    """Unpickling it would run code: a forged file that tried must be refused, never obeyed."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, ("raise SystemExit('the unpickler ran code')",))


@pytest.mark.parametrize("rows", ["cycle", "backwards", "not rows", "garbage", "code", "case", "ends held", "huge",
                                  "wrong kind"])
def test_a_forged_file_of_paths_is_refused_and_the_search_is_hypothesis_s(rows: str, private_cache: Path):
    prop = below(300)
    first = case_key([5])
    forged: object = {"cycle": [(first, 0, UNKNOWN)], "backwards": [(first, UNKNOWN, END), (first, 0, 0)],
                      "not rows": {"a": 1}, "garbage": b"\x80\x04not a pickle", "code": [Spell()],
                      "case": [(b"\x80\x04not a case", END, END)],
                      # A search that ends with nothing failed: the file would pass unsearched.
                      "ends held": [(first, END, END)],
                      "huge": b"\x80\x04\x8e" + (2**60).to_bytes(8, "little"),  # a length to make a MemoryError
                      # A case that loads but is no case of this property: checking it raises.
                      "wrong kind": [(pickle.dumps(7, protocol=4), END, END)]}[rows]
    forge(private_cache, prop, forged)
    kept = {"ends held": [paths.Node(first, END, END)], "wrong kind": [paths.Node(pickle.dumps(7, protocol=4), END,
                                                                                    END)]}
    assert SearchPaths.kept(True).tree(prop).nodes == kept.get(rows, [])
    assert verdict(Counting(1), prop, SearchPaths.kept(True)) == verdict(Counting(1), prop, None)
    assert SearchPaths.kept(True).tree(prop).nodes[0].case == case_key([0])  # find's own search replaced it


def test_a_tree_grows_no_further_than_its_bound(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(paths, "MAX_NODES", 5)
    tree = SearchTree()
    calls = [Call(case_key([k]), False) for k in range(20)]
    tree.add(calls, ended=True)
    assert len(tree.nodes) == 5
    assert SearchTree.from_rows(tree.rows() + [(case_key([9]), UNKNOWN, UNKNOWN)]).nodes == []  # too many: refused


def test_nothing_is_kept_where_the_cases_are_not(private_cache: Path):
    """Under weak isolation with hidden tests the drawn cases stay in memory (the submission might write the
    cache), and the trees are not kept at all."""
    prop = below(300)
    book = CaseBook.drawn([prop], on_disk=False)
    in_memory = SearchPaths.kept(False)
    search.run_property(Counting(1), prop, replay=book.replay(prop), paths=in_memory)  # type: ignore[arg-type]
    assert not list(private_cache.glob("paths-*.pickle"))
    assert in_memory.book is None and in_memory.tree(prop).nodes  # kept for the grading's other searches only


class Stateful(Counting):
    """Answers as Counting(1) for its first ``switch`` calls, then as Counting(3): a file that keeps state."""

    def __init__(self, switch: int) -> None:
        super().__init__(1)
        self.switch, self.asked = switch, []

    def call(self, name: str, *args: Any, record: int = 0) -> Returned:
        self.asked.append(list(args[0]))
        self.factor = 1 if self.calls < self.switch else 3
        return super().call(name, *args, record=record)


@pytest.mark.parametrize("switch", [3, 12, 30])
def test_a_file_that_keeps_state_is_called_as_find_alone_calls_it(switch: int, private_cache: Path):
    """The walk follows another file's path until this file's answers change, then find asks again the cases
    already answered: they are answered from the walk, so the child is called exactly as without kept searches
    (a first version told find what the walk had seen by case, and a stateful file was called less)."""
    prop = below(300)
    alone = Stateful(switch)
    expected = verdict(alone, prop, None)
    verdict(Counting(1), prop, SearchPaths.kept(True))  # another file's search, kept
    walked = Stateful(switch)
    assert verdict(walked, prop, SearchPaths.kept(True)) == expected
    assert walked.asked == alone.asked


def bug_file(tmp_path: Path, name: str) -> Path:
    bug, source, _, changes = next(b for b in BUGS if b[0] == name)
    text = source.read_text()
    for old, new in changes:
        text = text.replace(old, new)
    path = tmp_path / f"{name.replace(' ', '_')}.py"
    path.write_text(text)
    return path


def full(report: Any) -> list[Any]:
    return [report.score] + [(r.prop.id, r.outcome, r.message, r.snippet) for r in report.results]


def test_a_real_failing_file_gets_the_same_report_walked_as_searched(tmp_path: Path, private_cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    """The wrong root fails five properties of contact_time_grains and the DEM pair's (whose case is None): graded
    without kept searches, then keeping them, then walking them without Hypothesis, its report is the same."""
    path = bug_file(tmp_path, "wrong root")
    options = GradeOptions(only=("contact_time_grains", "dem_pair"))
    kept = SearchPaths.kept
    monkeypatch.setattr(SearchPaths, "kept", classmethod(lambda cls, on_disk: None))
    expected = full(grade_file(path, options))
    monkeypatch.setattr(SearchPaths, "kept", kept)
    assert full(grade_file(path, options)) == expected
    assert any(r[1] != PASSED for r in expected[1:])
    no_find(monkeypatch)
    assert full(grade_file(path, options)) == expected


@pytest.mark.parametrize("name", ["trivial_constants.py", "trivial_pass.py"])
@pytest.mark.parametrize("bug, items", [("wrong root", ("contact_time_grains", "minimum_contact_time")),
                                        ("equal-mass formula", ("contact_solve_grains",))])
def test_a_file_of_constants_walking_kept_searches_earns_what_it_earns_without(name: str, bug: str,
                                                                              items: tuple[str, ...], tmp_path: Path,
                                                                              private_cache: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    """A file that does nothing, or answers constants, graded after a real failing file kept its searches: the
    walk gives it the report find gives it, and the functions it does not write earn no point. The equal-mass
    formula fills the tree that the momentum, energy, swap and hidden agreement tests of contact_solve_grains
    share (Property.search_key)."""
    options = GradeOptions(only=items)
    grade_file(bug_file(tmp_path, bug), options)  # its searches are kept
    assert list(private_cache.glob("paths-*.pickle"))
    path = Path(__file__).parent / "submissions" / name
    ends, walk = [], SearchTree.walk
    monkeypatch.setattr(SearchTree, "walk", lambda tree, condition: ends.append(walk(tree, condition)) or ends[-1])
    walked = grade_file(path, options)
    assert any(ends)  # it failed as the wrong root did, and was reported from the kept searches
    kept = SearchPaths.kept
    monkeypatch.setattr(SearchPaths, "kept", classmethod(lambda cls, on_disk: None))
    assert full(walked) == full(grade_file(path, options))
    monkeypatch.setattr(SearchPaths, "kept", kept)
    assert walked.score == 0


@pytest.mark.parametrize("on_disk", [True, False])
def test_properties_searched_alike_share_their_kept_searches(on_disk: bool, private_cache: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    """Properties whose cases one module-level function builds, with the same counts, share one tree (on disk, or
    in memory for one grading): a second property that fails on the same cases walks the first one's search to the
    report its own find gives, calling the file on the same cases; one that fails elsewhere leaves the tree and is
    searched by find. A property built by a lambda keeps its own tree."""
    first, second, elsewhere = alike("first", 300), alike("second", 300), alike("elsewhere", 2500)
    assert first.search_key == second.search_key == elsewhere.search_key
    assert below(300).search_key != first.search_key and below(300).search_key.startswith("property")
    assert dataclasses.replace(first, examples=59).search_key != first.search_key  # counts steer find too
    expected = {p.name: (verdict(calls := Counting(), p, None), calls.calls) for p in (first, second, elsewhere)}
    assert expected["first"][0].outcome == expected["elsewhere"][0].outcome == FAILED
    assert expected["first"][0] != expected["elsewhere"][0]
    kept = SearchPaths.kept(on_disk)
    for prop in (first, elsewhere):
        calls = Counting()
        assert (verdict(calls, prop, kept), calls.calls) == expected[prop.name]
    no_find(monkeypatch)
    calls = Counting()
    assert (verdict(calls, second, kept), calls.calls) == expected["second"]
    assert len(list(private_cache.glob("paths-*.pickle"))) == (1 if on_disk else 0)


def test_a_real_file_failing_properties_searched_alike_is_searched_once(tmp_path: Path, private_cache: Path,
                                                                        monkeypatch: pytest.MonkeyPatch):
    """The equal-mass formula fails momentum, energy, swapping and the hidden agreement alike (the same cases, built
    by contacts.grain_contact_cases): graded afresh, one find is run for the four, and the report is the one a find per
    property gives."""
    path = bug_file(tmp_path, "equal-mass formula")
    options = GradeOptions(only=("contact_solve_grains",))
    finds: list[object] = []
    find = hypothesis.find

    def counted(strategy: Any, condition: Any, **kwargs: Any) -> Any:
        if isinstance(condition, search.Search):  # a search's find, not the drawing of the cases
            finds.append(condition.prop.id)
        return find(strategy, condition, **kwargs)

    monkeypatch.setattr(hypothesis, "find", counted)
    kept = SearchPaths.kept
    monkeypatch.setattr(SearchPaths, "kept", classmethod(lambda cls, on_disk: None))
    expected = full(grade_file(path, options))
    alone = len(finds)
    monkeypatch.setattr(SearchPaths, "kept", kept)
    finds.clear()
    assert full(grade_file(path, options)) == expected
    failing = [r for r in expected[1:] if r[1] != PASSED and "contact_solve_grains" in r[0]]
    assert alone == len(failing) >= 3  # momentum, energy, swapping, and the hidden agreement with the reference
    assert finds == [failing[0][0]]  # the first one's search, walked by the others: they fail on the same cases
