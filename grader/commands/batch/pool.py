"""Grade a folder of submissions in parallel: grades.csv, results and feedback pages.

Each submission is graded by a worker process of its own (``python -m
grader.commands.batch.worker``, which calls ``runner.grade_file`` with every option the
batch was given): a submission that kills, floods or hangs its grader costs
its own grade only. The batch keeps at most ``jobs`` workers running, stops a
worker past the wall-clock backstop, and stores every finished grade at once,
signed (see :mod:`grader.commands.batch.signing`), so an interrupted batch loses nothing it
finished. A re-run keeps a student's grade only if its record verifies and the
file, rubric, limits and grader are unchanged; grades.csv and summary.html are
rebuilt from those verified records and the new grades, never read back.

Output layout::

    OUT/grades.csv                          one row per student
    OUT/summary.html                        for the TA
    OUT/students/<safe name>/results.json   Gradescope's schema (as check --json)
    OUT/students/<safe name>/feedback.html  for the student
    OUT/students/<safe name>/record.sig     the signature of both
    OUT/.grader-key                         the signing key (0600)
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

from grader import errors, spec
from grader.commands.batch import signing, summary
from grader.commands.batch.outcome import Outcome
from grader.commands.batch.progress import Progress
from grader.commands.batch.submissions import OUTPUT_MARKER, Skipped, Submission, safe_name
from grader.commands.batch.worker import FAULT, TOO_WEAK, Job, Staging, WorkerReply, cleanup_stale, options_from_json
from grader.grading.results import ResultsError
from grader.grading.runner import GradeOptions
from grader.properties import oracle
from grader.reports import gradescope_json
from grader.spec import paths
from grader.spec.limits import SUBMISSION_SECONDS, Limits
from grader.spec.rubric import BonusRule
from grader.spec.text import one_line, printable, shown

MARKER = OUTPUT_MARKER
STUDENTS = "students"
PACKAGE_ROOT = paths.PACKAGE_ROOT
CSV_COLUMNS = ["student", "score", "max_score", *spec.STATEMENT_ORDER, "status"]  # as every report lists items
FORGED_NOTE = "record changed outside the grader: regraded"


class BatchError(errors.UsageError):
    """The batch cannot run as asked; the message says what to fix."""


@dataclass
class Options:
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    force: bool = False
    limits: Limits = Limits()
    points: dict[str, float] | None = None  # None: the spec's
    #: Run the hidden tests (None: whenever the reference is installed).
    hidden: bool | None = None
    #: Run the hidden tests even when the sandbox cannot keep them secret.
    allow_weak_isolation: bool = False
    #: Wall-clock backstop for the whole grading of one submission, worker included.
    submission_seconds: float = SUBMISSION_SECONDS
    #: Put an animation of the first failing scenario into feedback pages.
    animations: bool = True
    #: Time every submission after its tests (--efficiency); the rubric's [bonus] rule (on whenever it is given).
    efficiency: bool = False
    bonus: BonusRule | None = None
    #: The rubric's [grading] excuse_traced (GradeOptions.excuse_traced).
    excuse_traced: bool = False
    #: Feedback pages name the hidden tests failed, without their inputs or answers (--withhold-hidden).
    withhold_hidden: bool = False


def fingerprint(options: Options) -> str:
    """Everything besides the file that decides a grade: reuse only if equal."""
    digest = hashlib.sha256(paths.source_digest(PACKAGE_ROOT).encode())
    digest.update(json.dumps([options.points, asdict(options.limits), oracle.available(), options.animations,
                              options.efficiency, None if options.bonus is None else asdict(options.bonus),
                              options.hidden, options.allow_weak_isolation, options.excuse_traced,
                              options.withhold_hidden],
                             sort_keys=True).encode())
    return digest.hexdigest()


def _hidden_run(options: Options) -> bool:
    return oracle.available() if options.hidden is None else options.hidden


def check_isolation(options: Options) -> None:
    """Refuse, before grading anyone, hidden tests the sandbox cannot keep secret: the runner's own rule."""
    from grader.grading import runner

    grading = GradeOptions(options.points, options.limits, options.hidden, options.allow_weak_isolation)
    runner.check_isolation(grading, _hidden_run(options))


def _file_above(path: Path) -> Path | None:
    """The first part of ``path`` that exists and is not a folder (``notes.txt`` of ``notes.txt/sub``), if any."""
    for part in [*reversed(path.parents), path]:
        if part.exists() and not part.is_dir():
            return part
    return None


