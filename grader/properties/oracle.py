"""The one door from the grader to the reference solution.

The reference runs in the grader's own (trusted) process, never in the
sandbox. In the student kit it is absent, and only public tests run.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.spec.paths import PACKAGE_ROOT

#: The oracle: the vectorised reference (the same answers as the model
#: answer reference/granularGas.py, faster, with argument checks).
REFERENCE_MODULE = "reference.vectorised"
#: The event-driven engine (reference/engine.py, compiled with numba): the same
#: update, agreeing with the vectorised one to round-off (tests/test_engine.py).
ENGINE_MODULE = "reference.engine"
#: Gases of at least this many grains are moved by the engine (where numba is
#: installed): animations of large gases. Smaller ones, every graded case among
#: them, by the vectorised search, which is as fast there and needs no compiling
#: (numba's first call in a fresh process costs about 20 s of CPU).
ENGINE_FROM_GRAINS = 64


def _found(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@functools.cache  # the answer does not change in a process, and the grading asks hundreds of times (0.2 ms each)
def _ours(name: str) -> bool:
    """Whether the module is found, and beside this grader (``reference`` next to ``grader``, as every install of
    the checkout puts them). A student kit tried on an instructor's machine finds the checkout's reference through
    its editable install: that one is not the kit's, whose grader has no hidden tests to run with it."""
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return False
    if found is None or found.origin is None:
        return False
    # As found and as resolved: a reference/ linked into the checkout from elsewhere is still the checkout's.
    beside = {Path(found.origin).parent.parent, Path(found.origin).resolve().parent.parent}
    return bool(beside & {PACKAGE_ROOT, PACKAGE_ROOT.resolve()})


def available() -> bool:
    """True when this install's reference solution can be imported (instructors' install)."""
    return _ours(REFERENCE_MODULE)


def engine_compiled() -> bool:
    """True when large gases' updates go to the numba-compiled engine (the efficiency bonus's cost bar needs it)."""
    if not (_found("numba") and _ours(ENGINE_MODULE)):
        return False
    return bool(getattr(importlib.import_module(ENGINE_MODULE), "COMPILED", False))


def vectorised() -> types.ModuleType:
    """The vectorised reference itself: the same answers on every machine, numba or not."""
    return importlib.import_module(REFERENCE_MODULE)


def update_within(max_contacts: int) -> Callable[..., float]:
    """The vectorised reference's update, raising collapse_error() past ``max_contacts`` contacts in one call (its
    default is 100 000: some 20 s of the grader's CPU for a gas that collapses)."""
    exact = vectorised()
    return functools.partial(exact.update_with, functools.partial(exact.advance, max_contacts=max_contacts))


def collapse_error() -> type[Exception]:
    """What the reference's update raises where contacts pile up without end in one step (inelastic collapse)."""
    error: type[Exception] = vectorised().InelasticCollapseError
    return error


@functools.cache
def timed_update() -> Callable[..., float]:
    """The reference's update the efficiency measurement times at every N: the compiled engine where it is, else the
    vectorised search (never one below ENGINE_FROM_GRAINS and the other above, as reference() does: the reference's
    fitted exponent came out near -1.5, a review found)."""
    if engine_compiled():
        return importlib.import_module(ENGINE_MODULE).update
    return vectorised().update


@functools.cache  # built once: the grading asks for it at every case of a property that uses it
def reference() -> types.ModuleType:
    """The reference granularGas functions; ``update`` goes to the engine for large gases where numba is installed."""
    exact = vectorised()
    if not (_found("numba") and _ours(ENGINE_MODULE)):
        return exact
    oracle = types.ModuleType("grader_oracle", exact.__doc__)
    oracle.__dict__.update({k: v for k, v in vars(exact).items() if not k.startswith("__")})

    def update(x: Any, *args: Any) -> float:
        if len(x) >= ENGINE_FROM_GRAINS:
            return float(importlib.import_module(ENGINE_MODULE).update(x, *args))
        return float(exact.update(x, *args))

    oracle.update = update  # type: ignore[attr-defined]
    return oracle
