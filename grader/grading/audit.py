"""Telling "this function is wrong" from "a helper it relies on is wrong", on the grader's side.

No answer of the reference ever reaches the submission: its functions call
its own helpers. When a case of function F fails, the grader looks at the
calls F made to the submission's other functions (recorded by the child,
:class:`grader.sandbox.calls.HelperCall`) and asks, for a helper H that already
failed one of its own tests:

1. are the recorded arguments of the case's own size (no more numbers than F
   was given, all finite), so that the reference runs only on inputs of a
   size the grader chose? (A contact-time call about many pairs at once is
   read pair by pair, each pair of that size, at most AUDIT_CALLS a case.)
2. is the reference's answer on them well conditioned, and does the recorded
   answer differ from it?
3. does H, called again directly by the grader with the same arguments, give
   the recorded answer? (The records come from the submission's process: a
   record that a replay does not confirm is a lie, and is ignored.)

If so, the case is *spoiled*: the feedback says to fix H first, and F's test is
set aside, earning nothing until H is fixed (grader.grading.set_aside: by
default only the reported case is audited, once the grading's box is closed;
with the traced excuse, every failing case as the search meets it, where a
spoiled case counts neither for nor against F). Lying in the records can
therefore only lose points: an unconfirmed record changes nothing, a
confirmed one shows a real bug of H, which H pays for in its own tests. ``update`` is never audited as
a helper: the reference never runs on durations the grader did not choose.
Whether such a case may still count for F (its wrong answer is the one H's
makes it) is :mod:`grader.grading.tracing`'s question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from grader import spec
from grader.errors import SandboxFault
from grader.grading.reference_answers import prefetch, reference_answer, same_time
from grader.sandbox import wire
from grader.sandbox.calls import HelperCall, Returned
from grader.spec.tolerances import STATE_RTOL, close

#: Helpers whose recorded calls may be checked against the reference.
AUDITED = ("contact_time_grains", "contact_time_walls", "minimum_contact_time", "contact_solve_wall",
           "contact_solve_grains")

#: Recorded helper calls checked against the reference per failing call, at most.
AUDIT_CALLS = 512


class Replayer(Protocol):
    def call(self, name: str, *args: Any) -> Returned: ...


@dataclass(frozen=True)
class Spoiled:
    """A failing case set aside because a helper the submission called is wrong."""

    caller: str
    helper: str
    args: tuple[Any, ...]
    expected: str
    got: str
    #: The caller's wrong answer is what the helpers' answers make it (grader.grading.tracing.explained): only such
    #: cases may be left out of a test that passes; a test with any other case set aside earns nothing.
    explained: bool = False

    def message(self) -> str:
        return (f"{self.caller} relies on your {self.helper}, which is wrong on the inputs {self.caller} gave it "
                f"(the reference gives {self.expected}, yours {self.got}); fix {self.helper} first")


def positional(call: HelperCall) -> tuple[Any, ...] | None:
    """The recorded arguments as plain values in the spec's order; None when they cannot be used."""
    params = spec.function_spec(call.name).params
    if len(call.args) > len(params) or set(call.kwargs) - set(params[len(call.args):]):
        return None
    by_name = dict(zip(params, call.args)) | call.kwargs
    if set(by_name) != set(params):
        return None
    values = []
    for name in params:
        value = plain(by_name[name])
        if value is None:
            return None
        values.append(value)
    return tuple(values)


def plain(value: Any) -> Any:
    """A decoded argument as the reference takes it (float, int or array); None if not numbers."""
    if not isinstance(value, wire.Numeric):
        return None
    if value.kind not in "iu":  # most arguments; the same values as below, without numpy's slower paths
        if value.array.ndim == 0:
            number = float(value.array)
            return number if math.isfinite(number) else None
        return value.array.astype(float) if np.isfinite(value.array).all() else None
    if not np.all(np.isfinite(value.array)):
        return None
    with np.errstate(invalid="ignore"):  # integers past int64 read as garbage, quietly: another call may spoil first
        array = value.array.astype(int)
    return int(array) if array.ndim == 0 else array


def size(values: tuple[Any, ...]) -> int:
    return sum(np.size(v) for v in values)


def time_of(value: Any) -> float | None:
    if isinstance(value, wire.Numeric) and value.array.size == 1:
        return float(value.array.reshape(()))
    return None


