"""Drawn cases, kept and replayed: the same verdicts, messages and calls as Hypothesis's own search; a cache that
cannot run code, and is refused when others may write it. No child process: a stand-in sandbox."""

from __future__ import annotations

import contextlib
import os
import pickle
import random
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from grader.errors import CacheError
from grader.grading import cases, search
from grader.grading.cases import CaseBook
from grader.grading.report import FAILED, PASSED
from grader.grading.runner import GradeOptions, all_properties, cases_on_disk, draw_cases
from grader.properties import contacts
from grader.properties.property import Property, fail
from grader.spec import paths

from .test_runner import Counting


def below(limit: int) -> Property:
    def check(caller: Any, case: list[int]) -> None:
        if caller.call("contact_time_grains", case).value > limit:
            fail(f"sum {sum(case)} > {limit}")

    return Property("contact_time_grains", f"sums below {limit}", "lists",
                    lambda: st.lists(st.integers(0, 1000), min_size=1, max_size=8), check, shrink_cases=50)


@pytest.mark.parametrize("limit", [10**9, 2500, 300])
def test_replaying_gives_what_the_search_gives_with_as_many_calls(limit: int, private_cache: Path):
    prop = below(limit)
    book = CaseBook.drawn([prop], on_disk=True)
    searched, replayed = Counting(), Counting()
    verdict = search.run_property(searched, prop)  # type: ignore[arg-type]
    assert search.run_property(replayed, prop, replay=book.replay(prop)) == verdict  # type: ignore[arg-type]
    # Every drawn case is called, whatever the answers before it (what the grading's box sees does not depend on
    # the verdicts); the search then meets them again without calling the child (and so it does cases equal to one
    # already tried, which Hypothesis may draw again while it shrinks): beyond them, it calls at most what it alone
    # would.
    drawn = len(list(book.replay(prop)))  # type: ignore[arg-type]
    assert drawn <= replayed.calls <= searched.calls + drawn
    assert replayed.calls == searched.calls or verdict.outcome == FAILED
    assert verdict.outcome == (PASSED if limit == 10**9 else FAILED)


