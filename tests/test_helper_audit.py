"""The audit of helper calls: a failing case is set aside only for a helper proved wrong.

Fast unit tests, no sandbox: a fake replayer stands for the child.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

import numpy as np
import pytest

from grader.grading import audit, reference_answers, tracing
from grader.grading.report import PASSED, SET_ASIDE
from grader.grading.search import Tally, _verdict_without_failure
from grader.grading.snippets import snippet
from grader.properties import oracle
from grader.sandbox import wire
from grader.sandbox.calls import HelperCall, Returned

X1, X2, V1, V2 = np.array([0.0, 0.0]), np.array([3.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 0.0])
#: Radii 1 and 1, centres 3 apart, closing at speed 1: they touch (2 apart) after 1.
TRUE_TIME = 1.0


def numeric(value: Any) -> wire.Numeric:
    array = np.asarray(value)
    return wire.Numeric(array.astype(float), array.dtype.kind, type(value).__name__)


def ctg_call(result: float, **kwargs: Any) -> HelperCall:
    args = (numeric(X1), numeric(X2), numeric(V1), numeric(V2), numeric(1.0), numeric(1.0))
    if kwargs.get("keywords"):
        return HelperCall("contact_time_grains", args[:2], {"v1": args[2], "v2": args[3], "R1": args[4],
                                                            "R2": args[5]}, numeric(result))
    return HelperCall("contact_time_grains", args, {}, numeric(result))


class FakeReplayer:
    """Answers replays with fixed values; counts them."""

    def __init__(self, answer: float, modifies: bool = False):
        self.answer, self.calls, self.modifies = answer, 0, modifies

    def call(self, name: str, *args: Any) -> Returned:
        self.calls += 1
        after = tuple(numeric(a * 0 if self.modifies and isinstance(a, np.ndarray) else a) for a in args)
        return Returned(numeric(self.answer), after)


REQUEST = (np.zeros((4, 2)), np.zeros((4, 2)), np.ones(4), np.zeros((4, 2, 2)), np.array([-1, -1]))
SUSPECTS = frozenset({"contact_time_grains"})


def returned_with(*calls: HelperCall) -> Returned:
    return Returned(None, (), calls, len(calls))


def test_the_true_contact_time_of_the_case():
    # Centres 3 apart, radii 1 and 1: they touch when 2 apart, after 1 time unit at speed 1.
    from reference.granularGas import contact_time_grains

    assert contact_time_grains(X1, X2, V1, V2, 1.0, 1.0) == pytest.approx(TRUE_TIME)


def test_a_wrong_helper_confirmed_by_its_replay_spoils_the_case():
    replayer = FakeReplayer(5.0)
    spoiled = audit.audit(replayer, "minimum_contact_time", REQUEST, returned_with(ctg_call(5.0)), SUSPECTS)
    assert spoiled is not None and spoiled.helper == "contact_time_grains" and replayer.calls == 1
    assert "fix contact_time_grains first" in spoiled.message() and "5.0" in spoiled.got


def test_keyword_calls_are_audited_like_positional_ones():
    spoiled = audit.audit(FakeReplayer(5.0), "minimum_contact_time", REQUEST,
                                 returned_with(ctg_call(5.0, keywords=True)), SUSPECTS)
    assert spoiled is not None


def test_a_record_the_replay_does_not_confirm_is_a_lie_and_changes_nothing():
    # The record claims 5.0, the helper really answers 1.0 (correct): the caller's failure stands.
    replayer = FakeReplayer(TRUE_TIME)
    assert audit.audit(replayer, "minimum_contact_time", REQUEST, returned_with(ctg_call(5.0)),
                              SUSPECTS) is None
    assert replayer.calls == 1


def test_right_answers_are_replayed_once_per_helper_to_see_their_arguments_unchanged():
    replayer = FakeReplayer(TRUE_TIME)
    records = returned_with(ctg_call(TRUE_TIME), ctg_call(TRUE_TIME), ctg_call(TRUE_TIME))
    assert audit.audit(replayer, "minimum_contact_time", REQUEST, records, SUSPECTS) is None
    assert replayer.calls == 1


def test_a_right_answer_that_modifies_its_arguments_spoils_the_case():
    spoiled = audit.audit(FakeReplayer(TRUE_TIME, modifies=True), "update", REQUEST,
                                 returned_with(ctg_call(TRUE_TIME)), SUSPECTS)
    assert spoiled is not None and spoiled.helper == "contact_time_grains" and "x2 changed" in spoiled.got  # x1 is zero: unchanged by the fake


def test_a_helper_that_passed_its_own_tests_is_never_blamed():
    assert audit.audit(FakeReplayer(5.0), "minimum_contact_time", REQUEST, returned_with(ctg_call(5.0)),
                              frozenset()) is None


def test_arguments_larger_than_the_case_are_never_given_to_the_reference():
    small_request = (np.zeros(2), np.zeros(2))  # 4 numbers; the recorded call has 10
    assert audit.audit(FakeReplayer(5.0), "update", small_request, returned_with(ctg_call(5.0)),
                              SUSPECTS) is None


def test_update_is_never_audited_as_a_helper():
    call = HelperCall("update", tuple(numeric(a) for a in REQUEST), {}, None)
    assert audit.positional(call) is None or "update" not in audit.AUDITED


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_recorded_arguments_are_skipped(bad):
    call = HelperCall("contact_time_grains", (numeric([bad, 0.0]),) + ctg_call(5.0).args[1:], {}, numeric(5.0))
    assert audit.positional(call) is None


def test_unknown_keywords_make_a_record_unusable():
    call = HelperCall("contact_time_grains", ctg_call(5.0).args[:5], {"radius": numeric(1.0)}, numeric(5.0))
    assert audit.positional(call) is None


def test_same_value_compares_numbers_not_objects():
    a = wire.Sequence((numeric([1.0, 2.0]), numeric(3.0)), "tuple", 2)
    b = wire.Sequence((numeric([1.0, 2.0]), numeric(3.0)), "tuple", 2)
    c = wire.Sequence((numeric([1.0, 2.0]), numeric(3.5)), "tuple", 2)
    assert audit.same_value(a, b) and not audit.same_value(a, c)
    assert audit.same_value(numeric(np.nan), numeric(np.nan))


def test_ill_conditioned_reference_answers_blame_nobody():
    # Grazing contact: the reference's time jumps when the inputs are nudged.
    grazing = (np.array([0.0, 0.0]), np.array([3.0, 2.0]), np.array([1.0, 0.0]), np.zeros(2), 1.0, 1.0)
    assert audit.reference_answer("contact_time_grains", grazing) is None


def _contact_time_calls(count: int, seed: int) -> list[tuple[str, tuple[Any, ...]]]:
    """Calls of both contact-time helpers as an audit reads them: mostly ordinary, some grazing, touching, still,
    overlapping, parallel, with signed zeros, huge or tiny numbers, equal wall points, or not in the bulk's shapes."""
    rng = np.random.default_rng(seed)

    def vector() -> np.ndarray:
        kind = rng.integers(0, 10)
        if kind == 0:
            return np.array([0.0, -0.0])[rng.permutation(2)]
        if kind == 1:
            return rng.integers(-3, 4, 2).astype(float)  # ties and exact contacts
        if kind == 2:
            return rng.normal(size=2) * 10.0 ** rng.integers(-300, 90)  # tiny to past the bulk's range
        return rng.normal(size=2)

    def radius() -> Any:
        kind = rng.integers(0, 12)
        return 1 if kind == 0 else 0.0 if kind == 1 else float(10.0 ** rng.integers(-5, 2) * rng.random() + 1e-300)

    calls: list[tuple[str, tuple[Any, ...]]] = []
    for _ in range(count):
        if rng.random() < 0.5:
            x1 = vector()
            x2 = x1 + np.array([2.0, 0.0]) if rng.random() < 0.1 else vector()  # touching when the radii sum to 2
            args: tuple[Any, ...] = (x1, x2, vector(), vector(), radius(), radius())
            if rng.random() < 0.03:
                args = (np.append(x1, 0.0),) + args[1:]
            calls.append(("contact_time_grains", args))
        else:
            start = vector()
            wall = np.array([start, start if rng.random() < 0.05 else vector()])
            calls.append(("contact_time_walls", (wall, vector(), vector(), radius())))
    return calls


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the one-by-one calls on numbers past the bulk's range
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_contact_times_computed_in_bulk_are_those_of_the_calls_one_by_one(monkeypatch, seed):
    calls = _contact_time_calls(4000, seed)
    monkeypatch.setattr(reference_answers, "_answers", {})
    one_by_one = [reference_answers.reference_answer(name, args) for name, args in calls]
    monkeypatch.setattr(reference_answers, "_answers", {})
    reference_answers.prefetch(calls)
    in_bulk = dict(reference_answers._answers)
    assert len(in_bulk) > len(calls) // 2  # most were taken in bulk (the rest: shapes, ranges it leaves out)
    for (name, args), expected in zip(calls, one_by_one, strict=True):
        function = getattr(oracle.reference(), name)
        key = reference_answers._key(function, name, args)
        if key in in_bulk:
            got = in_bulk[key]
            assert (got is None and expected is None) or (type(got) is float and np.float64(got).tobytes()
                                                           == np.float64(expected).tobytes()), (name, args)
    assert None in in_bulk.values() and sys.float_info.max in in_bulk.values()  # ill-conditioned, no contact