def _vectors(value: Any, count: int) -> np.ndarray | None:
    """count vectors of shape (2,) from a returned value (a tuple of arrays or one array)."""
    if isinstance(value, wire.Numeric) and value.array.size == 2 * count:
        return value.array.reshape(count, 2)
    if isinstance(value, wire.Sequence) and value.length == count:
        rows = [v.array for v in value.items if isinstance(v, wire.Numeric) and v.array.shape == (2,)]
        return np.array(rows) if len(rows) == count else None
    return None


def mct_of(value: Any) -> tuple[float, tuple[int, ...]] | None:
    if not (isinstance(value, wire.Sequence) and value.length == len(value.items) == 2):  # a forged reply may send less
        return None
    tc = time_of(value.items[0])
    index = value.items[1]
    if tc is None:
        return None
    if isinstance(index, wire.Numeric) and index.array.size == 2 and np.all(np.isfinite(index.array)):
        return tc, tuple(sorted(int(i) for i in index.array.ravel()))
    return tc, ()


def agrees(name: str, got: Any, expected: Any, args: tuple[Any, ...]) -> bool:
    """Does a decoded answer of helper ``name`` match the reference's (the hidden tests' tolerances)?"""
    if name in ("contact_time_grains", "contact_time_walls"):
        t = time_of(got)
        return t is not None and same_time(t, float(expected))
    if name == "minimum_contact_time":
        pair = mct_of(got)
        tc_ref, index_ref = float(expected[0]), tuple(sorted(int(i) for i in np.ravel(expected[1])))
        return pair is not None and same_time(pair[0], tc_ref) and (
            tc_ref == spec.NO_CONTACT or pair[1] == index_ref)
    count = 1 if name == "contact_solve_wall" else 2
    vectors = _vectors(got, count)
    reference = np.reshape(np.asarray(expected, dtype=float), (count, 2))
    speeds = [a for a in args if isinstance(a, np.ndarray) and a.shape == (2,)]
    scale = max((float(np.abs(a).max()) for a in speeds), default=0.0) + 1.0
    return vectors is not None and close(vectors, reference, scale, STATE_RTOL)


def same_value(a: Any, b: Any) -> bool:
    """Are two decoded values the same, number for number (NaN equal to NaN)?"""
    if isinstance(a, wire.Numeric) and isinstance(b, wire.Numeric):
        return a.array.shape == b.array.shape and bool(np.array_equal(a.array, b.array, equal_nan=True))
    if isinstance(a, wire.Sequence) and isinstance(b, wire.Sequence):
        return a.length == b.length and len(a.items) == len(b.items) and all(
            same_value(x, y) for x, y in zip(a.items, b.items))
    if isinstance(a, wire.Opaque) and isinstance(b, wire.Opaque):
        return a.text == b.text
    return a is None and b is None


def _describe(value: Any) -> str:
    return wire.describe(value) if value is not None else "an exception"


def audit(replayer: Replayer, caller: str, request_args: tuple[Any, ...], returned: Returned,
          suspects: frozenset[str]) -> Spoiled | None:
    """The first recorded helper call of ``returned`` proved wrong (see the module doc), or None."""
    budget = size(request_args)
    # The pairs checked, in order: the call, its arguments, and one pair's arguments and answer (pieces).
    checked: list[tuple[HelperCall, tuple[Any, ...], tuple[Any, ...], Any]] = []
    for call in returned.helper_calls:
        if call.name == caller or call.name not in suspects or call.name not in AUDITED or call.raised:
            continue
        if len(checked) >= AUDIT_CALLS:
            break
        args = positional(call)
        if args is None:
            continue
        split = _read(call, args, budget, AUDIT_CALLS - len(checked))
        checked += [(call, args, piece, answer) for piece, answer in split]
    del checked[AUDIT_CALLS:]
    prefetch((call.name, piece) for call, _, piece, _ in checked)
    mutation_checked: set[str] = set()
    # A call about many pairs is replayed once, whichever of its pairs is wrong (a red team's file made every pair
    # of a 512-pair call wrong, and never confirmed: 512 replays of the whole call a case, 52 s of grading).
    replays: dict[int, Returned | None] = {}
    for call, args, piece, answer in checked:
        expected = reference_answer(call.name, piece)
        if expected is None:
            continue
        if agrees(call.name, answer, expected, piece):
            if call.name in mutation_checked:
                continue
            # A right answer may still come with its arguments changed in place,
            # which breaks a caller that goes on using them: replay once to see.
            mutation_checked.add(call.name)
            spoiled = _modified_arguments(replayer, caller, call, args)
            if spoiled is not None:
                return spoiled
            continue
        if id(call) not in replays:
            replays[id(call)] = replayed(replayer, call.name, args)
        replay = replays[id(call)]
        if replay is not None and same_value(replay.value, call.result):
            return Spoiled(caller, call.name, piece, _reference_text(expected), _describe(answer))
    return None