def test_a_property_that_holds_is_never_searched(private_cache: Path, monkeypatch: pytest.MonkeyPatch):
    prop = below(10**9)
    book = CaseBook.drawn([prop], on_disk=True)

    def no_search(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Hypothesis searched a property whose replayed cases all held")

    monkeypatch.setattr(hypothesis, "find", no_search)  # what the search would import
    sandbox = Counting()
    assert search.run_property(sandbox, prop, replay=book.replay(prop)).outcome == PASSED  # type: ignore[arg-type]
    assert sandbox.calls == prop.examples


def test_the_drawn_cases_are_the_ones_find_tries(private_cache: Path):
    """Over the real properties: what is kept is what find gives a condition that never fails, in order."""
    props = [p for p in all_properties(hidden=False) if p.examples <= 20][:3]
    book = CaseBook.drawn(props, on_disk=True)
    for prop in props:
        seen: list[bytes] = []

        def record(case: Any, seen: list[bytes] = seen) -> tuple[str, None]:
            seen.append(cases.case_key(case))
            return search.HELD, None

        condition = search.Search(Counting(), prop, frozenset())  # type: ignore[arg-type]
        condition._verify = record  # type: ignore[method-assign]
        with pytest.raises(NoSuchExample):
            hypothesis.find(prop.strategy, condition, settings=cases.hypothesis_settings(prop.examples))
        kept = book.cases(prop)
        assert kept is not None and [cases.case_key(c) for c in kept] == seen and seen
        # The replay's keys (the cases as kept) are what case_key gives the copies find meets again.
        assert [key for key, _ in book.replay(prop) or ()] == seen


def test_properties_searched_alike_are_drawn_once_and_given_the_cases_find_gives_each(
        private_cache: Path, monkeypatch: pytest.MonkeyPatch):
    """contact_solve_grains's properties (the hidden one's too) build their cases with one function: one drawing
    serves them all, and it is what find gives each of them."""
    alike = [p for p in all_properties(hidden=True) if p.inputs is contacts.grain_contact_cases]
    assert len(alike) == 5 and {p.item for p in alike} == {"contact_solve_grains"}
    drawn: list[str] = []
    draw = cases.draw
    monkeypatch.setattr(cases, "draw", lambda prop: drawn.append(prop.id) or draw(prop))
    book = CaseBook.drawn(alike, on_disk=True)
    assert drawn == [alike[0].id]
    for prop in alike[1:]:
        assert [key for key, _ in book.replay(prop) or ()] == draw(prop)


def test_the_cache_is_written_once_and_read_back(private_cache: Path, monkeypatch: pytest.MonkeyPatch):
    prop = below(50)
    first = CaseBook.drawn([prop], on_disk=True)
    path = cases.cache_file()
    assert path is not None and path.exists() and path.parent == private_cache
    assert oct(private_cache.stat().st_mode & 0o777) == oct(0o700)

    def no_drawing(prop: Property) -> list[bytes]:
        raise AssertionError("drew cases the cache holds")

    monkeypatch.setattr(cases, "draw", no_drawing)
    again = CaseBook.drawn([prop], on_disk=True)
    assert [cases.case_key(c) for c in again.cases(prop) or ()] == [cases.case_key(c) for c in first.cases(prop) or ()]


class Planted:
    """What a forged cache would hold: an object whose unpickling runs a command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


def test_a_forged_cache_runs_no_code_and_is_drawn_again(private_cache: Path, tmp_path: Path):
    prop = below(50)
    CaseBook.drawn([prop], on_disk=True)
    path = cases.cache_file()
    assert path is not None
    marker = tmp_path / "ran"
    with pytest.raises(pickle.UnpicklingError, match="may not hold"):
        cases.load_case(pickle.dumps(Planted(marker)))
    forgeries = [pickle.dumps({prop.id: [pickle.dumps(Planted(marker))]}),  # one case forged
                 pickle.dumps(Planted(marker)),  # the whole book
                 b"not a pickle"]
    for forged in forgeries:
        path.write_bytes(forged)
        book = CaseBook.drawn([prop], on_disk=True)  # refused when read, drawn again
        assert len(list(book.cases(prop) or ())) == prop.examples
        assert cases._read(path) != {}  # and written back
    assert not marker.exists()


def test_a_case_naming_a_module_that_does_not_exist_is_refused_not_imported():
    forged = b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x19grader.properties.missing\x94\x8c\x04Case\x94\x93\x94."
    with pytest.raises(pickle.UnpicklingError, match="may not hold grader.properties.missing.Case"):
        cases.load_case(forged)


def test_a_cache_folder_others_may_write_is_refused(private_cache: Path):
    private_cache.mkdir(mode=0o700)
    private_cache.chmod(0o777)
    with pytest.raises(CacheError, match=f"chmod 700 {private_cache}"):
        CaseBook.drawn([below(50)], on_disk=True)


def test_the_key_follows_the_sources(monkeypatch: pytest.MonkeyPatch):
    before = cases.version_key()
    monkeypatch.setattr(cases, "source_digest", lambda: "an edited grader")
    assert cases.version_key() != before


def test_hidden_tests_under_weak_isolation_do_not_trust_the_cache():
    """The submission may write the user's files when the isolation is weak: then the cache could be forged."""
    assert cases_on_disk(strong=True, hidden=True)
    assert cases_on_disk(strong=False, hidden=False)  # the student's own self-check: theirs to forge
    assert not cases_on_disk(strong=False, hidden=True)


def test_draw_cases_fills_the_cache_for_every_property_graded(private_cache: Path, monkeypatch: pytest.MonkeyPatch):
    """What a batch does before its workers, and a Gradescope image when it is built."""
    draw_cases(GradeOptions(hidden=False))

    def no_drawing(prop: Property) -> list[bytes]:
        raise AssertionError(f"{prop.id} was not drawn in advance")

    monkeypatch.setattr(cases, "draw", no_drawing)
    props = all_properties(hidden=False)
    book = CaseBook.drawn(props, on_disk=True)
    assert all(book.cases(p) is not None for p in props)


def test_a_user_without_a_home_draws_in_memory(monkeypatch: pytest.MonkeyPatch):
    """No HOME and no password entry (a uid of its own): no cache folder, no error; the sandbox's secrets too."""
    from grader.sandbox import allow_list

    def homeless() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv(paths.CASE_CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(homeless))
    assert paths.case_cache_folder() is None and cases.cache_file() is None
    prop = below(50)
    assert len(list(CaseBook.drawn([prop], on_disk=True).cases(prop) or ())) == prop.examples
    assert allow_list.secrets()


def test_a_file_that_passes_every_replayed_case_is_graded_without_importing_hypothesis(private_cache: Path):
    """Importing Hypothesis is a third of a fresh grader's imports: only a failing property (or a missing case)
    needs it. Real gradings in fresh processes, the first one drawing the cases."""
    root = Path(__file__).parents[1]
    program = ("import sys\nfrom grader.grading.runner import GradeOptions, grade_file\n"
               "report = grade_file(sys.argv[1], GradeOptions(hidden=False, only=('contact_time_grains',)))\n"
               "print(report.score, 'hypothesis' in sys.modules)\n")

    def grade(path: Path) -> str:
        run = subprocess.run([sys.executable, "-c", program, str(path)], capture_output=True, text=True,
                             timeout=600, cwd=root)
        assert run.returncode == 0, run.stderr[-2000:]
        return run.stdout.split()[-1]

    correct = root / "tests" / "submissions" / "correct_textbook.py"
    assert grade(correct) == "True"  # the cases were drawn
    assert grade(correct) == "False"
    wrong = private_cache.parent / "granularGas.py"
    wrong.write_text(correct.read_text().replace("(-b - np.sqrt(disc))", "(-b + np.sqrt(disc))"))
    assert wrong.read_text() != correct.read_text() and grade(wrong) == "True"


def test_the_cache_key_follows_the_hypothesis_that_would_be_imported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Read from the package's version.py, not its install metadata (missing for a vendored copy, or stale)."""
    import importlib.util

    key = cases.version_key()
    fake = tmp_path / "hypothesis"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "version.py").write_text("__version_info__ = (0, 0, 1)\n")
    real = importlib.util.find_spec

    def elsewhere(name: str, *args: Any) -> Any:
        return importlib.util.spec_from_file_location(name, fake / "__init__.py") if name == "hypothesis" \
            else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", elsewhere)
    assert cases.version_key() != key