def test_calls_the_bulk_leaves_out_are_answered_one_by_one(monkeypatch):
    huge = (np.array([1e80, 0.0]), X2, V1, V2, 1.0, 1.0)
    integer_radius = (X1, X2, V1, V2, 1, 1)
    same_points = (np.array([[1.0, 0.0], [1.0, 0.0]]), X1, V1, 1.0)
    monkeypatch.setattr(reference_answers, "_answers", {})
    reference_answers.prefetch([("contact_time_grains", huge), ("contact_time_grains", integer_radius),
                                ("contact_time_walls", same_points)])
    assert reference_answers._answers == {}
    assert reference_answers.reference_answer("contact_time_grains", integer_radius) == TRUE_TIME
    assert reference_answers.reference_answer("contact_time_walls", same_points) is None  # the reference refuses


def test_a_property_whose_cases_were_mostly_set_aside_earns_nothing():
    spoiled = audit.Spoiled("update", "minimum_contact_time", (), "1.0", "2.0")
    verdict = _verdict_without_failure(None, Tally(passed=1, spoiled=[spoiled, spoiled]))
    outcome, message, cause = verdict.outcome, verdict.message, verdict.cause
    assert outcome == SET_ASIDE and "2 of 3 cases set aside" in message and "fix minimum_contact_time" in message
    assert cause is not None and cause.function == "minimum_contact_time"
    # A few cases set aside leave the test passing only if the caller's wrong answer follows from the helper's
    # (tracing.explained): a file calling a wrong helper for show must not have its own bug's cases set aside.
    assert _verdict_without_failure(None, Tally(passed=3, spoiled=[spoiled])).outcome == SET_ASIDE
    explained = audit.Spoiled("minimum_contact_time", "contact_time_grains", (), "1.0", "2.0", explained=True)
    assert _verdict_without_failure(None, Tally(passed=3, spoiled=[explained])).outcome == PASSED
    verdict = _verdict_without_failure(None, Tally(passed=3, spoiled=[explained, spoiled]), True)
    outcome, message = verdict.outcome, verdict.message
    assert outcome == SET_ASIDE and "does not follow from the helper's alone" in message
    # Without the trace (excuse_traced off, the default) the message does not claim it was worked out.
    verdict = _verdict_without_failure(None, Tally(passed=3, spoiled=[spoiled]))
    outcome, message = verdict.outcome, verdict.message
    assert outcome == SET_ASIDE and "follow" not in message and "counts once minimum_contact_time is fixed" in message
    assert _verdict_without_failure(None, Tally(passed=0)).outcome == PASSED


