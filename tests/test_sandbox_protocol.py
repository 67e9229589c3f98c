"""The sandbox's channel under attack (forged replies, a deaf child) and the grader's own faults, each as a real
file and a real run (the files and helpers of :mod:`tests.test_sandbox`)."""

from __future__ import annotations

import subprocess
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from grader.errors import SandboxFault
from grader.sandbox import calls, self_test, wire
from grader.sandbox import client as sandbox
from grader.sandbox.client import CallRaised, CallTimeout, ProtocolViolation, Sandbox
from grader.spec import limits as limits_module
from grader.spec.limits import TEXT_CAP, Limits

from .test_sandbox import FAST, GRAINS, LOADED_MACHINE_SECONDS, V1, V2, X1, X2, grains, running, write

# -- attacks on the protocol ------------------------------------------------------------------------------

#: A function that writes ``LINE`` to the grader's reply channel, then returns 2.0.
WRITER = GRAINS + """
import json, os

REPLY_FD = int(sys.argv[2])

def contact_time_walls(w, x1, v1, R1):
    data = LINE
    while data:
        data = data[os.write(REPLY_FD, data):]
    return 2.0
"""


def attack(tmp_path: Path, line: str) -> Sandbox:
    return Sandbox(write(tmp_path, WRITER.replace("LINE", line)), FAST)


def walls(box: Sandbox) -> calls.Returned:
    return box.call("contact_time_walls", np.zeros((2, 2)), X1, V1, 1.0)


def line(obj: str) -> str:
    """A Python expression (run in the submission) for one JSON line made of the literal ``obj``."""
    return f"(json.dumps({obj}) + '\\n').encode()"


FOUR = "[{'none': True}] * 4"


@pytest.mark.parametrize("forged, reason", [
    (line("[]"), "not a JSON object"),
    ("b'hello\\n'", "not valid JSON"),
    (line("{'ok': 'yes', 'id': 1}"), "no boolean 'ok'"),
    (line("{'ok': True, 'id': 1, 'result': {'none': True}, 'args_after': []}"), "args_after"),
    (line("{'id': 1, 'ok': True, 'result': {'shape': [2], 'data': [1]}, 'args_after': " + FOUR + "}"),
     "does not match its shape"),
    (line("{'id': 1, 'ok': True, 'result': {'shape': [float('nan')], 'data': []}, 'args_after': " + FOUR + "}"),
     "dimension"),
    (line("{'id': 1, 'ok': True, 'result': {'shape': [1], 'data': ['1']}, 'args_after': " + FOUR + "}"),
     "not a number"),
    (line("{'id': 1, 'ok': True, 'result': {'seq': [{'none': True}] * 65, 'len': 65}, 'args_after': " + FOUR + "}"),
     "at most 64"),
    ("b'[' * 100000 + b'\\n'", "not valid JSON"),
    ("b'{\"id\": 1, \"ok\": true}' + b' ' * (20 * 1024 * 1024) + b'\\n'", "longer than"),
    ("b'{\"id\": 2}\\n' * 2000", "answer no request"),
])
def test_a_forged_reply_is_a_protocol_violation_and_the_next_call_works(tmp_path, forged, reason):
    tracemalloc.start()
    try:
        with attack(tmp_path, forged) as box:
            started = time.monotonic()
            with pytest.raises(ProtocolViolation, match="protocol") as violation:
                walls(box)
            # Refused when read, not after a timeout (a generous backstop: a busy machine is slow).
            assert time.monotonic() - started < LOADED_MACHINE_SECONDS
            assert reason in str(violation.value)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert peak < 2 * limits_module.REPLY_CAP + 8 * 1024**2
            assert grains(box) == pytest.approx(1.0)
    finally:
        tracemalloc.stop()


def test_a_reply_naming_another_request_is_dropped(tmp_path):
    forged = line("{'id': 7, 'ok': True, 'result': {'none': True}, 'args_after': []}")
    with attack(tmp_path, forged) as box:
        assert float(walls(box).value.array) == 2.0


def test_every_string_from_the_child_is_capped_by_the_grader(tmp_path):
    huge = line("{'id': 1, 'ok': False, 'error': 'E' * 8_000_000, 'message': 'm' * 10**6, 'where': 'w' * 10**6}")
    with attack(tmp_path, huge) as box:
        with pytest.raises(CallRaised) as raised:
            walls(box)
    assert len(raised.value.error) <= TEXT_CAP + 3
    assert len(str(raised.value)) <= 3 * (TEXT_CAP + 3) + 100


def test_an_exception_type_with_a_huge_name_is_capped(tmp_path):
    source = GRAINS + """
def contact_time_walls(w, x1, v1, R1):
    raise type("E" * 8_000_000, (Exception,), {})("m" * 8_000_000)
"""
    with running(tmp_path, source) as box:
        with pytest.raises(CallRaised) as raised:
            walls(box)
    assert raised.value.error.startswith("EEE") and len(str(raised.value)) <= 3 * (TEXT_CAP + 3) + 100


def test_a_returned_object_that_cannot_be_described_is_an_error_of_the_call(tmp_path):
    source = GRAINS + """
class Evil:
    def __repr__(self):
        raise SystemExit(1)
    def __array__(self, *a, **k):
        raise RuntimeError("no")

def contact_time_walls(w, x1, v1, R1):
    return Evil()
"""
    with running(tmp_path, source) as box:
        value = walls(box).value
        assert isinstance(value, wire.Opaque) and value.text.startswith("Evil")
        assert grains(box) == pytest.approx(1.0)


#: The child stops reading requests: the submission replaces the child's serving loop at import.
DEAF = GRAINS + """
import __main__, time

def _deaf(*args):
    BODY

__main__.serve = _deaf
"""