def _read(call: HelperCall, args: tuple[Any, ...], budget: int, room: int) -> list[tuple[tuple[Any, ...], Any]]:
    """The pairs of a recorded call an audit reads (pieces: arguments and answer); none if it is not read.

    A call holding no more numbers than the request (``budget``) is read. A larger one about many pairs at once (all
    pairs of the request, say) is read pair by pair, each of the case's size, if its pairs fit the ``room`` left
    (counted before any split): the reference then runs only on pairs, at most AUDIT_CALLS of them a case.
    """
    if size(args) <= budget:
        return pieces(call.name, args, call.result)
    if pairs_in(call.result) > room:
        return []
    split = pieces(call.name, args, call.result)
    return split if len(split) > 1 and all(size(piece) <= budget for piece, _ in split) else []


#: One body's argument of a contact-time helper, by position: a vector (2,), a wall (2, 2), a radius.
_BODY_NDIM = {"contact_time_grains": (1, 1, 1, 1, 0, 0), "contact_time_walls": (2, 1, 1, 0)}


def pieces(name: str, args: tuple[Any, ...], result: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """A contact-time call about many pairs at once (arrays of grains or walls, broadcast against single ones, and
    an array of m times) as m calls about one pair each: their arguments and answers. Any other call: itself."""
    alone = [(args, result)]
    if name not in _BODY_NDIM or not (isinstance(result, wire.Numeric) and result.array.ndim == 1):
        return alone
    count = len(result.array)
    many = []
    for arg, ndim in zip(args, _BODY_NDIM[name], strict=True):
        shape = np.shape(arg)
        if len(shape) == ndim + 1 and shape[0] == count and shape[1:] == (2,) * ndim:
            many.append(True)
        elif len(shape) == ndim and shape == (2,) * ndim:
            many.append(False)
        else:
            return alone
    if not any(many):
        return alone
    return [(tuple(_one(arg[k]) if m else arg for arg, m in zip(args, many, strict=True)),
             wire.Numeric(np.array(result.array[k]), result.kind, result.type_name)) for k in range(count)]


def pairs_in(result: Any) -> int:
    """How many pairs' answers a recorded result holds, as pieces() would split it (at least 1)."""
    return len(result.array) if isinstance(result, wire.Numeric) and result.array.ndim == 1 else 1


def _one(value: Any) -> Any:
    """One body's part of a many-bodies argument, as positional() gives a single body's (a float for a radius)."""
    return float(value) if np.ndim(value) == 0 else value


def replayed(replayer: Replayer, name: str, args: tuple[Any, ...]) -> Returned | None:
    """The helper ``name`` called again on ``args`` where ``replayer`` runs it; None if that call fails (a replay that
    fails confirms nothing). SandboxFault goes through: a box that cannot start is the grader's fault, never a case
    counted against the file."""
    try:
        return replayer.call(name, *args)
    except SandboxFault:
        raise
    except Exception:  # noqa: BLE001 - whatever the submission's call raised
        return None


def _modified_arguments(replayer: Replayer, caller: str, call: HelperCall, args: tuple[Any, ...]) -> Spoiled | None:
    """A Spoiled when the helper, replayed, changes one of its arguments in place."""
    replay = replayed(replayer, call.name, args)
    if replay is None:
        return None
    params = spec.function_spec(call.name).params
    for param, before, after in zip(params, args, replay.args_after):
        if isinstance(before, np.ndarray) and not (isinstance(after, wire.Numeric) and np.array_equal(
                after.array, before)):
            return Spoiled(caller, call.name, args, f"{param} left as it was",
                           f"{param} changed to {_describe(after)}")
    return None


def _reference_text(expected: Any) -> str:
    if isinstance(expected, tuple):
        return "(" + ", ".join(_reference_text(e) for e in expected) + ")"
    if isinstance(expected, np.ndarray):
        return np.array2string(expected, precision=17, separator=", ")
    if isinstance(expected, float) and expected == spec.NO_CONTACT:
        return "sys.float_info.max"
    return repr(expected)
