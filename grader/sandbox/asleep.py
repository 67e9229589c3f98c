"""Time a box spends asleep, told apart from time it waits for a core: what a grading's calls are charged beyond
their CPU time (Limits.asleep_seconds).

A box is asleep when none of its tasks is running or ready to run: it sleeps, waits for input, or is stopped, which
is the file's doing. A task ready to run but not running waits for a core, which is the machine's doing, and is not
charged. The kernel counts, for each task, the time it ran and the time it waited ready to run
(/proc/PID/task/TID/schedstat): over an exchange, the box was awake at least as long as its most awake task, and the
exchange's charge is the rest (AwakeClock, Watch). The counts are cumulative: what a file does at the moment the grader
reads them changes nothing. Snapshots of the tasks' states did not do: red teams' files saw each look as a pause in
the grader's reading of their pipe and slept between looks, then inside them too, making a task ready to run just
before the look reached it (almost none of their sleep charged).

Only the box's most awake task counts, never a sum: a file's own threads competing for one core each wait while the
others run, and their waits added up pass the wall clock (a red team hid sleep behind its threads' run delays so).
A thread that calls execve takes over its process's first task, counts and all: the box's child refuses execve
once it has started (grader.sandbox.seccomp.exec_program; a fifth red team cashed hoarded waits so where addresses
are not randomised, its padded argv giving the new image the old start of stack). Where it could still happen (a
machine whose system calls the filters do not know), a task whose process's image changed (its start of stack,
placed at random by each execve; the first filter refuses turning that off), whose counts grew by more than the
exchange lasted, or whose run grew by more than its whole process's CPU time is not believed.

A task that lowered its priority (os.nice, SCHED_IDLE or SCHED_BATCH, its session's autogroup made nicer) could
wait ready to run for as long as it likes at a sliver of a core: once one is seen, the box gets no credit at all
(the seccomp filter refuses the system calls, so none is undone; a write to /proc/self/autogroup cannot be
refused, and is undone only 100 ms later at the soonest, the kernel's limit: a call is read every 50 ms and at
its end, so a nicer autogroup is seen, as a red team measured: 25.4 s charged of 24.4 s slept).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from grader.sandbox.procfs import cpu_clock_ns, stat_fields, task_fields, task_ids

_TICKS = os.sysconf("SC_CLK_TCK")
#: Tasks (threads) one reading covers at most: an honest file has a handful; a box of thousands would make every
#: reading cost the grader milliseconds. Those past them are not read (and give no credit).
TASKS_READ = 64
#: How far a task's counts may pass the time they were counted over (the tasks are read one after the other, and the
#: kernel adds a running task's time at its ticks).
SKEW_SECONDS = 0.005


#: Indexes in task_fields of the nice value and the scheduling policy (proc(5)'s fields 19 and 41).
_NICE, _POLICY = 16, 38


@dataclass(frozen=True)
class Priority:
    """A process's nice value and scheduling policy: a box's tasks get credit only at the one it started with."""

    nice: int
    policy: int

    @classmethod
    def of(cls, pid: int) -> Priority | None:
        """The priority of ``pid``'s first task now; None if it is gone."""
        for fields in task_fields(pid):
            return cls(int(fields[_NICE]), int(fields[_POLICY]))
        return None


def _autogroup_nice(pid: int) -> int:
    """The nice value of the autogroup of ``pid``'s session ("/autogroup-25 nice 0"); 0 where the kernel keeps
    none. A box is a session of its own: its autogroup starts at 0."""
    try:
        with open(f"/proc/{pid}/autogroup", "rb") as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


def _image(data: bytes) -> int:
    """Where the stack of a process's program began (proc(5)'s startstack, in its /proc/PID/stat text ``data``),
    placed at random by each execve: a task whose thread called execve took over its process's first task, counts
    and all (the first red team's trick, repeated across processes, would credit the same waits many times). 0 if
    unreadable (a process that made itself not dumpable): its tasks get no credit."""
    try:
        return int(stat_fields(data)[25])
    except (ValueError, IndexError):
        return 0


class _Schedstat:
    """A thread's /proc/thread-self/schedstat, kept open (a quarter of the cost of opening it each time), closed
    with the thread (its threading.local goes)."""

    def __init__(self) -> None:
        self.fd = -1
        self.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)

    def __del__(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)


_own = threading.local()


