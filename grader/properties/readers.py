"""Readers of what the submission returned, for the properties.

Every value read here came from the submission, so it may be anything: NaN,
inf, huge, the wrong shape. Each reader turns such a value into a
:class:`~grader.properties.property.PropertyFailed` with a bounded message,
never into an error of the grader's own code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from grader import spec
from grader.properties.property import Caller, fail, terse
from grader.sandbox import wire
from grader.sandbox.calls import Returned
from grader.spec import NO_PREVIOUS_CONTACT
from grader.spec.scenarios import Scenario

#: Longest rendering of one value in a message.
VALUE_CAP = 160
#: A value in a message nobody reads (property.terse): formatting it would take time a failing case alone spends.
TERSE = "..."


#: What the statement says about no-contact times, quoted when inf is returned.
NO_CONTACT_RULE = ('the statement says: "return exactly sys.float_info.max when the two bodies never touch ... '
                   'Not inf, not -1, not None"')


def _number(x: float) -> str:
    if x == spec.NO_CONTACT:
        return "sys.float_info.max"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def fmt(x: Any) -> str:
    """Numbers as the student would type them back in (1.5, not np.float64(1.5)), bounded in length ("..." where no
    message is read: property.terse)."""
    if terse():
        return TERSE
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
    elif isinstance(value, wire.Sequence) and value.length == len(value.items) == 2 and all(
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
    if isinstance(v, wire.Sequence) and v.length == len(v.items) == 2:  # all items sent (a forged reply may not)
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
        if isinstance(before, np.ndarray) and not isinstance(after, wire.AsSent):  # AsSent: rebuilt from before
            same = isinstance(after, wire.Numeric) and after.array.shape == before.shape and bool(
                np.all((after.array == before) | (np.isnan(after.array) & np.isnan(before))))
            if not same:
                fail(f"{name} modified its argument {param}: it was {fmt(before)} and is now {fmt(after)}; "
                     "it must leave its arguments as they were (work on copies)", shown_after=(param,))


def call_pure(caller: Caller, name: str, args: tuple) -> Returned:
    """Call a function that must not modify its arguments, and check that it did not."""
    r = caller.call(name, *args)
    unchanged(r, args, name)
    return r


def args_of(gas: Scenario, index_old: tuple[int, int] = NO_PREVIOUS_CONTACT) -> tuple:
    """minimum_contact_time's arguments for a gas."""
    return (gas.x, gas.v, gas.R, gas.w, np.array(index_old, dtype=int))


def call_update(caller: Caller, gas: Scenario, x: np.ndarray, v: np.ndarray, index: np.ndarray, dt: float,
                t: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """update through the caller; the new x, v and indexOld, read from the arguments (it works in place)."""
    r = caller.call("update", x, v, gas.R, gas.m, gas.w, index, gas.r, dt, t)
    return state_after_update(r, x.shape, v.shape)