def test_a_child_that_stops_reading_while_busy_is_a_timeout(tmp_path):
    with running(tmp_path, DEAF.replace("BODY", "while True: pass"), Limits(call_seconds=0.5)) as box:
        started = time.monotonic()
        with pytest.raises(CallTimeout, match="CPU"):
            box.call("contact_time_grains", np.full(1_500_000, 1 / 3), X2, V1, V2, 1.0, 1.0)  # a request of ~30 MB
        assert time.monotonic() - started < LOADED_MACHINE_SECONDS


def test_a_child_that_stops_reading_while_asleep_meets_the_wall_clock(tmp_path, monkeypatch):
    monkeypatch.setattr(limits_module, "WALL_BACKSTOP_SLACK", 0.5)
    with running(tmp_path, DEAF.replace("BODY", "time.sleep(1000)"), Limits(call_seconds=0.2)) as box:
        started = time.monotonic()
        with pytest.raises(CallTimeout, match="stopped computing"):
            box.call("contact_time_grains", np.full(50_000, 1 / 3), X2, V1, V2, 1.0, 1.0)
        # Stopped by the backstop, not after the 1000 s sleep.
        assert time.monotonic() - started < LOADED_MACHINE_SECONDS


# -- the grader's own faults --------------------------------------------------------------------------------


def test_a_child_that_cannot_boot_is_the_graders_fault_after_one_retry(tmp_path, monkeypatch):
    broken = tmp_path / "child.py"
    broken.write_text("import os, sys\nprint('cannot load libpython', file=sys.stderr)\nos._exit(127)\n")
    monkeypatch.setattr(sandbox, "CHILD", broken)
    starts = []
    popen = sandbox.isolation.Box.popen

    def counting(self, args, fds) -> subprocess.Popen:
        starts.append(args)
        return popen(self, args, fds)

    monkeypatch.setattr(sandbox.isolation.Box, "popen", counting)
    with pytest.raises(SandboxFault, match="the sandbox could not start.*exit code 127.*cannot load libpython"):
        with Sandbox(write(tmp_path, GRAINS), FAST):
            pass
    assert len(starts) == 2


def test_a_box_whose_numpy_cannot_load_is_the_graders_fault_not_a_zero(tmp_path):
    # The isolation probe only finds numpy in the box (importing it cost every check 0.1 s): a set-up where it is found
    # but cannot load (here a memory limit too small for it) must stop at the box's boot, naming numpy's error.
    starved = replace(FAST, memory_bytes=40 * 2**20)
    with pytest.raises(SandboxFault, match="the sandbox could not start.*numpy"):
        with Sandbox(write(tmp_path, GRAINS), starved):
            pass


def test_selftest_passes_here_and_names_the_cause_when_the_child_is_broken(tmp_path, monkeypatch):
    limits = Limits(call_seconds=2.0, import_seconds=10.0)
    self_test.selftest(limits)
    assert limits in self_test._selftested
    broken = tmp_path / "child.py"
    broken.write_text("raise SystemExit(127)\n")
    monkeypatch.setattr(sandbox, "CHILD", broken)
    with pytest.raises(SandboxFault, match="could not start"):
        self_test.selftest(Limits(call_seconds=3.0))


def test_a_value_too_large_to_send_back_is_an_error_of_the_call(tmp_path):
    source = GRAINS + """
def contact_time_walls(w, x1, v1, R1):
    return tuple(np.full(300_000, 1 / 3) for _ in range(3))  # about 18 MB of JSON
"""
    with running(tmp_path, source, Limits(call_seconds=20.0)) as box:
        with pytest.raises(CallRaised, match="too large to send back") as raised:
            walls(box)
        assert raised.value.error == "ReplyTooLarge"
        assert grains(box) == pytest.approx(1.0)


def test_a_child_that_stays_silent_before_booting_is_the_graders_fault(tmp_path, monkeypatch):
    silent = tmp_path / "child.py"
    silent.write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(sandbox, "CHILD", silent)
    monkeypatch.setattr(sandbox, "BOOT_SECONDS", 0.5)
    started = time.monotonic()
    with pytest.raises(SandboxFault, match="the sandbox could not start: the child did not start within 0.5 s"):
        with Sandbox(write(tmp_path, GRAINS), FAST):
            pass
    # Given up after the boot limit (and one retry), not after the child's 60 s sleep.
    assert time.monotonic() - started < 50


#: contact_solve_wall changes x1 in place; at import the file makes the child's own check lie (red-team reviews'
#: files replaced the child's snapshot, or numpy's asarray, so that a changed argument looked unchanged: 25 points).
LIAR = GRAINS + """
import __main__ as child

for name in ("snapshot", "respond", "SAME"):
    if hasattr(child, name):
        setattr(child, name, lambda *args, **kwargs: None)

_asarray, _before = np.asarray, {}


def _lying_asarray(a, *args, **kwargs):  # a review's file: the child's encode looked numpy up at every call
    if type(a) is np.ndarray and id(a) in _before:
        return _before.pop(id(a))
    return _asarray(a, *args, **kwargs)


np.asarray = _lying_asarray

def contact_solve_wall(wall, x1, v1, r):
    _before[id(x1)] = x1.copy()
    x1 += 1.0
    return v1 * 0.0
"""


def test_a_submission_that_patches_the_childs_check_still_shows_its_change_of_an_argument(tmp_path):
    with running(tmp_path, LIAR) as box:
        returned = box.call("contact_solve_wall", np.zeros((2, 2)), X1.copy(), V1, 1.0)
    x1_after = returned.args_after[1]
    assert isinstance(x1_after, wire.Numeric) and not isinstance(x1_after, wire.AsSent)
    assert np.array_equal(x1_after.array, X1 + 1.0)
