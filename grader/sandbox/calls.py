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

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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


#: Types whose values nobody can change: a copy may share them.
_IMMUTABLE = frozenset((type(None), bool, int, float, str))
#: For each type met: its fields' names if it is a dataclass whose instances hold those and nothing else (copied
#: field by field), else None (dataclasses.fields is slow to ask per value).
_FIELDS: dict[type, tuple[tuple[str, ...], frozenset[str]] | None] = {}


def _fields(kind: type) -> tuple[tuple[str, ...], frozenset[str]] | None:
    if not dataclasses.is_dataclass(kind) or any("__slots__" in vars(base) for base in kind.__mro__):
        return None
    names = tuple(f.name for f in dataclasses.fields(kind))
    return names, frozenset(names)


def fresh_copy(value: Any) -> Any:
    """A copy of a kept answer (Returned, and what it holds) that its caller may change without changing the kept
    one: arrays, tuples, dicts and dataclasses rebuilt, numbers and strings shared; anything else by copy.deepcopy.
    What deepcopy gives, in half its time (it was 6 % of a correct file's grading, which meets most of its answers
    again)."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is tuple:
        return tuple([fresh_copy(item) for item in value])
    if kind is np.ndarray and value.dtype.kind in "biuf":
        return value.copy(order="K")
    fields = _FIELDS[kind] if kind in _FIELDS else _FIELDS.setdefault(kind, _fields(kind))
    if fields is not None and vars(value).keys() == fields[1]:
        copied = object.__new__(kind)
        for name in fields[0]:
            object.__setattr__(copied, name, fresh_copy(getattr(value, name)))
        return copied
    if kind is dict and all(type(key) in _IMMUTABLE for key in value):
        return {key: fresh_copy(item) for key, item in value.items()}
    return copy.deepcopy(value)