def _forget_own() -> None:
    """In a forked child: the parent's thread's file (under a number the child may have closed and used again since)
    is forgotten, unclosed; the child opens its own."""
    kept = getattr(_own, "schedstat", None)
    if kept is not None:
        kept.fd = -1
        _own.schedstat = None


os.register_at_fork(after_in_child=_forget_own)


def own_run_delay() -> float:
    """Seconds the calling thread (the grader's) has spent ready to run but waiting for a core; 0 where the kernel
    does not keep it. A wait's time that is the grader's own."""
    try:
        kept = getattr(_own, "schedstat", None)
        if kept is None:
            kept = _own.schedstat = _Schedstat()
        return int(os.pread(kept.fd, 200, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


@dataclass(frozen=True)
class Counts:
    """One reading: by (task id, its process's image: _image), nanoseconds run, waited ready to run, and the process
    id; by process id, its CPU time."""

    tasks: dict[tuple[int, int], tuple[int, int, int]]
    cpu: dict[int, int]
    #: Every task listed, whatever its image (0 included: those are not in ``tasks``), and when the reading was taken
    #: (CLOCK_BOOTTIME, as the tasks' start times are counted): a task seen then, or begun before, is never one "born
    #: since".
    seen: frozenset[int]
    taken: float


class AwakeClock:
    """Reads one box's tasks' counts of time run and waited ready to run (kept files: a tenth of the cost of opening
    them), keeps the last reading, and remembers whether a task was seen at a lowered priority (no credit from then
    on)."""

    def __init__(self, priority: Priority) -> None:
        self.priority = priority
        self._files: dict[tuple[int, str], int] = {}  # /proc/PID/NAME by (PID, NAME), kept open
        self._tasks: dict[int, int] = {}  # the tasks read (their process), as listed last
        self.lowered = False
        #: The last reading, and the seconds since it in which the box may have been awake without a reading to show
        #: it (exchanges that ended without one, and CPU time it used between exchanges): a reading's growth since
        #: the last is credited to the exchange it ends only past them.
        self.last: Counts | None = None
        self.unread = 0.0

    def counts(self, members: Iterable[int], listed: bool = False) -> Counts:
        """Each task's counts and each process's CPU time now. ``listed``: list the members' tasks afresh (at most
        TASKS_READ) and look at their priorities (else the tasks listed last are read: a few microseconds)."""
        if listed or not self._tasks:
            self._tasks = {}
            for pid in members:
                for task in task_ids(pid)[:max(0, TASKS_READ - len(self._tasks))]:
                    self._tasks[task] = pid
            self.lowered = self.lowered or self._seen_lowered()
        pids = set(self._tasks.values())
        images = {pid: _image(self._read_file(pid, "stat")) for pid in pids}
        cpu = {pid: cpu_clock_ns(pid) or 0 for pid in pids}
        tasks = {}
        for task, pid in self._tasks.items():
            found = self._schedstat(pid, task) if images[pid] else None
            if found is not None:
                tasks[task, images[pid]] = (*found, pid)
        read = ({(pid, "stat") for pid in pids} | {(pid, f"task/{task}/schedstat") for task, pid in self._tasks.items()}
                | {(pid, f"task/{task}/stat") for task, pid in self._tasks.items()})
        for gone in set(self._files) - read:
            os.close(self._files.pop(gone))
        return Counts(tasks, cpu, frozenset(self._tasks), time.clock_gettime(time.CLOCK_BOOTTIME))

    def _seen_lowered(self) -> bool:
        """Whether a task listed runs below the box's priority at its start, or its session's autogroup was made
        nicer."""
        for pid in set(self._tasks.values()):
            if _autogroup_nice(pid) > 0:
                return True
        for task, pid in self._tasks.items():
            try:
                fields = stat_fields(self._read_file(pid, f"task/{task}/stat"))
                if int(fields[_NICE]) > self.priority.nice or int(fields[_POLICY]) != self.priority.policy:
                    return True
            except (ValueError, IndexError):
                continue  # the thread ended
        return False

    def _schedstat(self, pid: int, task: int) -> tuple[int, int] | None:
        """Nanoseconds task ``task`` of ``pid`` ran, and waited ready to run; None if it is gone."""
        try:
            ran, waited = self._read_file(pid, f"task/{task}/schedstat").split()[:2]
            return int(ran), int(waited)
        except ValueError:
            return None

    def began(self, pid: int, task: int) -> float:
        """When task ``task`` of ``pid`` began, in seconds of CLOCK_BOOTTIME (a thread that calls execve is handed its
        process's first task's); infinity if it is gone."""
        try:
            return int(stat_fields(self._read_file(pid, f"task/{task}/stat"))[19]) / _TICKS
        except (ValueError, IndexError):
            return math.inf

    def _read_file(self, pid: int, name: str) -> bytes:
        """/proc/PID/NAME, through a file kept open (b"" if it is gone)."""
        key = (pid, name)
        for _ in range(2):  # a kept file of a task that ended (its id taken since) fails to read: opened again
            fd = self._files.get(key)
            try:
                if fd is None:
                    fd = self._files[key] = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
                return os.pread(fd, 4096, 0)
            except OSError:
                if key in self._files:
                    os.close(self._files.pop(key))
        return b""

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()


class Watch:
    """One exchange with a box: the seconds of it the box spent asleep.

    The box was awake at least as long as the task whose counts grew most (the kernel adds a wait for a core to a
    task's count only once the task runs: over a whole exchange, whose tasks start asleep and end having answered,
    the counts are whole). The counts are read only where it matters, at the exchange's checks and at its end when
    more than READ_PAST is at stake, and compared with the box's last reading, less the time since that reading in
    which the box may have been awake unread (AwakeClock.unread): no reading at the start of every exchange (some 30
    microseconds each, two thousand exchanges a grading)."""

    #: An exchange whose time beyond its CPU time is under this is charged it without a reading (most of a correct
    #: file's calls: the grader spares a reading, the file is charged under a millisecond).
    READ_PAST = 0.001

    def __init__(self, clock: AwakeClock, between: float = 0.0) -> None:
        """``between``: CPU seconds the box used since the last exchange ended."""
        self.clock, self.started, self._delayed = clock, time.monotonic(), own_run_delay()
        clock.unread += between
        self._since, self._unread = clock.last, clock.unread
        self.awake = 0.0
        self._read_at = self.started  # the last reading made in this exchange (none yet: its start)
        self._first_seen: dict[tuple[int, int], tuple[int, int, int]] = {}  # older tasks first seen in this exchange

    def look(self, members: Iterable[int]) -> None:
        """Read the counts, with the tasks listed afresh (at every check of a long wait)."""
        self._credit(self.clock.counts(members, listed=True))

    def _credit(self, now: Counts) -> None:
        self._read_at = time.monotonic()
        self.clock.last, self.clock.unread = now, 0.0
        lasted = time.monotonic() - self.started
        if self._since is None or self.clock.lowered:
            return
        then = self._since
        most = 0.0
        for key, (ran, waited, pid) in now.tasks.items():
            if key in then.tasks:
                counted_from = then.tasks[key]
            elif key[0] in then.seen:
                continue  # known then under another image (its process called execve since), or none (0: unread)
            elif self.clock.began(pid, key[0]) >= then.taken - 1.0 / _TICKS:
                counted_from = (0, 0, pid)  # born since: all its counts are its own
            else:  # older, first seen now (an execve hands a thread its first task's start): from now on only
                counted_from = self._first_seen.setdefault(key, (ran, waited, pid))
            ran_more = (ran - counted_from[0]) / 1e9
            grown = (ran + waited - counted_from[0] - counted_from[1]) / 1e9 - self._unread
            # Its run cannot pass what its whole process ran (its CPU clock, which no execve resets).
            process_ran = (now.cpu.get(pid, 0) - then.cpu.get(pid, 0)) / 1e9
            if 0 <= grown <= lasted + SKEW_SECONDS and ran_more <= process_ran + SKEW_SECONDS:
                most = max(most, grown)
        # A worker that ended before this reading took its counts with it: what an earlier reading showed stands.
        self.awake = max(self.awake, min(lasted, most))

    def asleep(self, cpu_used: float, members: Iterable[int] | None = None, until: float | None = None) -> float:
        """Seconds from the start to ``until`` (now if None) the box spent asleep: the wall-clock time beyond its CPU
        time and the grader's own waits for a core, and beyond the time the counts show it awake. ``members``: the
        exchange ended; read the counts once more if more than READ_PAST is at stake."""
        end = time.monotonic() if until is None else until
        wall = end - self.started
        spare = wall - cpu_used - (own_run_delay() - self._delayed)
        if members is not None:
            if spare > self.READ_PAST:
                self._credit(self.clock.counts(members))
            else:  # unread since its start or its last check: it may have been awake all along, for the next reading
                self.clock.unread += end - self._read_at
        return max(0.0, min(spare, wall - self.awake))
