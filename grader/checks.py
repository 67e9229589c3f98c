"""Building blocks of the property suite: what a test is, how returned values
are read, and spec-level geometry the public tests may use.

Nothing here knows the reference solution or the sandbox: a check receives a
:class:`Caller` (the runner's sandbox, or a direct caller in the tests) and
reads what it returns (:class:`grader.calls.Returned`). Every value read here
came from the submission, so it may be anything: NaN, inf, huge, the wrong
shape. Each reader turns such a value into a :class:`PropertyFailed` with a
bounded message, never into an error of the grader's own code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import numpy as np
from hypothesis import strategies as st

from grader import spec, wire
from grader.calls import Returned

#: Longest message a property gives (the rest is cut).
MESSAGE_CAP = 600
#: Longest rendering of one value in a message.
VALUE_CAP = 160
#: What the statement says about no-contact times, quoted when inf is returned.
NO_CONTACT_RULE = ('the statement says: "return exactly sys.float_info.max when the two bodies never touch ... '
                   'Not inf, not -1, not None"')


class Caller(Protocol):
    """Calls one of the submission's functions: the runner's sandbox, or a direct caller in the tests.

    ``call`` raises grader.sandbox.SubmissionError (or a subclass) when the call
    goes wrong: missing function, exception, timeout, crash.
    """

    def call(self, name: str, *args: Any) -> Returned: ...


class PropertyFailed(Exception):
    """The submission broke a property; the message says expected and got."""


class Discard(Exception):
    """This input cannot fairly test the property (ill-conditioned): skip it."""


def discard_unless(condition: bool) -> None:
    if not condition:
        raise Discard


@dataclass(frozen=True)
class Property:
    """One graded test: a property of one rubric item, checked on many inputs.

    item: the function (or scenario) whose points the test shares.
    check(caller, case): raises PropertyFailed (or lets a SubmissionError
    through) when the submission breaks the property on ``case``.
    """

    item: str
    name: str
    description: str
    strategy: st.SearchStrategy
    check: Callable[[Caller, Any], None]
    hidden: bool = False
    examples: int = 60

    @property
    def id(self) -> str:
        return f"{self.item}: {self.name}"


def fail(message: str) -> NoReturn:
    if len(message) > MESSAGE_CAP:
        message = message[: MESSAGE_CAP - 5] + " ..."
    raise PropertyFailed(message)


def _number(x: float) -> str:
    if x == spec.NO_CONTACT:
        return "sys.float_info.max"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def fmt(x: Any) -> str:
    """Numbers as the student would type them back in (1.5, not np.float64(1.5)), bounded in length."""
    if isinstance(x, wire.Numeric):
        x = x.array
    if isinstance(x, (wire.Sequence, wire.Opaque)) or x is None:
        text = wire.describe(x)
    elif isinstance(x, (bool, np.bool_)):
        text = repr(bool(x))
    elif isinstance(x, (int, np.integer)):
        text = repr(int(x))
    elif isinstance(x, (float, np.floating)):
        text = _number(float(x))
    elif isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        if x.ndim == 0:
            return fmt(x[()])
        with np.printoptions(precision=17, floatmode="unique", threshold=24, edgeitems=3, legacy="1.25"):
            formatter = {"float_kind": _number} if x.dtype.kind == "f" else None
            text = np.array2string(x, separator=", ", formatter=formatter)  # type: ignore[arg-type]
    elif isinstance(x, (list, tuple)):
        text = "[" + ", ".join(fmt(i) for i in x[:8]) + (", ..." if len(x) > 8 else "") + "]"
    else:
        text = repr(x)
    return text if len(text) <= VALUE_CAP else text[: VALUE_CAP - 4] + " ..."


def one_float(r: Returned, name: str) -> float:
    """The single float a contact-time function must return (NaN and inf fail)."""
    v = r.value
    if not (isinstance(v, wire.Numeric) and v.array.size == 1 and v.array.ndim <= 1):
        fail(f"{name} must return one float; it returned {fmt(v)}")
    tc = float(v.array.reshape(()))
    if math.isinf(tc):
        fail(f"{name} returned {fmt(tc)}; when there is no contact, {NO_CONTACT_RULE}")
    if math.isnan(tc):
        fail(f"{name} returned nan; it must return a contact time >= 0 or exactly sys.float_info.max")
    return tc


def vector(value: Any, name: str, what: str) -> np.ndarray:
    """A returned array of shape (2,) with finite entries."""
    if isinstance(value, wire.Numeric) and value.array.shape == (2,):
        array = value.array
    elif isinstance(value, wire.Sequence) and value.length == 2 and all(
        isinstance(i, wire.Numeric) and i.array.shape == () for i in value.items
    ):
        array = np.array([float(i.array) for i in value.items])
    else:
        fail(f"{name} must return {what} as an array of shape (2,); it returned {fmt(value)}")
    if not np.all(np.isfinite(array)):
        fail(f"{name} returned {what} = {fmt(array)}, which is not finite")
    return array


def vector_pair(r: Returned, name: str) -> tuple[np.ndarray, np.ndarray]:
    v = r.value
    if isinstance(v, wire.Sequence) and v.length == 2:
        return vector(v.items[0], name, "dv1"), vector(v.items[1], name, "dv2")
    if isinstance(v, wire.Numeric) and v.array.shape == (2, 2):
        return (vector(wire.Numeric(v.array[0], v.kind, v.type_name), name, "dv1"),
                vector(wire.Numeric(v.array[1], v.kind, v.type_name), name, "dv2"))
    fail(f"{name} must return two arrays (dv1, dv2); it returned {fmt(v)}")


def _index_entries(value: Any) -> np.ndarray | None:
    """The two entries of a returned index, when they are integers (Python ints or a numpy integer array)."""
    if isinstance(value, wire.Sequence):
        items = value.items
        if value.length == 2 and len(items) == 2 and all(
            isinstance(i, wire.Numeric) and i.array.shape == () and i.kind in "iu" for i in items
        ):
            return np.array([float(i.array) for i in items])
    elif isinstance(value, wire.Numeric) and value.array.shape == (2,) and value.kind in "iu":
        return value.array
    return None


def time_and_index(r: Returned, n: int, k: int) -> tuple[float, tuple[int, int] | None]:
    """(tc, index) from minimum_contact_time; index None when tc is NO_CONTACT."""
    v = r.value
    if not (isinstance(v, wire.Sequence) and v.length == 2 and len(v.items) == 2):
        fail(f"minimum_contact_time must return (tc, index); it returned {fmt(v)}")
    tc_value, index_value = v.items
    if not (isinstance(tc_value, wire.Numeric) and tc_value.array.size == 1):
        fail(f"minimum_contact_time must return a float tc first; it returned {fmt(tc_value)}")
    tc = float(tc_value.array.reshape(()))
    if math.isinf(tc):
        fail(f"minimum_contact_time returned tc = {fmt(tc)}; with no contact, {NO_CONTACT_RULE}")
    if math.isnan(tc) or tc < 0:
        fail(f"minimum_contact_time returned tc = {fmt(tc)}; it must be a time >= 0 or sys.float_info.max")
    if tc == spec.NO_CONTACT:
        return tc, None
    entries = _index_entries(index_value)
    if entries is None:
        fail(f"index must be an integer array of two entries (the statement: \"index is an integer array of two "
             f"entries\", e.g. np.array([i, j]) of ints); minimum_contact_time returned {fmt(index_value)}")
    i, j = (int(e) for e in entries)
    if not 0 <= i < n or not (0 <= j < n and j != i or -k <= j <= -1):
        fail(
            f"index = [{fmt(i)}, {fmt(j)}] names no contact of {n} grains and {k} walls: expected [i, j] for two "
            "grains or [i, -(k+1)] for grain i and wall w[k]"
        )
    return tc, (i, j)


def state_after_update(r: Returned, x_shape: tuple, v_shape: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, v and indexOld after update, read from its arguments (it works in place); all finite."""
    after = []
    for name, value, shape in zip(("x", "v", "indexOld"), (r.args_after[0], r.args_after[1], r.args_after[5]),
                                  (x_shape, v_shape, (2,)), strict=True):
        if not (isinstance(value, wire.Numeric) and value.array.shape == shape):
            fail(f"update replaced {name} by {fmt(value)}; it must stay an array of shape {shape}")
        if not np.all(np.isfinite(value.array)):
            fail(f"update made {name} non-finite: {name} = {fmt(value.array)}")
        after.append(value.array)
    return after[0], after[1], after[2]


