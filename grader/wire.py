"""What travels between the grader and the sandboxed child: plain JSON numbers.

Requests carry the arguments of a call; replies carry the returned value and
the arguments after the call (to see what was modified in place). Returned
values are decoded into plain float arrays, never into the submission's own
types, so a float or array subclass with rigged comparisons gains nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


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


def decode_value(obj: Any) -> Any:
    """A returned value from its JSON description (see sandbox_child.encode)."""
    if not isinstance(obj, dict):
        return Opaque(f"malformed value {obj!r:.60}")
    if "none" in obj:
        return None
    if "seq" in obj:
        return Sequence(tuple(decode_value(v) for v in obj["seq"]), str(obj.get("type")), int(obj.get("len", 0)))
    if "data" in obj:
        try:
            data = np.array([float(d) for d in obj["data"]], dtype=float).reshape([int(s) for s in obj["shape"]])
        except (TypeError, ValueError):
            return Opaque("malformed numbers")
        return Numeric(data, str(obj.get("kind", "f")), str(obj.get("type", "?")))
    return Opaque(str(obj.get("other", "?")))


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
    """A decoded argument as what a helper expects: float arrays, ints for index."""
    if isinstance(value, Numeric):
        if value.array.shape == ():
            return float(value.array)
        return value.array.astype(int) if value.kind in "biu" else value.array
    if isinstance(value, Sequence):
        return np.array([plain(v) for v in value.items])
    raise TypeError(f"unexpected argument {describe(value)}")


def answer_callback(helpers: Any, request: dict) -> dict:
    """The grader's answer when the submission calls one of its proxied functions."""
    name = request.get("callback")
    if not helpers or name not in helpers:
        return {"error": f"no helper {name!r}"}
    try:
        args = [plain(decode_value(a)) for a in request.get("args", [])]
        result = helpers[name](*args)
    except Exception as exc:  # noqa: BLE001 - the student's arguments may be anything
        return {"error": f"{type(exc).__name__}: {exc}"}
    if isinstance(result, tuple):
        return {"result": [encode_arg(np.asarray(r)) if isinstance(r, np.ndarray) else encode_arg(r)
                           for r in result], "tuple": True}
    return {"result": [encode_arg(result)]}
