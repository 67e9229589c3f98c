# EXPECT <=5: stand-in thief, searches gc.get_objects() for foreign functions or helper tables (must find nothing)
"""Computes nothing: combs the garbage collector's objects for answers.

Any function of one of the assignment's names defined outside this file, any
dict mapping those names to callables, any object with a ``helpers`` or
``reference`` attribute: it calls what it finds, else answers with constants.
What it finds is printed.
"""
import gc
import sys
import types

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


def _foreign_function(obj, name):
    if not isinstance(obj, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return False
    if getattr(obj, "__name__", None) != name:
        return False
    return _innermost_file(obj) != __file__


def _innermost_file(obj):
    """The file of the code a (possibly wrapped) function finally runs: its own wrappers lead back here."""
    while hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    code = getattr(obj, "__code__", None)
    return code.co_filename if code is not None else None


def _candidates(name):
    for obj in gc.get_objects():
        try:
            if _foreign_function(obj, name):
                yield f"function {name} of {getattr(obj, '__module__', '?')}", obj
            elif isinstance(obj, dict) and name in obj and callable(obj[name]) and _foreign_function(obj[name], name):
                yield f"a dict holding {name}", obj[name]
            else:
                for attribute in ("helpers", "reference", "oracle", "stand_ins"):
                    table = getattr(obj, attribute, None) if not isinstance(obj, type) else None
                    if isinstance(table, dict) and callable(table.get(name)):
                        yield f"{type(obj).__name__}.{attribute}[{name!r}]", table[name]
                    elif table is not None and callable(getattr(table, name, None)):
                        yield f"{type(obj).__name__}.{attribute}.{name}", getattr(table, name)
        except Exception:
            continue


def _answer(name, *args, **kwargs):
    if not _busy[0]:
        _busy[0] = True
        try:
            for what, found in _candidates(name):
                if what not in _told:
                    _told.add(what)
                    print("THIEF FOUND:", what)
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


for _name in NAMES:  # at import too
    for _what, _ in _candidates(_name):
        print("THIEF FOUND at import:", _what)
