"""One process per batch that has the grader imported and forks a worker per student.

    python -m grader.commands.batch.forkserver BATCH_PID NAMESPACES

A worker started as a fresh interpreter spends about 0.4 s of CPU importing
numpy, Hypothesis, matplotlib and the grader before it grades anyone. The
batch starts this server once instead: it imports them, and forks one worker
per student. Each worker is a fresh fork of a process that grades nobody, so
nothing of one student's grading reaches another's; the submission itself
still runs only in the worker's sandbox (a new interpreter, started by exec:
none of the grader's memory).

The protocol is JSON lines. The batch writes ``{"folder": F, "tmp": T}`` (F
holds ``request.json``; T is the worker's TMPDIR) or ``{"kill": PID}``; the
server answers each start with ``{"pid": PID}`` and, when a worker ends, says
``{"ended": PID, "code": C}`` (C as subprocess gives it: -N for signal N). Only
the server kills a worker, so a pid it has not reaped yet cannot name another
process. The server dies with the batch, and its workers with it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
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


# -- the server's side -------------------------------------------------------------------
def _preload(namespaces: bool) -> None:
    """Import what every worker uses, and probe the isolation once (cached, so the workers inherit it)."""
    import grader.animation.render  # noqa: F401
    import grader.grading.efficiency  # noqa: F401
    import grader.reports.feedback  # noqa: F401
    from grader.animation import figure
    from grader.grading import runner
    from grader.properties import oracle
    from grader.sandbox import isolation

    runner.all_properties(hidden=oracle.available())
    isolation.probe(namespaces)
    figure.warm()  # matplotlib and its fonts, for the feedback animations


def _run_worker(folder: Path, tmp: Path, server: int) -> int:
    """In the forked child: grade the request in ``folder``; the worker's exit code."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(folder / "worker.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    # Over the server's channel (fds 0 and 1): the worker, and so its sandbox, cannot write to the server.
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
    os.environ["TMPDIR"] = str(tmp)
    import tempfile

    tempfile.tempdir = None  # the server's choice of folder is not this worker's
    from grader.commands.batch import worker

    worker.die_with_parent(server)
    return worker.run(worker.WorkerRequest.from_json((folder / "request.json").read_text()))


def _fork(folder: Path, tmp: Path) -> int:
    server = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = _run_worker(folder, tmp, server)
    except BaseException:  # noqa: BLE001 - whatever happens, the worker's process ends here
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(batch: int, namespaces: bool) -> None:
    """Answer the batch's requests until it closes the channel (stdin)."""
    from grader.commands.batch import worker

    worker.die_with_parent(batch)
    _preload(namespaces)
    requests, answers = 0, 1
    alive: set[int] = set()
    buffer = b""

    def say(message: dict) -> None:
        os.write(answers, json.dumps(message).encode() + b"\n")

    say({"ready": True})
    while True:
        readable, _, _ = select.select([requests], [], [], REAP_SECONDS)
        if readable:
            chunk = os.read(requests, LINE_CAP)
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if "kill" in message:
                    pid = int(message["kill"])
                    if pid in alive:  # not reaped: the pid is still this worker's
                        for kill in (os.killpg, os.kill):
                            try:
                                kill(pid, signal.SIGKILL)
                            except (ProcessLookupError, PermissionError):
                                pass
                else:
                    pid = _fork(Path(message["folder"]), Path(message["tmp"]))
                    alive.add(pid)
                    say({"pid": pid})
            if len(buffer) > LINE_CAP:
                raise SystemExit("granular-grader fork server: a request line too long")
        while alive:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            alive.discard(pid)
            say({"ended": pid, "code": os.waitstatus_to_exitcode(status)})


# -- the batch's side ----------------------------------------------------------------------
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


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2] == "1")
