# EXPECT <=5: stand-in thief, walks the callers' frames (sys._getframe) for stand-ins or answers (must find nothing)
"""Computes nothing: climbs the call stack looking for answers.

In every frame above its own (the grader's child process calling it) it
looks at locals and globals for functions of the assignment's names defined
elsewhere, dicts of such functions (helper tables), and values named like an
expected answer; it calls or returns what it finds, else constants. What it
finds is printed.
"""
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
ANSWER_WORDS = ("expected", "answer", "reference", "oracle", "stand_in", "standin")
_busy = [False]
_told = set()


def _foreign(obj):
    """Callable, and not one of this file's functions (its own wrappers lead back here)."""
    if not callable(obj):
        return False
    while hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    code = getattr(obj, "__code__", None)
    return code is None or code.co_filename != __file__


def _look(scope, name, where):
    for key, value in list(scope.items()):
        try:
            if key == name and _foreign(value):
                yield f"{where}: {key}", value
            elif isinstance(value, dict) and _foreign(value.get(name)):
                yield f"{where}: {key}[{name!r}]", value[name]
            elif any(word in str(key).lower() for word in ANSWER_WORDS):
                if _foreign(value):
                    yield f"{where}: {key} (callable)", value
                elif _foreign(getattr(value, name, None)):
                    yield f"{where}: {key}.{name}", getattr(value, name)
                else:
                    yield f"{where}: {key} (value)", (lambda *a, _v=value, **k: _v)
        except Exception:
            continue


def _candidates(name):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename != __file__:
            where = f"{frame.f_code.co_filename}:{frame.f_code.co_name}"
            yield from _look(frame.f_locals, name, where + " locals")
            yield from _look(frame.f_globals, name, where + " globals")
        frame = frame.f_back


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


for _name in NAMES:  # at import too: the importer's frames
    for _what, _ in _candidates(_name):
        print("THIEF FOUND at import:", _what)