@pytest.mark.parametrize("condition", range(3))
def test_the_stored_building_blocks_draw_what_fresh_ones_draw(condition: int):
    """strategies.py keeps its floats and vectors built and unwrapped: every case and every shrinking step must be
    what freshly built ones give (the same choices, spans and labels)."""
    from hypothesis.strategies._internal.lazy import unwrap_strategies

    from grader.properties import strategies as S

    def fresh_vectors(scale: float) -> st.SearchStrategy:
        return S._vectors(scale)  # a new lazy composite, as before the cache

    def fresh_floats(lo: float, hi: float) -> st.SearchStrategy:
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False)  # lazy, unwrapped at each draw

    stored = st.tuples(S.vectors(), S.vectors(S.MAX_SPEED), S.radii, S.colliding_pairs())
    fresh = st.tuples(fresh_vectors(S.COORD), fresh_vectors(S.MAX_SPEED), fresh_floats(S.MIN_RADIUS, S.MAX_RADIUS),
                      S.colliding_pairs())
    # Stored unwrapped where Hypothesis draws lazy strategies unwrapped (else as they are): the test compares drawing
    # them with drawing fresh lazy ones either way.
    assert S.radii is S._built(fresh_floats(S.MIN_RADIUS, S.MAX_RADIUS))
    assert S.vectors() is not fresh_vectors(S.COORD)
    if hypothesis.__version_info__ >= S._DRAWS_UNWRAPPED:
        assert S.radii is unwrap_strategies(fresh_floats(S.MIN_RADIUS, S.MAX_RADIUS)) is not fresh_floats(
            S.MIN_RADIUS, S.MAX_RADIUS)

    def fails(case: Any) -> bool:  # conditions the shrinker works on in different ways
        if condition == 0:
            return bool(case[2] > 1.0 and case[3].R1 > 0.5)
        if condition == 1:
            return bool(abs(case[0][0] - case[1][1]) > 3.0)
        return zlib.crc32(repr(case).encode()) % 5 == 0

    def tried(strategy: st.SearchStrategy) -> list[str]:
        seen: list[str] = []
        found = hypothesis.find(strategy, lambda case: bool(seen.append(repr(case))) or fails(case),
                                settings=cases.hypothesis_settings(60))
        return [*seen, repr(found)]

    assert tried(stored) == tried(fresh)
    assert [d.label for d in (S.vectors(), S.radii)] == [fresh_vectors(S.COORD).label,
                                                         fresh_floats(S.MIN_RADIUS, S.MAX_RADIUS).label]


