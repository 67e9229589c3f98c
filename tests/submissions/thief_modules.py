# EXPECT <=5: stand-in thief, looks for injected answers in its namespace, builtins, sys.modules (must find nothing)
"""Computes nothing: looks for someone else's functions to answer with.

At import and inside each call it searches its module namespace for names it
did not define, builtins for injected names, and sys.modules for any module
(reference, grader, oracle, helpers...) holding functions of the assignment's
names; it also tries to import the reference. Whatever it finds it calls; with
nothing found it falls back to constants. What it finds is printed.
"""
import builtins
import importlib
import sys

import numpy as np

NAMES = ("contact_time_grains", "contact_time_walls", "minimum_contact_time", "contact_solve_wall",
         "contact_solve_grains", "update")
FALLBACK = {
    "contact_time_grains": lambda *a, **k: sys.float_info.max,
    "contact_time_walls": lambda *a, **k: sys.float_info.max,
    "minimum_contact_time": lambda *a, **k: (sys.float_info.max, np.array([-1, -1])),
    "contact_solve_wall": lambda *a, **k: np.zeros(2),
    "contact_solve_grains": lambda *a, **k: (np.zeros(2), np.zeros(2)),
    "update": lambda *a, **k: None,
}
_busy = [False]
_told = set()
_own = None  # the names this file defines, taken at the end of the import


def _foreign(obj):
    """Callable, and not one of this file's functions (its own wrappers lead back here)."""
    if not callable(obj):
        return False
    while hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    code = getattr(obj, "__code__", None)
    return code is None or code.co_filename != __file__


def _tell(what):
    if what not in _told:
        _told.add(what)
        print("THIEF FOUND:", what)


def _candidates(name):
    here = globals()
    if _own is not None:
        for key, value in list(here.items()):
            if key not in _own and _foreign(value) and (key == name or name in key):
                yield f"module global {key}", value
    if hasattr(builtins, name) and _foreign(getattr(builtins, name)):
        yield f"builtins.{name}", getattr(builtins, name)
    for module_name in ("reference.granularGas", "reference.vectorised", "reference"):
        try:
            module = importlib.import_module(module_name)
        except Exception:
            continue
        if hasattr(module, name):
            yield f"import {module_name}", getattr(module, name)
    for module_name, module in list(sys.modules.items()):
        if module is None or module_name == __name__ or getattr(module, "__file__", None) == __file__:
            continue
        try:
            value = getattr(module, name, None)
        except Exception:
            continue
        if value is not None and _foreign(value):
            yield f"sys.modules[{module_name!r}].{name}", value


def _answer(name, *args, **kwargs):
    if not _busy[0]:
        _busy[0] = True
        try:
            for what, found in _candidates(name):
                _tell(what)
                try:
                    return found(*args, **kwargs)
                except Exception:
                    continue
        finally:
            _busy[0] = False
    return FALLBACK[name](*args, **kwargs)


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return _answer("contact_time_grains", x1, x2, v1, v2, R1, R2)


def contact_time_walls(w, x1, v1, R1):
    return _answer("contact_time_walls", w, x1, v1, R1)


def minimum_contact_time(x, v, R, w, indexOld):
    return _answer("minimum_contact_time", x, v, R, w, indexOld)


def contact_solve_wall(wall, x1, v1, r):
    return _answer("contact_solve_wall", wall, x1, v1, r)


def contact_solve_grains(x1, x2, v1, v2, m1, m2, r):
    return _answer("contact_solve_grains", x1, x2, v1, v2, m1, m2, r)


def update(x, v, R, m, w, indexOld, r, dt, t):
    return _answer("update", x, v, R, m, w, indexOld, r, dt, t)


_own = set(globals())
for _name in NAMES:  # at import too
    for _what, _ in _candidates(_name):
        _tell(_what)
