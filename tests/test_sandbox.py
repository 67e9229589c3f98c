"""The sandbox transport, each feature and each attack as a real file and a real run.

Every test writes a small granularGas.py in tmp_path and runs it in a real
sandbox (grader.sandbox.isolation.Box); limits are small so that each test stays
within a few seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from grader.sandbox import calls, processes, wire
from grader.sandbox import client as sandbox
from grader.sandbox.client import (
    CallRaised,
    CallTimeout,
    ChildDied,
    FunctionMissing,
    ImportFailed,
    Sandbox,
)
from grader.sandbox.processes import ProcessTree
from grader.spec import limits as limits_module
from grader.spec.limits import Limits

FAST = Limits(call_seconds=1.0, import_seconds=10.0)
#: A bound on the wall clock that only a hang passes: on a busy machine a call of 1 s of CPU may take many times
#: that (the limits count CPU time; these bounds only check that nothing waits for a sleep or a hang to end).
LOADED_MACHINE_SECONDS = 60.0

#: A correct contact_time_grains, used by the files below.
GRAINS = """
import sys
import numpy as np

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    dx, dv = x1 - x2, v1 - v2
    a, b, c = np.dot(dv, dv), 2 * np.dot(dx, dv), np.dot(dx, dx) - (R1 + R2) ** 2
    if a == 0 or b >= 0 or b * b - 4 * a * c < 0:
        return sys.float_info.max
    return float((-b - np.sqrt(b * b - 4 * a * c)) / (2 * a))
"""

X1, X2, V1, V2 = np.array([0.0, 0.0]), np.array([3.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 0.0])


def write(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "granularGas.py"
    path.write_text(textwrap.dedent(source))
    return path


@contextmanager
def running(tmp_path: Path, source: str, limits: Limits = FAST) -> Iterator[Sandbox]:
    with Sandbox(write(tmp_path, source), limits) as box:
        yield box


def grains(box: Sandbox) -> float:
    """Call the correct contact_time_grains: 1.0 for the grains above."""
    value = box.call("contact_time_grains", X1, X2, V1, V2, 1.0, 1.0).value
    assert isinstance(value, wire.Numeric)
    return float(value.array)


# -- the student's own functions call each other ----------------------------------------------------------


def test_keyword_calls_between_functions_run_and_are_recorded(tmp_path):
    source = GRAINS + """
def minimum_contact_time(x, v, R, w, indexOld):
    tc = contact_time_grains(x1=x[0], x2=x[1], v1=v[0], v2=v[1], R1=R[0], R2=R[1])
    return tc, np.array([0, 1])
"""
    x, v, R = np.array([X1, X2]), np.array([V1, V2]), np.array([1.0, 1.0])
    with running(tmp_path, source) as box:
        returned = box.call("minimum_contact_time", x, v, R, np.zeros((0, 2, 2)), np.array([-1, -1]))
    assert returned.helper_calls_total == 1
    (record,) = returned.helper_calls
    assert record.name == "contact_time_grains" and record.args == ()
    assert set(record.kwargs) == {"x1", "x2", "v1", "v2", "R1", "R2"}
    assert np.array_equal(record.kwargs["x2"].array, X2)
    assert float(record.result.array) == pytest.approx(1.0)
    assert float(returned.value.items[0].array) == pytest.approx(1.0)


def test_helper_taking_arrays_of_pairs_records_arguments_as_they_were(tmp_path):
    source = GRAINS + """
def contact_solve_wall(wall, x1, v1, r):
    return -2 * v1

def update(x, v, R, m, w, indexOld, r, dt, t):
    for k in range(len(x)):
        v[k] += contact_solve_wall(w[0], x[k], v[k], r)   # w[0]: an array of two points
        v[k] *= 10                                        # changed after the call: the record must not see it
