"""What the TA sees while a batch runs: a line per finished student, and on a terminal a progress bar below them.

On a terminal the bar is the last line; each finished student's line is written
over it and the bar is drawn again underneath, so who finished with what stays
on screen as it happens. Without a terminal (a pipe, CI) there is no bar: plain
lines only, no carriage return and no escape sequence.

The estimate of the time left counts only the grades the workers made in this
run: a grade kept from a previous run, or a student with no file, took no time
and says nothing about the rate (after a resume they would make it look
instant). While work remains the estimate is never "0 s".
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from typing import TextIO

from grader.commands.batch.outcome import Outcome
from grader.reports.feedback import points
from grader.spec.text import one_line, shown

#: Erase from the cursor to the end of the line (the bar's leftovers when a shorter line is written over it).
CLEAR_LINE = "\x1b[K"
BAR_WIDTH = 30


def student_line(outcome: Outcome, done: int, total: int) -> str:
    """``[3/40] alice: 87.5/100 graded``; the name, status and note escaped (they are the submission's text)."""
    row = outcome.row  # the grades table's numbers: rounded as every report rounds them
    score = f" {points(row['score'])}/{points(row['max_score'])}" if "score" in row else ""
    kept = " (unchanged, kept)" if outcome.reused else ""
    note = f" ({one_line(outcome.note)})" if outcome.note else ""
    return f"[{done}/{total}] {shown(outcome.student)}:{score} {one_line(outcome.status)}{kept}{note}"


def eta_seconds(to_grade: int, graded: int, elapsed: float) -> float | None:
    """Seconds left to grade ``to_grade - graded`` more, at the rate of the ``graded`` made in ``elapsed``.

    None while nothing has been graded in this run (no rate yet); 0 only when nothing is left.
    """
    left = max(to_grade - graded, 0)
    if left == 0:
        return 0.0
    if graded <= 0 or elapsed <= 0:
        return None
    return max(elapsed / graded * left, 1.0)


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``1 h 02 min``: whole seconds, rounded up (never "0 s" for time still needed)."""
    whole = math.ceil(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def eta_text(eta: float | None) -> str:
    if eta is None:
        return "estimating time left"
    return "done" if eta == 0 else f"~{duration(eta)} left"


def bar_line(done: int, total: int, running: int, elapsed: float, eta: float | None, columns: int) -> str:
    """The progress bar, cut to ``columns - 1`` characters so it never wraps (a wrapped bar cannot be redrawn)."""
    filled = BAR_WIDTH * done // max(total, 1)
    text = (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} done, {running} running, "
            f"{duration(elapsed) if elapsed >= 1 else '0 s'} elapsed, {eta_text(eta)}")
    return text[:max(columns - 1, 10)]


class Progress:
    """A line per finished student; on a terminal, a progress bar kept below those lines.

    ``kept`` takes what needed no grading (a kept grade, a missing file), ``begin``
    starts the clock of the grading proper, ``update`` takes a worker's grade
    (or, with none, only redraws the bar). ``clock`` and ``columns`` are for tests.
    """

    def __init__(self, total: int, stream: TextIO, clock: Callable[[], float] = time.monotonic,
                 columns: Callable[[], int] | None = None):
        self.total, self.done, self.stream, self.clock = total, 0, stream, clock
        self.tty = stream.isatty()
        self.columns = columns or (lambda: shutil.get_terminal_size().columns)
        self.started = clock()
        self.to_grade: int | None = None  # unknown until begin()
        self.graded, self.grading_started = 0, self.started
        self.running = 0
        self.bar = ""  # the bar on screen ("" when none is)

    def say(self, line: str) -> None:
        """A line above the bar (the bar is drawn again below it)."""
        if self.tty:
            self.stream.write("\r" + line + CLEAR_LINE + "\n")
            self.bar = ""
            self._draw()
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def kept(self, outcome: Outcome) -> None:
        """A student who needed no grading in this run: a line, no effect on the estimate."""
        self.done += 1
        self.say(student_line(outcome, self.done, self.total))

    def begin(self, to_grade: int) -> None:
        """The workers start on ``to_grade`` submissions now."""
        self.to_grade, self.graded, self.grading_started = to_grade, 0, self.clock()

    def update(self, running: int, last: Outcome | None = None) -> None:
        self.running = running
        if last is not None:
            self.done += 1
            self.graded += 1
            self.say(student_line(last, self.done, self.total))
        elif self.tty:
            self._draw()
            self.stream.flush()

    def eta(self) -> float | None:
        if self.to_grade is None:
            return None
        return eta_seconds(self.to_grade, self.graded, self.clock() - self.grading_started)

    def _draw(self) -> None:
        if not self.tty:
            return
        bar = bar_line(self.done, self.total, self.running, self.clock() - self.started, self.eta(), self.columns())
        if bar != self.bar:  # redrawn only when it changes: the batch polls 20 times a second
            self.stream.write("\r" + bar + CLEAR_LINE)
            self.bar = bar

    def finish(self) -> None:
        if self.tty and self.bar:
            self.stream.write("\n")
            self.stream.flush()
            self.bar = ""
