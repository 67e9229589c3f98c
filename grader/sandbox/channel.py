"""The grader's end of the channel to a sandboxed child: bounded, non-blocking, CPU-timed.

Split from :mod:`grader.sandbox.client` (which owns the child's life): this module
only moves bytes and measures time. The child is the submission's process, so
nothing here trusts it: requests are written without blocking, replies are
read without blocking and never past ``REPLY_CAP`` bytes, a flood of messages
that answer no request is cut short, and every wait ends at the call's CPU
limit (measured from /proc over the child and all its descendants) or at the
wall-clock backstop.
"""

from __future__ import annotations

import collections
import fcntl
import math
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass

from grader.sandbox import asleep, wire
from grader.sandbox.processes import CpuMeter, ProcessTree
from grader.spec.limits import ASLEEP_PER_CPU_SECOND, IDLE_CPU_FRACTION, IDLE_SECONDS, REPLY_CAP, Limits

#: How often a wait checks the CPU used, whether the child still lives, and how long it was awake.
POLL_SECONDS = 0.05
#: Messages naming another request that one wait drops before it calls it a protocol violation.
DROPPED_CAP = 1000
#: Bytes one wait reads from the child in all (a flood costs the grader bounded work).
READ_CAP = 4 * REPLY_CAP
_CHUNK = 1 << 16


class SubmissionError(Exception):
    """Something the submission did wrong; the message is for the student."""


class CallTimeout(SubmissionError):
    pass


class ChildDied(SubmissionError):
    pass


class ProtocolViolation(SubmissionError):
    """The child sent what the grader's own child never sends (the submission wrote to the channel)."""


def asleep_message(name: str, limits: Limits) -> str:
    return (f"{name} was stopped: the file's calls have spent more than {limits.asleep_seconds:g} s in all (and "
            f"{ASLEEP_PER_CPU_SECOND:g} s per CPU second used) asleep: sleeping, waiting for input or stopped, with "
            "none of its processes computing; no more calls are made")


@dataclass(frozen=True)
class Budget:
    """What one wait may cost, and what to say when it costs more."""

    what: str  # who runs, e.g. "update" or "importing granularGas.py"
    cpu_seconds: float
    wall_seconds: float
    cpu_message: str
    wall_message: str
    #: Seconds of this wait that may be spent asleep (Channel.asleep: what is left of Limits.asleep_seconds).
    asleep_seconds: float = math.inf
    asleep_message: str = ""

    @classmethod
    def call(cls, name: str, limits: Limits, asleep_left: float = math.inf) -> Budget:
        wall = limits.call_wall_seconds
        return cls(name, limits.call_seconds, wall,
                   f"{name} used more than {limits.call_seconds:g} s of CPU time in one call",
                   f"{name} did not return: it stopped computing (almost no CPU time for {IDLE_SECONDS:g} s, or "
                   f"{wall:g} s of wall-clock time in all); is it sleeping or waiting for input?",
                   asleep_left, asleep_message(name, limits))

    @classmethod
    def imports(cls, limits: Limits, asleep_left: float = math.inf) -> Budget:
        what, wall = "importing granularGas.py", limits.import_wall_seconds
        return cls(what, limits.import_seconds, wall, f"{what} used more than {limits.import_seconds:g} s of CPU time",
                   f"{what} did not finish: it stopped computing (almost no CPU time for {IDLE_SECONDS:g} s, or "
                   f"{wall:g} s of wall-clock time in all); is it sleeping or waiting for input?",
                   asleep_left, asleep_message(what, limits))

    @classmethod
    def boot(cls, seconds: float) -> Budget:
        message = f"the child did not start within {seconds:g} s"
        return cls("the sandbox's child", seconds, seconds, message, message)


def _nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