"""
    x, v, w = np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]), np.zeros((1, 2, 2))
    with running(tmp_path, source) as box:
        returned = box.call("update", x, v, np.ones(2), np.ones(2), w, np.array([-1, -1]), 1.0, 0.1, 0.0)
    assert returned.helper_calls_total == 2
    first, second = returned.helper_calls
    assert first.args[0].array.shape == (2, 2)
    assert np.array_equal(first.args[2].array, [1.0, 2.0]) and np.array_equal(second.args[2].array, [3.0, 4.0])
    assert np.array_equal(first.result.array, [-2.0, -4.0])
    assert np.array_equal(returned.args_after[1].array, [[-10.0, -20.0], [-30.0, -40.0]])


def test_recursion_is_recorded_then_counted_and_fails_where_it_would_without_the_grader(tmp_path):
    source = GRAINS + """
def update(x, v, R, m, w, indexOld, r, dt, t):
    if t >= dt:
        return
    update(x, v, R, m, w, indexOld, r, dt, t + 1)
"""
    args = (np.zeros((1, 2)), np.zeros((1, 2)), np.ones(1), np.ones(1), np.zeros((0, 2, 2)), np.array([-1, -1]), 1.0)
    with running(tmp_path, source) as box:
        returned = box.call("update", *args, 50.0, 0.0)
        assert returned.helper_calls_total == 50
        assert len(returned.helper_calls) == calls.HELPER_CALLS_KEPT
        assert [float(c.args[8].array) for c in returned.helper_calls[:3]] == [1.0, 2.0, 3.0]
        # 950 levels fit under Python's default limit of 1000 frames: the wrappers must not eat into it.
        assert box.call("update", *args, 950.0, 0.0).helper_calls_total == 950
        with pytest.raises(CallRaised, match="RecursionError") as raised:
            box.call("update", *args, 1100.0, 0.0)
        assert raised.value.error == "RecursionError"
        assert raised.value.helper_calls_total > 900 and len(raised.value.helper_calls) == calls.HELPER_CALLS_KEPT
        assert grains(box) == pytest.approx(1.0)  # the same child serves on


def test_a_recursion_that_calls_helpers_at_every_level_fails_where_it_would_without_the_grader(tmp_path):
    # The hand-out's update: a helper call, then the recursive call, at every level. A recursion
    # limit nudged up and down by the wrappers leaked one frame per level and let it run for ever.
    source = GRAINS + """
def contact_solve_wall(wall, x1, v1, r):
    return v1 * 0.0

def update(x, v, R, m, w, indexOld, r, dt, t):
    if t >= dt:
        return
    contact_solve_wall(w, x[0], v[0], r)
    contact_solve_wall(w, x[0], v[0], r)
    update(x, v, R, m, w, indexOld, r, dt, t + 1)
"""
    args = (np.zeros((1, 2)), np.zeros((1, 2)), np.ones(1), np.ones(1), np.zeros((2, 2)), np.array([-1, -1]), 1.0)
    with running(tmp_path, source) as box:
        assert box.call("update", *args, 900.0, 0.0).helper_calls_total == 2700
        for _ in range(2):  # and the limit is the same on the next request
            with pytest.raises(CallRaised, match="RecursionError"):
                box.call("update", *args, 5000.0, 0.0)


def test_a_large_argument_of_a_helper_is_recorded_as_too_large(tmp_path):
    source = GRAINS + """
def contact_time_walls(w, x1, v1, R1):
    try:
        return contact_time_grains(w, w, x1, v1, R1, R1)
    except ValueError:
        return -1.0
"""
    with running(tmp_path, source) as box:
        returned = box.call("contact_time_walls", np.zeros(20_000), np.zeros(2), np.zeros(2), 1.0)
    (record,) = returned.helper_calls
    assert isinstance(record.args[0], wire.Opaque) and "too large" in record.args[0].text
    assert record.result is None and record.raised == "ValueError"


# -- CPU time, not the wall clock -----------------------------------------------------------------------


def test_a_busy_loop_is_stopped_by_its_cpu_time_and_the_next_calls_work(tmp_path):
    source = GRAINS + """
print("imported")

def update(x, v, R, m, w, indexOld, r, dt, t):
    while True:
        pass
