"""Time asleep is the file's doing, time waiting for a core the machine's (Limits.idle_seconds).

A grading's calls may spend a little time asleep in all (sleeping, waiting for input, stopped): the channel looks
at the box at random times and charges only the share of a call in which none of its tasks was running or ready to
run (ProcessTree.ready). A file that sleeps nine parts in ten is charged for it, in whatever slices; a correct file
on a busy machine, ready to run and waiting for a core, is not. Every test here runs real processes and real boxes.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from grader.grading.runner import GradeOptions, grade_file
from grader.sandbox.client import Sandbox
from grader.sandbox.processes import ProcessTree
from grader.spec.limits import Limits

from .conftest import scaled_sample
from .test_load import busy_machine

AUTOGROUPS = Path("/proc/self/autogroup").exists()

#: Python one-liners run as the process ProcessTree.ready looks at, and whether it should be found ready.
PROCESSES = {
    "spinning": ("while True: pass", True),
    "sleeping": ("import time; time.sleep(60)", False),
    "spinning at a higher nice value": ("import os; os.nice(5)\nwhile True: pass", False),
    "spinning as SCHED_IDLE": ("import os; os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
                               "while True: pass", False),
    "spinning in an autogroup made nicer": ("open('/proc/self/autogroup', 'w').write('10')\nwhile True: pass", False),
    # A look reads READY_TASKS_LOOKED tasks at most (the grader's work is bounded): past them, the box is asleep.
    "spinning in a thread after 100 sleeping ones": (
        "import threading, time\nfor _ in range(100): threading.Thread(target=time.sleep, args=(60,)).start()\n"
        "threading.Thread(target=lambda: exec('while True: pass')).start()", False),
}


@pytest.mark.parametrize("kind", PROCESSES)
def test_a_box_is_ready_only_with_a_task_ready_to_run_at_the_box_s_priority(kind: str) -> None:
    """A task that lowered its own priority stays ready to run at a sliver of a core: it would hide sleep."""
    code, expected = PROCESSES[kind]
    if "autogroup" in kind and not AUTOGROUPS:
        pytest.skip("this kernel keeps no autogroups")
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        time.sleep(0.5)  # started, and done with its import
        tree = ProcessTree(process.pid)
        looks = [tree.ready() for _ in range(20)]
        assert looks == [expected] * 20, looks
        if expected:  # stopped, the same process is not ready
            process.send_signal(signal.SIGSTOP)
            time.sleep(0.05)
            assert not any(tree.ready() for _ in range(20))
    finally:
        process.kill()
        process.wait()


#: contact_time_grains computes 0.1 s in 10 ms slices and sleeps 9 parts in 10 between them (the red team's
#: tests/limit_samples/sleeps_nine_parts_in_ten.py in small); contact_time_walls computes 0.6 s in one go.
SLICED_AND_BUSY = """
import time

def _burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    for _ in range(10):
        _burn(0.01)
        time.sleep(0.09)
    return 1.0

def contact_time_walls(w, x1, v1, R1):
    _burn(0.6)
    return 2.0
