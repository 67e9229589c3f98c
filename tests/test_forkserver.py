"""The batch's fork server: one process with the grader imported forks a worker per student.

Each test starts a real server and real workers. The attacks: a worker (and so
the sandbox it starts) holds no end of the server's channel; only the server
kills a worker; the server and its workers die with the batch; a server that
cannot start costs speed, never a grade.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.commands.batch import forked, worker
from grader.commands.batch.forked import ForkServer, ForkServerError
from grader.commands.batch.submissions import Submission
from grader.grading.runner import GradeOptions
from grader.sandbox import isolation
from grader.spec.limits import Limits

from .test_batch import wait_for

REPO = Path(__file__).resolve().parents[1]
#: The import sleeps: the worker lives for a few seconds (the import is stopped at its idle check), then grades
#: a file that did not import (fast).
SLEEPY = "import time\ntime.sleep(30)\n"
LIMITS = Limits(call_seconds=1.0, import_seconds=1.0)


def start_server(tmp_path: Path) -> ForkServer:
    env = dict(os.environ, PYTHONPATH=str(REPO), **isolation.inherited_environment(True))
    return ForkServer.start(env, REPO, tmp_path / "server.log", namespaces=True)


def job_folder(tmp_path: Path, name: str, source: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "granularGas.py").write_text(source)
    request = worker.WorkerRequest(name, folder / "granularGas.py", folder / "reply.json",
                                   GradeOptions(limits=LIMITS, hidden=False, selftest=False), False, "test",
                                   os.getpid())
    (folder / "request.json").write_text(request.to_json())
    return folder


def fds_of(pid: int) -> dict[int, str]:
    found = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    """The process runs (a zombie left to a parent that does not reap it is dead)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_each_request_is_a_fresh_worker_whose_end_the_server_reports(tmp_path):
    server = start_server(tmp_path)
    try:
        graded = server.fork(job_folder(tmp_path, "ada", "x = 1\n"), tmp_path)
        broken = tmp_path / "broken"
        broken.mkdir()
        (broken / "request.json").write_text("{not json")
        crashed = server.fork(broken, tmp_path)
        assert graded.pid != crashed.pid
        assert graded.wait() == worker.EXIT_GRADED
        assert worker.WorkerReply.from_json((tmp_path / "ada" / "reply.json").read_bytes()).kind == worker.GRADED
        assert crashed.wait() == 1  # a worker's failure is its exit code and its log, never the server's end
        assert "JSONDecodeError" in (broken / "worker.log").read_text()
        again = server.fork(job_folder(tmp_path, "ben", "x = 2\n"), tmp_path)
        assert again.wait() == worker.EXIT_GRADED
    finally:
        server.stop()


def test_a_worker_holds_no_end_of_the_servers_channel_and_is_killed_by_the_server(tmp_path):
    server = start_server(tmp_path)
    try:
        folder = job_folder(tmp_path, "sleepy", SLEEPY)
        forked = server.fork(folder, tmp_path)
        # The worker has set itself up (its output goes to its log) before it grades anything.
        wait_for(lambda: alive(forked.pid) and fds_of(forked.pid).get(1) == str(folder / "worker.log"))
        assert os.getsid(forked.pid) == forked.pid
        channel = set(fds_of(server.process.pid)[fd] for fd in (0, 1))
        assert all(link.startswith("pipe:") for link in channel)
        held = fds_of(forked.pid)
        assert not channel & set(held.values()), held
        assert held[0] == os.devnull and held[1] == held[2] == str(folder / "worker.log")
        forked.kill()
        assert forked.wait() == -9
        # A pid the server has reaped is no longer its worker's: killing it again does nothing.
        forked.kill()
        assert server.fork(job_folder(tmp_path, "ada", "x = 1\n"), tmp_path).wait() == worker.EXIT_GRADED
    finally:
        server.stop()


def test_the_server_and_its_workers_die_with_the_batch(tmp_path):
    folder = job_folder(tmp_path, "sleepy", SLEEPY)
    script = ("import os, sys, time; from pathlib import Path; from tests.test_forkserver import start_server; "
              "server = start_server(Path(sys.argv[1])); w = server.fork(Path(sys.argv[2]), Path(sys.argv[1])); "
              "print(server.process.pid, w.pid, flush=True); time.sleep(60)")
    batch = subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(folder)], stdout=subprocess.PIPE,
                             text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert batch.stdout is not None
        pids = [int(p) for p in batch.stdout.readline().split()]
        assert len(pids) == 2 and all(map(alive, pids))
        batch.kill()
        batch.wait()
        wait_for(lambda: not any(map(alive, pids)), 20)
    finally:
        batch.kill()
        batch.wait()


