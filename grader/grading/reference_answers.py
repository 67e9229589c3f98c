"""The reference's answers to the helper calls an audit checks (grader.grading.audit): kept, and computed in bulk.

Each answer is computed twice, on the recorded arguments and on the same nudged (grader.spec.tolerances.nudged):
one that moves when nudged is ill-conditioned, and blames no one (None). The reference is pure, so answers are kept
for the process (one search audits the same calls again and again). A call of the reference on two vectors is
almost all numpy's overhead (some 200 us with its argument checks), and an audit reads up to hundreds of calls per
case: :func:`prefetch` computes the contact times of all of a case's calls at once, with the same elementwise
formulas of the reference's vectorised core on the same inputs and the same nudges, so the numbers are the ones the
calls one by one give (tests/test_helper_audit.py checks them bit for bit). It takes only arguments the reference
takes as they are (float vectors of shape (2,), a float radius, finite and well inside the float range, a wall of
two distinct points); anything else is left to :func:`reference_answer`, one call at a time.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np

from grader import spec
from grader.properties import oracle
from grader.spec.tolerances import AUDIT_CONDITIONING_RTOL, TIME_RTOL, close, nudge_factors, nudged

#: Answers kept per process, at most (a few MB): a failing file's grading computes some 2 000.
ANSWERS_KEPT = 20_000
_answers: dict[Hashable, Any] = {}

#: Arguments at most this large, in absolute value, are taken in bulk: nothing in the formulas overflows (the
#: largest, b * b, is under 64 * BULK_LIMIT ** 4), so no floating-point warning differs between one call and many.
BULK_LIMIT = 1e75

#: The arguments of each contact-time helper taken in bulk: "v" a float vector (2,), "w" a wall (2, 2), "r" a float.
_BULK_SHAPES = {"contact_time_grains": "vvvvrr", "contact_time_walls": "wvvr"}
_SHAPES = {"v": (2,), "w": (2, 2)}


def same_time(a: float, b: float) -> bool:
    """Whether two contact times agree within TIME_RTOL (the "no contact" sentinel only with itself)."""
    no = spec.NO_CONTACT
    return a == b or (a != no and b != no and close(a, b, abs(b) + 1.0, TIME_RTOL))


def reference_answer(name: str, args: tuple[Any, ...]) -> Any | None:
    """The reference's answer, or None when it is ill-conditioned there (or the reference refuses)."""
    function: Callable[..., Any] = getattr(oracle.reference(), name)
    key = _key(function, name, args)
    if key in _answers:
        return _answers[key]
    answer = _reference_answer(function, name, args)
    _keep(key, answer)
    return answer


