"""Grade a folder of submissions in parallel: grades.csv, results and feedback pages.

Each submission is graded by a worker process of its own (``python -m grader
check``), which starts the sandboxed child: a submission that kills, floods
or hangs its grader costs its own grade only. The batch keeps at most
``jobs`` workers running, watches their wall time, and writes every finished
grade at once (results.json, feedback.html, then grades.csv), so an
interrupted batch loses nothing it finished. A re-run skips a student whose
file, rubric, limits and grader are unchanged since the last grade.

Output layout::

    OUT/grades.csv                 one row per student
    OUT/summary.html               for the TA
    OUT/<student>/results.json     Gradescope's schema (as check --json)
    OUT/<student>/feedback.html    for the student
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

from grader import feedback, oracle, spec, summary
from grader.sandbox import Limits
from grader.submissions import Submission

MARKER = ".granular-grader-batch"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
CSV_COLUMNS = ["student", "score", "max_score", *spec.ITEM_NAMES, "status"]


class BatchError(ValueError):
    """The batch cannot run as asked; the message says what to fix."""


def _number(x: float) -> float | int:
    return int(x) if x == int(x) else round(x, 4)


@dataclass
class Outcome:
    """What the batch knows of one student."""

    student: str
    status: str
    results: dict | None = None  # results.json (None: no grade)
    reused: bool = False

    @property
    def row(self) -> dict:
        row: dict = {"student": self.student, "status": self.status}
        if self.results is not None:
            items = self.results["extra_data"]["items"]
            row |= {"score": _number(self.results["score"]), "max_score": _number(self.results["max_score"]),
                    **{name: _number(items[name][0]) for name in spec.ITEM_NAMES}}
        return row


@dataclass
class Options:
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    force: bool = False
    limits: Limits = Limits()
    points: dict[str, float] | None = None  # None: the spec's
    #: Wall time for the whole grading of one submission, worker included.
    submission_seconds: float = 900.0
    #: Put an animation of the first failing scenario into feedback pages.
    animations: bool = True


def fingerprint(options: Options) -> str:
    """Everything besides the file that decides a grade: reuse only if equal."""
    digest = hashlib.sha256()
    for folder in ("grader", "reference"):
        for source in sorted((PACKAGE_ROOT / folder).glob("*.py")):
            digest.update(source.name.encode() + source.read_bytes())
    digest.update(json.dumps([options.points, asdict(options.limits), oracle.available(), options.animations],
                             sort_keys=True).encode())
    return digest.hexdigest()


def prepare_output(out: Path, submissions_dir: Path) -> None:
    """Create ``out``, or accept a previous batch's; never write into anything else."""
    out_r, sub_r = out.resolve(), submissions_dir.resolve()
    if out_r == sub_r or sub_r.is_relative_to(out_r):
        raise BatchError(f"--out {out} would hold the submissions; give a folder outside {submissions_dir}")
    if out.exists() and not out.is_dir():
        raise BatchError(f"--out {out} is a file; give a folder")
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise BatchError(f"--out {out} is not empty and was not written by a batch; give a new folder so "
                         "nothing is overwritten")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by python -m grader batch\n")


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def previous_results(out: Path, submission: Submission, print_: str) -> dict | None:
    """The last grade of this very file under this very grader, if any."""
    try:
        results = json.loads((out / submission.student / "results.json").read_text())
        extra = results["extra_data"]
        if extra["sha256"] == submission.sha256 and extra["fingerprint"] == print_:
            return results
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def valid_results(data: object) -> bool:
    """Is this what our own worker writes (and not something else)?"""
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        return False
    extra = data.get("extra_data")
    if not isinstance(extra, dict) or set(extra.get("items", {})) != set(spec.ITEM_NAMES):
        return False
    scores = [t.get("score") for t in data["tests"]] + [data.get("score"), data.get("max_score")]
    return all(isinstance(x, (int, float)) for x in scores) and 0 <= data["score"] <= data["max_score"]


class Progress:
    """A one-line progress bar on a terminal; a line per student otherwise."""

    def __init__(self, total: int, stream: TextIO):
        self.total, self.done, self.stream = total, 0, stream
        self.started = time.monotonic()
        self.tty = stream.isatty()

    def update(self, running: int, last: Outcome | None = None) -> None:
        if last is not None:
            self.done += 1
        elapsed = time.monotonic() - self.started
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            eta = elapsed / self.done * (self.total - self.done) if self.done else 0
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} graded, "
                              f"{running} running, {elapsed:.0f} s elapsed, ~{eta:.0f} s left ")
            self.stream.flush()
        elif last is not None:
            score = "" if last.results is None else f" {last.results['score']:g}/{last.results['max_score']:g}"
            reused = " (unchanged, kept)" if last.reused else ""
            self.stream.write(f"[{self.done}/{self.total}] {last.student}:{score} {last.status}{reused}\n")
            self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


@dataclass
class _Job:
    submission: Submission
    process: subprocess.Popen
    started: float
    results_path: Path
    log_path: Path


