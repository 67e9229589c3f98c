"""Argument checks for the fixed-signature functions.

Each check returns the argument as a float array of the expected shape, or
raises :class:`InvalidArgument` naming the argument, what it got and what it
should be, so that a caller never sees a traceback from deep inside numpy.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class InvalidArgument(ValueError):
    """An argument of a granularGas function does not follow the spec."""


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} of shape {shape}" if shape is not None else text


def float_array(name: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """``value`` as a finite float array of ``shape`` (None: any length)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name} must be numbers of shape {_shape_text(shape)}; got {_describe(value)}") from None
    wrong_length = any(want is not None and got != want for got, want in zip(arr.shape, shape, strict=False))
    if arr.ndim != len(shape) or wrong_length:
        raise InvalidArgument(
            f"{name} must have shape {_shape_text(shape)}; got {_describe(value)} with shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidArgument(f"{name} must be finite; got {_describe(value)} containing inf or nan")
    return arr


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return "(" + ", ".join("n" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def positive(name: str, value: Any, shape: tuple[int | None, ...] = ()) -> np.ndarray:
    arr = float_array(name, value, shape)
    if np.any(arr <= 0):
        raise InvalidArgument(f"{name} must be > 0; got {_describe(value)}")
    return arr


def restitution(name: str, value: Any) -> float:
    r = float(float_array(name, value, ()))
    if not 0.0 <= r <= 1.0:
        raise InvalidArgument(f"{name} is a restitution coefficient and must lie in [0, 1]; got {r!r}")
    return r


def walls(name: str, value: Any, many: bool) -> np.ndarray:
    """One wall (2, 2) or many (k, 2, 2); the two points of a wall must differ."""
    arr = float_array(name, value, (None, 2, 2) if many else (2, 2))
    tangent = arr[..., 1, :] - arr[..., 0, :]
    if np.any(np.all(tangent == 0, axis=-1)):
        raise InvalidArgument(f"{name}: the two points of a wall must differ to define a line; got {arr.tolist()}")
    return arr


def index_pair(name: str, value: Any, n: int, k: int) -> tuple[int, int]:
    """A contact ``index`` [i, j] (j >= 0 grain, j < 0 wall) or [-1, -1]."""
    try:
        arr = np.asarray(value)
        a, b = (int(e) for e in arr.reshape(-1))
        if arr.size != 2 or np.any(arr != np.array([a, b])):
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"{name} must hold two integers [i, j] (or [-1, -1] for no previous contact); got {_describe(value)}"
        ) from None
    if (a, b) == (-1, -1):
        return a, b
    if not 0 <= a < n or not (0 <= b < n or -k <= b < 0):
        raise InvalidArgument(
            f"{name}={[a, b]} names no contact of {n} grains and {k} walls: use [i, j] with grains "
            f"0 <= i, j < {n}, [i, -(q+1)] for wall q < {k}, or [-1, -1]"
        )
    return a, b


def mutable_float_array(name: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """An argument that ``update`` changes in place: it must already be a float ndarray."""
    if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
        raise InvalidArgument(
            f"{name} is updated in place, so it must be a numpy float array of shape {_shape_text(shape)}; "
            f"got {_describe(value)} (use np.array(..., dtype=float))"
        )
    return float_array(name, value, shape)


class UpdateArguments(NamedTuple):
    """update's arguments, checked, in the order ``advance`` takes them (x and v: the caller's arrays)."""

    x: np.ndarray
    v: np.ndarray
    R: np.ndarray
    m: np.ndarray
    w: np.ndarray
    last: tuple[int, int]
    r: float
    dt: float
    t: float


def update_arguments(x: Any, v: Any, R: Any, m: Any, w: Any, indexOld: Any, r: Any, dt: Any,
                     t: Any) -> UpdateArguments:
    """Check every argument of ``update`` (the homework's signature); InvalidArgument names the one to fix."""
    xa = mutable_float_array("x", x, (None, 2))
    n = len(xa)
    va = mutable_float_array("v", v, (n, 2))
    radii, masses = positive("R", R, (n,)), positive("m", m, (n,))
    walls_ = walls("w", w, many=True)
    old = index_pair("indexOld", indexOld, n, len(walls_))
    step = float(float_array("dt", dt, ()))
    if step < 0:
        raise InvalidArgument(f"dt must be >= 0; got {step!r}")
    return UpdateArguments(xa, va, radii, masses, walls_, old, restitution("r", r), step,
                           float(float_array("t", t, ())))
