"""A red-team sample (rt34): a file that learns when the grader looks at its box, and sleeps between looks.

The grader drains the reply pipe as soon as bytes come, except while it looks at the box's tasks (then snapshots of
their states: 0.2 to 1 ms, longer with more tasks to read, hence the idle threads read before the worker). While it
must be ready to run anyway, the worker writes one space to the reply pipe every PROBE seconds (spaces before a JSON
line still parse) and sees how long it stays unread (FIONREAD): between THRESHOLD and CEILING, a look just came.
While every look came 25 to 75 ms after the one before, the worker slept SAFE seconds after each, safely: 1.8 s of
wall clock per CPU second on a quiet machine, most of it never charged. The grader now reads the kernel's counts of
each task's time run and waited for a core: when it reads them does not matter. contact_time_walls holds for HOLD
seconds and answers the seconds it slept (tests/test_asleep.py compares them with what it is charged).
"""

import array
import fcntl
import os
import sys
import termios
import threading
import time

REPLY_FD = int(sys.argv[2])  # the reply pipe's write end (grader.sandbox.child's arguments)
HOLD = 1.5
PROBE, THRESHOLD, CEILING = 100e-6, 400e-6, 1500e-6
SAFE = 0.022
IDLE_THREADS = 20

_count = array.array("i", [0])
_never = threading.Event()
for _ in range(IDLE_THREADS):
    threading.Thread(target=_never.wait, daemon=True).start()


def _unread() -> int:
    fcntl.ioctl(REPLY_FD, termios.FIONREAD, _count, True)
    return _count[0]


def _look_seen() -> float:
    """Spin and probe until a look is seen; the time of the probe's write."""
    while True:
        written = time.perf_counter()
        os.write(REPLY_FD, b" ")
        while _unread():
            pass
        if THRESHOLD < time.perf_counter() - written < CEILING:
            return written
        while time.perf_counter() - written < PROBE:
            pass


def _hold(slept: list[float]) -> None:
    end = time.perf_counter() + HOLD
    while True:
        wake = _look_seen() + SAFE
        if wake > end:
            return
        pause = wake - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
            slept.append(pause)


def contact_time_walls(w, x1, v1, R1):
    slept: list[float] = []
    worker = threading.Thread(target=_hold, args=(slept,))  # started last: its task is read last
    worker.start()
    worker.join()
    return sum(slept)