def _limit_arguments(limits: Limits) -> list[str]:
    args = ["--timeout", str(limits.call_seconds), "--import-timeout", str(limits.import_seconds), "--memory-mb", str(limits.memory_bytes // 1024**2),
            "--processes", str(limits.processes)]
    return args + ([] if limits.namespaces else ["--no-namespaces"])


def _write_rubric(points: dict[str, float] | None, staging: Path) -> Path | None:
    """The points as a rubric file for the workers."""
    if points is None:
        return None
    path = staging / "rubric.toml"
    path.write_text("[points]\n" + "".join(f"{name} = {value!r}\n" for name, value in points.items()))
    return path


def _start(submission: Submission, staging: Path, hide: list[Path], options: Options,
           rubric_file: Path | None) -> _Job:
    folder = staging / submission.student
    folder.mkdir()
    source = folder / "granularGas.py"
    source.write_bytes(submission.source or b"")
    results_path = folder / "results.json"
    log_path = folder / "grader.log"
    argv = [sys.executable, "-m", "grader", "check", str(source), "--json", str(results_path), "--quiet",
            *_limit_arguments(options.limits)]
    if options.animations:
        argv += ["--animation", str(folder / "animation.gif")]
    if rubric_file is not None:
        argv += ["--rubric", str(rubric_file)]
    for folder_to_hide in hide:
        argv += ["--hide", str(folder_to_hide)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")]))
    with open(log_path, "wb") as log:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                   env=env, start_new_session=True)
    return _Job(submission, process, time.monotonic(), results_path, log_path)


def _kill(job: _Job) -> None:
    try:
        os.killpg(job.process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    job.process.wait()


def _finish(job: _Job, out: Path, print_: str, timed_out: bool) -> Outcome:
    student = job.submission.student
    if timed_out:
        return Outcome(student, "timeout (the whole grading)")
    try:
        results = json.loads(job.results_path.read_text())
    except (OSError, ValueError):
        results = None
    if not valid_results(results):
        log = job.log_path.read_text(errors="replace")[-2000:] if job.log_path.exists() else ""
        last = log.strip().splitlines()[-1] if log.strip() else f"exit code {job.process.returncode}"
        return Outcome(student, f"grader error: {last}")
    results["extra_data"] |= {"sha256": job.submission.sha256, "fingerprint": print_, "student": student}
    return Outcome(student, results["extra_data"]["status"], results)


def _store(outcome: Outcome, out: Path, submission: Submission, animation: Path | None = None) -> None:
    """Write one student's files the moment they are known."""
    if outcome.results is None or outcome.reused:
        return
    folder = out / outcome.student
    gif = animation.read_bytes() if animation is not None and animation.is_file() else None
    _write_atomic(folder / "results.json", json.dumps(outcome.results, indent=2) + "\n")
    _write_atomic(folder / "feedback.html", feedback.page(outcome.student, outcome.results,
                                                          submission.source.decode("utf-8", "replace")
                                                          if submission.source else "", gif))


def write_grades(out: Path, outcomes: list[Outcome]) -> None:
    rows = sorted((o.row for o in outcomes), key=lambda r: r["student"])
    partial = out / ".grades.csv.partial"
    with open(partial, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, CSV_COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(partial, out / "grades.csv")


def run(submissions: list[Submission], submissions_dir: Path, out: Path, options: Options,
        progress_stream: TextIO = sys.stderr) -> list[Outcome]:
    """Grade every submission into ``out``; the outcomes, sorted by student.

    KeyboardInterrupt stops the workers, keeps what finished (grades.csv lists
    the others as "not graded (interrupted)") and is raised again.
    """
    if options.jobs < 1:
        raise BatchError(f"--jobs {options.jobs}: give at least 1")
    prepare_output(out, submissions_dir)
    print_ = fingerprint(options)
    hide = [submissions_dir.resolve(), out.resolve()]
    outcomes: dict[str, Outcome] = {}
    pending: list[Submission] = []
    for s in submissions:
        if s.source is None:
            outcomes[s.student] = Outcome(s.student, f"missing: {s.problem}")
            continue
        previous = None if options.force else previous_results(out, s, print_)
        if previous is not None:
            outcomes[s.student] = Outcome(s.student, previous["extra_data"]["status"], previous, reused=True)
        else:
            pending.append(s)
    progress = Progress(len(submissions), progress_stream)
    for outcome in outcomes.values():
        progress.update(0, outcome)
    running: list[_Job] = []
    try:
        with tempfile.TemporaryDirectory(prefix="granular-batch-") as staging:
            rubric_file = _write_rubric(options.points, Path(staging))
            while pending or running:
                while pending and len(running) < options.jobs:
                    running.append(_start(pending.pop(0), Path(staging), hide, options, rubric_file))
                time.sleep(0.05)
                for job in list(running):
                    timed_out = time.monotonic() - job.started > options.submission_seconds
                    if job.process.poll() is None and not timed_out:
                        continue
                    if timed_out:
                        _kill(job)
                    running.remove(job)
                    outcome = _finish(job, out, print_, timed_out)
                    _store(outcome, out, job.submission, job.results_path.with_name("animation.gif"))
                    outcomes[outcome.student] = outcome
                    write_grades(out, list(outcomes.values()))
                    progress.update(len(running), outcome)
                if progress.tty:
                    progress.update(len(running))
    except KeyboardInterrupt:
        for job in running:
            _kill(job)
        for s in submissions:
            outcomes.setdefault(s.student, Outcome(s.student, "not graded (interrupted)"))
        raise
    finally:
        progress.finish()
        write_grades(out, list(outcomes.values()))
        finished = sorted(outcomes.values(), key=lambda o: o.student)
        _write_atomic(out / "summary.html", summary.page(finished))
    return finished
