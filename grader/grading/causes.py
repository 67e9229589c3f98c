"""One cause behind many failed tests: the file does not import, a function is missing, not written yet or wrong.

The template's functions raise ``NotImplementedError``; a function is "not
written" when its calls say so, never because of its source text. A function
that calls an unwritten helper (``update`` calling ``minimum_contact_time``)
raises the helper's error: the child's record of its helper calls names the
helper that raised, so the cause is the helper; a call of a function the file
does not define raises Python's NameError naming it. These causes only shape the
report (one line instead of one block per test); they change no score.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader import spec
from grader.sandbox.client import CallRaised, FunctionMissing, ImportFailed

#: The kinds of cause (WRONG: a helper the audit proved wrong, grader.grading.audit).
NOT_WRITTEN, MISSING, NO_IMPORT, WRONG = "not written yet", "missing", "does not import", "wrong answers: fix it first"


@dataclass(frozen=True)
class Cause:
    """Why a test failed, when it is one of the causes above.

    function: the assignment function at fault (one of spec.FUNCTION_NAMES),
    "" when the file does not import.
    """

    kind: str
    function: str = ""


def wrong_helper(helper: str) -> Cause | None:
    """The cause of a test whose cases were set aside because ``helper`` gave wrong answers."""
    return Cause(WRONG, helper) if helper in spec.FUNCTION_NAMES else None


def cause_of(error: BaseException, called: str) -> Cause | None:
    """The cause of ``error``, raised by the call of the submission's ``called``; None for any other failure."""
    if isinstance(error, ImportFailed):
        return Cause(NO_IMPORT)
    if called not in spec.FUNCTION_NAMES:
        return None
    if isinstance(error, FunctionMissing):
        return Cause(MISSING, called)
    if isinstance(error, CallRaised) and error.error == "NotImplementedError":
        # Helper calls are recorded as they start, outer first: the last one
        # that raised it is the innermost. Their names come from the child,
        # so only the assignment's own names are believed.
        helpers = [h.name for h in error.helper_calls
                   if h.raised == "NotImplementedError" and h.name in spec.FUNCTION_NAMES]
        return Cause(NOT_WRITTEN, helpers[-1] if helpers else called)
    if isinstance(error, CallRaised) and error.error == "NameError":
        # Python's own words for a call of a function the file does not define.
        for name in spec.FUNCTION_NAMES:
            if f"NameError: name '{name}' is not defined" in str(error):
                return Cause(MISSING, name)
    return None
