"""What one call of a submission's function gives back to the grader.

The sandbox (:mod:`grader.sandbox.client`) produces these; the properties read them.
Everything in them was decoded from plain JSON numbers (:mod:`grader.sandbox.wire`):
never the submission's own objects.

While a function runs, its calls to the submission's *other* assignment
functions (its helpers: ``update`` calling ``minimum_contact_time``, say) run
the submission's own code, and the child records a bounded number of them
(:class:`HelperCall`). The grader may check those records against the
reference on its own side, to tell "this function is wrong" from "a helper it
relies on is wrong". The records come from the submission's process, so they
are claims: the grader replays a claim before it believes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Helper calls recorded per request (further calls are only counted).
HELPER_CALLS_KEPT = 16

#: Helper calls recorded when the grader replays a failing call to audit its
#: helpers (grader.grading.audit): the most a request may ask for.
AUDIT_CALLS_KEPT = 512


@dataclass(frozen=True)
class HelperCall:
    """One call between the submission's own functions, as the child recorded it.

    args: the positional arguments, decoded (wire.Numeric, wire.Sequence, ...),
    as they were when the call was made; kwargs: keyword arguments by name;
    result: the decoded returned value, or None when it raised (then
    ``raised`` names the exception type, capped).
    """

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    raised: str | None = None


@dataclass(frozen=True)
class Returned:
    """What a call gave back: the value, the arguments after the call, the helper calls it made.

    cpu_seconds: CPU time of the submission's processes during the call, as
    measured by the grader (not reported by the child).
    """

    value: Any
    args_after: tuple[Any, ...]
    helper_calls: tuple[HelperCall, ...] = ()
    #: How many helper calls were made in all (recorded or not).
    helper_calls_total: int = 0
    cpu_seconds: float = 0.0