def test_a_server_that_cannot_start_costs_speed_not_a_grade(tmp_path, monkeypatch):
    def refused(*args, **kwargs):
        raise ForkServerError("the fork server did not start: refused (test)")

    monkeypatch.setattr(forked.ForkServer, "start", classmethod(refused))
    warned = io.StringIO()
    staging = worker.Staging(warn=warned)
    try:
        submission = Submission("ada", Path("ada.py"), b"x = 1\n")
        job = staging.start(submission, GradeOptions(limits=LIMITS, hidden=False, selftest=False), False, "test")
        assert isinstance(job.process, subprocess.Popen)
        assert job.process.wait(timeout=120) == worker.EXIT_GRADED and job.reply() is not None
        assert "refused (test)" in warned.getvalue() and "Python of its own" in warned.getvalue()
        assert isinstance(staging.start(submission, GradeOptions(limits=LIMITS, hidden=False, selftest=False),
                                        False, "test").process, subprocess.Popen)
        assert warned.getvalue().count("refused") == 1
    finally:
        staging.close()


def test_a_batch_forks_its_workers_from_one_server():
    staging = worker.Staging()
    try:
        options = GradeOptions(limits=LIMITS, hidden=False, selftest=False)
        jobs = [staging.start(Submission(name, Path(f"{name}.py"), b"x = 1\n"), options, False, "test")
                for name in ("ada", "ben", "cleo")]
        assert all(isinstance(job.process, forked.ForkedWorker) for job in jobs)
        assert staging.server is not None and len({job.process.pid for job in jobs}) == 3
        assert [job.process.wait() for job in jobs] == [worker.EXIT_GRADED] * 3
        assert all(job.reply() is not None for job in jobs)
    finally:
        staging.close()


def test_a_server_that_stops_answering_costs_its_workers_never_a_hang(tmp_path, monkeypatch):
    """Frozen (SIGSTOP): a worker's end is awaited ANSWER_SECONDS at most, then the server is stopped and its
    workers end as the grader's errors with its last words; a start it does not answer is not forked later."""
    server = start_server(tmp_path)
    monkeypatch.setattr(forked, "ANSWER_SECONDS", 2.0)  # once started: a busy machine may take longer to start it
    try:
        running = server.fork(job_folder(tmp_path, "sleepy", SLEEPY), tmp_path)
        os.kill(server.process.pid, signal.SIGSTOP)
        started = time.monotonic()
        running.kill()
        assert running.wait() == -9 and time.monotonic() - started < 30
        assert "did not report" in running.lost and server.dead and server.process.poll() is not None
        with pytest.raises(ForkServerError):
            server.fork(job_folder(tmp_path, "late", "x = 1\n"), tmp_path)
    finally:
        server.stop()


def test_a_start_the_server_does_not_answer_is_never_forked_later(tmp_path, monkeypatch):
    server = start_server(tmp_path)
    monkeypatch.setattr(forked, "ANSWER_SECONDS", 2.0)
    try:
        os.kill(server.process.pid, signal.SIGSTOP)
        with pytest.raises(ForkServerError, match="did not answer"):
            server.fork(job_folder(tmp_path, "ada", "x = 1\n"), tmp_path)
        assert server.process.poll() is not None  # stopped, so it cannot fork that request once it wakes
        assert not (tmp_path / "ada" / "worker.log").exists()
    finally:
        server.stop()


def test_what_the_server_never_writes_stops_it_and_the_batch_goes_on(tmp_path):
    server = start_server(tmp_path)
    try:
        running = server.fork(job_folder(tmp_path, "sleepy", SLEEPY), tmp_path)
        with open(f"/proc/{server.process.pid}/fd/1", "wb") as channel:  # the server's end, as its own uid may
            channel.write(b"not json\n")
        running.poll()
        assert running.returncode == -9 and "not a message of its own" in running.lost and server.dead
    finally:
        server.stop()


def test_forked_workers_give_real_files_their_pinned_grades(tmp_path):
    """Through the fork server, a do-nothing file, a thief that searches the worker's modules for the reference
    and a correct file get exactly the grades the corpus pin holds (every item), as a fresh process gives them."""
    from grader.commands.batch import pool
    from grader.commands.batch.submissions import scan

    repo_files = {"trivial_constants": "tests/submissions/trivial_constants.py",
                  "thief_modules": "tests/submissions/thief_modules.py",
                  "correct_textbook": "tests/submissions/correct_textbook.py"}
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for name, path in repo_files.items():
        (subs / f"{name}.py").write_text((REPO / path).read_text())
    pinned = json.loads((REPO / "tests" / "corpus_grades.json").read_text())["grades"]
    found = scan(subs, exclude=(out,))
    outcomes = pool.run(list(found.submissions), subs, out, pool.Options(jobs=2, animations=False), io.StringIO())
    for outcome in outcomes:
        pin = pinned[repo_files[outcome.student]]
        assert outcome.results is not None and outcome.status == pin["status"]
        assert outcome.results.score == pytest.approx(pin["score"])
        items = {item.item: [item.score, item.max_score] for item in outcome.results.items}
        assert items.keys() == pin["items"].keys()  # pytest.approx takes no dict of lists (pytest >= 9.2)
        assert all(items[name] == pytest.approx(pin["items"][name]) for name in items), (items, pin["items"])
    assert {o.student: o.results.score for o in outcomes if o.results} == {
        "trivial_constants": 0.0, "thief_modules": 0.0, "correct_textbook": 100.0}
