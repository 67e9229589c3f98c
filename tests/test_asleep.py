"""Time asleep is the file's doing, time waiting for a core the machine's (Limits.asleep_seconds).

A grading's calls may spend a little time asleep in all (sleeping, waiting for input, stopped): a call is charged
only the time in which none of the box's tasks was running or ready to run, as the kernel's counts of each task's
time run and waited show it (grader.sandbox.asleep). A file that sleeps nine parts in ten is charged for it, in
whatever slices, and however it times its sleep against the grader's reading; a correct file on a busy machine,
ready to run and waiting for a core, is not. Every test here runs real processes and real boxes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from grader.grading.runner import GradeOptions, grade_file
from grader.sandbox import asleep
from grader.sandbox.client import Sandbox
from grader.sandbox.processes import ProcessTree
from grader.spec.limits import Limits

from .conftest import scaled_sample
from .test_isolation import _seccomp_probe, needs_bwrap
from .test_load import busy_machine


def _autogroups() -> bool:
    """Whether the kernel shares CPU time out between sessions (autogroups) here."""
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False


AUTOGROUPS = _autogroups()

#: What a process does once the tree has read the priority it starts with (it waits for a line first), before it
#: says so and spins; and whether it is then seen at a lowered priority.
PRIORITIES = {
    "nothing": ("pass", False),
    "os.nice(5)": ("os.nice(5)", True),
    "SCHED_IDLE": ("os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))", True),
    "SCHED_BATCH": ("os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))", True),
    "its autogroup made nicer": ("open('/proc/self/autogroup', 'w').write('10')", True),
    "a thread niced by 5": ("threading.Thread(target=lambda: (os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), "
                            "os.getpriority(os.PRIO_PROCESS, 0) + 5), time.sleep(60)), daemon=True).start(); "
                            "time.sleep(0.1)", True),
}
STARTED = """
import os, sys, threading, time
sys.stdin.readline()
{setup}
print("set", flush=True)
{then}
"""


@contextmanager
def _started(setup: str, then: str, niced: bool = False) -> Iterator[tuple[subprocess.Popen, ProcessTree]]:
    """A process, its tree made (and the priority it starts with read) before it runs ``setup``, then ``then``."""
    process = subprocess.Popen([sys.executable, "-c", STARTED.format(setup=setup, then=then)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=(lambda: os.nice(5)) if niced else None)
    try:
        tree = ProcessTree(process.pid)  # as a box's, before its file runs
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("\n")
        process.stdin.flush()
        assert process.stdout.readline() == "set\n"
        yield process, tree
        assert process.poll() is None, "it ended: nothing was looked at"
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("niced", [False, True], ids=["grader at nice 0", "grader at nice 5"])
@pytest.mark.parametrize("change", PRIORITIES)
def test_a_task_is_seen_at_a_lowered_priority_against_the_one_its_box_started_with(change: str, niced: bool) -> None:
    """Ready to run at a lowered priority, a task waits for a core as long as it likes at a sliver of one: its wait
    is no credit. The priority a box starts with is its own, whatever the grader's (a grader at nice 5 starts its
    boxes so)."""
    setup, expected = PRIORITIES[change]
    if "autogroup" in change and not AUTOGROUPS:
        pytest.skip("this kernel does not share CPU time out by autogroups")
    with _started(setup, "while True: pass", niced) as (_, tree):
        tree.refresh(at_once=True)
        clock = asleep.AwakeClock(tree.priority)
        clock.counts(tree.members, listed=True)
        clock.close()
        assert clock.lowered == expected


def _awake(tree: ProcessTree, seconds: float) -> float:
    """Seconds the counts show the process awake over ``seconds`` of waiting."""
    clock = asleep.AwakeClock(tree.priority)
    tree.refresh(at_once=True)
    clock.last = clock.counts(tree.members)  # where the counts start
    watch = asleep.Watch(clock)
    time.sleep(seconds)
    watch.look(tree.members)
    clock.close()
    return watch.awake


def test_the_counts_show_a_spinning_process_awake_and_a_sleeping_one_asleep() -> None:
    with _started("pass", "while True: pass") as (_, tree):
        assert _awake(tree, 0.3) >= 0.25
    with _started("pass", "time.sleep(60)") as (_, tree):
        assert _awake(tree, 0.3) < 0.02


#: A thread spins for 0.3 s, says so, waits, then calls execve: it takes over its process's first task, and its counts
#: with it. (It says so itself: on a busy machine its 0.3 s of CPU may take longer than any fixed wait, and a thread
#: still spinning when the counts are read is awake, rightly credited.)
EXECVE = """
def spin_wait_exec():
    start = time.process_time()
    while time.process_time() - start < 0.3:
        pass
    print("spun", flush=True)
    sys.stdin.readline()
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)"])
threading.Thread(target=spin_wait_exec).start()
"""


@pytest.mark.parametrize("images", ["told apart", "all alike"])
def test_a_task_whose_process_called_execve_is_not_believed(images: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first red team's trick: a thread's run or wait, brought to its process's first task by execve, counted in
    the first task's growth as if the first task had been awake (the process then sleeps). Repeated across
    processes, the same waits would be credited again and again. Where images cannot be told apart (a machine
    without address randomisation), the task's run still cannot pass its process's CPU time over the call."""
    if images == "all alike":
        monkeypatch.setattr(asleep, "_image", lambda pid: 1)
    with _started("pass", EXECVE) as (process, tree):
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline() == "spun\n"  # the thread spun 0.3 s, and waits for a line
        clock = asleep.AwakeClock(tree.priority)
        tree.refresh(at_once=True)
        clock.last = clock.counts(tree.members)  # the first task's counts: about 0
        watch = asleep.Watch(clock)
        process.stdin.write("\n")
        process.stdin.flush()
        time.sleep(0.4)  # the execve, and the new image asleep
        watch.look([tree.root])
        clock.close()
        assert watch.awake < 0.05, "the spinning thread's 0.3 s credited to a process asleep"


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
    idle, started = box.asleep, time.monotonic()
    returned = box.call(name, *args)
    return box.asleep - idle, time.monotonic() - started - returned.cpu_seconds


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
    tenth of it. The kernel's counts show its sleep, whenever it is read. It answers what it slept."""
    path = tmp_path / "granularGas.py"
    path.write_text((Path(__file__).parent / "limit_samples" / "sleeps_between_looks.py").read_text())
    slept = charged = 0.0
    with Sandbox(path, Limits(call_seconds=5.0, import_seconds=10.0)) as box:
        for _ in range(3):
            idle = box.asleep
            returned = box.call("contact_time_walls", np.zeros((2, 2)), VECTOR, VECTOR, 1.0)
            slept, charged = slept + float(returned.value.array), charged + box.asleep - idle
    if slept < 0.1:  # it probes every 0.1 ms: on a loaded machine (CI's) it sees no pause of the grader's
        pytest.skip(f"the file saw the grader pause only {slept:.2f} s in all: nothing to compare")
    assert charged >= 0.45 * slept, (charged, slept)  # 0.1 to 0.2 with the looks of before, about 1 now


