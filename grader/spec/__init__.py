"""The assignment's contract, declared once (layer 0: imports nothing of the grader but its errors).

This module declares the six functions; its sub-modules declare the rest that
every layer reads: ``limits`` (CPU-time limits and caps), ``tolerances``,
``rubric`` (points), ``scenarios`` (the physics scenarios' set-ups) and
``paths`` (where the grader's files are).

Everything else reads this module: the reference solution, the student
template's docstrings (checked by the tests), the statement's points table
(checked by the tests) and the grader's rubric and properties.

Conventions
-----------
* Vectors are float arrays of shape (2,). ``x``/``v`` for a system of n grains
  have shape (n, 2), ``R``/``m`` shape (n,), walls ``w`` shape (k, 2, 2) with
  ``w[k] = [point0, point1]``.
* A contact that will never happen, or whose time would be negative because the
  two bodies already overlap, has time :data:`NO_CONTACT` (``sys.float_info.max``).
* A wall is the infinite line through its two points, whatever their order,
  distance or orientation. A grain only meets a wall it moves toward.
* ``index = [i, j]`` with ``j >= 0`` is a contact between grains i and j (any
  order); ``index = [i, wall_code(k)] = [i, -(k + 1)]`` is a contact between
  grain i and wall ``w[k]``, so that ``w[-(index[1] + 1)]`` is that wall.
  :data:`NO_PREVIOUS_CONTACT` (``[-1, -1]``) means "no previous contact".
* Contact solvers return velocity increments and never modify their arguments.
* ``update`` changes ``x``, ``v`` and ``indexOld`` in place.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

#: The file students hand in, and the module name it is imported as.
FILE_NAME: str = "granularGas.py"
MODULE_NAME: str = "granularGas"
#: Archives a student may hand in instead of that file (never unpacked by the grader: named, with what to do).
ARCHIVE_SUFFIXES: tuple[str, ...] = (".zip", ".tar", ".tgz", ".gz", ".xz", ".bz2", ".7z", ".rar")

#: Time returned when there is no (non-negative) contact time.
NO_CONTACT: float = sys.float_info.max

#: ``indexOld`` before any contact has happened.
NO_PREVIOUS_CONTACT: tuple[int, int] = (-1, -1)


def wall_code(k: int) -> int:
    """Second entry of ``index`` for a contact with wall ``w[k]``: ``-(k + 1)``."""
    if k < 0:
        raise ValueError(f"wall number k={k} must be >= 0")
    return -(k + 1)


def wall_number(code: int) -> int:
    """Inverse of :func:`wall_code`: the wall ``k`` such that ``w[k]`` is meant."""
    if code >= 0:
        raise ValueError(f"index entry {code} is a grain, not a wall (walls are negative)")
    return -(code + 1)


@dataclass(frozen=True)
class FunctionSpec:
    """One of the six functions that ``granularGas.py`` must define."""

    name: str
    params: tuple[str, ...]
    returns: tuple[str, ...]
    points: int
    summary: str

    @property
    def signature(self) -> str:
        """The call as written in the statement, e.g. ``tc = f(a, b)``."""
        call = f"{self.name}({', '.join(self.params)})"
        return f"{', '.join(self.returns)} = {call}" if self.returns else call


FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        "contact_time_grains", ("x1", "x2", "v1", "v2", "R1", "R2"), ("tc",), 15,
        "time until grains 1 and 2 touch, or NO_CONTACT",
    ),
    FunctionSpec(
        "contact_time_walls", ("w", "x1", "v1", "R1"), ("tc",), 10,
        "time until grain 1 touches the line through w[0] and w[1], or NO_CONTACT",
    ),
    FunctionSpec(
        "minimum_contact_time", ("x", "v", "R", "w", "indexOld"), ("tc", "index"), 15,
        "earliest contact of the system other than indexOld, and who is in it",
    ),
    FunctionSpec(
        "contact_solve_wall", ("wall", "x1", "v1", "r"), ("dv1",), 10,
        "velocity increment of a grain bouncing on a wall with restitution r",
    ),
    FunctionSpec(
        "contact_solve_grains", ("x1", "x2", "v1", "v2", "m1", "m2", "r"), ("dv1", "dv2"), 15,
        "velocity increments of two grains colliding with restitution r",
    ),
    FunctionSpec(
        "update", ("x", "v", "R", "m", "w", "indexOld", "r", "dt", "t"), (), 20,
        "advance the system by dt in place, solving every contact in time order",
    ),
)

FUNCTION_NAMES: tuple[str, ...] = tuple(f.name for f in FUNCTIONS)


def function_spec(name: str) -> FunctionSpec:
    """The spec of function ``name``; a clear error for an unknown name."""
    for f in FUNCTIONS:
        if f.name == name:
            return f
    raise KeyError(f"unknown function {name!r}; the assignment's functions are {', '.join(FUNCTION_NAMES)}")


@dataclass(frozen=True)
class ScenarioSpec:
    """A physics scenario run through the submission's own functions together."""

    name: str
    title: str
    points: int
    summary: str
    uses: tuple[str, ...]  # the functions it runs