#: Properties whose cases draw strategies inside other draws (composites with and without arguments, signs, filtered
#: floats): grain pairs of every kind, walls of every kind, transformed and resited ones, a collision's masses.
_NESTED_DRAWS = (("contact_time_grains", "no contact"), ("contact_time_grains", "symmetry and invariance"),
                 ("contact_time_walls", "no contact"), ("contact_time_walls", "walls of any length and point order"),
                 ("contact_solve_wall", "walls of any length and point order"), ("contact_solve_grains", "momentum"))


@pytest.mark.parametrize("item, name", _NESTED_DRAWS)
def test_strategies_stored_for_draws_inside_draws_try_what_fresh_ones_try(item: str, name: str,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """strategies.stored and with_arguments keep what a draw inside a draw runs, instead of a fresh strategy each
    time: the cases find tries, shrinking included, must be those that fresh strategies give."""
    from grader.properties import strategies as S

    (prop,) = [p for p in all_properties(True) if (p.item, p.name) == (item, name)]

    def tried(condition: int) -> list[str]:
        seen: list[str] = []

        def fails(case: Any) -> bool:
            seen.append(repr(case))
            return len(seen) > 20 and zlib.crc32(seen[-1].encode()) % (3 + 4 * condition) == 0

        found = hypothesis.find(prop.strategy, fails, settings=cases.hypothesis_settings(60))
        return [*seen, repr(found)]

    stored = [tried(condition) for condition in range(2)]
    assert S.with_arguments(S._relative_velocity, np.array([1.0, 0.0]), toward=True) is not S.with_arguments(
        S._relative_velocity, np.array([1.0, 0.0]), toward=True)
    monkeypatch.setattr(S, "stored", lambda make: make())
    monkeypatch.setattr(S, "with_arguments", lambda composite, *args, **kwargs: composite(*args, **kwargs))
    monkeypatch.setattr(S, "signs", st.sampled_from([-1.0, 1.0]))
    monkeypatch.setattr(S, "_no_contact_kinds", st.sampled_from(["away", "parallel", "overlap"]))
    monkeypatch.setattr(S, "_quarter_turns", st.sampled_from([0.0, 0.5, 1.0, 1.5]))
    monkeypatch.setattr(S, "_sideways", st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False).filter(
        lambda s: abs(s) > 0.02))

    def fresh_floats(lo: float, hi: float) -> st.SearchStrategy:
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False)  # lazy, unwrapped at each draw

    monkeypatch.setattr(S, "_floats", fresh_floats)
    monkeypatch.setattr(S, "floats", fresh_floats)
    assert [tried(condition) for condition in range(2)] == stored


def test_find_tries_the_same_cases_without_reseeding_the_global_generators_and_leaves_them_alone():
    """cases.without_global_reseeding spares Hypothesis's saving, seeding and restoring of random's and numpy's global
    generators around every case: find tries the same cases (shrinking included) as with it, nothing the search runs
    draws from them (their states are as they were after it, though nothing restored them), and Hypothesis's own
    reseeding is back after."""
    from hypothesis import core

    (prop,) = [p for p in all_properties(True) if p.id == "contact_solve_grains: momentum"]
    reseeding = core.deterministic_PRNG

    def tried(skip: bool) -> list[str]:
        seen: list[str] = []

        def fails(case: Any) -> bool:
            assert (core.deterministic_PRNG is contextlib.nullcontext) is skip
            seen.append(repr(case))
            return len(seen) > 20 and zlib.crc32(seen[-1].encode()) % 3 == 0

        with cases.without_global_reseeding() if skip else contextlib.nullcontext():
            found = hypothesis.find(prop.strategy, fails, settings=cases.hypothesis_settings(60))
        return [*seen, repr(found)]

    random.seed(5)
    np.random.seed(5)
    before, numpy_before = random.getstate(), np.random.get_state()
    assert tried(True) == tried(False)
    assert random.getstate() == before
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), numpy_before))
    assert core.deterministic_PRNG is reseeding
    first, second = cases.without_global_reseeding(), cases.without_global_reseeding()  # as two threads would
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert core.deterministic_PRNG is contextlib.nullcontext  # the second still runs without it
    second.__exit__(None, None, None)
    assert core.deterministic_PRNG is reseeding  # the last one out put it back (a review's interleaving left it off)
