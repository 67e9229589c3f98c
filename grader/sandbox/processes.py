"""The sandboxed child's processes and the CPU time they use, read from /proc and the kernel's CPU clocks.

Split from :mod:`grader.sandbox.channel` (which waits for replies): a ProcessTree follows the child and every process
descending from it; a CpuMeter turns their CPU time into seconds used since a start.

A living member's CPU is read from its process CPU clock (``clock_gettime``, nanoseconds, all its threads); /proc
gives only clock ticks (10 ms), too coarse to time a call of a few milliseconds. The reaped children's CPU, and a
member's where its clock cannot be read, still come in ticks.
"""

from __future__ import annotations

import os
import time

#: How often the process tree is searched for new processes (the CPU of the known ones is read at every wait).
REFRESH_SECONDS = 0.05
_TICKS = os.sysconf("SC_CLK_TCK")
_NS_PER_TICK = 10**9 // _TICKS


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
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = data[data.rindex(b")") + 2:].split()
        return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    except (ValueError, IndexError):
        return None


def _clock_ns(pid: int) -> int | None:
    """The CPU time of process ``pid`` (all its threads, living and ended) in nanoseconds; None if unreadable."""
    try:
        # Linux encodes the CPU clock of process pid as ~pid << 3 | 2 (CPUCLOCK_SCHED, whole process).
        return time.clock_gettime_ns((~pid << 3) | 2)
    except (OSError, OverflowError):
        return None


def _children(pid: int) -> set[int] | None:
    """The children of ``pid`` (every thread's), from /proc; None if the kernel does not list them."""
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                found.update(int(child) for child in f.read().split())
    except FileNotFoundError:
        return None if os.path.exists(f"/proc/{pid}") else set()
    except (OSError, ValueError):
        return set()
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

    def __init__(self, root: int) -> None:
        self.members = {root}
        self._seen: set[int] = set()
        #: An open /proc/PID/stat per member, read again at every wait (a quarter of the cost of opening it; and
        #: a file kept open names that very process: once it is reaped, reading fails, whoever gets its pid).
        self._stat_files: dict[int, int] = {}
        self._lists_children = True
        self._refreshed = -REFRESH_SECONDS

    def refresh(self) -> None:
        """Find the processes that joined the tree, at most every REFRESH_SECONDS (a process found later is charged
        all the CPU it used so far: nothing is lost, only found a little later)."""
        now = time.monotonic()
        if now - self._refreshed < REFRESH_SECONDS:
            return
        self._refreshed = now
        if self._lists_children:
            pending, walked = set(self.members), set()
            while pending:
                pid = pending.pop()
                walked.add(pid)
                children = _children(pid)
                if children is None:  # no children lists on this kernel: list /proc from now on
                    self._lists_children = False
                    break
                pending |= children - walked
            else:
                self.members |= walked
                return
        self._refresh_by_listing()

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
            clock = _clock_ns(pid)
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
