"""A red-team sample (rt34b): a file that wakes up inside each of the grader's looks at its box, and sleeps the rest.

While the grader looked at snapshots of the box's task states, a look paused its reading of the reply pipe for a
fraction of a millisecond. A watcher thread (started after many sleeping threads, so that a look reads it last)
writes one space to the reply pipe (spaces before a JSON line still parse), sleeps PROBE seconds, and finds the
space still unread only while the grader is busy, almost always looking: it then spins until the space is read,
and the look finds it running. Its sleep was charged 1 part in 50; its grading would have run past a batch's
backstop. The grader now reads the kernel's counts of time run and time waited for a core, which no trick at the
moment of reading changes. contact_time_walls holds for HOLD seconds and answers 1.0.
"""

import array
import fcntl
import os
import sys
import termios
import threading
import time

REPLY_FD = int(sys.argv[2])  # the reply pipe's write end (grader.sandbox.child's arguments)
HOLD = 2.0
PROBE = 200e-6
SLEEPING_THREADS = 26

_never = threading.Event()
for _ in range(SLEEPING_THREADS):
    threading.Thread(target=_never.wait, daemon=True).start()


def _unread(count: array.array) -> int:
    fcntl.ioctl(REPLY_FD, termios.FIONREAD, count, True)
    return count[0]


def _watch(until: float) -> None:
    count = array.array("i", [0])
    while time.perf_counter() < until:
        os.write(REPLY_FD, b" ")
        time.sleep(PROBE)
        if _unread(count):  # the grader is busy: awake until it reads again (4 ms at most)
            busy = time.perf_counter()
            while _unread(count) and time.perf_counter() - busy < 0.004:
                pass


def contact_time_walls(w, x1, v1, R1):
    watcher = threading.Thread(target=_watch, args=(time.perf_counter() + HOLD,))
    watcher.start()
    watcher.join()
    return 1.0