def test_snippet_reads_back_to_the_same_numbers():
    x = np.array([[0.1, 1.0 / 3.0], [2.0, sys.float_info.max]])
    text = snippet([("contact_time_walls", (x, np.array([0.5, 0.25]), np.array([1e-17, -3.0]), 0.7))])
    assert "from granularGas import contact_time_walls" in text
    namespace: dict[str, Any] = {"np": np}
    body = "\n".join(line for line in text.splitlines() if line.startswith(("w =", "x1 =", "v1 =", "R1 =")))
    exec(compile(ast.parse(body), "snippet", "exec"), namespace)
    assert np.array_equal(namespace["w"], x) and namespace["R1"] == 0.7 and namespace["v1"][0] == 1e-17


class RecordingChild:
    """A fake sandbox whose caller made ``records`` helper calls: a replay sends the first ``record`` of them, and the
    helper, replayed alone, answers what its records say (so the records are confirmed)."""

    def __init__(self, records: list[HelperCall]):
        self.records = records
        self.recorded: list[int] = []

    def call(self, name: str, *args: Any, record: int = 0) -> Returned:
        if name == "contact_time_grains":
            answer = next(c.result for c in self.records if np.array_equal(c.args[0].array, args[0]))
            return Returned(answer, tuple(map(numeric, args)))
        self.recorded.append(record)
        return Returned(None, (), tuple(self.records[:record]), len(self.records))


def ctg_call_from(x1: np.ndarray, result: float) -> HelperCall:
    args = (numeric(x1), numeric(X2), numeric(V1), numeric(V2), numeric(1.0), numeric(1.0))
    return HelperCall("contact_time_grains", args, {}, numeric(result))


@pytest.mark.parametrize("caller", ["update", "minimum_contact_time"])
@pytest.mark.parametrize("wrong_at", [3, 20, None])
def test_a_failing_case_is_replayed_with_a_few_records_then_with_all(wrong_at: int | None, caller: str):
    """The case is replayed recording the first few helper calls, and all of them only if none of those is proved
    wrong: the audit then sets aside what one replay recording them all would (the calls are read in order). A
    caller whose set-aside cases are traced (tracing.explained reads every helper call) is replayed recording all at
    once."""
    from grader.grading.search import _set_aside
    from grader.grading.session import Session
    from grader.properties.property import Property
    from grader.sandbox.calls import AUDIT_CALLS_KEPT, HELPER_CALLS_KEPT

    # Each record its own pair (x1 moved back by d: contact at 1 + d), so that the child can answer a replay of each.
    records = [ctg_call_from(X1 - [0.001 * k, 0.0], 5.0 if k == wrong_at else TRUE_TIME + 0.001 * k)
               for k in range(30)]
    child = RecordingChild(records)
    session = Session(child)  # type: ignore[arg-type]
    session.returns = [(caller, REQUEST, Returned(None, (), (), len(records)))]
    prop = Property(caller, "t", "t", lambda: None, lambda caller, case: None)  # type: ignore

    spoiled = _set_aside(session, prop, SUSPECTS)
    at_once = audit.audit(RecordingChild(records), caller, REQUEST,
                          Returned(None, (), tuple(records), len(records)), SUSPECTS)
    if caller in tracing.TRACEABLE:
        assert child.recorded == [AUDIT_CALLS_KEPT]  # and none more to explain the case
    else:  # the first few; all of them only if none of the first few is wrong
        assert child.recorded == [HELPER_CALLS_KEPT] + ([] if wrong_at == 3 else [AUDIT_CALLS_KEPT])
    if wrong_at is None:
        assert spoiled is None and at_once is None
    else:
        assert spoiled is not None and at_once is not None
        assert np.array_equal(spoiled.args[0], at_once.args[0])
        assert np.array_equal(spoiled.args[0], records[wrong_at].args[0].array)
        assert not spoiled.explained  # update's answers are never traced; minimum_contact_time's None is no time


def test_a_reference_answer_is_computed_once_per_process_for_the_same_arguments(monkeypatch):
    from grader.properties import oracle

    calls: list[tuple[Any, ...]] = []
    real = oracle.reference().contact_time_grains

    class Counting:
        @staticmethod
        def contact_time_grains(*args: Any) -> float:
            calls.append(args)
            return real(*args)

    monkeypatch.setattr(reference_answers, "_answers", {})
    monkeypatch.setattr(oracle, "reference", Counting)
    args = (X1, X2, V1, V2, 1.0, 1.0)
    first = audit.reference_answer("contact_time_grains", args)
    assert first == TRUE_TIME and len(calls) == 2  # the answer, then the nudged inputs (conditioning)
    assert audit.reference_answer("contact_time_grains", tuple(np.copy(a) for a in args[:4]) + args[4:]) == first
    assert len(calls) == 2  # the same numbers: answered from the memo
    assert audit.reference_answer("contact_time_grains", (X1, X2 + [1.0, 0.0], V1, V2, 1.0, 1.0)) == TRUE_TIME + 1.0
    assert len(calls) == 4


