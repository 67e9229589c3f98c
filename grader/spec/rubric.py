"""Points per function: the spec's defaults, or an instructor's rubric file.

A rubric is a TOML file with a ``[points]`` table, one entry per function:

    [points]
    contact_time_grains = 20
    update = 20

Functions left out keep the spec's points. The tests of a function share its
points equally. A ``[bonus]`` table sets the efficiency bonus and ``[grading]
excuse_traced`` the traced excuse; anything else is refused (examples/rubric.toml
shows every entry).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from grader import spec
from grader.errors import GraderError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class RubricError(GraderError):
    """The rubric file cannot be used; the message says what to fix."""


def default_points() -> dict[str, float]:
    return {name: float(spec.item_points(name)) for name in spec.ITEM_NAMES}


@dataclass(frozen=True)
class BonusRule:
    """The rubric's [bonus] table: ``points`` beside the score when the fitted exponent of the cost per event is
    below ``exponent_below``, the cost per event at the largest N at most ``cost_ratio_below`` times the
    reference's, and the answers at the largest N are right (grader.grading.efficiency)."""

    exponent_below: float = 1.5
    points: float = 5.0
    #: Gradescope's score includes the bonus only when this is true.
    in_gradescope_score: bool = False
    #: The search over all pairs, vectorised, costs about 340 times the reference per event at N = 400 (sandbox
    #: against grader, numba compiled); a pad that flattens the exponent only adds to that.
    cost_ratio_below: float = 100.0


@dataclass(frozen=True)
class Rubric:
    """What a rubric file sets: points per function and scenario, the efficiency bonus (None: none, the default),
    and whether the traced excuse is on."""

    points: dict[str, float]
    bonus: BonusRule | None = None
    #: The [grading] excuse_traced switch: whether a test of minimum_contact_time whose failing cases are all traced
    #: to a wrong helper (grader.grading.tracing) still earns its points. Off by default: the trace rests on replays
    #: of the helper in boxes where nothing is graded, and a red team's file that told those boxes apart made its
    #: helper look wrong only there, and had its own bug excused (77.25 points against 61). On, a student whose
    #: helper is wrong loses its points once, not again in its caller.
    excuse_traced: bool = False


#: The most points one function, scenario or bonus may carry: a rubric is read by people (a review's 1e308
#: printed a score of 309 digits), and nan or inf would make every score nan or inf.
MAX_POINTS = 1000.0
#: What a rubric may hold, and what the course settings file (granular_grader.toml, which nbgrader-course and
#: gradescope-zip write, and which is a rubric with two tables more) holds besides. Anything else is refused: an
#: entry ignored without a word grades otherwise than its author meant.
RUBRIC_GRADING_KEYS = ("excuse_traced",)
SETTINGS_GRADING_KEYS = (*RUBRIC_GRADING_KEYS, "allow_weak_isolation", "hidden_visibility")
SETTINGS_ONLY = {"limits": "the limit flags (--timeout, --import-timeout, --memory-mb, --processes)",
                 "allow_weak_isolation": "--allow-weak-isolation", "hidden_visibility": "gradescope-zip's "
                 "--hidden-visibility"}