SCENARIOS: tuple[ScenarioSpec, ...] = (
    ScenarioSpec(
        "c12_row", "C12 row of spheres", 10,
        "ARGESIM benchmark C12: four spheres in a row, the first hitting the second; the collision table and "
        "the final velocities against the benchmark's exact solution",
        ("minimum_contact_time", "contact_solve_grains", "update"),
    ),
    ScenarioSpec(
        "dem_pair", "two-particle DEM case", 5,
        "the hard-sphere collision of the DEM comparison (x-y plane): contact time and point, velocities "
        "after the collision for e = 1 and 0.75",
        ("contact_time_grains", "contact_solve_grains", "update"),
    ),
)

SCENARIO_NAMES: tuple[str, ...] = tuple(s.name for s in SCENARIOS)
#: Everything the rubric gives points to: the six functions, then the scenarios.
ITEM_NAMES: tuple[str, ...] = FUNCTION_NAMES + SCENARIO_NAMES


#: Short column names of the items, for tables.
ITEM_ABBREVIATIONS: dict[str, str] = {
    "contact_time_grains": "ctg", "contact_time_walls": "ctw", "minimum_contact_time": "mct",
    "contact_solve_wall": "csw", "contact_solve_grains": "csg", "update": "update", "c12_row": "c12",
    "dem_pair": "dem",
}


#: The order in which the statement (assignment/README.md) builds the items: the
#: contact times, the collision laws, then the loop of update that needs the
#: earliest contact; reports follow it (checked by tests/test_self_check.py).
STATEMENT_ORDER: tuple[str, ...] = ("contact_time_grains", "contact_time_walls", "contact_solve_grains",
                                    "contact_solve_wall", "minimum_contact_time", "update", *SCENARIO_NAMES)
#: What the short column names stand for, said under a table that uses them.
ITEM_LEGEND = "  ".join(f"{ITEM_ABBREVIATIONS[name]}: {name}" for name in STATEMENT_ORDER
                        if ITEM_ABBREVIATIONS[name] != name)


def item_points(name: str) -> int:
    points = {f.name: f.points for f in FUNCTIONS} | {s.name: s.points for s in SCENARIOS}
    if name in points:
        return points[name]
    raise KeyError(f"unknown rubric item {name!r}; the items are {', '.join(ITEM_NAMES)}")


def item_label(name: str) -> str:
    """How reports name an item: a function's signature, a scenario's title."""
    if name in FUNCTION_NAMES:
        return function_spec(name).signature
    return next(s.title for s in SCENARIOS if s.name == name)


def total_points() -> int:
    return sum(item_points(name) for name in ITEM_NAMES)