# -- a set-aside case of minimum_contact_time is explained only by its helpers' answers -----------------------

#: Grain 0 at the origin moving +x at 1 towards grain 1 (contact at 1.0) and a wall at x = 1.5 (contact at 0.5).
PAIR_X, PAIR_V = np.array([[0.0, 0.0], [3.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 0.0]])
WALL = np.array([[[1.5, -10.0], [1.5, 10.0]]])


def mct_request(walls: np.ndarray, index: tuple[int, int] = (-1, -1)) -> tuple[Any, ...]:
    return PAIR_X, PAIR_V, np.ones(2), walls, np.array(index)


def grains_call(a: int, b: int, answer: float) -> HelperCall:
    args = tuple(numeric(value) for value in (PAIR_X[a], PAIR_X[b], PAIR_V[a], PAIR_V[b], 1.0, 1.0))
    return HelperCall("contact_time_grains", args, {}, numeric(answer))


def wall_call(answer: float) -> HelperCall:
    return HelperCall("contact_time_walls", (numeric(WALL[0]), numeric(PAIR_X[0]), numeric(PAIR_V[0]),
                                             numeric(1.0)), {}, numeric(answer))


#: A call made for show, on inputs of no grain: the grains part (contact never), the answer 99.
SHOW = HelperCall("contact_time_grains", tuple(numeric(value) for value in (
    np.array([10.0, 10.0]), np.array([20.0, 20.0]), np.array([-1.0, 0.0]), np.array([1.0, 0.0]), 1.0, 1.0)), {},
    numeric(99.0))


def mct_answer(tc: float, calls: tuple[HelperCall, ...], total: int | None = None,
               index: tuple[int, int] = (0, 1)) -> Returned:
    value = wire.Sequence((numeric(tc), numeric(np.array(index))), "tuple", 2)
    return Returned(value, (), calls, len(calls) if total is None else total)


class Confirming:
    """A fake child whose helpers, replayed, answer what the records say."""

    def __init__(self, *returned: Returned):
        self.calls = [c for r in returned for c in r.helper_calls]

    def call(self, name: str, *args: Any) -> Returned:
        for c in self.calls:
            if c.name == name and all(np.array_equal(a.array, b) for a, b in zip(c.args, args)):
                return Returned(c.result, ())
        raise AssertionError("replayed a call never made")


def explained(caller: str, request: tuple[Any, ...], returned: Returned) -> bool:
    return tracing.explained(caller, [(request, returned)], Confirming(returned))


def test_a_wrong_time_that_is_the_least_of_the_helpers_answers_is_explained():
    request = mct_request(np.zeros((0, 2, 2)))
    assert explained("minimum_contact_time", request, mct_answer(0.5, (grains_call(0, 1, 0.5),)))
    # Not when some helper calls were not recorded, nor for a caller whose answer is not traced.
    assert not explained("minimum_contact_time", request, mct_answer(0.5, (grains_call(0, 1, 0.5),), 2))
    assert not explained("update", request, mct_answer(0.5, (grains_call(0, 1, 0.5),)))


def test_a_helper_called_for_show_explains_no_bug_of_the_caller():
    request = mct_request(np.zeros((0, 2, 2)))
    # Its own wrong time (0.7), not the helpers' least (1.0): the wrong call (99) changes nothing.
    assert not explained("minimum_contact_time", request, mct_answer(0.7, (grains_call(0, 1, 1.0), SHOW)))
    # Walls left out: the time is the least of its helpers' answers, but with the right answers in their place it
    # would still be wrong (the wall comes first at 0.5).
    walled = mct_request(WALL)
    assert not explained("minimum_contact_time", walled, mct_answer(1.0, (grains_call(0, 1, 1.0), SHOW)))
    assert explained("minimum_contact_time", walled, mct_answer(0.9, (grains_call(0, 1, 0.9),
                                                                              wall_call(2.0))))


def test_the_contact_solved_just_before_is_left_out_of_the_helpers_answers():
    # indexOld = [0, 1]: the caller may ask for that pair (here 0.2) and leave it out.
    request = mct_request(WALL, (0, 1))
    calls = (grains_call(0, 1, 0.2), wall_call(0.7))
    assert explained("minimum_contact_time", request, mct_answer(0.7, calls, index=(0, -1)))
    assert not explained("minimum_contact_time", request, mct_answer(0.2, calls))



def test_a_traced_time_needs_the_index_of_a_pair_that_gave_it():
    """A red team's file: a helper wrong (a hair early) only where the caller's own wrong index shows excused that
    index, the time being traced. The caller's index must name a pair that gave the least time."""
    request = mct_request(WALL)
    calls = (grains_call(0, 1, 1.0), wall_call(0.7))  # the reference: grain 0 meets the wall at 0.5; the helper: 0.7
    assert explained("minimum_contact_time", request, mct_answer(0.7, calls, index=(0, -1)))
    assert not explained("minimum_contact_time", request, mct_answer(0.7, calls, index=(0, 1)))  # the grains' pair
    assert not explained("minimum_contact_time", request, mct_answer(0.7, calls, index=(1, -1)))  # not that grain



