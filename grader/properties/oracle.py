"""The one door from the grader to the reference solution.

The reference runs in the grader's own (trusted) process, never in the
sandbox. In the student kit it is absent, and only public tests run.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

#: The oracle: the vectorised reference (the same answers as the model
#: answer reference/granularGas.py, faster, with argument checks).
REFERENCE_MODULE = "reference.vectorised"


def available() -> bool:
    """True when the reference solution can be imported (instructors' install)."""
    try:
        return importlib.util.find_spec(REFERENCE_MODULE) is not None
    except ModuleNotFoundError:
        return False


def reference() -> ModuleType:
    """The reference granularGas module."""
    return importlib.import_module(REFERENCE_MODULE)
