"""The sandboxed child's processes and the CPU time they use, read from /proc and the kernel's CPU clocks.

Split from :mod:`grader.sandbox.channel` (which waits for replies): a ProcessTree follows the child and every process
descending from it; a CpuMeter turns their CPU time into seconds used since a start.

A living member's CPU is read from its process CPU clock (``clock_gettime``, nanoseconds, all its threads); /proc
gives only clock ticks (10 ms), too coarse to time a call of a few milliseconds. The reaped children's CPU, and a
member's where its clock cannot be read, still come in ticks.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time

from grader.sandbox import asleep
from grader.sandbox.procfs import cpu_clock_ns, stat_fields, task_fields, task_files

#: How often the process tree is searched for new processes (the CPU of the known ones is read at every wait).
REFRESH_SECONDS = 0.05
#: Rounds of SIGSTOP a freeze sends before it gives up (pauses doubling from 0.5 ms: about 0.5 s in all).
FREEZE_ROUNDS = 10
#: Task states that run no code of the process and cannot until it is sent SIGCONT (which nothing in a box may send:
#: grader.sandbox.seccomp): stopped, or dead.
_FROZEN_STATES = frozenset(b"TZX")  # of ints, as indexing bytes gives
#: Uninterruptible sleep: a task there runs no code, and one sent SIGSTOP stops before it runs any of the process's
#: again. SIGSTOP cannot end that sleep: a red team's thread waited in clone(CLONE_VFORK) for a child that never let
#: it go, and every freeze of its box failed. Frozen, then, once the process was sent SIGSTOP.
_SLEEP_UNINTERRUPTIBLE = ord("D")
_TICKS = os.sysconf("SC_CLK_TCK")
_NS_PER_TICK = 10**9 // _TICKS


@functools.cache
def can_freeze() -> bool:
    """Whether a box's processes can be stopped here, each signal sure to reach the member it names: pidfds (Linux
    5.3 or later, and a Python that has them)."""
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def weaknesses() -> list[str]:
    """What the isolation probe reports about stopping boxes between their calls (grader.sandbox.isolation)."""
    return [] if can_freeze() else [
        "no pidfds (Linux 5.3 or later, and a Python with os.pidfd_open): a box is not stopped between its calls, so "
        "a file busy in the background is charged the grader's own time there (more on a slower machine)"]


def _stat(pid: str) -> tuple[int, int, int] | None:
    """(parent pid, CPU ticks of the process, of its reaped children) from /proc; None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return _fields(f.read())
    except OSError:
        return None


def _fields(data: bytes) -> tuple[int, int, int] | None:
    """(parent pid, CPU ticks of the process, of its reaped children) of a /proc/PID/stat text; None if not one."""
    try:
        fields = stat_fields(data)
        return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    except (ValueError, IndexError):
        return None


@functools.cache
def _lists_children() -> bool:
    """Whether the kernel lists each thread's children (/proc/PID/task/TID/children; Linux 3.5 with
    CONFIG_PROC_CHILDREN)."""
    return os.path.exists(f"/proc/self/task/{threading.get_native_id()}/children")


def _children(pid: int) -> set[int]:
    """The children of ``pid`` (every thread's), from /proc; none if it is gone. A thread that ends meanwhile is
    skipped (a red team's file started and ended threads in a loop: once, that switched its tree to listing the
    whole of /proc at every refresh, for good)."""
    found: set[int] = set()
    for listed in task_files(pid, "children"):
        try:
            found.update(int(child) for child in listed.split())
        except ValueError:
            continue
    return found