"""
    limits = Limits(call_seconds=0.3, import_seconds=10.0)
    with running(tmp_path, source, limits) as box:
        started = time.monotonic()
        with pytest.raises(CallTimeout, match=r"update used more than 0.3 s of CPU time in one call"):
            box.call("update", *[np.zeros(2)] * 7, 0.1, 0.0)
        # Stopped by its CPU time, not left to spin: a generous backstop, since a busy machine is slow.
        assert time.monotonic() - started < LOADED_MACHINE_SECONDS
        assert 0.3 <= box.spent["update"] < 3
        assert grains(box) == pytest.approx(1.0)  # another function, in a fresh child
        assert box.output().count("imported") == 2  # the file was imported again
        with pytest.raises(CallTimeout):  # the same function again: it is called again
            box.call("update", *[np.zeros(2)] * 7, 0.1, 0.0)


def test_sleeping_is_not_cpu_time(tmp_path):
    source = GRAINS + """
import time

def contact_time_walls(w, x1, v1, R1):
    time.sleep(0.6)
    return 2.0
"""
    with running(tmp_path, source, Limits(call_seconds=0.3, import_seconds=10.0)) as box:
        returned = box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
    assert float(returned.value.array) == 2.0
    assert returned.cpu_seconds < 0.3


def test_calls_that_sleep_just_under_the_idle_detector_use_up_the_gradings_time_asleep_and_stop(tmp_path, monkeypatch):
    """A red-team review's file slept 4.5 s in each of its 1 800 calls (under the idle detector): one grading
    would have lasted hours. Time asleep is budgeted over all calls (Limits.asleep_seconds)."""
    source = GRAINS + """
import time

def contact_time_walls(w, x1, v1, R1):
    time.sleep(0.4)
    return 2.0
"""
    monkeypatch.setattr(sandbox, "ASLEEP_PER_CPU_SECOND", 0.0)  # 1 s in all, whatever the CPU time used
    with running(tmp_path, source, Limits(call_seconds=1.0, import_seconds=10.0, asleep_seconds=1.0)) as box:
        answered = 0
        with pytest.raises(CallTimeout, match="asleep"):  # a call stopped within the budget's rest, or the one after
            for _ in range(5):
                assert float(box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0).value.array) == 2.0
                answered += 1
        # Each call is charged about 0.4 s: the third is stopped once past the rest, or answers just under it.
        assert 2 <= answered <= 3
        with pytest.raises(CallTimeout, match="no more calls are made"):
            grains(box)  # the sleep is the file's: no function is called again
    assert 0.8 <= box.asleep < 1.0 + LOADED_MACHINE_SECONDS


def test_imports_that_sleep_count_in_the_gradings_time_asleep_too(tmp_path, monkeypatch):
    """A review's file waited 40 s in its import and ended every call with os._exit: each restart imported it
    again, and one check lasted 20 minutes (2 hours possible)."""
    source = GRAINS + """
import time
time.sleep(0.9)

def contact_time_walls(w, x1, v1, R1):
    os._exit(3)
"""
    monkeypatch.setattr(sandbox, "ASLEEP_PER_CPU_SECOND", 0.0)  # 1 s in all, whatever the CPU time used
    with running(tmp_path, "import os\n" + source, Limits(call_seconds=1.0, import_seconds=10.0,
                                                          asleep_seconds=1.0)) as box:
        with pytest.raises(ChildDied):
            box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
        with pytest.raises(ImportFailed, match="asleep"):
            grains(box)  # the restart's import would wait 0.9 s more: past the budget
    assert box.asleep >= 1.0


def test_a_call_of_a_few_milliseconds_is_timed_finer_than_a_clock_tick(tmp_path):
    """The efficiency measurement times calls of a few ms: their CPU comes from the process's CPU clock (ns), not
    /proc's 10 ms ticks, so the calls' times are not all whole ticks."""
    source = GRAINS + """
import time

def contact_time_walls(w, x1, v1, R1):
    started = time.process_time()
    while time.process_time() - started < 0.013:
        pass
    return 2.0
"""
    with running(tmp_path, source, Limits(call_seconds=2.0, import_seconds=10.0)) as box:
        spent = [box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0).cpu_seconds for _ in range(5)]
    assert all(s >= 0.013 for s in spent), spent
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert any(abs(s / tick - round(s / tick)) > 0.01 for s in spent), spent


def test_cpu_of_child_processes_counts(tmp_path):
    source = GRAINS + """
import os