def read(path: str | Path | None, settings: bool = False) -> Rubric:
    """The rubric at ``path``, read once (None: the spec's points, no bonus, no excuse); RubricError naming what to
    fix. settings: the file is a course's settings file (its [limits] and other [grading] entries are read by
    grader.commands.courses.settings)."""
    if path is None:
        return Rubric(default_points())
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise RubricError(f"rubric {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError(f"rubric {path}: cannot be read ({exc})") from None
    return parse(text, str(path), settings)


def parse(text: str, name: str, settings: bool = False) -> Rubric:
    """The rubric whose TOML text is ``text``; RubricError naming it ``name`` and what to fix."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"rubric {name}: not valid TOML ({exc})") from None
    if not settings:
        _only_rubric_entries(data, name)
    return Rubric(_points(data.get("points"), name), _bonus(data.get("bonus"), name),
                  _excuse_traced(data.get("grading", {}), name))


def _only_rubric_entries(data: dict, name: str) -> None:
    """Refuse what a rubric does not set: another table, or a [grading] entry of the course settings."""
    grading = data.get("grading", {})
    if not isinstance(grading, dict):
        raise RubricError(f"rubric {name}: grading must be a table, e.g.\n[grading]\nexcuse_traced = false")
    found = [key for key in data if key not in ("points", "bonus", "grading")]
    found += [key for key in grading if key not in RUBRIC_GRADING_KEYS]
    for key in found:
        if key in SETTINGS_ONLY:
            raise RubricError(f"rubric {name}: {key} is not set by a rubric but by {SETTINGS_ONLY[key]}; a rubric "
                              "sets [points], [bonus] and [grading] excuse_traced (a course's granular_grader.toml "
                              "is read by the course it was built for, not as a rubric)")
        where = "[grading] names" if key in grading else "has a table or entry"
        raise RubricError(f"rubric {name}: {where} {key!r}, which a rubric does not set; it sets [points], "
                          f"[bonus] and [grading] {', '.join(RUBRIC_GRADING_KEYS)}")


def _number(value: object, where: str, top: float = MAX_POINTS) -> float:
    """A finite number in [0, top], else RubricError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= top:
        raise RubricError(f"{where} must be a number from 0 to {top:g}; got {value!r}")
    return float(value)


def load(path: str | Path | None) -> dict[str, float]:
    """Points per function from ``path`` (None: the spec's defaults)."""
    return read(path).points


def _points(table: object, path: str) -> dict[str, float]:
    points = default_points()
    if not isinstance(table, dict):
        raise RubricError(f"rubric {path}: it needs a [points] table, e.g.\n[points]\nupdate = 25")
    for name, value in table.items():
        if name not in points:
            raise RubricError(
                f"rubric {path}: [points] names {name!r}, which is neither a function nor a scenario of the "
                f"assignment; use {', '.join(spec.ITEM_NAMES)}"
            )
        points[name] = _number(value, f"rubric {path}: points for {name}")
    if sum(points.values()) <= 0:
        raise RubricError(f"rubric {path}: the points add up to 0; give some function points")
    return points


def _bonus(table: object, path: str) -> BonusRule | None:
    if table is None:
        return None
    if not isinstance(table, dict) or set(table) - {"exponent_below", "points", "in_gradescope_score",
                                                    "cost_ratio_below"}:
        raise RubricError(f"rubric {path}: [bonus] takes exponent_below, points, cost_ratio_below and "
                          "in_gradescope_score, e.g.\n[bonus]\nexponent_below = 1.5\npoints = 5")
    rule = BonusRule()
    # Finite and readable: the exponent of the O(N^2) search is 2 (a test gives 100, to grant the bonus to all).
    tops = {"exponent_below": 100.0, "points": MAX_POINTS, "cost_ratio_below": 1e6}
    value = {name: _number(table.get(name, getattr(rule, name)), f"rubric {path}: [bonus] {name}", top)
             for name, top in tops.items()}
    gradescope = table.get("in_gradescope_score", False)
    if not isinstance(gradescope, bool):
        raise RubricError(f"rubric {path}: [bonus] in_gradescope_score must be true or false; got {gradescope!r}")
    return BonusRule(value["exponent_below"], value["points"], gradescope, value["cost_ratio_below"])


def _excuse_traced(table: object, path: str) -> bool:
    value = table.get("excuse_traced", False) if isinstance(table, dict) else False
    if not isinstance(value, bool):
        raise RubricError(f"rubric {path}: [grading] excuse_traced must be true or false; got {value!r}")
    return value


#: When students see the hidden tests' results on Gradescope (its visibility values).
HIDDEN_VISIBILITIES: tuple[str, ...] = ("hidden", "after_due_date", "after_published", "visible")
#: The default: once the instructor publishes the grades.
DEFAULT_HIDDEN_VISIBILITY = "after_published"