def prefetch(calls: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
    """Compute, all at once, the answers :func:`reference_answer` will give for these contact-time calls (name,
    positional arguments); calls of other helpers, or with arguments not taken in bulk, are left out."""
    module = oracle.reference()
    exact = oracle.vectorised()
    rows: dict[str, list[tuple[Hashable, tuple[Any, ...]]]] = {}
    for name, args in calls:
        if name not in _BULK_SHAPES:
            continue
        function = getattr(module, name)
        if function is not getattr(exact, name) or not _bulk_ready(_BULK_SHAPES[name], args):
            continue
        key = _key(function, name, args)
        if key not in _answers:
            rows.setdefault(name, []).append((key, args))
    for name, chosen in rows.items():
        try:
            columns = [np.array(column, dtype=float) for column in zip(*(args for _, args in chosen), strict=True)]
            answers = _bulk_answers(exact, name, columns)
        except Exception:  # noqa: BLE001 - only a shortcut: reference_answer answers these calls one by one
            continue
        for (key, _), answer in zip(chosen, answers, strict=True):
            if answer is not _LEFT_OUT:
                _keep(key, answer)


def _key(function: Callable[..., Any], name: str, args: tuple[Any, ...]) -> Hashable:
    """Equal for calls whose arguments are the same: types, dtypes, shapes and values bit for bit (signed zeros, NaN
    payloads). Unlike the pickles once used, an array's memory order is not part of it: no answer depends on it."""
    return (id(function), name, tuple(_arg_key(arg) for arg in args))


def _arg_key(arg: Any) -> Hashable:
    kind = type(arg)
    if kind is np.ndarray and arg.dtype.kind in "biuf":  # pickled, an array is some 20 us; its bytes, 1
        return kind, arg.dtype.str, arg.shape, arg.tobytes()
    if kind is float:
        return kind, struct.pack("<d", arg)  # its bits: -0.0 and 0.0 differ, as in the reference's answer
    if kind is int:
        return kind, arg
    return pickle.dumps(arg, protocol=pickle.HIGHEST_PROTOCOL)


def _keep(key: Hashable, answer: Any) -> None:
    if len(_answers) < ANSWERS_KEPT:
        _answers[key] = answer


def _reference_answer(function: Callable[..., Any], name: str, args: tuple[Any, ...]) -> Any | None:
    try:
        expected = function(*args)
        again = function(*nudged(args))
    except Exception:  # noqa: BLE001 - inputs the reference refuses cannot blame a helper
        return None
    if name in ("contact_time_grains", "contact_time_walls"):
        ok = same_time(float(again), float(expected))
    elif name == "minimum_contact_time":
        ok = same_time(float(again[0]), float(expected[0])) and sorted(np.ravel(again[1])) == sorted(
            np.ravel(expected[1]))
    else:
        ok = close(np.asarray(again, float), np.asarray(expected, float), np.abs(np.asarray(expected)).max() + 1,
                   AUDIT_CONDITIONING_RTOL)
    return expected if ok else None


def _bulk_ready(kinds: str, args: tuple[Any, ...]) -> bool:
    """Whether the arguments are what the reference takes as they are, in the shapes ``kinds`` names."""
    if len(args) != len(kinds):
        return False
    for kind, arg in zip(kinds, args, strict=True):
        if kind == "r":
            if type(arg) is not float or not 0.0 < arg <= BULK_LIMIT:
                return False
        elif not (type(arg) is np.ndarray and arg.dtype == np.float64 and arg.shape == _SHAPES[kind]):
            return False
    return True


#: An answer :func:`prefetch` leaves to the call one by one.
_LEFT_OUT = object()


def _bulk_answers(exact: Any, name: str, columns: list[np.ndarray]) -> list[Any]:
    """The answers of many calls of helper ``name``, its arguments stacked by position (``columns``)."""
    kinds = _BULK_SHAPES[name]
    factors = iter(nudge_factors(tuple(_SHAPES[k] for k in kinds if k != "r")))
    shaken = [column if kind == "r" else column * next(factors) for kind, column in zip(kinds, columns, strict=True)]
    usable = np.ones(len(columns[0]), dtype=bool)
    for stacked in (columns, shaken):
        for kind, column in zip(kinds, stacked, strict=True):
            flat = column.reshape(len(column), -1)
            usable &= np.all(np.abs(flat) <= BULK_LIMIT, axis=1)  # finite, and nothing overflows
            if kind == "w":
                usable &= np.any(column[:, 1] != column[:, 0], axis=1)  # two distinct points
    if not usable.any():
        return [_LEFT_OUT] * len(usable)
    expected, again = (_times(exact, name, [c[usable] for c in stacked]) for stacked in (columns, shaken))
    answers: list[Any] = [_LEFT_OUT] * len(usable)
    for row, t, t_again in zip(np.flatnonzero(usable), expected.tolist(), again.tolist(), strict=True):
        answers[row] = t if same_time(t_again, t) else None
    return answers


def _times(exact: Any, name: str, columns: list[np.ndarray]) -> np.ndarray:
    """reference.vectorised's contact_time_grains / contact_time_walls, over rows of checked arguments."""
    if name == "contact_time_grains":
        x1, x2, v1, v2, r1, r2 = columns
        return exact.grain_contact_times(x1 - x2, v1 - v2, r1 + r2)
    w, x1, v1, r1 = columns
    return exact.wall_contact_times(w, x1, v1, r1)