class Channel:
    """Requests to one child process and its replies, with the CPU it used in the last wait."""

    def __init__(self, process: subprocess.Popen, request_fd: int, reply_fd: int, sealed: bool = False) -> None:
        """sealed: nothing in the box can send SIGCONT (its seccomp filter: processes.ProcessTree.sealed)."""
        self.process, self.request_fd, self.reply_fd = process, request_fd, reply_fd
        _nonblocking(request_fd)
        _nonblocking(reply_fd)
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._read_bytes = 0
        self._dropped = 0
        self._tree = ProcessTree(process.pid, sealed)
        self._cpu_ns: int | None = None  # the tree's CPU time (ns) when the last wait ended
        self._selector = selectors.DefaultSelector()
        self._selector.register(reply_fd, selectors.EVENT_READ)
        #: CPU seconds the child's processes used during the last exchange (so far, while it runs).
        self.cpu_used = 0.0
        self.frozen = False  # every process of the child stopped (freeze) until the next exchange
        #: CPU seconds the child's processes used between exchanges (while not frozen), in all.
        self.between_exchanges = 0.0
        #: Stop the child's processes as soon as a reply comes (the box is frozen between its calls: client.Sandbox).
        self.stop_at_reply = False
        #: Seconds of the last exchange the child's processes spent asleep (asleep.Watch), once it ended.
        self.asleep = 0.0
        self._clock = asleep.AwakeClock(self._tree.priority)
        self._watch: asleep.Watch | None = None  # the last exchange's

    def close(self) -> None:
        self._selector.close()
        self._tree.close()
        self._clock.close()
        for fd in (self.request_fd, self.reply_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def freeze(self) -> bool:
        """Stop the child's processes until the next exchange (ProcessTree.freeze); False if some still run."""
        self.frozen = True
        return self._tree.freeze()

    def ran_since_exchange(self, at_once: bool = False) -> float:
        """CPU seconds the child's processes used since the last exchange ended (0 before the first)."""
        if self._cpu_ns is None:
            return 0.0
        self._tree.refresh(at_once)
        return max(0, self._tree.nanoseconds() - self._cpu_ns) / 1e9

    def exchange(self, payload: bytes, request_id: int, sent: tuple | None, budget: Budget) -> wire.Reply:
        """Send ``payload`` and wait for the reply naming ``request_id`` (see wire.decode_reply for sent).

        Raises CallTimeout, ChildDied or ProtocolViolation; never blocks past the budget.
        """
        self.asleep, between = 0.0, 0.0
        if self.frozen:
            self.frozen = False
            self._tree.thaw()
        else:  # what ran since the last exchange ended (charged to this one all the same)
            between = self.ran_since_exchange()
            self.between_exchanges += between
        watch = self._watch = asleep.Watch(self._clock, between)
        started, charged = watch.started, None
        meter = CpuMeter(self._tree, self._cpu_ns)
        self.cpu_used, self._read_bytes, self._dropped = 0.0, 0, 0
        self._samples: collections.deque[tuple[float, float]] = collections.deque()
        pending = self._write(memoryview(payload))  # a request fits the pipe at once, but for large arrays
        next_check = started + POLL_SECONDS
        selector = self._selector
        if pending:
            selector.register(self.request_fd, selectors.EVENT_WRITE)
        try:
            while True:
                for key, _ in selector.select(max(0.0, next_check - time.monotonic())):
                    if key.fd == self.request_fd:
                        pending = self._write(pending)
                        if not pending:
                            selector.unregister(self.request_fd)
                    elif self._read() < 0:
                        return self._last_words(request_id, sent, budget)
                read = time.monotonic()  # the reply's decoding is the grader's time, not the file's
                reply = self._reply(request_id, sent, budget.what)
                if reply is not None:
                    if self.stop_at_reply:
                        self._tree.stop_known()
                    self._measure(meter)
                    charged = watch.asleep(self.cpu_used, self._tree.members, read)
                    if self.cpu_used > budget.cpu_seconds:  # over, whether a check came before the reply or not
                        raise CallTimeout(budget.cpu_message)
                    return reply
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + POLL_SECONDS
                    self._check(meter, started, budget)
                    if self.process.poll() is not None:
                        return self._last_words(request_id, sent, budget)
        finally:
            self._cpu_ns = meter.last
            self.asleep = watch.asleep(self.cpu_used, self._tree.members) if charged is None else charged
            if pending:
                selector.unregister(self.request_fd)

    def _write(self, pending: memoryview) -> memoryview:
        try:
            return pending[os.write(self.request_fd, pending[:_CHUNK]):]
        except BlockingIOError:
            return pending
        except OSError:  # the child closed its end: its death or its silence shows in the wait
            return pending[len(pending):]

    def _read(self) -> int:
        """Bytes read (0: nothing there now); -1 at the end of the channel."""
        room = REPLY_CAP + 1 - len(self._buffer)
        if room <= 0:  # complete lines wait in the buffer: read on once they are taken
            return 0
        try:
            chunk = os.read(self.reply_fd, min(_CHUNK, room))
        except BlockingIOError:
            return 0
        except OSError:
            return -1
        if not chunk:
            return -1
        self._buffer += chunk
        self._read_bytes += len(chunk)
        return len(chunk)

    def _line(self, what: str) -> bytes | None:
        """The next complete line in the buffer, if any."""
        end = self._buffer.find(b"\n", self._scanned)
        if end < 0:
            self._scanned = len(self._buffer)
            if len(self._buffer) > REPLY_CAP:
                raise self._violation(what, f"a reply longer than {REPLY_CAP} bytes")
            return None
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        self._scanned = 0
        return line

    def _reply(self, request_id: int, sent: tuple | None, what: str) -> wire.Reply | None:
        """The reply naming ``request_id`` among the complete lines read so far; others are dropped."""
        while (line := self._line(what)) is not None:
            try:
                named, obj = wire.parse_line(line)
                if named == request_id:
                    return wire.decode_reply(obj, sent)
            except wire.MalformedReply as exc:
                raise self._violation(what, str(exc)) from None
            self._dropped += 1
            if self._dropped > DROPPED_CAP:
                raise self._violation(what, f"more than {DROPPED_CAP} messages that answer no request")
        if self._read_bytes > READ_CAP:
            raise self._violation(what, f"more than {READ_CAP} bytes in one call")
        return None

    @staticmethod
    def _violation(what: str, reason: str) -> ProtocolViolation:
        return ProtocolViolation(f"{what} broke the grader's protocol ({reason}): the submission must not write "
                                 "to the grader's channel")

    def _measure(self, meter: CpuMeter) -> None:
        self.cpu_used = max(self.cpu_used, meter.seconds())

    def _check(self, meter: CpuMeter, started: float, budget: Budget) -> None:
        self._measure(meter)
        assert self._watch is not None
        self._watch.look(self._tree.members)
        if self.cpu_used > budget.cpu_seconds:
            raise CallTimeout(budget.cpu_message)
        now = time.monotonic()
        if now - started > budget.wall_seconds:
            raise CallTimeout(budget.wall_message)
        if self._watch.asleep(self.cpu_used) > budget.asleep_seconds:
            raise CallTimeout(budget.asleep_message)
        # (wall time, CPU used) samples of the last IDLE_SECONDS: a call past its
        # CPU limit in wall time that hardly computes in that window is waiting.
        self._samples.append((now, self.cpu_used))
        while self._samples and self._samples[0][0] < now - IDLE_SECONDS:
            self._samples.popleft()
        oldest, cpu_then = self._samples[0]
        if (now - started > budget.cpu_seconds + IDLE_SECONDS and now - oldest >= IDLE_SECONDS * 0.9
                and self.cpu_used - cpu_then < IDLE_CPU_FRACTION * (now - oldest)):
            raise CallTimeout(budget.wall_message)

    def _last_words(self, request_id: int, sent: tuple | None, budget: Budget) -> wire.Reply:
        """The channel ended or the process exited: a reply already sent, else ChildDied."""
        while self._read() > 0:
            pass
        reply = self._reply(request_id, sent, budget.what)
        if reply is not None:
            return reply
        raise ChildDied(self._death(budget.what))

    def _death(self, what: str) -> str:
        try:
            code = self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return f"{what} closed the grader's channel"
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            reason = {"SIGXCPU": "used up its CPU time", "SIGKILL": "was killed (out of memory?)",
                      "SIGSEGV": "crashed (segmentation fault)"}.get(name, f"was killed by {name}")
            return f"{what}: the process {reason} (exit code {code})"
        return f"{what} ended the process (exit code {code}, e.g. os._exit or sys.exit)"
