"""The grading settings a course or a Gradescope bundle was built with, as one TOML file.

``nbgrader-course`` and ``gradescope-zip`` write the rubric and the limits
they were given into ``granular_grader.toml``; nbgrader's autograde and
Gradescope's ``run_autograder`` read them back, so a course is graded as it
was built, never with the defaults by accident. The file is a rubric
(``[points]``, read by :func:`grader.spec.rubric.load`) with two more tables:

    [points]
    update = 20
    [limits]
    call_seconds = 5.0
    [grading]
    allow_weak_isolation = false
    hidden_visibility = "after_published"
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader.errors import GraderError
from grader.spec import paths, rubric
from grader.spec.limits import Limits

if TYPE_CHECKING:
    from grader.grading.runner import GradeOptions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SETTINGS_FILE = "granular_grader.toml"
#: When students see the hidden tests' entries on Gradescope.
VISIBILITIES = rubric.HIDDEN_VISIBILITIES
PACKAGE_ROOT = paths.PACKAGE_ROOT


class SettingsError(GraderError):
    """The settings file cannot be used; the message names the entry and the fix."""


@dataclass(frozen=True)
class GradingSettings:
    """How every file of a course or bundle is graded."""

    points: dict[str, float] = field(default_factory=rubric.default_points)
    limits: Limits = Limits()
    #: Run the hidden tests even where the sandbox cannot keep them secret (every result says so).
    allow_weak_isolation: bool = False
    #: Gradescope only: when students see the hidden tests' entries.
    hidden_visibility: str = rubric.DEFAULT_HIDDEN_VISIBILITY
    #: The rubric's [bonus] table (efficiency bonus), if it has one.
    bonus: rubric.BonusRule | None = None
    #: The rubric's [grading] excuse_traced (rubric.Rubric.excuse_traced).
    excuse_traced: bool = False

    def options(self, hide: tuple[Path, ...] = ()) -> GradeOptions:
        """The runner's options for one file (hidden tests whenever the reference is installed)."""
        from grader.grading.runner import GradeOptions

        return GradeOptions(dict(self.points), self.limits, None, self.allow_weak_isolation, hide,
                            excuse_traced=self.excuse_traced)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))  # a TOML basic string is a JSON string


def to_toml(settings: GradingSettings) -> str:
    """The settings file's text (read back by :func:`load`)."""
    lines = ["# Grading settings written by granular-grader: the rubric and limits this course was built with.",
             "[points]"]
    lines += [f"{name} = {_toml_value(value)}" for name, value in settings.points.items()]
    lines += ["", "[limits]"]
    lines += [f"{f.name} = {_toml_value(getattr(settings.limits, f.name))}" for f in dataclasses.fields(Limits)]
    lines += ["", "[grading]", f"allow_weak_isolation = {_toml_value(settings.allow_weak_isolation)}",
              f"hidden_visibility = {_toml_value(settings.hidden_visibility)}",
              f"excuse_traced = {_toml_value(settings.excuse_traced)}"]
    if settings.bonus is not None:
        lines += ["", "[bonus]"] + [f"{f.name} = {_toml_value(getattr(settings.bonus, f.name))}"
                                    for f in dataclasses.fields(rubric.BonusRule)]
    return "\n".join(lines) + "\n"


def limits_from_table(table: dict, where: str) -> Limits:
    """Limits from a ``[limits]`` table: known names only, each of its field's type and > 0."""
    defaults = Limits()
    values = {}
    for name, value in table.items():
        if not hasattr(defaults, name) or name not in {f.name for f in dataclasses.fields(Limits)}:
            known = ", ".join(f.name for f in dataclasses.fields(Limits))
            raise SettingsError(f"{where}: [limits] names {name!r}, which is not a limit; use {known}")
        kind = type(getattr(defaults, name))
        if kind is bool:
            if not isinstance(value, bool):
                raise SettingsError(f"{where}: [limits] {name} must be true or false; got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf or \
                (kind is int and not isinstance(value, int)):
            raise SettingsError(f"{where}: [limits] {name} must be a {kind.__name__} > 0; got {value!r}")
        values[name] = kind(value)
    return dataclasses.replace(defaults, **values)


def load(path: Path) -> GradingSettings:
    """The settings in ``path``; SettingsError (or rubric.RubricError) says what to fix."""
    chosen = rubric.read(path, settings=True)
    data = tomllib.loads(path.read_text())
    limits = limits_from_table(data.get("limits", {}), str(path))
    grading = data.get("grading", {})
    unknown = set(grading) - set(rubric.SETTINGS_GRADING_KEYS)
    if unknown:
        raise SettingsError(f"{path}: [grading] names {sorted(unknown)}; use "
                            f"{', '.join(sorted(rubric.SETTINGS_GRADING_KEYS))}")
    weak = grading.get("allow_weak_isolation", False)
    if not isinstance(weak, bool):
        raise SettingsError(f"{path}: [grading] allow_weak_isolation must be true or false; got {weak!r}")
    visibility = grading.get("hidden_visibility", rubric.DEFAULT_HIDDEN_VISIBILITY)
    if visibility not in VISIBILITIES:
        raise SettingsError(f"{path}: [grading] hidden_visibility {visibility!r}: choose one of "
                            f"{', '.join(VISIBILITIES)}")
    return GradingSettings(chosen.points, limits, weak, visibility, chosen.bonus, chosen.excuse_traced)


def grader_version() -> str:
    """SHA-256 of the grader's and the reference's sources: any change of a test changes it."""
    return paths.source_digest(PACKAGE_ROOT)


def cache_key(submission: bytes, settings: GradingSettings) -> str:
    """The cache key of a file's grade: its bytes, the grader's version, the rubric and the limits."""
    digest = hashlib.sha256()
    for part in (hashlib.sha256(submission).hexdigest(), grader_version(), to_toml(settings)):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()