class ProcessTree:
    """The processes descending from one root, kept up to date at little cost.

    Each refresh walks down from the members through the kernel's lists of
    children (/proc/PID/task/TID/children): a few small reads for a tree of a
    few processes. Where the kernel keeps no such list, it lists /proc and
    reads only the processes that appeared since the last refresh (is its
    parent in the tree?). A member stays one while it lives, even when an
    orphan is adopted outside the tree. A process that ends is counted in its
    parent's reaped-children time once waited for; one that ends unreaped
    stays a zombie, still readable.
    """

    def __init__(self, root: int, sealed: bool = False) -> None:
        self.root = root  # the grader's own child: its pid is not reused while the grader has not reaped it
        #: Nothing in the tree can send SIGCONT (the box's seccomp filter): a SIGSTOP sent stays pending, so a task
        #: in uninterruptible sleep that was sent one will stop. Elsewhere another member may continue it first.
        self.sealed = sealed
        self.members = {root}
        self._seen: set[int] = set()
        #: An open /proc/PID/stat per member, read again at every wait (a quarter of the cost of opening it; and
        #: a file kept open names that very process: once it is reaped, reading fails, whoever gets its pid).
        self._stat_files: dict[int, int] = {}
        self._refreshed = -REFRESH_SECONDS
        self._stopping: set[int] = set()  # the members sent SIGSTOP since the last thaw
        #: The priority the box starts with, read before the file runs: its tasks' waits for a core count as awake
        #: only at it (asleep.AwakeClock). Where the root is gone already, the grader's, which its processes inherit.
        self.priority = asleep.Priority.of(root) or asleep.Priority(os.getpriority(os.PRIO_PROCESS, 0),
                                                                    os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK)

    def refresh(self, at_once: bool = False) -> None:
        """Find the processes that joined the tree, at most every REFRESH_SECONDS unless ``at_once`` (a process found
        later is charged all the CPU it used so far: nothing is lost, only found a little later)."""
        now = time.monotonic()
        if not at_once and now - self._refreshed < REFRESH_SECONDS:
            return
        self._refreshed = now
        if not _lists_children():
            self._refresh_by_listing()
            return
        pending, walked = set(self.members), set()
        while pending:
            pid = pending.pop()
            walked.add(pid)
            pending |= _children(pid) - walked
        self.members |= walked

    def _refresh_by_listing(self) -> None:
        listed = {int(entry) for entry in os.listdir("/proc") if entry.isdigit()}
        new, self._seen = listed - self._seen, listed
        self.members &= listed
        for pid in set(self._stat_files) - self.members:
            self._forget(pid)
        parents = {pid: found[0] for pid in new if (found := _stat(str(pid))) is not None}
        grown = True
        while grown:  # a new process may descend from another new one
            adopted = [pid for pid, parent in parents.items() if parent in self.members]
            self.members.update(adopted)
            for pid in adopted:
                del parents[pid]
            grown = bool(adopted)

    def nanoseconds(self) -> int:
        """CPU time of the living members (with their reaped children) in nanoseconds; the dead are dropped."""
        total = 0
        for pid in list(self.members):
            # The clock is read first: a stat read that succeeds after it proves the pid still named the member
            # (a reaped member's kept file fails to read, whoever has its pid now).
            clock = cpu_clock_ns(pid)
            found = self._read_stat(pid)
            if found is None:
                self.members.discard(pid)
            else:
                own = clock if clock is not None else found[1] * _NS_PER_TICK
                total += own + found[2] * _NS_PER_TICK
        return total

    def _read_stat(self, pid: int) -> tuple[int, int, int] | None:
        fd = self._stat_files.get(pid)
        try:
            if fd is None:
                fd = self._stat_files[pid] = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
            found = _fields(os.pread(fd, 4096, 0))
        except OSError:
            found = None
        if found is None:
            self._forget(pid)
        return found

    def freeze(self) -> bool:
        """Stop every member (SIGSTOP: it cannot be caught) until none runs code: a box between its calls uses no
        CPU (a call charges what ran since the one before, but after a box's last call nothing would be charged).
        False if some task still ran after FREEZE_ROUNDS rounds.

        Sound where nothing in the box can continue a stopped process (the seccomp filter): a member seen stopped
        stays so, and once a round sees every member stopped, a last look for new members finds any process a member
        forked before it stopped.
        """
        pause = 0.0005
        for _ in range(FREEZE_ROUNDS):  # no look after the last pause: where a box can continue a stopped process
            # (no seccomp filter), a ring of processes that wake each other is seen all stopped now and then
            self.refresh(at_once=True)
            running = [pid for pid in self.members
                       if not self._frozen(pid, self.sealed and pid in self._stopping) and self._names_member(pid)]
            if not running:
                known = len(self.members)
                self.refresh(at_once=True)
                if len(self.members) == known:
                    return True
                continue
            self._stop_all(running)
            time.sleep(pause)
            pause *= 2
        return False

    def stop_known(self) -> None:
        """SIGSTOP to the members known now, at once (freeze then makes sure of them all): what they run after a
        reply is charged to the next call, and a look for new members first takes a millisecond."""
        self._stop_all(list(self.members))

    def _stop_all(self, pids: list[int]) -> None:
        self._stopping.update(pid for pid in pids if self._signal(pid, signal.SIGSTOP))

    def thaw(self) -> None:
        """Let every member run again (SIGCONT): those freeze found (none was made since)."""
        self._stopping.clear()
        for pid in self.members:
            self._signal(pid, signal.SIGCONT)

    @staticmethod
    def _frozen(pid: int, stopping: bool = False) -> bool:
        """Whether no task of ``pid`` runs code (each thread's state: a process whose first thread ended shows that
        thread's state, whatever the others do); a process that is gone runs none. ``stopping``: it was sent
        SIGSTOP, so a task in uninterruptible sleep will stop before it runs code again."""
        for fields in task_fields(pid):
            state = fields[0][0]  # the state's letter (an int)
            if state not in _FROZEN_STATES and not (stopping and state == _SLEEP_UNINTERRUPTIBLE):
                return False
        return True

    def _signal(self, pid: int, signum: int) -> bool:
        """Signal the member ``pid``, never a process that took its pid since: its pidfd is opened first, then the
        pid is checked to name the member still (without pidfds, can_freeze: no signal, so a freeze fails and the
        box is emptied). Whether the signal was sent."""
        if not can_freeze():
            return False
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return False  # gone
        try:
            if self._names_member(pid):
                signal.pidfd_send_signal(pidfd, signum)
                return True
        except OSError:
            pass
        finally:
            os.close(pidfd)
        return False

    def _names_member(self, pid: int) -> bool:
        """Whether ``pid`` names the member still: its kept stat file reads (it names that very process), or, for
        one found since the last read, its parent is a member."""
        if pid in self._stat_files:
            return self._read_stat(pid) is not None
        found = _stat(str(pid))
        return found is not None and (pid == self.root or found[0] in self.members)

    def _forget(self, pid: int) -> None:
        fd = self._stat_files.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """Close the files kept open."""
        for pid in list(self._stat_files):
            self._forget(pid)


class CpuMeter:
    """CPU seconds used by a process tree since ``start`` nanoseconds (never less than 0).

    The channel starts each wait where the last one ended, so that what the
    child's processes use between calls is charged to the next one, not lost.
    """

    def __init__(self, tree: ProcessTree, start: int | None = None) -> None:
        self.tree = tree
        if start is None:
            tree.refresh()
            start = tree.nanoseconds()
        self.start = self.last = start

    def seconds(self) -> float:
        self.tree.refresh()
        # Never backwards: a reaped child's CPU moves from its clock to its parent's ticks (rounded down).
        self.last = max(self.last, self.tree.nanoseconds())
        return max(0, self.last - self.start) / 1e9
