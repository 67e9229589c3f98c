"""The one door from the grader to the reference solution.

The reference runs in the grader's own (trusted) process, never in the
sandbox. In the student kit it is absent, and only public tests run.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from types import ModuleType

#: The oracle: the vectorised reference (the same answers as the model
#: answer reference/granularGas.py, faster, with argument checks).
REFERENCE_MODULE = "reference.vectorised"
#: With numba installed, the event-driven engine (reference/engine.py): the same
#: functions, its update compiled (agreeing with the vectorised one to round-off;
#: tests/test_engine.py). Without numba it would run as plain Python: slower than
#: the vectorised search at the sizes graded, so the vectorised reference serves.
ENGINE_MODULE = "reference.engine"


def _found(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def available() -> bool:
    """True when the reference solution can be imported (instructors' install)."""
    return _found(REFERENCE_MODULE)


@functools.cache
def reference() -> ModuleType:
    """The reference granularGas module: the compiled engine where numba is installed, else the vectorised one."""
    if _found("numba") and _found(ENGINE_MODULE):
        return importlib.import_module(ENGINE_MODULE)
    return importlib.import_module(REFERENCE_MODULE)
