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

    def poll(self) -> int | None:
        self.server.collect(0.0)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self.server.collect(REAP_SECONDS)
        return self.returncode

    def kill(self) -> None:
        self.server.kill(self)


@dataclass
class ForkServer:
    """The batch's handle on its fork server."""

    process: subprocess.Popen
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
        server = cls(process)
        if server._answer(ANSWER_SECONDS).get("ready") is not True:
            server.close()
            raise ForkServerError(f"the fork server did not start: {server._log(log)}")
        return server

    @staticmethod
    def _log(log: Path) -> str:
        text = log.read_bytes()[-2000:].decode("utf-8", "replace").strip() if log.exists() else ""
        return text.splitlines()[-1] if text else "it said nothing"

    def fork(self, folder: Path, tmp: Path) -> ForkedWorker:
        """A worker grading the request in ``folder`` (request.json); ForkServerError if the server is gone."""
        self._send({"folder": str(folder), "tmp": str(tmp)})
        answer = self._answer(ANSWER_SECONDS, want="pid")
        worker = ForkedWorker(int(answer["pid"]), self)
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
        try:
            self._answer(timeout, want=None)
        except ForkServerError:
            self._lost()

    def close(self) -> None:
        """Stop the server (its workers die with it)."""
        self.dead = True
        try:
            self.process.kill()
        except ProcessLookupError:
            pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def _lost(self) -> None:
        """The server died: so did its workers (parent-death signal); each reads as killed."""
        self.dead = True
        for worker in self.workers.values():
            if worker.returncode is None:
                worker.returncode = -signal.SIGKILL

    def _send(self, message: dict) -> None:
        if self.dead:
            raise ForkServerError("the fork server has stopped")
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            self.process.stdin.flush()
        except OSError as exc:
            self._lost()
            raise ForkServerError(f"the fork server has stopped ({exc})") from None

    def _answer(self, timeout: float, want: str | None = "ready") -> dict:
        """Read messages until one holding ``want`` (returned); with want None, all there is within ``timeout``
        ({}). Every "ended" read on the way is noted."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line)
                if "ended" in message:
                    ended = self.workers.pop(int(message["ended"]), None)
                    if ended is not None:
                        ended.returncode = int(message["code"])
                elif want is not None and want in message:
                    return message
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
