"""Run a submission's functions in a separate, fenced-in process.

The submission is imported by :mod:`grader.sandbox.child` in a child started in a
:class:`grader.sandbox.isolation.Box`. The child runs the submission's own code only: nothing computed by the
reference ever reaches it. Its calls between its own functions are recorded
(:class:`grader.sandbox.calls.HelperCall`).

Time limits count CPU time, measured here from /proc over the child and all its descendants (the wall clock is only
a generous backstop), so the same file gets the same grade on a busy machine. A call that times out, kills the child
or breaks the protocol costs that call only: the box is emptied and the next call starts a fresh child (importing
the file again). A function that used ``limits.function_seconds`` of CPU over its calls is not called again, nor any
once the imports and calls used ``limits.grading_seconds`` in all.

The child is the submission's process: everything it sends is bounded and checked (:mod:`grader.sandbox.wire`),
requests are written without blocking, and a reply is never read past ``limits.REPLY_CAP`` bytes. A child that
cannot even start (before the submission is imported) is the grader's fault: :class:`grader.errors.SandboxFault`,
never the student's 0.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from grader import spec
from grader.errors import SandboxFault
from grader.sandbox import calls, isolation, processes, seccomp, wire
from grader.sandbox.calls import Returned
from grader.sandbox.channel import (
    Budget,
    CallTimeout,
    Channel,
    ChildDied,
    ProtocolViolation,
    SubmissionError,
    asleep_message,
)
from grader.spec.limits import ASLEEP_PER_CPU_SECOND, BETWEEN_CALLS_CPU_SECONDS, OUTPUT_CAP, REPLY_CAP, TEXT_CAP, Limits

__all__ = ["Sandbox", "Limits", "Returned", "SubmissionError", "FunctionMissing", "CallTimeout", "CallRaised",
           "ChildDied", "ImportFailed", "ProtocolViolation"]

CHILD = Path(__file__).with_name("child.py")

#: Seconds (wall clock, and CPU) for the interpreter and numpy to start, before the submission is imported.
BOOT_SECONDS = 60.0
#: Numbers in one argument of a helper call past which it is recorded as too large.
RECORD_CAP = 10_000

_HINTS = {
    "RecursionError": ": the recursive version of update runs out of stack past ~1000 contacts in one dt; "
                      "write update as a loop",
    "NotImplementedError": ": this function is not written yet",
}


class FunctionMissing(SubmissionError):
    pass


class ImportFailed(SubmissionError):
    pass


class CallRaised(SubmissionError):
    """The function raised ``error`` (its type name); the helper calls it made before, as in Returned."""

    def __init__(self, message: str, error: str, helper_calls: tuple[calls.HelperCall, ...] = (),
                 helper_calls_total: int = 0):
        super().__init__(message)
        self.error, self.helper_calls, self.helper_calls_total = error, helper_calls, helper_calls_total


def _config(limits: Limits, site: tuple[str, ...]) -> str:
    return json.dumps({"module": spec.MODULE_NAME, "functions": list(spec.FUNCTION_NAMES), "site": list(site),
                       "kept": calls.HELPER_CALLS_KEPT, "max_kept": calls.AUDIT_CALLS_KEPT, "record_cap": RECORD_CAP,
                       "reply_cap": REPLY_CAP, "text_cap": TEXT_CAP, "output_cap": OUTPUT_CAP,
                       "no_exec": seccomp.exec_refusal()})


class Sandbox:
    """A submission imported in a child process, called function by function."""

    def __init__(self, path: str | os.PathLike, limits: Limits = Limits(), hide: tuple[Path, ...] = (),
                 remember: bool = False):
        """hide: folders the submission must not see (other submissions, the output). remember: a call made before
        (the same function, arguments and recording) gets the answer it got then, without reaching the child."""
        self.path = Path(path)
        #: What each call made so far returned or raised, by (name, record, arguments): where ``remember``. The
        #: grading's box: several tests draw the same cases, and a red team's file switched to its other formula at the
        #: first case it met again, earning 24 points on the tests after the first that failed.
        self._answers: dict[tuple[str, int, str], Returned | CallRaised] | None = {} if remember else None
        self.limits = limits
        self.hide = tuple(map(Path, hide))
        self.box = isolation.Box(self.path, CHILD, limits, self.hide)
        self._earlier_output = ""  # what the boxes before a renew() printed
        #: The isolation in force (strong or not), and what fenced the submission in, for the report.
        self.probe, self.protections = self.box.probe, self.box.probe.protections
        self.functions: frozenset[str] = frozenset()
        self.import_error: str | None = None
        self.import_failure: SubmissionError | None = None
        #: CPU seconds each function used over all its calls.
        self.spent: dict[str, float] = {}
        #: Seconds the calls and imports spent asleep (Channel.asleep) in all (Limits.asleep_seconds); the imports' CPU.
        self.asleep, self.import_cpu = 0.0, 0.0
        #: Whether the box is stopped between its calls (_call): its processes used CPU there, in this child or one
        #: before it (a fresh child gets no allowance of its own).
        self.pausing = False
        self._channel: Channel | None = None
        self._request_id = 0

    def start(self) -> None:
        """Start the child and import the submission; SandboxFault if the sandbox cannot start.

        A failed import is recorded in ``import_failure`` / ``import_error`` (final).
        """
        if self.started:
            return
        fault: SandboxFault | None = None
        for _attempt in range(2):  # a start that fails once may be the machine's hiccup
            try:
                self._channel = self._boot()
                break
            except SandboxFault as exc:
                fault = exc
                self._stop()
        else:
            assert fault is not None
            raise fault
        self._import()
        if self.pausing and self._channel is not None and processes.can_freeze():
            self._channel.stop_at_reply = True  # a box seen busy: its fresh child is stopped from its first answer

    def _boot(self) -> Channel:
        """A child that imported numpy and waits for the submission's import."""
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        try:
            args = [str(request_read), str(reply_write), self.box.submission_inside, _config(self.limits,
                                                                                             self.box.site_inside)]
            process = self.box.popen(args, (request_read, reply_write))
        except OSError as exc:
            for fd in (request_read, request_write, reply_read, reply_write):
                os.close(fd)
            raise SandboxFault(f"the sandbox could not start: {exc}") from None
        os.close(request_read)
        os.close(reply_write)
        # bubblewrap loads the seccomp filter wherever it is supported (isolation.Box.popen)
        channel = Channel(process, request_write, reply_read, self.box.own_pid_namespace and seccomp.supported())
        self._channel = channel
        try:
            reply = channel.exchange(b"", 0, None, Budget.boot(BOOT_SECONDS))
        except SubmissionError as exc:
            code = process.poll()
            why = str(exc) if code is None else f"its process ended with exit code {code} before it was ready"
            raise SandboxFault(f"the sandbox could not start: {why}; the child printed: "
                               f"{wire.cap(self.box.output(OUTPUT_CAP)[-1000:], 1000)!r}") from None
        if not isinstance(reply, wire.Booted):
            raise SandboxFault("the sandbox could not start: the child's first message was not 'booted'")
        return channel

    @property
    def started(self) -> bool:
        """Whether the box has a child now (or its import failed, for good)."""
        return self._channel is not None or self.import_failure is not None

    @property
    def cpu_spent(self) -> float:
        """CPU seconds the submission's processes used in this sandbox: its calls and imports."""
        return sum(self.spent.values()) + self.import_cpu

    def _asleep_left(self) -> float:
        """Seconds the calls and imports may still spend asleep (Limits.asleep_seconds, Channel.asleep)."""
        return self.limits.asleep_seconds + ASLEEP_PER_CPU_SECOND * self.cpu_spent - self.asleep

    def _import(self) -> None:
        assert self._channel is not None
        channel = self._channel
        try:
            # A restart imports again: its sleep counts (a review's file slept 40 s in each of its imports).
            reply = channel.exchange(b"", 0, None, Budget.imports(self.limits, self._asleep_left()))
            if isinstance(reply, wire.Raised):
                raise ImportFailed(f"importing granularGas.py raised {reply.error}: {reply.message}{reply.where}")
            if not isinstance(reply, wire.Ready):
                raise ProtocolViolation("importing granularGas.py broke the grader's protocol: it sent "
                                        "'booted' twice")
        except SubmissionError as exc:
            self.import_error, self.import_failure = str(exc), exc
            self._stop()
            return
        finally:
            self.import_cpu += channel.cpu_used
            self.asleep += channel.asleep
        self.functions = reply.functions

    def _stop(self) -> None:
        """Kill every process of the box; the next call starts a fresh child."""
        if self._channel is None:
            return
        self.box.kill_all()
        self._channel.close()
        self._channel = None

    def pause(self) -> None:
        """Stop the child's processes until the next call, which lets them run again: a box kept open between
        calls (grading.tracing.FreshBox, ReplayBox; the searches' box kept for the animation) uses no CPU meanwhile.
        A call charges what ran since the one before, but after a box's last call nothing would be (a review's file
        kept its processes busy there). A box whose processes do not all stop is emptied: the next call starts a
        fresh child. (Any box whose processes used BETWEEN_CALLS_CPU_SECONDS between its calls is also stopped after
        each call: _pause_after.) Without pidfds it is emptied: nothing would charge what it ran after its last
        call."""
        if not processes.can_freeze():
            self._stop()
        self._freeze()

    def _pause_after(self, name: str) -> None:
        """Stop the box until its next call: its processes used CPU between its calls, which depends on how long the
        grader takes there. ChildDied if they cannot all be stopped (the box is emptied): that is the file's doing,
        and it costs the call, as a crash does (a failed stop that only emptied the box let a red team's file restart
        its box, and import again, every few calls at no cost)."""
        self.pausing = True
        if self._channel is not None and processes.can_freeze():
            self._channel.stop_at_reply = True  # from the next call on, stopped as soon as it answers
        if not self._freeze():
            raise ChildDied(f"{name}: granularGas.py's processes ran on between two calls and could not be stopped "
                            "there (the grader stops a file's processes between its calls once they use CPU there); "
                            "the file's processes were ended")

    def _freeze(self) -> bool:
        """Stop the box's processes until the next call; False if some could not be (the box is emptied). Without
        pidfds (processes.can_freeze; the isolation probe declares it) nothing is done. The grader's wait counts as the
        file's time asleep (a red team's file held every stop 0.25 s, and took 75 s to grade, 100 points)."""
        if self._channel is None or not processes.can_freeze():
            return True
        started = time.monotonic()
        frozen = self._channel.freeze()
        self.asleep += time.monotonic() - started
        if not frozen:
            self._stop()
        return frozen

    def carry_on_from(self, earlier: Sandbox) -> None:
        """Take on, beside this box's own, what an earlier box of the grading spent (CPU per function and in imports,
        time asleep) and whether it is stopped between calls (the searches' box goes on from the grading's)."""
        for name, seconds in earlier.spent.items():
            self.spent[name] = self.spent.get(name, 0.0) + seconds
        self.asleep += earlier.asleep
        self.import_cpu += earlier.import_cpu
        self.pausing = self.pausing or earlier.pausing  # its first child starts at its first call (start)

    def new_budgets(self, limits: Limits) -> None:
        """Go on under ``limits`` with nothing spent, the child and what it learnt kept (what it ran since its last call
        is the next call's, as ever): after everything graded, the feedback animation in the searches' box."""
        self.limits, self.spent, self.asleep, self.import_cpu = limits, {}, 0.0, 0.0

    def renew(self) -> None:
        """Go on in a fresh box (process, folders, root), keeping the budgets spent and what was printed. Nothing the
        child learnt (in memory, in its folders, from the grader's time between calls) reaches the calls to come: with
        the traced excuse on, the grading renews after a test audited in other boxes, whose work a red team's file
        timed to learn the reference's verdicts. The fresh child starts at the next call, behind its budgets."""
        self._earlier_output = (self._earlier_output + self.box.output(OUTPUT_CAP))[:OUTPUT_CAP]
        if self._channel is not None:  # what the old child ran since its last call: the next call's, as ever
            ran = self._channel.ran_since_exchange(at_once=True)
            self.import_cpu += ran
            self.pausing = self.pausing or self._channel.between_exchanges + ran > BETWEEN_CALLS_CPU_SECONDS
        self.close()
        self.box = isolation.Box(self.path, CHILD, self.limits, self.hide)

    def close(self) -> None:
        try:
            self._stop()
        finally:
            self.box.close()

    def __enter__(self) -> Sandbox:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def output(self, limit: int = OUTPUT_CAP) -> str:
        """The start of what the submission printed (stdout then stderr), at most ``limit`` bytes read, printable
        (spec.text.printable: no terminal escapes)."""
        limit = min(limit, OUTPUT_CAP)
        return spec.text.printable((self._earlier_output + self.box.output(limit))[:limit])

    def call(self, name: str, *args: Any, record: int = calls.HELPER_CALLS_KEPT) -> Returned:
        """Call the submission's ``name(*args)`` in the child; SubmissionError if it goes wrong.

        record: how many of its calls to its other functions the child records
        (at most calls.AUDIT_CALLS_KEPT). SandboxFault if the child cannot be (re)started.
        """
        record = max(0, min(record, calls.AUDIT_CALLS_KEPT))
        sent = tuple(wire.encode_arg(a) for a in args)
        body = json.dumps(sent)
        if self._answers is not None and (answer := self._answers.get((name, record, body))) is not None:
            if isinstance(answer, CallRaised):
                raise answer
            return calls.fresh_copy(answer)  # the caller may change its arrays: the kept ones stay as they came
        returned = self._call(name, sent, body, record)
        if self._answers is not None:  # a copy kept: the caller may change what it is handed
            self._answers[(name, record, body)] = calls.fresh_copy(returned)
        return returned

    def _call(self, name: str, sent: tuple, body: str, record: int) -> Returned:
        """The call, made in the child (``sent``: the arguments encoded, ``body``: as JSON)."""
        if self.import_failure is None and self.functions and name not in self.functions:  # final, budgets or not
            raise FunctionMissing(f"granularGas.py defines no function {name}()")
        if self.import_failure is None and self._asleep_left() <= 0:  # used up: no child is restarted for it
            raise CallTimeout(asleep_message(name, self.limits))
        if self.import_failure is None and self.cpu_spent >= self.limits.grading_seconds:  # nor for this
            raise CallTimeout(f"{name} was not called: granularGas.py has used more than "
                              f"{self.limits.grading_seconds:g} s of CPU in this grading (imports and calls); no more "
                              "calls are made")
        self.start()  # after a timeout or a crash; a failed import is final
        if self.import_failure is not None:
            raise ImportFailed(self.import_error or "granularGas.py could not be imported")
        if name not in self.functions:
            raise FunctionMissing(f"granularGas.py defines no function {name}()")
        spent = self.spent.get(name, 0.0)
        if spent >= self.limits.function_seconds:
            raise CallTimeout(f"{name} used more than {self.limits.function_seconds:g} s of CPU over all its calls; "
                              "it is far too slow")
        asleep_left = self._asleep_left()  # the import may have slept
        if asleep_left <= 0:
            raise CallTimeout(asleep_message(name, self.limits))
        self._request_id += 1
        request = f'{{"call": {json.dumps(name)}, "args": {body}, "id": {self._request_id}, "kept": {record}}}\n'
        payload = request.encode()
        channel = self._channel
        assert channel is not None
        try:
            reply = channel.exchange(payload, self._request_id, sent,
                                     Budget.call(name, self.limits, asleep_left))
        except SubmissionError:
            self._stop()
            raise
        finally:
            self.spent[name] = spent + channel.cpu_used
            self.asleep += channel.asleep
        if self.pausing or channel.between_exchanges > BETWEEN_CALLS_CPU_SECONDS:
            self._pause_after(name)
        if isinstance(reply, wire.Raised):
            raised = CallRaised(f"{name} raised {reply.error}: {reply.message}{reply.where}"
                                f"{_HINTS.get(reply.error, '')}", reply.error, reply.helper_calls,
                                reply.helper_calls_total)
            if self._answers is not None:
                self._answers[(name, record, body)] = raised
            raise raised
        if not isinstance(reply, wire.Answer):
            self._stop()
            raise ProtocolViolation(f"{name} broke the grader's protocol: its reply is not an answer to a call")
        return Returned(reply.value, reply.args_after, reply.helper_calls, reply.helper_calls_total,
                        channel.cpu_used)