def test_a_file_that_wakes_for_each_look_is_charged_for_its_sleep(tmp_path: Path) -> None:
    """tests/limit_samples/wakes_for_each_look.py (a red team's) made a task ready to run inside each look at a
    snapshot of its tasks' states, and was charged 1 part in 50 of its sleep. The kernel's counts are read now."""
    path = tmp_path / "granularGas.py"
    path.write_text((Path(__file__).parent / "limit_samples" / "wakes_for_each_look.py").read_text())
    with Sandbox(path, Limits(call_seconds=5.0, import_seconds=10.0)) as box:
        charged, beyond_cpu = _charged(box, "contact_time_walls", np.zeros((2, 2)), VECTOR, VECTOR, 1.0)
    assert beyond_cpu > 1.0, "it did not sleep: nothing was tested"
    # About 0.9 on a quiet machine, 0.64 at a load of 8, 0.22 in a CI run (its watcher, waking every 0.2 ms, then
    # waits for a core a good part of the time: the machine's doing); 1 part in 50 with the snapshots of before.
    assert charged >= 0.1 * beyond_cpu, (charged, beyond_cpu)


def test_waits_hoarded_and_cashed_through_execve_are_charged(tmp_path: Path) -> None:
    """tests/limit_samples/hoards_waits_for_execve.py (a third red team's) amassed waits in tasks the grader could not
    tell the image of, and cashed one per call through an execve: 0.2 s charged of a call of 4 s. Its calls are
    now charged as its control's, which sleeps the same without the execve. (Where the child's filter is loaded its
    execve now fails, and the file sleeps on; the rules that tell an execve are tested outside a box above.)"""
    path = scaled_sample(tmp_path, Path(__file__).parent / "limit_samples" / "hoards_waits_for_execve.py",
                         "AMASS = 4.0", "AMASS = 1.5")
    with Sandbox(path, Limits(call_seconds=5.0, import_seconds=10.0)) as box:
        charged, beyond_cpu = 0.0, 0.0
        for _ in range(2):
            one, beyond = _charged(box, "contact_time_walls", np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([0.5, 2.0]),
                                   np.array([0.0, 1.0]), 0.1)
            charged, beyond_cpu = charged + one, beyond_cpu + beyond
    assert beyond_cpu > 2.0, "it held no call: nothing was tested"
    assert charged >= 0.6 * beyond_cpu, (charged, beyond_cpu)


