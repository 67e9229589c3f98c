"""Building blocks of the property suite: what a test is, how returned values
are read, and spec-level geometry the public tests may use.

Nothing here knows the reference solution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from grader import spec, wire
from grader.sandbox import Returned, Sandbox

# Messages quote numbers as students type them (1.5, not np.float64(1.5)).
np.set_printoptions(legacy="1.25")


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
    isolated: while it runs, the submission's calls between its own
    functions are answered by the reference (when installed); scenarios turn
    this off to run the student's functions together.
    """

    item: str
    name: str
    description: str
    strategy: st.SearchStrategy
    check: Callable[[Sandbox, Any], None]
    hidden: bool = False
    examples: int = 60
    isolated: bool = True

    @property
    def id(self) -> str:
        return f"{self.item}: {self.name}"


def fail(message: str) -> None:
    raise PropertyFailed(message)


def fmt(x: Any) -> str:
    """Numbers as the student would type them back in."""
    if isinstance(x, np.ndarray):
        return np.array2string(x, precision=17, separator=", ", floatmode="unique")
    if isinstance(x, float) and x == spec.NO_CONTACT:
        return "sys.float_info.max"
    return repr(x)


def one_float(r: Returned, name: str) -> float:
    """The single float a contact-time function must return."""
    v = r.value
    if isinstance(v, wire.Numeric) and v.array.size == 1 and v.array.ndim <= 1:
        return float(v.array.reshape(()))
    fail(f"{name} must return one float; it returned {wire.describe(v)}")
    raise AssertionError  # unreachable


def vector(value: Any, name: str, what: str) -> np.ndarray:
    if isinstance(value, wire.Numeric) and value.array.shape == (2,):
        if not np.all(np.isfinite(value.array)):
            fail(f"{name} returned {what} = {fmt(value.array)}, which is not finite")
        return value.array
    if isinstance(value, wire.Sequence) and value.length == 2 and all(
        isinstance(i, wire.Numeric) and i.array.shape == () for i in value.items
    ):
        return np.array([float(i.array) for i in value.items])
    fail(f"{name} must return {what} as an array of shape (2,); it returned {wire.describe(value)}")
    raise AssertionError


def vector_pair(r: Returned, name: str) -> tuple[np.ndarray, np.ndarray]:
    v = r.value
    if isinstance(v, wire.Sequence) and v.length == 2:
        return vector(v.items[0], name, "dv1"), vector(v.items[1], name, "dv2")
    if isinstance(v, wire.Numeric) and v.array.shape == (2, 2):
        return v.array[0], v.array[1]
    fail(f"{name} must return two arrays (dv1, dv2); it returned {wire.describe(v)}")
    raise AssertionError


def time_and_index(r: Returned, n: int, k: int) -> tuple[float, tuple[int, int] | None]:
    """(tc, index) from minimum_contact_time; index None when tc is NO_CONTACT."""
    v = r.value
    if not (isinstance(v, wire.Sequence) and v.length == 2):
        fail(f"minimum_contact_time must return (tc, index); it returned {wire.describe(v)}")
    tc_value, index_value = v.items
    if not (isinstance(tc_value, wire.Numeric) and tc_value.array.size == 1):
        fail(f"minimum_contact_time must return a float tc first; it returned {wire.describe(tc_value)}")
    tc = float(tc_value.array.reshape(()))
    if tc == spec.NO_CONTACT:
        return tc, None
    if isinstance(index_value, wire.Sequence):
        items = index_value.items
        ok = len(items) == 2 and all(isinstance(i, wire.Numeric) and i.array.shape == () for i in items)
        entries = np.array([float(i.array) for i in items]) if ok else None
    elif isinstance(index_value, wire.Numeric) and index_value.array.shape == (2,):
        entries = index_value.array
    else:
        entries = None
    if entries is None or np.any(entries != np.round(entries)):
        fail(f"index must be an integer array of two entries; minimum_contact_time returned {wire.describe(index_value)}")
    i, j = (int(e) for e in entries)
    if not 0 <= i < n or not (0 <= j < n and j != i or -k <= j <= -1):
        fail(
            f"index = [{i}, {j}] names no contact of {n} grains and {k} walls: expected [i, j] for two grains "
            f"or [i, -(k+1)] for grain i and wall w[k]"
        )
    return tc, (i, j)


def state_after_update(r: Returned, x_shape: tuple, v_shape: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, v and indexOld after update, read from its arguments (it works in place)."""
    after = []
    for name, value, shape in zip(("x", "v", "indexOld"), (r.args_after[0], r.args_after[1], r.args_after[5]),
                                  (x_shape, v_shape, (2,))):
        if not (isinstance(value, wire.Numeric) and value.array.shape == shape):
            fail(f"update replaced {name} by {wire.describe(value)}; it must stay an array of shape {shape}")
        after.append(value.array)
    return after[0], after[1], after[2]


def unchanged(r: Returned, args: tuple, name: str) -> None:
    """The arguments after the call are what they were before."""
    for param, before, after in zip(spec.function_spec(name).params, args, r.args_after):
        if isinstance(before, np.ndarray):
            if not (isinstance(after, wire.Numeric) and np.array_equal(after.array, before)):
                now = after.array if isinstance(after, wire.Numeric) else wire.describe(after)
                fail(f"{name} modified its argument {param}: it was {fmt(before)} and is now {fmt(now)}")


# -- spec-level geometry (public: derived from the statement, not the reference)


def pair_overlap_during(x: np.ndarray, v: np.ndarray, R: np.ndarray, t_end: float,
                        skip: tuple[int, int] | None = None) -> tuple[float, tuple[int, int]]:
    """Deepest overlap of any two grains over [0, t_end] of free flight.

    Returns (depth relative to R_i + R_j, pair); depth <= 0 means none.
    """
    worst = (-np.inf, (-1, -1))
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if skip is not None and sorted(skip) == [i, j]:
                continue
            dx, dv = x[i] - x[j], v[i] - v[j]
            a = dv @ dv
            t = 0.0 if a == 0 else min(max(-(dx @ dv) / a, 0.0), t_end)
            reach = R[i] + R[j]
            depth = (reach - np.linalg.norm(dx + dv * t)) / reach
            worst = max(worst, (depth, (i, j)))
    return worst


def wall_tangent(wall: np.ndarray) -> np.ndarray:
    """Unit vector along the wall line, from its first point to its second."""
    t = wall[1] - wall[0]
    return t / np.hypot(*t)


def wall_height(wall: np.ndarray, point: np.ndarray) -> float:
    """Signed distance from the wall line to a point (the sign tells the side)."""
    t = wall[1] - wall[0]
    s = point - wall[0]
    return (t[0] * s[1] - t[1] * s[0]) / np.hypot(*t)


def rotation(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])