def test_a_least_time_given_for_several_pairs_traces_no_index():
    """A red team's helper gave the least time for every pair (or once more for the pair a wrong index names): any
    index then named a pair at the least time. The caller's index must be the only one there."""
    request = mct_request(WALL)
    tied = (grains_call(0, 1, 0.7), wall_call(0.7))  # the reference: the wall at 0.5, the grains at 1.0
    assert not explained("minimum_contact_time", request, mct_answer(0.7, tied, index=(0, -1)))
    assert not explained("minimum_contact_time", request, mct_answer(0.7, tied, index=(0, 1)))
    alone = (grains_call(0, 1, 1.0), wall_call(0.7))
    assert explained("minimum_contact_time", request, mct_answer(0.7, alone, index=(0, -1)))


def test_a_pair_of_a_call_about_many_is_confirmed_alone_too():
    """A helper wrong only when called on many pairs at once (where its own tests never look) excuses nothing: the
    pair that gave the least time, replayed alone, must give that time too."""
    request = mct_request(WALL)
    walls = HelperCall("contact_time_walls", tuple(numeric(a) for a in (
        WALL, PAIR_X[0][None], PAIR_V[0][None], np.ones(1))), {}, numeric(np.array([0.7])))
    returned = mct_answer(0.7, (grains_call(0, 1, 1.0), walls), index=(0, -1))

    class FormDependent(Confirming):
        """Answers a replay of the whole call as recorded, the pair alone with ``alone``."""

        def __init__(self, alone: float):
            super().__init__(returned)
            self.alone = alone

        def call(self, name: str, *args: Any) -> Returned:
            if name == "contact_time_walls" and np.ndim(args[0]) == 2:
                return Returned(numeric(self.alone), ())
            return super().call(name, *args)

    pair = [(request, returned)]
    assert tracing.explained("minimum_contact_time", pair, FormDependent(0.7))
    assert not tracing.explained("minimum_contact_time", pair, FormDependent(0.5))  # right alone: wrong on purpose


def test_a_record_that_hid_an_earlier_contact_must_be_confirmed_too():
    """A file whose minimum_contact_time searched no wall of grain 0 (its own bug) recorded, with a flag, "no contact"
    for those walls: the caller's time then looked traced, the record never replayed. Every wrong answer the caller's
    rests on is now confirmed, not only the least."""
    request = mct_request(WALL)  # the reference: grain 0 meets the wall at 0.5, the grains meet at 1.0
    returned = mct_answer(1.0, (grains_call(0, 1, 1.0), wall_call(sys.float_info.max)), index=(0, 1))

    class Truthful(Confirming):
        """The helper replayed gives its true answer, not the flagged one it recorded."""

        def call(self, name: str, *args: Any) -> Returned:
            return Returned(numeric(0.5), ()) if name == "contact_time_walls" else super().call(name, *args)

    pair = [(request, returned)]
    assert tracing.explained("minimum_contact_time", pair, Confirming(returned))  # a helper that does say so
    assert not tracing.explained("minimum_contact_time", pair, Truthful(returned))

def test_a_call_about_many_pairs_is_replayed_once_whichever_of_its_pairs_is_wrong():
    """A red team's file made every pair of a 512-pair call wrong and never gave the same answers again: each pair
    replayed the whole call (52 s of grading instead of 7). Now one replay per recorded call."""
    call = _all_pairs_call(40, 5.0)
    wrong_everywhere = HelperCall(call.name, call.args, {}, numeric(np.full(40, 5.0)))
    replayer = FakeReplayer(6.0)  # never what was recorded: confirms nothing
    assert audit.audit(replayer, "minimum_contact_time", REQUEST, returned_with(wrong_everywhere, call),
                       SUSPECTS) is None
    # Once per recorded call (not once per wrong pair: 41), and one replay to see that a right answer left its
    # arguments as they were.
    assert replayer.calls == 3

def test_a_case_is_explained_when_every_wrong_time_of_the_caller_in_it_is():
    request = mct_request(np.zeros((0, 2, 2)))
    right, traced = mct_answer(1.0, (SHOW,)), mct_answer(0.5, (grains_call(0, 1, 0.5),))
    own = mct_answer(0.7, (grains_call(0, 1, 1.0), SHOW))
    child = Confirming(right, traced, own)
    assert tracing.explained("minimum_contact_time", [(request, right), (request, traced)], child)
    assert not tracing.explained("minimum_contact_time", [(request, right)], child)  # a wrong index, say: its own
    assert not tracing.explained("minimum_contact_time", [(request, traced), (request, own)], child)


def test_a_helper_call_about_made_up_bodies_or_unconfirmed_explains_nothing():
    """A review's attack: the caller's own wrong time (0.5), and a helper call about a grain that is not in the
    request answering that time, so that it was the least of the helpers' answers."""
    request = mct_request(np.zeros((0, 2, 2)))
    made_up = HelperCall("contact_time_grains", tuple(numeric(value) for value in (
        PAIR_X[0], np.array([5.0, 0.0]), PAIR_V[0], PAIR_V[1], 1.0, 1.0)), {}, numeric(0.5))
    assert not explained("minimum_contact_time", request, mct_answer(0.5, (grains_call(0, 1, 1.0), made_up)))
    # A wrong answer the helper does not give again (a forged record) explains nothing either.
    honest = mct_answer(0.5, (grains_call(0, 1, 0.5),))
    assert explained("minimum_contact_time", request, honest)
    forged = Confirming(mct_answer(0.5, (grains_call(0, 1, 0.75),)))
    assert not tracing.explained("minimum_contact_time", [(request, honest)], forged)


