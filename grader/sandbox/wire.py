"""What travels between the grader and the sandboxed child: plain JSON numbers.

Requests carry the arguments of a call; replies carry the returned value, the
arguments after the call (to see what was modified in place) and the calls
the function made to the submission's other functions. Everything in a reply
was written by the submission's process, so it is decoded here as hostile
input: sizes are bounded, every field is type-checked, every string is capped
to ``limits.TEXT_CAP`` characters, and anything malformed raises
:class:`MalformedReply` (never another exception). Returned values become
plain float arrays, never the submission's own types, so a float or array
subclass with rigged comparisons gains nothing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader import spec
from grader.sandbox import calls
from grader.spec.limits import TEXT_CAP
from grader.spec.text import printable

#: Items kept of a returned tuple or list (the child sends at most these).
SEQUENCE_CAP = 64
#: Numbers in one returned array.
ARRAY_CAP = 1_000_000
#: Dimensions of one returned array.
NDIM_CAP = 32
#: Nesting of returned values (the child describes deeper values as opaque).
DEPTH_CAP = 8


class MalformedReply(ValueError):
    """A reply the genuine child never sends: its text says what is wrong (capped)."""


def encode_arg(value: Any) -> Any:
    """An argument of a call as JSON: arrays keep their dtype (float or int)."""
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": "int" if value.dtype.kind in "iu" else "float"}
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("booleans are not arguments of the assignment")
    if isinstance(value, (int, np.integer)):
        return int(value)
    return float(value)


@dataclass(frozen=True)
class Numeric:
    """A returned number or array: values as floats, with what it was."""

    array: np.ndarray
    kind: str  # numpy dtype kind of what was returned: b, i, u or f
    type_name: str


@dataclass(frozen=True)
class Sequence:
    """A returned tuple or list."""

    items: tuple
    type_name: str
    length: int


@dataclass(frozen=True)
class Opaque:
    """A returned value that is not numbers (a string, an object...)."""

    text: str


def cap(text: str, limit: int = TEXT_CAP) -> str:
    """``text`` cut to ``limit`` characters, marked when cut, and printable (every text from the child comes
    through here)."""
    return printable(text if len(text) <= limit else text[:limit] + "...")


#: Short texts already made printable: type names ("ndarray", "float64", "tuple") come with nearly every value.
_CAPPED: dict[str, str] = {}
#: What _CAPPED keeps: texts this short, this many (the child chooses them: a bounded memo, never a growing one).
CAPPED_LENGTH, CAPPED_KEPT = 40, 256


def _text(obj: dict, key: str, default: str | None = None) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise MalformedReply(f"field {key!r} is not a string")
    known = _CAPPED.get(value)
    if known is not None:
        return known
    capped = cap(value)
    if len(value) <= CAPPED_LENGTH and len(_CAPPED) < CAPPED_KEPT:
        _CAPPED[value] = capped
    return capped


def _count(value: Any, what: str) -> int:
    """A non-negative JSON integer (bool is not one)."""
    if type(value) is not int or value < 0:
        raise MalformedReply(f"{what} is not a non-negative integer")
    return value


#: The largest magnitude of an integer array's entries (uint64's range, as a float).
INT_CAP = 2.0**64


def _numeric(obj: dict) -> Numeric:
    shape, data = obj.get("shape"), obj.get("data")
    if not isinstance(shape, list) or len(shape) > NDIM_CAP:
        raise MalformedReply("an array's shape is not a short list")
    dims = [_count(s, "an array's dimension") for s in shape]
    size = math.prod(dims)
    if not isinstance(data, list) or size > ARRAY_CAP or len(data) != size:
        raise MalformedReply("an array's data does not match its shape")
    # JSON true/false and strings are not numbers (numpy would convert them).
    if not _NUMBER_TYPES.issuperset(map(type, data)):
        raise MalformedReply("an array's data holds something that is not a number")
    try:
        array = np.array(data, dtype=float).reshape(dims)
    except (OverflowError, ValueError):
        raise MalformedReply("an array's data holds a number out of range") from None
    kind = obj.get("kind", "f")
    if kind not in _KINDS:  # a str, so no cap is needed
        raise MalformedReply("an array's kind is not one of b, i, u, f")
    # The child's encode gives whole numbers for an integer array; NaN or 1e300 "ints" come only from a forged reply
    # (a file that patched numpy in its process), and int() of them crashed the grader's readers (a red team's file).
    if kind != "f" and array.size and not (np.all(np.abs(array) <= INT_CAP) and np.all(array == np.floor(array))):
        raise MalformedReply("an integer array's data holds a number that is not a whole number of at most 2**64")
    return Numeric(array, kind, _text(obj, "type", "?"))


_NUMBER_TYPES = frozenset((float, int))
_KINDS = ("b", "i", "u", "f")


def decode_value(obj: Any, depth: int = 0) -> Any:
    """A returned value from its JSON description (see child.encode).

    Raises MalformedReply for anything the child's ``encode`` does not produce.
    """
    if depth > DEPTH_CAP:
        raise MalformedReply("a returned value is nested too deeply")
    if not isinstance(obj, dict):
        raise MalformedReply("a returned value is not described by an object")
    if "none" in obj:
        return None
    if "seq" in obj:
        items = obj["seq"]
        if not isinstance(items, list) or len(items) > SEQUENCE_CAP:
            raise MalformedReply(f"a returned sequence is not a list of at most {SEQUENCE_CAP} items")
        length = _count(obj.get("len"), "a sequence's length")
        if length < len(items):
            raise MalformedReply("a sequence's length is shorter than its items")
        return Sequence(tuple(decode_value(v, depth + 1) for v in items), _text(obj, "type", "?"), length)
    if "data" in obj:
        return _numeric(obj)
    if "other" in obj:
        return Opaque(_text(obj, "other"))
    raise MalformedReply("a returned value of no known form")


def describe(value: Any) -> str:
    """How a returned value reads in a message to the student."""
    if value is None:
        return "None"
    if isinstance(value, Numeric):
        if value.array.shape == ():
            return repr(float(value.array))
        return f"{value.type_name} {np.array2string(value.array, precision=17, separator=', ')}"
    if isinstance(value, Sequence):
        return f"{value.type_name} of {value.length}: (" + ", ".join(describe(v) for v in value.items) + ")"
    return value.text


def plain(value: Any) -> Any:
    """A decoded argument as what a function expects: float arrays, ints for index."""
    if isinstance(value, Numeric):
        if value.array.shape == ():
            return float(value.array)
        return value.array.astype(int) if value.kind in "biu" else value.array
    if isinstance(value, Sequence):
        return np.array([plain(v) for v in value.items])
    raise TypeError(f"unexpected argument {describe(value)}")


# -- replies -------------------------------------------------------------------


@dataclass(frozen=True)
class Booted:
    """The child started and imported numpy; the submission is not imported yet."""


@dataclass(frozen=True)
class Ready:
    """The submission imported; these assignment functions are callable."""

    functions: frozenset[str]


@dataclass(frozen=True)
class Answer:
    """A call returned."""

    value: Any
    args_after: tuple[Any, ...]
    helper_calls: tuple[calls.HelperCall, ...]
    helper_calls_total: int


@dataclass(frozen=True)
class Raised:
    """The import or a call raised: exception type name, message, where (all capped).

    helper_calls: the calls between the submission's functions made before it raised.
    """

    error: str
    message: str
    where: str
    helper_calls: tuple[calls.HelperCall, ...] = ()
    helper_calls_total: int = 0


Reply = Booted | Ready | Answer | Raised


def parse_line(line: bytes) -> tuple[int, dict]:
    """The request id a reply line names, and its object; MalformedReply otherwise."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        raise MalformedReply("a reply is not valid JSON") from None
    if not isinstance(obj, dict):
        raise MalformedReply("a reply is not a JSON object")
    return _count(obj.get("id"), "a reply's id"), obj