#: Each way a box's task could change what the grader reads of it: its priority, its address randomisation, its start of
#: stack (PR_SET_MM_MAP_SIZE only asks a size: no capability needed, as for PR_SET_MM_MAP, which sets it).
PRIORITY_AND_IMAGE = """
import ctypes, errno, os

libc = ctypes.CDLL(None, use_errno=True)

def _refused(call):
    try:
        return call() == -1 and ctypes.get_errno() == errno.EPERM
    except PermissionError:
        return True

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    size = ctypes.c_uint(0)
    tries = [lambda: os.setpriority(os.PRIO_PROCESS, 0, 5), lambda: os.nice(1),
             lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)),
             lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)),
             lambda: libc.personality(0x0040000), lambda: libc.prctl(35, 15, ctypes.byref(size), 0, 0)]
    return float(sum(1 << k for k, call in enumerate(tries) if _refused(call)))
"""


@needs_bwrap
def test_a_box_can_change_neither_its_priority_nor_what_tells_an_execve(tmp_path: Path) -> None:
    """A fourth red team's file set its start of stack back after each execve (prctl PR_SET_MM_MAP, open to any
    process) and cashed hoarded waits again: 0.29 s charged of 6.3-s calls. The seccomp filter refuses it, and the
    calls that lower a task's priority or turn address randomisation off."""
    bits = _seccomp_probe(tmp_path, PRIORITY_AND_IMAGE)
    names = ["setpriority", "nice", "SCHED_IDLE", "SCHED_BATCH", "personality", "PR_SET_MM"]
    assert [name for k, name in enumerate(names) if not bits >> k & 1] == []


EXEC_TRIES = """
import errno, os, subprocess, sys, threading

def _refused(call):
    try:
        call()
    except PermissionError:
        return True
    return False

def _in_a_thread(call):
    refused = []
    thread = threading.Thread(target=lambda: refused.append(_refused(call)))
    thread.start()
    thread.join()
    return refused[0]

def _forks():
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    return os.waitpid(pid, 0)[1] >> 8 == 7

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    tries = [lambda: os.execv(sys.executable, [sys.executable, "-c", "pass"]),
             lambda: _in_a_thread(lambda: os.execv("/bin/sh", ["sh", "-c", ":"])),
             lambda: subprocess.run(["/bin/sh", "-c", ":"]),
             lambda: _in_a_thread(lambda: subprocess.run([sys.executable, "-c", "pass"]))]
    refused = [_refused(t) if k in (0, 2) else t() for k, t in enumerate(tries)]
    return float(sum(1 << k for k, r in enumerate(refused) if r) + (16 if _forks() else 0))
"""


@needs_bwrap
def test_a_box_starts_no_program_but_forks(tmp_path: Path) -> None:
    """A fifth red team's file hid an execve where addresses are not randomised (kernel.randomize_va_space = 0, or a
    grader under setarch -R): its padded argv gave the new image the old start of stack, and waits hoarded at import
    were cashed (0.64 s charged of 7.8 s held; ada's file with it scored 100 in 53 s instead of being stopped). The
    child now refuses execve for good before it imports the file, on every thread: whatever the machine, a task's
    image never changes. Forked processes still work."""
    bits = _seccomp_probe(tmp_path, EXEC_TRIES)
    names = ["execv", "execv in a thread", "subprocess.run", "subprocess.run in a thread", "fork"]
    assert [name for k, name in enumerate(names) if not bits >> k & 1] == []


def test_the_red_team_s_sleeping_file_is_stopped_within_the_gradings_time_asleep(tmp_path: Path) -> None:
    """tests/limit_samples/sleeps_nine_parts_in_ten.py computes one part in ten and sleeps the rest in each call
    (never idle for the detector). With ten seconds of waiting allowed per CPU second it would have stretched a
    grading to 2 200 s of sleep, past a batch's backstop. Its sleep is now charged: past Limits.asleep_seconds (and
    ASLEEP_PER_CPU_SECOND per CPU second) its calls stop. Its constants made small: 0.3 s of CPU and 2.7 s asleep a
    call."""
    path = scaled_sample(tmp_path, Path(__file__).parent / "limit_samples" / "sleeps_nine_parts_in_ten.py",
                         "CALL_CPU = 4.5", "CALL_CPU = 0.3")
    limits = Limits(call_seconds=1.0, import_seconds=5.0, function_seconds=2.0, asleep_seconds=4.0)
    started = time.monotonic()
    report = grade_file(path, GradeOptions(limits=limits, selftest=False))
    took = time.monotonic() - started
    assert report.score == 0 and not report.import_error
    assert any("asleep" in r.message for r in report.results)
    # Two calls at most (3 s each, charged 2.7 s asleep) fit the budget of 4 s and 0.25 s per CPU second; with the
    # waiting allowed before, each function would have made its calls until its 2 s of CPU: some 36 calls, 108 s.
    assert took < 30, took