"""

VECTOR = np.zeros(2)


def _charged(box: Sandbox, name: str, *args: object) -> tuple[float, float]:
    """(seconds charged asleep, seconds of wall clock beyond the CPU time) of one call."""
    idle, started = box.idle, time.monotonic()
    returned = box.call(name, *args)
    return box.idle - idle, time.monotonic() - started - returned.cpu_seconds


def test_sleep_in_slices_is_charged_and_a_busy_machine_s_queueing_is_not(tmp_path: Path) -> None:
    """Both calls take longer than their CPU time beside four CPU-bound processes; only the sleeping one is charged
    (while ten seconds of any waiting were allowed per CPU second, a file sleeping so stretched its grading past a
    batch's backstop)."""
    path = tmp_path / "granularGas.py"
    path.write_text(SLICED_AND_BUSY)
    with busy_machine(), Sandbox(path, Limits(call_seconds=3.0, import_seconds=10.0)) as box:
        asleep, beyond_cpu = _charged(box, "contact_time_grains", VECTOR, VECTOR, VECTOR, VECTOR, 1.0, 1.0)
        assert asleep >= 0.7 * 0.9, (asleep, beyond_cpu)  # it slept 0.9 s
        queued, beyond_cpu = _charged(box, "contact_time_walls", np.zeros((2, 2)), VECTOR, VECTOR, 1.0)
        assert beyond_cpu > 0.3, "the machine was not busy: nothing to tell apart"
        assert queued < 0.25 * beyond_cpu, (queued, beyond_cpu)


#: A spinning thread keeps the box ready to run while the call sleeps: it pays CPU time for it unless its priority
#: is lowered (an autogroup made nicer: a sliver of a core beside other sessions' work).
HIDDEN_BEHIND_A_SPINNER = """
import threading
import time

NICER = False

def _spin():
    while True:
        pass

def contact_time_walls(w, x1, v1, R1):
    if NICER:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
    threading.Thread(target=_spin, daemon=True).start()
    time.sleep(1.0)
    return 2.0
"""


@pytest.mark.skipif(not AUTOGROUPS, reason="this kernel keeps no autogroups")
def test_sleep_hidden_behind_a_spinner_of_lowered_priority_is_charged(tmp_path: Path) -> None:
    """The spinner at the box's priority gets its share of a core, and its time ready to run is the machine's;
    made nicer, it hardly runs, and the call's sleep is charged."""
    charged = {}
    for nicer in (False, True):
        folder = tmp_path / str(nicer)
        folder.mkdir()
        path = folder / "granularGas.py"
        path.write_text(HIDDEN_BEHIND_A_SPINNER.replace("NICER = False", f"NICER = {nicer}"))
        with busy_machine(), Sandbox(path, Limits(call_seconds=3.0, import_seconds=10.0)) as box:
            charged[nicer] = _charged(box, "contact_time_walls", np.zeros((2, 2)), VECTOR, VECTOR, 1.0)
    assert charged[True][0] >= 0.6, charged  # it slept 1 s, its spinner hardly ran
    assert charged[False][0] < 0.25 * charged[False][1] + 0.05, charged


def test_a_file_that_sees_the_looks_is_charged_for_the_sleep_between_them(tmp_path: Path) -> None:
    """tests/limit_samples/sleeps_between_looks.py (a red team's) sees each look as a pause in the grader's reading
    of its pipe. While every look came 25 to 75 ms after the one before, it slept 22 ms after each, charged about a
    tenth of it. The looks are now a Poisson process: its sleep is charged in the mean. It answers what it slept."""
    path = tmp_path / "granularGas.py"
    path.write_text((Path(__file__).parent / "limit_samples" / "sleeps_between_looks.py").read_text())
    slept = charged = 0.0
    with Sandbox(path, Limits(call_seconds=5.0, import_seconds=10.0)) as box:
        for _ in range(3):
            idle = box.idle
            returned = box.call("contact_time_walls", np.zeros((2, 2)), VECTOR, VECTOR, 1.0)
            slept, charged = slept + float(returned.value.array), charged + box.idle - idle
    assert slept > 0.3, "it saw no look: nothing was tested"
    assert charged >= 0.45 * slept, (charged, slept)  # 0.1 to 0.2 with the looks of before, about 1 now


def test_the_red_team_s_sleeping_file_is_stopped_within_the_gradings_time_asleep(tmp_path: Path) -> None:
    """tests/limit_samples/sleeps_nine_parts_in_ten.py computes one part in ten and sleeps the rest in each call
    (never idle for the detector). With ten seconds of waiting allowed per CPU second it would have stretched a
    grading to 2 200 s of sleep, past a batch's backstop. Its sleep is now charged: past Limits.idle_seconds (and
    IDLE_PER_CPU_SECOND per CPU second) its calls stop. Its constants made small: 0.3 s of CPU and 2.7 s asleep a
    call."""
    path = scaled_sample(tmp_path, Path(__file__).parent / "limit_samples" / "sleeps_nine_parts_in_ten.py",
                         "CALL_CPU = 4.5", "CALL_CPU = 0.3")
    limits = Limits(call_seconds=1.0, import_seconds=5.0, function_seconds=2.0, idle_seconds=4.0)
    started = time.monotonic()
    report = grade_file(path, GradeOptions(limits=limits, selftest=False))
    took = time.monotonic() - started
    assert report.score == 0 and not report.import_error
    assert any("asleep" in r.message for r in report.results)
    # Two calls at most (3 s each, charged 2.7 s asleep) fit the budget of 4 s and 0.25 s per CPU second; with the
    # waiting allowed before, each function would have made its calls until its 2 s of CPU: some 36 calls, 108 s.
    assert took < 30, took