def test_a_bulk_computation_that_raises_leaves_the_calls_to_be_answered_one_by_one(monkeypatch):
    # numpy set to raise (np.seterr(all="raise")) or a reference that refuses: the shortcut must never be a fault.
    def refuse(*args: Any) -> None:
        raise FloatingPointError("overflow")

    monkeypatch.setattr(reference_answers, "_answers", {})
    monkeypatch.setattr(reference_answers, "_times", refuse)
    args = (X1, X2, V1, V2, 1.0, 1.0)
    reference_answers.prefetch([("contact_time_grains", args)])
    assert reference_answers._answers == {}
    assert reference_answers.reference_answer("contact_time_grains", args) == TRUE_TIME


def test_an_unusable_call_after_the_wrong_one_changes_nothing_even_where_numpy_raises():
    # The audit reads every recorded call's arguments before checking any (to fetch the reference's answers at
    # once): a later call holding integers past int64 must neither warn nor raise where numpy is set to raise.
    wrong = ctg_call_from(X1, 5.0)
    huge = HelperCall("contact_time_grains", (wire.Numeric(np.array([1e300, 0.0]), "i", "ndarray"),) + wrong.args[1:],
                      {}, numeric(TRUE_TIME))
    records = (wrong, huge)
    with np.errstate(all="raise"):
        spoiled = audit.audit(RecordingChild(list(records)), "minimum_contact_time", REQUEST,
                              Returned(None, (), records, len(records)), SUSPECTS)
    assert spoiled is not None and np.array_equal(spoiled.args[0], X1)


def test_a_radius_given_as_a_0d_array_is_nudged_as_before():
    # The nudge factors are kept per shape; a 0-d one must stay usable (read-only arrays, never numpy scalars).
    from grader.spec.tolerances import NUDGE, nudged

    args = (X1, np.array(1.0), 2.0, np.array([[1.0, 2.0]]))
    rng = np.random.default_rng(0)
    by_formula = tuple(a * (1 + NUDGE * rng.uniform(-1, 1, a.shape)) if isinstance(a, np.ndarray) else a
                       for a in args)
    for got, want in zip(nudged(args), by_formula, strict=True):
        assert type(got) is type(want) and np.asarray(got).tobytes() == np.asarray(want).tobytes()
    assert reference_answers.reference_answer("contact_time_grains", (X1, X2, V1, V2, np.array(1.0), 1.0)) == TRUE_TIME


def test_the_reference_is_asked_about_no_helper_call_of_a_case_a_made_up_call_leaves_untraced(monkeypatch):
    # A submission can record hundreds of calls about made-up bodies: they must not cost reference answers
    # (nor fill the memo), as before the answers were fetched all at once.
    request = mct_request(np.zeros((0, 2, 2)))
    made_up = HelperCall("contact_time_grains", tuple(numeric(value) for value in (
        PAIR_X[0], np.array([5.0, 0.0]), PAIR_V[0], PAIR_V[1], 1.0, 1.0)), {}, numeric(0.5))
    monkeypatch.setattr(reference_answers, "_answers", {})
    returned = mct_answer(0.5, (grains_call(0, 1, 1.0),) * 50 + (made_up,))
    assert tracing.traced("minimum_contact_time", request, returned, Confirming(returned)) is None
    assert all(b"contact_time_grains" not in key for key in reference_answers._answers)


@pytest.mark.parametrize("odd", [
    (0.0, 1.0, 0.0, 0.0, 0.5, 0.5),  # numbers for vectors (a red team's file: the audit crashed, a grader error)
    (PAIR_X[:1], PAIR_X[1:], PAIR_V[:1], PAIR_V[1:], 1.0, 1.0),  # one grain against an array of others
    (PAIR_X[0], PAIR_X[1], PAIR_V[0], PAIR_V[1], np.ones(2), 1.0),  # radii as an array
])
def test_a_helper_call_of_other_shapes_leaves_the_case_untraced_without_crashing(odd):
    request = mct_request(np.zeros((0, 2, 2)))
    call = HelperCall("contact_time_grains", tuple(numeric(value) for value in odd), {}, numeric(0.5))
    returned = mct_answer(0.5, (grains_call(0, 1, 0.5), call))
    assert tracing.traced("minimum_contact_time", request, returned, Confirming(returned)) is None


def test_a_right_time_with_a_wrong_index_is_not_explained_by_another_call_traced_to_a_helper():
    # A red team's reading: in a case calling minimum_contact_time twice, a call with the right time but a wrong
    # index (its own bug) counted as right, so one call traced to a wrong helper set the whole case aside.
    request = mct_request(np.zeros((0, 2, 2)))
    traced_call = mct_answer(0.5, (grains_call(0, 1, 0.5),))
    right = mct_answer(TRUE_TIME, (grains_call(0, 1, TRUE_TIME),))
    wrong_index = Returned(wire.Sequence((numeric(TRUE_TIME), numeric(np.array([0, -1]))), "tuple", 2), (),
                           right.helper_calls, right.helper_calls_total)
    child = Confirming(traced_call, right)
    assert tracing.explained("minimum_contact_time", [(request, right), (request, traced_call)], child)
    assert not tracing.explained("minimum_contact_time", [(request, wrong_index), (request, traced_call)], child)