def _helper_call(obj: Any) -> calls.HelperCall:
    if not isinstance(obj, dict):
        raise MalformedReply("a helper call is not an object")
    name = obj.get("name")
    if name not in spec.FUNCTION_NAMES:
        raise MalformedReply("a helper call names no function of the assignment")
    args, kwargs = obj.get("args"), obj.get("kwargs", {})
    if not isinstance(args, list) or len(args) > SEQUENCE_CAP:
        raise MalformedReply("a helper call's arguments are not a short list")
    if not isinstance(kwargs, dict) or len(kwargs) > SEQUENCE_CAP:
        raise MalformedReply("a helper call's keyword arguments are not a short object")
    raised = obj.get("raised")
    if raised is not None and not isinstance(raised, str):
        raise MalformedReply("a helper call's exception is not a string")
    return calls.HelperCall(
        name=name,
        args=tuple(decode_value(a) for a in args),
        kwargs={cap(k): decode_value(v) for k, v in kwargs.items()},
        result=decode_value(obj["result"]) if "result" in obj and raised is None else None,
        raised=None if raised is None else cap(raised),
    )


def _helper_calls(obj: dict) -> tuple[tuple[calls.HelperCall, ...], int]:
    records = obj.get("helper_calls", [])
    if not isinstance(records, list) or len(records) > calls.AUDIT_CALLS_KEPT:
        raise MalformedReply(f"helper_calls is not a list of at most {calls.AUDIT_CALLS_KEPT} records")
    total = _count(obj.get("helper_calls_total", len(records)), "helper_calls_total")
    if total < len(records):
        raise MalformedReply("helper_calls_total is less than the records sent")
    return tuple(_helper_call(r) for r in records), total