def update(x, v, R, m, w, indexOld, r, dt, t):
    if os.fork() == 0:
        while True:
            pass
    os.wait()
"""
    with running(tmp_path, source, Limits(call_seconds=0.5, import_seconds=10.0)) as box:
        with pytest.raises(CallTimeout, match="CPU"):
            box.call("update", *[np.zeros(2)] * 7, 0.1, 0.0)
        assert grains(box) == pytest.approx(1.0)


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_process_tree_reads_each_member_through_one_kept_file_and_lets_go_of_the_dead():
    """Every wait reads the members' CPU: through a /proc file kept open (a reaped process fails the read, whoever
    gets its pid next), never one more file per wait, and none left open."""
    first = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        tree = ProcessTree(first.pid)
        before = _open_files()
        time.sleep(0.2)
        assert tree.nanoseconds() > 0
        for _ in range(50):
            tree.nanoseconds()
        assert _open_files() == before + 1
        first.kill()
        first.wait()
        assert tree.nanoseconds() == 0 and tree.members == set()
        assert _open_files() == before
        second = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        tree = ProcessTree(second.pid)
        tree.nanoseconds()
        assert _open_files() == before + 1
        tree.close()
        assert _open_files() == before
        second.kill()
        second.wait()
    finally:
        first.kill()
        first.wait()


#: A process with a sleeping child, starting and ending threads without end.
THREAD_CHURN = """
import subprocess, sys, threading
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
while True:
    threads = [threading.Thread(target=lambda: None) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
"""


def test_threads_that_end_while_the_tree_is_walked_are_skipped(monkeypatch):
    """A red team's file started and ended threads in a loop: a thread gone between the listing of its process's
    threads and the reading of its children made the tree list the whole of /proc at every refresh, for good."""
    if not processes._lists_children():
        pytest.skip("this kernel lists no thread's children: the tree always lists /proc")
    listed: list[int] = []
    monkeypatch.setattr(ProcessTree, "_refresh_by_listing", lambda self: listed.append(1))
    churn = subprocess.Popen([sys.executable, "-c", THREAD_CHURN], start_new_session=True)
    try:
        time.sleep(0.5)
        tree = ProcessTree(churn.pid)
        for _ in range(300):
            tree.refresh(at_once=True)
        assert not listed, "the tree went over to listing /proc"
        assert len(tree.members) == 2, "the sleeping child was not found"
    finally:
        os.killpg(churn.pid, signal.SIGKILL)  # with its child
        churn.wait()


def test_a_function_that_used_its_cpu_budget_is_not_called_again(tmp_path):
    source = GRAINS + """
import time

def contact_time_walls(w, x1, v1, R1):
    end = time.process_time() + 0.25
    while time.process_time() < end:
        pass
    return 1.0
"""
    limits = Limits(call_seconds=1.0, import_seconds=10.0, function_seconds=0.4)
    with running(tmp_path, source, limits) as box:
        for _ in range(2):
            box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
        spent = box.spent["contact_time_walls"]
        with pytest.raises(CallTimeout, match="used more than 0.4 s of CPU over all its calls"):
            box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
        # Refused without calling it: a call would have spent 0.25 s more of CPU.
        assert box.spent["contact_time_walls"] == spent
        assert grains(box) == pytest.approx(1.0)


def test_a_busy_import_is_stopped_by_its_cpu_time_and_is_final(tmp_path):
    with running(tmp_path, GRAINS + "\nwhile True:\n    pass\n", Limits(import_seconds=0.5)) as box:
        assert isinstance(box.import_failure, CallTimeout)
        assert "importing granularGas.py used more than 0.5 s of CPU time" in box.import_error
        with pytest.raises(ImportFailed):
            grains(box)


def test_an_import_that_raises_is_reported(tmp_path):
    with running(tmp_path, GRAINS + "\nraise KeyError('nope')\n") as box:
        assert isinstance(box.import_failure, ImportFailed)
        assert "KeyError" in box.import_error and "line" in box.import_error


# -- deaths ------------------------------------------------------------------------------------------------


def test_os_exit_kills_the_call_only(tmp_path):
    source = GRAINS + """
import os

def contact_time_walls(w, x1, v1, R1):
    os._exit(3)
"""
    with running(tmp_path, source) as box:
        with pytest.raises(ChildDied, match="exit code 3"):
            box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
        assert grains(box) == pytest.approx(1.0)
        with pytest.raises(ChildDied):
            box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
        assert grains(box) == pytest.approx(1.0)


def test_matplotlib_at_the_top_of_a_file_costs_nothing(tmp_path):
    source = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\nprint('plotted')\n" + GRAINS
    with running(tmp_path, source) as box:
        assert box.import_error is None
        assert grains(box) == pytest.approx(1.0)
        assert "plotted" in box.output()


def test_printed_output_is_capped(tmp_path):
    source = GRAINS + "\nfor _ in range(20_000):\n    print('x' * 99)\n"
    with running(tmp_path, source) as box:
        assert grains(box) == pytest.approx(1.0)
        text = box.output()
    assert text.startswith("x" * 99) and len(text) <= limits_module.OUTPUT_CAP


def test_a_renewed_box_keeps_the_budgets_and_the_output_and_nothing_the_child_kept(tmp_path):
    """Sandbox.renew: a fresh process, folders and root, so that nothing a file learnt reaches later calls; what it
    printed and the CPU it spent still count."""
    source = """
import os, sys
COUNT = [0]
print("first import")

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    COUNT[0] += 1
    kept = os.path.exists("/tmp/mark")
    open("/tmp/mark", "w").close()
    return float(COUNT[0] + (10 if kept else 0))
"""
    with running(tmp_path, source) as box:
        assert grains(box) == 1.0 and grains(box) == 12.0
        spent, root = dict(box.spent), box.box.root
        box.renew()
        assert grains(box) == 1.0  # a new process and a new /tmp
        assert box.box.root != root and not root.exists()
        assert box.spent["contact_time_grains"] >= spent["contact_time_grains"]
        assert box.output().count("first import") == 2


HASHES = """
import os, sys

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    # the order a set of strings is walked in: that of one string-hash seed; and what python may import from
    return float(hash("near") % 1000003) + (0.5 if os.path.dirname(__file__) in sys.path else 0.0)
"""


def test_every_box_hashes_strings_alike_and_imports_nothing_from_its_own_folder(tmp_path):
    """A red team's plausible bug, "the first non-negative root" while looping over {'near', 'far'}, got 35 or 100
    run after run: each box drew its own string-hash seed. Every box now has the same (PYTHONHASHSEED=0, which
    python's -I would ignore: the child runs with -s -S in the grader's own environment, and drops its folder from
    sys.path as -I would)."""
    path = tmp_path / "granularGas.py"
    path.write_text(HASHES)
    seen = []
    for _ in range(2):
        with Sandbox(path, FAST) as box:
            x = np.zeros(2)
            seen.append(float(box.call("contact_time_grains", x, x, x, x, 1.0, 1.0).value.array))
    seeded = subprocess.run([sys.executable, "-c", "print(hash('near') % 1000003)"], capture_output=True, text=True,
                            env={"PYTHONHASHSEED": "0"}, check=True)
    assert seen == [float(seeded.stdout)] * 2


BETWEEN_CALLS = """
import os, time

def contact_time_grains(x1, x2, v1, v2, R1, R2):
    if float(R1) == 1.0 and os.fork() == 0:  # about 0.8 s of CPU after this call has answered
        end = time.process_time() + 0.8
        while time.process_time() < end:
            pass
        os._exit(0)
    return 1.0
"""


def test_a_call_over_its_cpu_limit_fails_even_when_it_answers_before_any_check(tmp_path):
    """CPU used between two calls is charged to the second. A red team's call charged 5.95 s against a 5 s limit
    returned all the same, its reply in before the first check (every 50 ms): whether a call timed out depended on
    when the grader looked. It is now compared with the limit at the reply too."""
    path = tmp_path / "granularGas.py"
    path.write_text(BETWEEN_CALLS)
    x = np.zeros(2)
    with Sandbox(path, Limits(call_seconds=0.3)) as box:
        box.call("contact_time_grains", x, x, x, x, 1.0, 1.0)
        time.sleep(4.0)  # room for the 0.8 s on a busy machine (over 0.3 s is all it takes)
        with pytest.raises(CallTimeout, match="more than 0.3 s of CPU"):
            box.call("contact_time_grains", x, x, x, x, 2.0, 1.0)


def _burning_import(seconds: float) -> str:
    """Code that spends ``seconds`` of CPU when the file is imported."""
    return f"\nimport time\n_start = time.process_time()\nwhile time.process_time() - _start < {seconds}:\n    pass\n"


def test_a_box_that_goes_on_from_another_adds_its_own_spending_to_it(tmp_path):
    """The searches' box goes on from the grading's budgets (Sandbox.carry_on_from); its own import counts too (it
    was overwritten by the grading box's figures: one import of up to the import limit went uncounted)."""
    path = write(tmp_path, GRAINS + _burning_import(0.2))
    with Sandbox(path, FAST) as first, Sandbox(path, FAST) as second:
        grains(first)
        own = second.import_cpu
        second.carry_on_from(first)
        assert own >= 0.15 and first.import_cpu >= 0.15
        assert second.import_cpu == pytest.approx(own + first.import_cpu)
        assert second.spent == first.spent and second.asleep >= first.asleep


def test_a_renewed_box_imports_at_its_next_call_behind_the_gradings_budget(tmp_path):
    """A review's file: renew() imported the file at once, with no budget checked, so a file whose tests were
    audited (the traced excuse on) imported for up to 20 s at each renew after its grading's budget was spent."""
    with running(tmp_path, GRAINS + _burning_import(0.3), Limits(call_seconds=1.0, import_seconds=2.0, grading_seconds=0.5)) as box:
        grains(box)  # after the first import: 0.3 s
        box.renew()
        grains(box)  # within the budget when it began: its import (0.3 s) and call overshoot it
        spent = box.cpu_spent
        for _ in range(3):
            box.renew()
        assert box.cpu_spent == pytest.approx(spent, abs=0.01)
        with pytest.raises(CallTimeout, match="in this grading"):
            grains(box)


def test_a_function_the_file_does_not_define_is_missing_once_the_gradings_budget_is_spent_too(tmp_path):
    """Past the grading's CPU budget no call is made; a function the file never defined was reported as a timeout
    there (a review), not as missing."""
    with running(tmp_path, GRAINS + _burning_import(0.3), Limits(call_seconds=1.0, import_seconds=2.0,
                                                                 grading_seconds=0.2)) as box:
        with pytest.raises(CallTimeout, match="in this grading"):
            grains(box)  # its import alone used more
        with pytest.raises(FunctionMissing, match="no function update"):
            box.call("update", *[np.zeros(2)] * 7, 0.1, 0.0)


def test_a_function_the_file_does_not_define_is_missing_once_the_box_was_emptied_too(tmp_path, boots):
    """A review's file: a function never defined, asked for after a call that slept the grading's budget away and
    emptied the box, restarted the box, imported the file again and marked it as failing at import, for good."""
    source = GRAINS + _burning_import(0.1) + """
import time

def contact_time_walls(w, x1, v1, R1):
    time.sleep(2.0)
    return 2.0
"""
    with running(tmp_path, source, Limits(call_seconds=1.0, import_seconds=2.0, asleep_seconds=0.5)) as box:
        with pytest.raises(CallTimeout, match="asleep"):
            box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
        started = len(boots)
        with pytest.raises(FunctionMissing, match="no function update"):
            box.call("update", *[np.zeros(2)] * 7, 0.1, 0.0)
        assert len(boots) == started and box.import_failure is None


def test_a_renewed_box_is_charged_what_its_old_child_ran_since_its_last_call(tmp_path):
    """The old child's CPU since its last call went uncharged at a renew, and its busyness unseen (a review)."""
    source = GRAINS + """
import threading, time

def contact_time_walls(w, x1, v1, R1):
    def spin():
        start = time.process_time()
        while time.process_time() - start < 0.5:
            pass
    threading.Thread(target=spin, daemon=True).start()
    return 2.0
"""
    with running(tmp_path, source) as box:
        box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)
        time.sleep(1.0)
        spent = box.cpu_spent
        box.renew()
        assert box.cpu_spent - spent >= 0.3 and box.pausing
