"""The batch's handle on its fork server (the server itself: :mod:`grader.commands.batch.forkserver`).

:class:`ForkServer` starts the server and asks it for workers; :class:`ForkedWorker` is what the batch's Job uses
of a worker, as it would use a subprocess.Popen (poll, wait, returncode, pid), except that only the server kills
it. The server answers each start with the worker's pid and says when each worker ends.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Seconds the batch waits for the server to start or to answer a start.
ANSWER_SECONDS = 60.0
#: How often the server reaps its workers while no request comes.
REAP_SECONDS = 0.05
#: Longest line either side reads (a request or an answer is about a hundred bytes).
LINE_CAP = 64 * 1024


class ForkServerError(RuntimeError):
    """The fork server did not start or stopped answering: the grader's fault, never a student's."""


@dataclass
class ForkedWorker:
    """A worker as the batch sees it: what Job uses of a subprocess.Popen."""

    pid: int
    server: ForkServer
    returncode: int | None = None
    #: Why the worker is gone with its server (the server's last words), if it is.
    lost: str = ""

    def poll(self) -> int | None:
        self.server.collect(0.0)
        return self.returncode

    def wait(self) -> int:
        """Its exit code; a server that says nothing of it for ANSWER_SECONDS is stopped, and the worker with it."""
        deadline = time.monotonic() + ANSWER_SECONDS
        while self.returncode is None:
            self.server.collect(REAP_SECONDS)
            if self.returncode is None and time.monotonic() > deadline:
                self.server.stop(f"the fork server did not report worker {self.pid}'s end within "
                                 f"{ANSWER_SECONDS:g} s")
        return self.returncode

    def kill(self) -> None:
        self.server.kill(self)


@dataclass
class ForkServer:
    """The batch's handle on its fork server.

    Whatever goes wrong with the server (it does not start, stops answering, dies, or says what it never says) is
    a ForkServerError or a lost server: its workers end as the grader's errors, with the server's last words, and
    the batch goes on without it.
    """

    process: subprocess.Popen
    log: Path
    workers: dict[int, ForkedWorker] = field(default_factory=dict)
    buffer: bytes = b""
    dead: bool = False

    @classmethod
    def start(cls, env: dict[str, str], cwd: Path, log: Path, namespaces: bool) -> ForkServer:
        """A server that has imported the grader; ForkServerError if it cannot start."""
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "grader.commands.batch.forkserver", str(os.getpid()), str(int(namespaces))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=out, env=env, cwd=cwd,
                start_new_session=True)
        server = cls(process, log)
        try:
            server._answer(ANSWER_SECONDS)
        except ForkServerError as exc:
            server.stop(str(exc))
            raise ForkServerError(f"the fork server did not start ({exc}): {server.last_words()}") from None
        return server

    def last_words(self) -> str:
        """The last line the server wrote to its log (a traceback's last line), or that it said nothing."""
        try:
            text = self.log.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        return text.splitlines()[-1] if text else "it said nothing"

    def fork(self, folder: Path, tmp: Path) -> ForkedWorker:
        """A worker grading the request in ``folder`` (request.json); ForkServerError if the server is gone or does
        not answer (it is stopped then: it must not fork that request later, unknown to the batch)."""
        self._send({"folder": str(folder), "tmp": str(tmp)})
        try:
            answer = self._answer(ANSWER_SECONDS, want="pid")
            worker = ForkedWorker(int(answer["pid"]), self)
        except (ForkServerError, ValueError, TypeError) as exc:
            self.stop(str(exc))
            raise ForkServerError(str(exc)) from None
        self.workers[worker.pid] = worker
        return worker

    def kill(self, worker: ForkedWorker) -> None:
        if worker.returncode is None and not self.dead:
            try:
                self._send({"kill": worker.pid})
            except ForkServerError:
                pass

    def collect(self, timeout: float) -> None:
        """Read what the server said (waiting up to ``timeout`` s for something): note the workers that ended."""
        if self.dead:
            return
        try:
            self._answer(timeout, want=None)
            if self.process.poll() is not None:
                raise ForkServerError(f"the fork server ended (exit code {self.process.returncode})")
        except ForkServerError as exc:
            self.stop(str(exc))

    def stop(self, why: str = "the batch closed it") -> None:
        """Stop the server (its workers die with it: each ends as killed, with why and the server's last words)."""
        if not self.dead:
            self.dead = True
            try:
                self.process.kill()
            except ProcessLookupError:
                pass
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()
        lost = f"{why}; its log ends: {self.last_words()}"
        for worker in self.workers.values():
            if worker.returncode is None:
                worker.returncode, worker.lost = -signal.SIGKILL, lost


    def _send(self, message: dict) -> None:
        if self.dead:
            raise ForkServerError("the fork server has stopped")
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            self.process.stdin.flush()
        except OSError as exc:
            self.stop(f"the fork server has stopped ({exc})")
            raise ForkServerError(f"the fork server has stopped ({exc})") from None

    def _answer(self, timeout: float, want: str | None = "ready") -> dict:
        """Read messages until one holding ``want`` (returned); with want None, all there is within ``timeout``
        ({}). Every "ended" read on the way is noted. ForkServerError if the server stops, is silent past the
        timeout while ``want`` is awaited, or writes what it never writes."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                    if "ended" in message:
                        ended = self.workers.pop(int(message["ended"]), None)
                        if ended is not None:
                            ended.returncode = int(message["code"])
                    elif want is not None and want in message:
                        return message
                except (ValueError, TypeError, KeyError):
                    raise ForkServerError(f"the fork server wrote {line[:80]!r}, not a message of its own") from None
            if len(self.buffer) > LINE_CAP:
                raise ForkServerError("the fork server wrote a line too long")
            left = deadline - time.monotonic()
            readable, _, _ = select.select([fd], [], [], max(left, 0.0))
            if not readable:
                if want is None:
                    return {}
                if left <= 0:
                    raise ForkServerError(f"the fork server did not answer within {timeout:g} s")
                continue
            chunk = os.read(fd, LINE_CAP)
            if not chunk:
                raise ForkServerError("the fork server has stopped")
            self.buffer += chunk