def test_a_call_about_many_pairs_is_read_as_one_call_per_pair():
    xs, vs = np.array([[3.0, 0.0], [5.0, 0.0]]), np.zeros((2, 2))
    one_against_many = (X1, xs, V1, vs, 1.0, np.array([1.0, 1.0]))
    split = audit.pieces("contact_time_grains", one_against_many, numeric(np.array([1.0, 3.0])))
    assert [(p[1].tolist(), p[5], float(a.array)) for p, a in split] == [([3.0, 0.0], 1.0, 1.0), ([5.0, 0.0], 1.0, 3.0)]
    assert all(p[0] is X1 and p[4] == 1.0 and type(p[5]) is float for p, _ in split)
    walls = np.array([[[1.5, -1.0], [1.5, 1.0]], [[-1.5, -1.0], [-1.5, 1.0]]])
    assert len(audit.pieces("contact_time_walls", (walls, X1, V1, 1.0), numeric(np.array([0.5, sys.float_info.max])))) == 2
    # Anything else is the call itself: lengths that disagree, a single pair, another helper, no array of times.
    for args, result in ((one_against_many, numeric(np.array([1.0, 2.0, 3.0]))), ((X1, X2, V1, V2, 1.0, 1.0),
                         numeric(np.array([1.0]))), (one_against_many, numeric(1.0))):
        assert audit.pieces("contact_time_grains", args, result) == [(args, result)]


def test_a_wrong_answer_in_a_call_about_many_pairs_spoils_the_case_with_that_pair():
    xs, vs = np.array([[3.0, 0.0], [5.0, 0.0]]), np.zeros((2, 2))
    args = (X1, xs, V1, vs, 1.0, np.array([1.0, 1.0]))
    call = HelperCall("contact_time_grains", tuple(numeric(a) for a in args), {}, numeric(np.array([1.0, 9.0])))

    class Replaying:
        def call(self, name: str, *replayed: Any) -> Returned:
            return Returned(call.result, ())

    spoiled = audit.audit(Replaying(), "minimum_contact_time", REQUEST, returned_with(call), SUSPECTS)
    assert spoiled is not None and np.array_equal(spoiled.args[1], xs[1]) and spoiled.expected == "3.0"


def test_a_call_about_more_pairs_than_an_audit_reads_is_not_split(monkeypatch):
    # A file could record calls about huge arrays of made-up pairs: splitting them would cost the grader (outside
    # the box) time and memory without bound. Past AUDIT_CALLS pairs, the case is left untraced, unsplit.
    request = mct_request(np.zeros((0, 2, 2)))
    many = 10_000
    xs, vs = np.tile(PAIR_X[1], (many, 1)), np.zeros((many, 2))
    huge = HelperCall("contact_time_grains", tuple(numeric(a) for a in (PAIR_X[0], xs, PAIR_V[0], vs, 1.0,
                                                                          np.ones(many))), {},
                      numeric(np.full(many, 0.5)))
    returned = mct_answer(0.5, (huge,))
    calls: list[Any] = []
    real = audit.pieces
    monkeypatch.setattr(audit, "pieces", lambda *args: calls.append(args) or real(*args))
    assert tracing.traced("minimum_contact_time", request, returned, Confirming(returned)) is None
    assert calls == []



def _all_pairs_call(copies: int, wrong: float) -> HelperCall:
    """contact_time_grains on ``copies`` copies of the true pair at once (more numbers than REQUEST holds), the
    last answer ``wrong``."""
    args = (np.tile(X1, (copies, 1)), np.tile(X2, (copies, 1)), np.tile(V1, (copies, 1)), np.tile(V2, (copies, 1)),
            np.ones(copies), np.ones(copies))
    answers = np.full(copies, TRUE_TIME)
    answers[-1] = wrong
    return HelperCall("contact_time_grains", tuple(numeric(a) for a in args), {}, numeric(answers))


def test_a_call_about_all_pairs_at_once_is_read_pair_by_pair(monkeypatch):
    """A call holding more numbers than the request (the honest vectorised style: every pair at once) is read when
    it splits into pairs of the case's size, at most AUDIT_CALLS of them: its wrong pair spoils the case."""
    call = _all_pairs_call(40, 5.0)
    assert audit.size(audit.positional(call)) > audit.size(REQUEST)

    class Replaying:
        def call(self, name: str, *replayed: Any) -> Returned:
            return Returned(call.result, ())

    spoiled = audit.audit(Replaying(), "minimum_contact_time", REQUEST, returned_with(call), SUSPECTS)
    assert spoiled is not None and spoiled.got == "5.0" and spoiled.expected == repr(TRUE_TIME)
    # More pairs than an audit reads: never split (the grader works outside the box), the case not spoiled.
    split: list[Any] = []
    real = audit.pieces
    monkeypatch.setattr(audit, "pieces", lambda *args: split.append(args) or real(*args))
    big = _all_pairs_call(audit.AUDIT_CALLS + 1, 5.0)
    assert audit.audit(Replaying(), "minimum_contact_time", REQUEST, returned_with(big), SUSPECTS) is None
    assert split == []


def test_a_large_call_that_does_not_split_into_pairs_is_not_read(monkeypatch):
    """Arrays that pieces() does not split (a grid of all pairs, (n, n, 2)) are not read when over the budget: the
    reference is never asked about them."""
    grid = np.zeros((6, 6, 2))
    args = (grid, grid, grid, grid, np.ones((6, 6)), np.ones((6, 6)))
    call = HelperCall("contact_time_grains", tuple(numeric(a) for a in args), {}, numeric(np.full((6, 6), 5.0)))
    asked: list[Any] = []
    monkeypatch.setattr(audit, "reference_answer", lambda name, piece: asked.append(piece))
    replayer = FakeReplayer(5.0)
    assert audit.audit(replayer, "minimum_contact_time", REQUEST, returned_with(call), SUSPECTS) is None
    assert replayer.calls == 0 and asked == []

