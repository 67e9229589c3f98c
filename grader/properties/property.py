"""What a graded test is: a property of one rubric item, checked on many inputs.

A property receives a :class:`Caller` (the runner's sandbox, or a direct
caller in the tests) and raises :class:`PropertyFailed` with a bounded message
when the submission breaks it, or :class:`Discard` when an input cannot test it
fairly. Nothing here knows the reference solution or the sandbox.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from grader.sandbox.calls import Returned

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

#: Longest message a property gives (the rest is cut).
MESSAGE_CAP = 600


class Caller(Protocol):
    """Calls one of the submission's functions: the runner's sandbox, or a direct caller in the tests.

    ``call`` raises grader.sandbox.client.SubmissionError (or a subclass) when the call
    goes wrong: missing function, exception, timeout, crash.
    """

    def call(self, name: str, *args: Any) -> Returned: ...


class PropertyFailed(Exception):
    """The submission broke a property; the message says expected and got. shown_after: arguments of the last call
    whose values after it show the failure (an argument modified in place), printed by the reported snippet."""

    def __init__(self, message: str, shown_after: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.shown_after = shown_after


class Discard(Exception):
    """This input cannot fairly test the property (ill-conditioned): skip it."""


def discard_unless(condition: bool) -> None:
    if not condition:
        raise Discard


@dataclass(frozen=True)
class Property:
    """One graded test: a property of one rubric item, checked on many inputs.

    item: the function (or scenario) whose points the test shares.
    inputs: a function that builds the Hypothesis strategy of the cases (called at the first draw: replaying kept
    cases needs no Hypothesis, see grader.properties.lazy).
    verify(caller, case): raises PropertyFailed (or lets a SubmissionError
    through) when the submission breaks the property on ``case``.
    """

    item: str
    name: str
    description: str
    inputs: Callable[[], SearchStrategy]
    verify: Callable[[Caller, Any], None]
    hidden: bool = False
    examples: int = 60
    #: Cases tried while shrinking a failure, at most (a count, not a time: the same file gets the same
    #: report). The verdict never depends on it; only how small the reported input is.
    shrink_cases: int = 400
    #: The functions a scenario's check calls. Its inputs are fixed, so a table of their answers would pass it:
    #: its points count only once each of these functions has passed one of its own tests (grading.runner).
    uses: tuple[str, ...] = ()
    #: Its inputs are a few fixed ones, like a scenario's: passing it does not count toward a scenario's ``uses``
    #: (a red team's update answered the channel test with its closed form, and two scenarios' tables earned 12.5).
    fixed_inputs: bool = False

    @cached_property
    def strategy(self) -> SearchStrategy:
        """The strategy of the cases (Hypothesis is imported here, if not yet)."""
        return self.inputs()

    @property
    def id(self) -> str:
        return f"{self.item}: {self.name}"

    @property
    def search_key(self) -> str:
        """What Hypothesis's search for a failing case of this property depends on besides the answers it gets:
        the builder of its cases and its counts. Properties whose cases the same module-level function builds (a
        module's attribute, not a lambda or a closure) with the same counts are searched alike: ``find`` gives them
        the same cases in the same order as long as the same ones fail, so they share their kept searches
        (grader.grading.paths)."""
        name = getattr(self.inputs, "__name__", "")
        module = sys.modules.get(getattr(self.inputs, "__module__", None) or "")
        if module is None or getattr(module, name, None) is not self.inputs:
            return f"property {self.id}"
        builder = f"{module.__name__}.{name}"
        return f"cases of {builder}, examples={self.examples}, shrink_cases={self.shrink_cases}"


#: The failures of the case being checked whole (checked_whole), in order; None: a failure ends the case.
_WHOLE: ContextVar[list[str] | None] = ContextVar("failures_of_a_case_checked_whole", default=None)


def fail(message: str, shown_after: tuple[str, ...] = ()) -> NoReturn:
    if len(message) > MESSAGE_CAP:
        message = message[: MESSAGE_CAP - 5] + " ..."
    failures = _WHOLE.get()
    if failures is None:
        raise PropertyFailed(message, shown_after)
    failures.append(message)  # checked whole: the case goes on to its next calls
    return  # type: ignore[misc]


#: Whether the messages of the case being checked go unread (messages_unread).
_UNREAD: ContextVar[bool] = ContextVar("messages_of_a_case_unread", default=False)


def terse() -> bool:
    """Whether no failure message will be read (messages_unread): the values it would show are not formatted."""
    return _UNREAD.get()


@contextmanager
def messages_unread() -> Iterator[None]:
    """Within it, the values a failure's message would show are not formatted (readers.fmt gives "..."): for cases
    whose verdict alone is kept (grading.search: the reported case is run again for its message).

    Formatting is work only a failure costs. In the grading's box it told a file its verdicts through the grader's
    time between two calls: with a collision law right only for equal masses, 234-418 us more after a wrong answer
    than after a right one, read on the file's own clock (tests/verdict_samples/timing_switch.py: 80.5 points
    against 60.5). In a search, each failing candidate formatted a message nobody read."""
    token = _UNREAD.set(True)
    try:
        yield
    finally:
        _UNREAD.reset(token)


@contextmanager
def checked_whole() -> Iterator[list[str]]:
    """Within it, a failure does not end the case: it is listed (the list yielded) and the property goes on, so
    the case makes every call it makes when nothing fails. The grading's box must not learn from a case that
    stops short that an answer was wrong (a red team's file watched whether a case's second call came, and
    kept the formula that made it come: 88.5 points against 35). Whatever goes wrong after a failure (a value
    read from a wrong answer) is the caller's to catch."""
    failures: list[str] = []
    token = _WHOLE.set(failures)
    try:
        yield failures
    finally:
        _WHOLE.reset(token)
