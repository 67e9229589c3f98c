"""The runner's search, with a stand-in sandbox: fast, no child process."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from grader.grading import runner, search
from grader.grading.report import FAILED
from grader.properties.property import Property, fail
from grader.sandbox.calls import Returned


class Counting:
    """A sandbox whose one function returns ``factor`` times the sum of its argument, counting calls."""

    def __init__(self, factor: int = 1) -> None:
        self.factor, self.calls = factor, 0

    def call(self, name: str, *args: Any, record: int = 0) -> Returned:
        self.calls += 1
        return Returned(self.factor * sum(args[0]), args, (), 0, 0.0)


def big_sums_fail(caller: Any, case: list[int]) -> None:
    if caller.call("contact_time_grains", case).value > 1000:
        fail(f"sum {sum(case)} > 1000")


def prop(shrink_cases: int) -> Property:
    return Property("contact_time_grains", "small sums", "lists", lambda: st.lists(st.integers(0, 10**6), min_size=5),
                    big_sums_fail, shrink_cases=shrink_cases)


def test_shrinking_stops_after_its_budget_on_a_real_failure():
    free, bounded = Counting(), Counting()
    verdict = search.run_property(free, prop(10_000))  # type: ignore[arg-type]
    outcome, message = verdict.outcome, verdict.message
    small = search.run_property(bounded, prop(5))  # type: ignore[arg-type]
    small_outcome, small_message = small.outcome, small.message
    assert outcome == small_outcome == FAILED
    assert bounded.calls < free.calls and bounded.calls <= 60 + 5 + 2  # examples, budget, the verification
    # The reported case failed: the budget picks how small the input is, never the verdict.
    assert int(small_message.split()[1]) > 1000 and int(message.split()[1]) > 1000
    again = Counting()
    assert search.run_property(again, prop(5)).message == small_message and again.calls == bounded.calls


def test_a_scenario_counts_only_once_its_functions_pass_a_test_on_drawn_inputs() -> None:
    """A red team's update answered the channel test (a fixed input) with the channel's closed form and the
    scenarios from a table: 12.5 points. Passing a test of fixed inputs does not prove a function for a scenario, nor
    does passing some of its tests on drawn inputs."""
    from grader.grading.report import PASSED, Verdict
    from grader.properties import system

    channel, = (p for p in system.PROPERTIES if p.item == "update" and p.fixed_inputs)
    drawn = next(p for p in system.PROPERTIES if p.item == "update" and not p.fixed_inputs)
    scenario = Property("c12_row", "final state", "the table's row", lambda: st.just(None), big_sums_fail,
                        uses=("update",))
    others = [(p, Verdict(PASSED), 0.0) for p in system.PROPERTIES if p.item == "update" and p is not drawn]
    assert runner._unproved(scenario, [(channel, Verdict(PASSED), 0.0)]) == "update"
    assert runner._unproved(scenario, [*others, (drawn, Verdict(PASSED), 0.0)]) is None
    # One failed test on drawn inputs is enough (a law right for equal masses only passed its restitution test).
    assert runner._unproved(scenario, [*others, (drawn, Verdict(FAILED, "x"), 0.0)]) == "update"