def _raised(obj: dict) -> Raised:
    return Raised(_text(obj, "error", "?"), _text(obj, "message", ""), _text(obj, "where", ""))


#: What the child sends for an argument the call left bitwise as it was sent.
SAME = {"same": True}


class AsSent(Numeric):
    """An argument the child reported left as it was sent (SAME), rebuilt by the grader from what it sent."""


def as_sent(sent: Any) -> AsSent:
    """An argument as the child would describe it had the call left it unchanged (what SAME stands for): what
    encode_arg sent, decoded as the child decodes it (an empty array of any shape arrives as shape (0,)),
    described as its encode describes it."""
    if isinstance(sent, dict):
        array = np.array(sent["array"], dtype=sent["dtype"])
        return AsSent(array.astype(float), array.dtype.kind, "ndarray")
    return AsSent(np.array(float(sent)), np.asarray(sent).dtype.kind, type(sent).__name__)


def decode_reply(obj: dict, sent: tuple | None) -> Reply:
    """One reply object (id already checked) as a typed reply.

    sent: the arguments of the call being answered, as encode_arg sent them (None while booting or
    importing: only Booted, Ready or Raised are expected then).
    """
    if sent is None:
        if obj.get("booted") is True:
            return Booted()
        ready = obj.get("ready")
        if ready is True:
            names = obj.get("functions")
            if not isinstance(names, list):
                raise MalformedReply("functions is not a list")
            return Ready(frozenset(n for n in names if isinstance(n, str) and n in spec.FUNCTION_NAMES))
        if ready is False:
            return _raised(obj)
        raise MalformedReply("a reply to the import says neither booted nor ready")
    ok = obj.get("ok")
    if ok is False:
        raised = _raised(obj)
        records, total = _helper_calls(obj)
        return Raised(raised.error, raised.message, raised.where, records, total)
    if ok is not True:
        raise MalformedReply("a reply to a call has no boolean 'ok'")
    after = obj.get("args_after")
    if not isinstance(after, list) or len(after) != len(sent):
        raise MalformedReply(f"args_after is not a list of the {len(sent)} arguments")
    if "result" not in obj:
        raise MalformedReply("a reply to a call has no result")
    value = decode_value(obj["result"])
    args_after = tuple(as_sent(arg) if a == SAME else decode_value(a) for a, arg in zip(after, sent, strict=True))
    records, total = _helper_calls(obj)
    return Answer(value, args_after, records, total)
