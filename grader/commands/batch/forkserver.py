"""One process per batch that has the grader imported and forks a worker per student.

    python -m grader.commands.batch.forkserver BATCH_PID NAMESPACES

A worker started as a fresh interpreter spends about 0.4 s of CPU importing
numpy, Hypothesis, matplotlib and the grader before it grades anyone. The
batch starts this server once instead: it imports them, and forks one worker
per student. Each worker is a fresh fork of a process that grades nobody, so
nothing of one student's grading reaches another's; the submission itself
still runs only in the worker's sandbox (a new interpreter, started by exec:
none of the grader's memory).

This module is the server's process; the batch's handle on it is :mod:`grader.commands.batch.forked`. The
protocol is JSON lines. The batch writes ``{"folder": F, "tmp": T}`` (F
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
import sys
import traceback
from pathlib import Path

from grader.commands.batch import worker
from grader.commands.batch.forked import LINE_CAP, REAP_SECONDS


def preload(namespaces: bool) -> None:
    """Import what every worker uses, and probe the isolation once (cached, so the workers inherit it)."""
    import grader.animation.render  # noqa: F401
    import grader.grading.efficiency  # noqa: F401
    import grader.properties.strategies  # noqa: F401 - Hypothesis, for the workers whose file fails a property
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
    worker.die_with_parent(batch)
    preload(namespaces)
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


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2] == "1")
