"""Reading /proc and the kernel's CPU clocks about other processes: the pieces grader.sandbox.processes (a box's
process tree, its CPU, its stops) and grader.sandbox.asleep (its time asleep) share."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator


def stat_fields(data: bytes) -> list[bytes]:
    """The fields of a /proc/PID/stat text from the state on (index 0): the command name before them may hold spaces
    and parentheses, so they start after the last ')'. ValueError if there is none."""
    return data[data.rindex(b")") + 2:].split()


def task_ids(pid: int) -> list[int]:
    """The ids of the living threads (tasks) of ``pid``; none if it is gone."""
    try:
        return [int(task) for task in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return []


def task_files(pid: int, name: str) -> Iterator[bytes]:
    """/proc/PID/task/TID/NAME of each living thread of ``pid``; a thread that ends meanwhile is skipped."""
    for task in task_ids(pid):
        try:
            with open(f"/proc/{pid}/task/{task}/{name}", "rb") as f:
                yield f.read()
        except OSError:
            continue


def task_fields(pid: int) -> Iterator[list[bytes]]:
    """The /proc/PID/task/TID/stat fields (stat_fields) of each living thread of ``pid``; none if it is gone."""
    return (stat_fields(data) for data in task_files(pid, "stat"))


def cpu_clock_ns(pid: int) -> int | None:
    """The CPU time of process ``pid`` (all its threads, living and ended; no execve resets it) in nanoseconds;
    None if unreadable."""
    try:
        # Linux encodes the CPU clock of process pid as ~pid << 3 | 2 (CPUCLOCK_SCHED, whole process).
        return time.clock_gettime_ns((~pid << 3) | 2)
    except (OSError, OverflowError):
        return None