def check_output(out: Path, submissions_dir: Path) -> None:
    """Refuse, before anything is graded or written, an ``--out`` the batch cannot or must not write into."""
    out_r, sub_r = out.resolve(), submissions_dir.resolve()
    if out_r == sub_r or sub_r.is_relative_to(out_r):
        raise BatchError(f"--out {out} would hold the submissions; give a folder outside {submissions_dir}")
    # An nbgrader course keeps the students in submitted/: an OUT beside it, in the course, is fine.
    holder = sub_r / "submitted" if (sub_r / "submitted").is_dir() else sub_r
    if out_r.is_relative_to(holder):
        raise BatchError(f"--out {out} is inside the submissions folder {holder}, where it would look like a "
                         "student's; give a folder outside it")
    if out.is_symlink() and not out.exists():
        raise BatchError(f"--out {out} is a link to nothing; give a folder")
    blocker = _file_above(out)
    if blocker == out:
        raise BatchError(f"--out {out} is a file, not a folder; give a folder (a new one is created)")
    if blocker is not None:
        raise BatchError(f"--out {out}: {blocker} is a file, not a folder; give a folder path made of folders")
    try:
        occupied = out.is_dir() and any(out.iterdir())
    except OSError as exc:
        raise BatchError(f"--out {out}: cannot list it ({exc.strerror}); give a folder you may read and write") \
            from None
    if occupied and not (out / MARKER).is_file():
        raise BatchError(f"--out {out} is not empty and was not written by a batch; give a new folder so "
                         "nothing is overwritten")
    existing = next(p for p in [out, *out.parents] if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise BatchError(f"--out {out}: {existing} is a folder you may not write; give a folder you may write")


def prepare_output(out: Path, submissions_dir: Path) -> signing.OutputFolder:
    """Create ``out``, or accept a previous batch's; never write into anything else."""
    check_output(out, submissions_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        folder = signing.OutputFolder(out)
    except OSError as exc:
        raise BatchError(f"--out {out}: the folder cannot be created ({exc.strerror}); give a folder path "
                         "whose parents are folders you may write") from None
    try:
        folder.write((MARKER,), b"written by python -m grader batch\n")
    except OSError as exc:
        folder.close()
        raise BatchError(f"--out {out}: cannot write there ({exc.strerror}); give a folder you may write") from None
    return folder


def csv_cell(value: object) -> object:
    """A cell a spreadsheet shows as text: a leading =, +, -, @, tab or CR would start a formula; terminal
    escapes (a TA may print the file) are written out (spec.text.printable)."""
    if not isinstance(value, str):
        return value
    if value.startswith(("=", "+", "-", "@", "\t", "\r")):
        value = "'" + value
    return printable(value)


def columns(rows: Sequence[dict]) -> list[str]:
    """CSV_COLUMNS, and "bonus" before "status" when the rubric grants one (a review found it only in results.json)."""
    bonus = any("bonus" in row for row in rows)
    return CSV_COLUMNS[:-1] + ["bonus"] * bonus + CSV_COLUMNS[-1:]


def grades_csv(outcomes: Sequence[Outcome]) -> bytes:
    rows = sorted((o.row for o in outcomes), key=lambda r: r["student"])
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, columns(rows), restval="", quoting=csv.QUOTE_MINIMAL)
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return text.getvalue().encode("utf-8")


def grades_table(outcomes: Sequence[Outcome]) -> str:
    """The grades as an aligned text table; names and statuses escaped (no control character reaches a terminal)."""
    made = [o.row for o in outcomes]
    shown_columns = columns(made)
    header = [spec.ITEM_ABBREVIATIONS.get(c, c) for c in shown_columns]
    # The names are the students' text; the statuses are the grader's, with any file name in them escaped already.
    rows = [[(shown if c == "student" else one_line)(str(row.get(c, ""))) for c in shown_columns] for row in made]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join([*lines, "", spec.ITEM_LEGEND]) + "\n"


# -- workers ----------------------------------------------------------------------
def _finish(job: Job, timed_out: bool, seconds: float) -> tuple[Outcome, WorkerReply | None]:
    student = job.submission.student
    if timed_out:
        return Outcome(student, f"grader error: the grading took more than {seconds:g} s (wall-clock backstop); "
                                "run the batch again, or give a longer --submission-timeout"), None
    reply = job.reply()
    if reply is None:
        return Outcome(student, f"grader error: {job.failure()}"), None
    options = options_from_json(reply.options) if reply.options else None
    if reply.kind == FAULT:
        return Outcome(student, f"grader error: {reply.cause}", options=options), reply
    if reply.kind == TOO_WEAK:
        return Outcome(student, f"grader error: {reply.cause}", options=options), reply
    assert reply.results is not None
    return Outcome(student, reply.results.status, reply.results, options=options), reply


def _reuse(out: signing.OutputFolder, key: bytes, s: Submission, print_: str) -> tuple[Outcome | None, str]:
    """The verified grade of this very file under this very grader, if any; and a note if the record was forged."""
    lookup = signing.load(out, key, (STUDENTS, safe_name(s.student)), s.student)
    record = lookup.record
    if record is None or record.sha256 != s.sha256 or record.fingerprint != print_:
        return None, FORGED_NOTE if lookup.forged else ""
    try:
        results = gradescope_json.read(record.results, s.student)
    except ResultsError:
        return None, ""  # signed by an earlier grader, in a layout this one does not read: regraded
    return Outcome(s.student, results.status, results, reused=True), ""


def _store(out: signing.OutputFolder, key: bytes, outcome: Outcome, reply: WorkerReply | None, sha256: str,
           print_: str) -> None:
    if outcome.results is None or reply is None:
        signing.drop(out, (STUDENTS, outcome.folder))  # no grade now: an earlier file's record must not stand
        return
    record = signing.Record(outcome.student, sha256, print_, gradescope_json.dumps(outcome.results).encode(),
                            reply.page.encode("utf-8", "surrogateescape"))
    signing.store(out, key, (STUDENTS, outcome.folder), record)


def _check_names(submissions: Sequence[Submission]) -> None:
    folders: dict[str, str] = {}
    for s in submissions:
        # Folders that differ only by case are one folder once OUT is copied to macOS or Windows (a review's Bob, bob).
        other = folders.setdefault(safe_name(s.student).casefold(), s.student)
        if other != s.student:
            where = ("" if safe_name(other) == safe_name(s.student)
                     else " on a file system that ignores case (macOS, Windows)")
            raise BatchError(f"students {shown(other)} and {shown(s.student)} would share the folder "
                             f"{safe_name(s.student)}{where}; rename one of them")


def _publish(out: signing.OutputFolder, outcomes: dict[str, Outcome], skipped: Sequence[Skipped]) -> None:
    finished = sorted(outcomes.values(), key=lambda o: o.student)
    out.write(("grades.csv",), grades_csv(finished))
    out.write(("summary.html",), summary.page(finished, skipped, STUDENTS).encode("utf-8", "surrogateescape"))


def run(submissions: list[Submission], submissions_dir: Path, out: Path, options: Options,
        progress_stream: TextIO = sys.stderr, skipped: Sequence[Skipped] = ()) -> list[Outcome]:
    """Grade every submission into ``out``; the outcomes, sorted by student.

    Raises BatchError (unusable options or output) and errors.IsolationTooWeak
    before grading anyone. KeyboardInterrupt stops the workers, keeps what
    finished (grades.csv lists the others as "not graded (interrupted)") and
    is raised again.
    """
    if options.jobs < 1:
        raise BatchError(f"--jobs {options.jobs}: give at least 1")
    if not options.submission_seconds > 0:
        raise BatchError(f"--submission-timeout {options.submission_seconds}: give a number of seconds > 0")
    _check_names(submissions)
    if not isinstance(options.limits, Limits):  # an older Limits class (grader.sandbox.client's): same fields, fewer
        options = dataclasses.replace(options, limits=Limits(**dataclasses.asdict(options.limits)))
    check_isolation(options)
    cleanup_stale()
    with prepare_output(out, submissions_dir) as folder:
        key, _ = folder.key()
        return _grade_all(submissions, submissions_dir, out, folder, key, options, progress_stream, skipped)


def _kept_and_pending(submissions: list[Submission], folder: signing.OutputFolder, key: bytes, options: Options,
                      print_: str) -> tuple[dict[str, Outcome], list[tuple[Submission, str]]]:
    """Students with nothing to grade (missing, or a verified unchanged record), and those to grade with a note."""
    outcomes: dict[str, Outcome] = {}
    pending: list[tuple[Submission, str]] = []
    for s in submissions:
        if s.source is None:
            outcomes[s.student] = Outcome(s.student, f"{s.problem_word}: {s.problem}")
            # A record of an earlier file (graded 100, then deleted) said otherwise than grades.csv (a review).
            signing.drop(folder, (STUDENTS, safe_name(s.student)))
            continue
        kept, note = (None, "") if options.force else _reuse(folder, key, s, print_)
        note = "; ".join(n for n in (s.note, note) if n)  # s.note: a file graded under another name
        if kept is not None:
            kept.note = note
            outcomes[s.student] = kept
        else:
            pending.append((s, note))
    return outcomes, pending


def _collect_finished(running: list[tuple[Job, str]], folder: signing.OutputFolder, key: bytes, options: Options,
                      print_: str, outcomes: dict[str, Outcome], progress: Progress) -> None:
    """Record every job that ended (or passed the backstop) and write grades.csv after each."""
    for job, note in list(running):
        timed_out = time.monotonic() - job.started > options.submission_seconds
        if job.process.poll() is None and not timed_out:
            continue
        if timed_out:
            job.kill()
        running.remove((job, note))
        outcome, reply = _finish(job, timed_out, options.submission_seconds)
        if reply is not None and reply.kind == TOO_WEAK:
            raise errors.IsolationTooWeak(reply.cause)
        outcome.note = note
        _store(folder, key, outcome, reply, job.submission.sha256, print_)
        outcomes[outcome.student] = outcome
        job.clean()
        folder.write(("grades.csv",), grades_csv(list(outcomes.values())))
        progress.update(len(running), outcome)


def _grade_all(submissions: list[Submission], submissions_dir: Path, out: Path, folder: signing.OutputFolder,
               key: bytes, options: Options, stream: TextIO, skipped: Sequence[Skipped]) -> list[Outcome]:
    print_ = fingerprint(options)
    progress = Progress(len(submissions), stream)
    for entry in skipped:
        progress.say(f"skipped {shown(str(entry.path))}: {entry.reason}")
    outcomes, pending = _kept_and_pending(submissions, folder, key, options, print_)
    for outcome in outcomes.values():
        progress.kept(outcome)  # no grading: not counted in the rate of the time left
    progress.begin(len(pending))
    if pending:
        # Once for the batch, before any worker: a sandbox that cannot start or answer is the grader's fault
        # (SandboxFault: nobody is graded), and every worker's own start is still checked as it boots.
        from grader.sandbox import self_test

        self_test.selftest(options.limits)
    staging = Staging()
    grade_options = GradeOptions(options.points, options.limits, options.hidden, options.allow_weak_isolation,
                                 (submissions_dir.resolve(), out.resolve(), staging.jobs), selftest=False,
                                 excuse_traced=options.excuse_traced)
    if pending:
        from grader.grading import runner

        runner.draw_cases(grade_options)  # once, here: not by every worker at once when the grader is new
    running: list[tuple[Job, str]] = []
    try:
        while pending or running:
            while pending and len(running) < options.jobs:
                submission, note = pending.pop(0)
                running.append((staging.start(submission, grade_options, options.animations, print_,
                                              options.efficiency, options.bonus, options.withhold_hidden), note))
            time.sleep(0.05)
            _collect_finished(running, folder, key, options, print_, outcomes, progress)
            if progress.tty:
                progress.update(len(running))
    except KeyboardInterrupt:
        _note_interrupted(submissions, folder, key, print_, outcomes)
        raise
    finally:
        for job, _ in running:
            job.kill()
            job.clean()
        staging.close()
        _warn_of_others(folder, submissions, progress)
        progress.finish()
        _publish(folder, outcomes, skipped)
    return sorted(outcomes.values(), key=lambda o: o.student)


def _note_interrupted(submissions: Sequence[Submission], folder: signing.OutputFolder, key: bytes, print_: str,
                      outcomes: dict[str, Outcome]) -> None:
    """The students an interrupt left without an outcome: "not graded (interrupted)", their records dropped.

    A record stored this run just before the interrupt (between the record and its outcome) is kept, as a re-run
    would keep it. Any other is of an earlier file or grading: it must not stand beside "not graded" (a review
    found the old grade's page there). The next run grades the student."""
    for s in (s for s in submissions if s.student not in outcomes):
        kept, _ = _reuse(folder, key, s, print_) if s.source is not None else (None, "")
        outcomes[s.student] = kept or Outcome(s.student, "not graded (interrupted)")
        if kept is None:
            signing.drop(folder, (STUDENTS, safe_name(s.student)))


def _warn_of_others(folder: signing.OutputFolder, submissions: Sequence[Submission], progress: Progress) -> None:
    """Say which folders of OUT/students hold no student of this batch: kept (never deleted), but not in
    grades.csv (another class's, or a student no longer in the submissions folder)."""
    ours = {safe_name(s.student) for s in submissions}
    others = [name for name in folder.names((STUDENTS,)) if name not in ours]
    if others:
        named = ", ".join(shown(name) for name in others[:10]) + (f" and {len(others) - 10} more" if len(others) > 10
                                                                   else "")
        progress.say(f"note: {len(others)} folder{'s' if len(others) != 1 else ''} of {STUDENTS}/ "
                     f"hold{'s' if len(others) == 1 else ''} no student of this batch and "
                     f"{'are' if len(others) != 1 else 'is'} not in grades.csv: {named}. They were kept; delete "
                     f"them, or grade each class into its own --out")
