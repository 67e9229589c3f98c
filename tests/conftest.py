"""Shared test settings: Hypothesis without a database, without deadlines
(CI machines are slow and uneven), and derandomized on CI so that a red run
can be reproduced."""

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from grader.grading.runner import GradeOptions, GradeReport, grade_file
from grader.spec import paths

settings.register_profile("default", database=None, deadline=None)
settings.register_profile("ci", database=None, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

#: The corpora are graded whole with GRANULAR_FULL_CORPUS=1 (about fifteen more minutes on two cores).
#: Otherwise CI grades a fixed sample that covers every function and every kind of file; the others
#: are reported as skipped, with this reason.
FULL_CORPUS = os.environ.get("GRANULAR_FULL_CORPUS") == "1"
SAMPLE_REASON = "not in CI's sample of the corpus; GRANULAR_FULL_CORPUS=1 grades every file"


#: Tests that take tens of seconds each (a fresh virtual environment, nbgrader's course, the README's batch):
#: collected first, so that two workers start them early instead of finishing on them alone.
SLOW_FIRST = ("test_student_kit_build.py", "test_nbgrader.py",
              "test_student_kit.py::test_quick_start_main_job_grades_the_examples",
              "test_efficiency.py::test_a_loop_over_pairs_grows_faster_than_the_reference")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first (a stable sort: each module keeps its own order)."""
    def rank(item: pytest.Item) -> int:
        return next((k for k, slow in enumerate(SLOW_FIRST) if slow in item.nodeid), len(SLOW_FIRST))

    items.sort(key=rank)


def attack_and_control(folder: Path, sample: Path, trick: str = "TRICK = True",
                       without: str = "TRICK = False") -> tuple[Path, Path]:
    """A red team's sample file written twice under ``folder``: as it is (the attack) and with ``trick`` replaced
    by ``without`` (its control); each a granularGas.py of its own."""
    text = sample.read_text()
    assert trick in text, f"{sample.name} holds no {trick!r}"
    paths = []
    for name, source in (("attack", text), ("control", text.replace(trick, without))):
        path = folder / name / "granularGas.py"
        path.parent.mkdir()
        path.write_text(source)
        paths.append(path)
    return paths[0], paths[1]


def scaled_sample(folder: Path, sample: Path, constants: str, smaller: str) -> Path:
    """A red team's sample written as ``folder``/granularGas.py with its ``constants`` replaced by ``smaller`` (its
    waits and burns made short enough for a test)."""
    text = sample.read_text()
    assert constants in text, f"{sample.name} holds no {constants!r}"
    path = folder / "granularGas.py"
    path.write_text(text.replace(constants, smaller))
    return path


@pytest.fixture
def boots(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry for every child a sandbox starts (Sandbox._boot) while the test runs."""
    from grader.sandbox.client import Sandbox

    started: list[int] = []
    boot = Sandbox._boot
    monkeypatch.setattr(Sandbox, "_boot", lambda self: started.append(1) or boot(self))
    return started


def corpus_params(items, ids, sample):
    """pytest params of ``items``: those whose id is in ``sample`` always run, the rest only with
    GRANULAR_FULL_CORPUS=1."""
    unknown = set(sample) - set(ids)
    assert not unknown, f"the corpus sample names files that do not exist: {sorted(unknown)}"
    return [pytest.param(*(item if isinstance(item, tuple) else (item,)), id=name,
                         marks=() if FULL_CORPUS or name in sample else pytest.mark.skip(reason=SAMPLE_REASON))
            for item, name in zip(items, ids)]


#: A grading shared by the tests of one pytest process: grade(path, options) -> GradeReport.
Grader = Callable[..., GradeReport]
_GRADINGS: dict[tuple[str, str, str], GradeReport] = {}


def grade_once(path: str | Path, options: GradeOptions = GradeOptions()) -> GradeReport:
    """grade_file, graded once per pytest process (each xdist worker) for one file content, name and options.

    Grading a whole file takes 10-20 s of CPU: tests that read the same grade share it. The report is shared:
    never change it. Its ``submission`` is the path of the first file graded with that content.
    """
    path = Path(path)
    key = (hashlib.sha256(path.read_bytes()).hexdigest(), path.name, repr(options))
    if key not in _GRADINGS:
        _GRADINGS[key] = grade_file(path, options)
    return _GRADINGS[key]


@pytest.fixture(scope="session")
def graded() -> Grader:
    """grade_once: a whole file's grade, shared by every test of this process that asks for the same one."""
    return grade_once


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own (drawn cases, kept searches)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(paths.CASE_CACHE_ENV, str(folder))
    return folder