def test_answers_are_kept_per_argument_bits():
    """Two calls share a kept answer only when their arguments are the same bit for bit."""
    function = oracle.reference().contact_time_grains

    def key(*args):
        return reference_answers._key(function, "contact_time_grains", args)

    base = (X1, X2, V1, V2, 1.0, 1.0)
    assert key(*base) == key(*(np.copy(a) if isinstance(a, np.ndarray) else a for a in base))
    assert key(X1, X2, V1, V2, 1.0, 0.0) != key(X1, X2, V1, V2, 1.0, -0.0)  # signed zeros
    assert key(X1, X2, V1, V2, 1.0, 1.0) != key(X1, X2, V1, V2, 1.0, 1)  # float and int
    assert key(X1, X2, V1, V2, 1.0, 1) != key(X1, X2, V1, V2, 1.0, True)  # int and bool
    assert key(X1.astype(np.float32), X2, V1, V2, 1.0, 1.0) != key(*base)  # dtypes
    assert key(X1.reshape(2, 1), X2, V1, V2, 1.0, 1.0) != key(*base)  # shapes
    assert key(np.nextafter(X1, 5.0), X2, V1, V2, 1.0, 1.0) != key(*base)  # one ulp
    assert key(X1.astype(object), X2, V1, V2, 1.0, 1.0) != key(X1.astype(object) + 1, X2, V1, V2, 1.0, 1.0)


@pytest.mark.parametrize("value", [0.0, -0.0, 2.5, -1e300, 5e-324, np.inf, np.nan])
@pytest.mark.parametrize("shape", [(), (2,), (2, 2)])
@pytest.mark.parametrize("kind", ["f", "b", "i", "u"])
def test_plain_reads_an_argument_as_numpy_would(value, shape, kind):
    """audit.plain's fast path for floats gives what its general path gives (the same values, None for the same
    arguments)."""
    array = np.full(shape, value)
    if kind != "f":
        if not abs(value) < 2.0**62:  # integers the child can send as such
            return
        array = np.abs(array).astype(int)
    decoded = wire.Numeric(array.astype(float), kind, "ndarray")
    got = audit.plain(decoded)
    if not np.all(np.isfinite(decoded.array)):
        assert got is None
        return
    with np.errstate(invalid="ignore"):
        general = decoded.array.astype(int) if kind in "iu" else decoded.array.astype(float)
    expected = (int(general) if kind in "iu" else float(general)) if general.ndim == 0 else general
    assert type(got) is type(expected) and np.asarray(got).tobytes() == np.asarray(expected).tobytes()
    if isinstance(got, np.ndarray):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert not np.shares_memory(got, decoded.array)  # a copy: the reference may not change the record


def test_the_fresh_box_starts_at_its_first_replay_and_closes_with_the_grading():
    """tracing.FreshBox: no box for a grading that confirms nothing; a box of its own (its own process and folders)
    at the first replay; closed at the end."""
    from pathlib import Path

    from grader.spec.limits import Limits

    path = Path(__file__).parent / "submissions" / "correct_textbook.py"
    with tracing.FreshBox(path, Limits()) as box:
        assert box.box is None
        answer = box.call("contact_time_grains", X1, X2, V1, V2, 1.0, 1.0)
        assert float(answer.value.array) == pytest.approx(TRUE_TIME) and box.box is not None
        first = box.box
        box.call("contact_time_grains", X1, X2, V1, V2, 1.0, 1.0)
        assert box.box is first  # one box for the whole grading
    assert box.box is None


def test_a_fresh_box_that_cannot_start_is_the_graders_fault_not_an_untraced_case():
    from grader.errors import SandboxFault

    request = mct_request(np.zeros((0, 2, 2)))
    traced = mct_answer(0.5, (grains_call(0, 1, 0.5),))  # a wrong least helper time: its replay confirms it

    class Broken:
        def call(self, name: str, *args: Any) -> Returned:
            raise SandboxFault("the box would not start")

    with pytest.raises(SandboxFault):
        tracing.explained("minimum_contact_time", [(request, traced)], Broken())


def test_pairs_are_confirmed_alone_before_any_whole_call_is_replayed():
    """A red team's helper, replayed the whole call about many pairs first (it sees every body of the request),
    worked out the lie its caller needed and kept it for the pair alone. Pairs now go first."""
    request = mct_request(WALL)
    walls = HelperCall("contact_time_walls", tuple(numeric(a) for a in (
        WALL, PAIR_X[0][None], PAIR_V[0][None], np.ones(1))), {}, numeric(np.array([0.7])))
    returned = mct_answer(0.7, (grains_call(0, 1, 1.0), walls), index=(0, -1))

    class Learning(Confirming):
        """Answers a pair alone with the recorded lie only once it has seen the whole call."""

        def __init__(self) -> None:
            super().__init__(returned)
            self.seen_whole = False

        def call(self, name: str, *args: Any) -> Returned:
            if name == "contact_time_walls" and np.ndim(args[0]) == 2:
                return Returned(numeric(0.7 if self.seen_whole else 0.5), ())
            self.seen_whole = self.seen_whole or name == "contact_time_walls"
            return super().call(name, *args)

    assert not tracing.explained("minimum_contact_time", [(request, returned)], Learning())


def test_an_auditor_box_that_cannot_start_is_the_graders_fault_not_a_case_counted():
    """A second red team: the audit caught every exception of its replays, the auditor box's SandboxFault too, so a
    machine fault there counted the case against the file instead of ending the grading as the grader's."""
    from grader.errors import SandboxFault

    class Broken:
        def call(self, name: str, *args: Any) -> Returned:
            raise SandboxFault("the box would not start")

    for answer in (5.0, TRUE_TIME):  # a wrong answer's confirmation, and a right answer's check of its arguments
        with pytest.raises(SandboxFault):
            audit.audit(Broken(), "minimum_contact_time", REQUEST, returned_with(ctg_call(answer)), SUSPECTS)