def unchanged(r: Returned, args: tuple, name: str) -> None:
    """The arguments after the call are what they were before (the statement: solvers never modify them)."""
    for param, before, after in zip(spec.function_spec(name).params, args, r.args_after, strict=False):
        if isinstance(before, np.ndarray):
            same = isinstance(after, wire.Numeric) and after.array.shape == before.shape and bool(
                np.all((after.array == before) | (np.isnan(after.array) & np.isnan(before))))
            if not same:
                fail(f"{name} modified its argument {param}: it was {fmt(before)} and is now {fmt(after)}; "
                     "it must leave its arguments as they were (work on copies)")


def call_pure(caller: Caller, name: str, args: tuple) -> Returned:
    """Call a function that must not modify its arguments, and check that it did not."""
    r = caller.call(name, *args)
    unchanged(r, args, name)
    return r


# -- spec-level geometry (public: derived from the statement, not the reference)


def pair_overlap_during(x: np.ndarray, v: np.ndarray, R: np.ndarray, t_end: float,
                        skip: tuple[int, int] | None = None) -> tuple[float, tuple[int, int]]:
    """Deepest overlap of any two grains over [0, t_end] of free flight.

    Returns (depth relative to R_i + R_j, pair); depth <= 0 means none.
    """
    worst = (-np.inf, (-1, -1))
    with np.errstate(all="ignore"):
        for i in range(len(x)):
            for j in range(i + 1, len(x)):
                if skip is not None and sorted(skip) == [i, j]:
                    continue
                dx, dv = x[i] - x[j], v[i] - v[j]
                a = dv @ dv
                t = 0.0 if a == 0 else min(max(-(dx @ dv) / a, 0.0), t_end)
                reach = R[i] + R[j]
                depth = float((reach - np.linalg.norm(dx + dv * t)) / reach)
                if depth > worst[0]:
                    worst = (depth, (i, j))
    return worst


def wall_tangent(wall: np.ndarray) -> np.ndarray:
    """Unit vector along the wall line, from its first point to its second."""
    t = wall[1] - wall[0]
    return t / np.hypot(*t)


def wall_height(wall: np.ndarray, point: np.ndarray) -> float:
    """Signed distance from the wall line to a point (the sign tells the side)."""
    t = wall[1] - wall[0]
    s = point - wall[0]
    return float((t[0] * s[1] - t[1] * s[0]) / np.hypot(*t))


def rotation(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])
