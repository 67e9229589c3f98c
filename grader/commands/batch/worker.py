"""One student of a batch, graded in a process of its own.

    python -m grader.commands.batch.worker < request.json

The batch writes a :class:`WorkerRequest` (JSON) on the worker's stdin: the
snapshot of the student's file and every grading option (all fields of
Limits, the points, hidden, allow_weak_isolation, the folders to hide), never
re-parsed command-line flags. The worker grades with ``runner.grade_file``,
the one grading function, builds the typed results and the feedback page with
the report functions ``check`` uses, and writes a :class:`WorkerReply` (JSON) to
the request's reply file. Its exit code: 0 graded, 3 the sandbox failed
(``SandboxFault``: the grader's fault, never the student's 0), 4 isolation too
weak for the hidden tests; anything else is a crash whose traceback is on
stderr. It dies with the batch (parent-death signal), and its sandbox dies
with it.

The batch's side is here too: :class:`Staging` holds the private folders of
one batch (the snapshots, the replies, and each worker's TMPDIR, so the
sandboxes of a killed worker are removed with its folder) and starts a
:class:`Job` per student; :func:`cleanup_stale` removes what killed batches
left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from grader import errors, spec
from grader.commands.batch.forked import ForkedWorker, ForkServer, ForkServerError
from grader.commands.batch.signing import READ_CAP
from grader.commands.batch.submissions import Submission
from grader.grading.results import Results, ResultsError
from grader.grading.runner import GradeOptions
from grader.sandbox import isolation
from grader.spec import paths
from grader.spec.limits import TEXT_CAP, Limits
from grader.spec.rubric import BonusRule

if TYPE_CHECKING:
    from grader.grading.report import GradeReport
    from grader.sandbox.client import Sandbox

PACKAGE_ROOT = paths.PACKAGE_ROOT
_STAGING_PREFIX = "granular-batch-"

EXIT_GRADED, EXIT_FAULT, EXIT_TOO_WEAK = 0, 3, 4
GRADED, FAULT, TOO_WEAK = "graded", "fault", "too weak"


def options_to_json(options: GradeOptions) -> dict:
    """Every field of the options, Limits included, as JSON values."""
    return {"points": options.points, "limits": dataclasses.asdict(options.limits), "hidden": options.hidden,
            "allow_weak_isolation": options.allow_weak_isolation, "hide": [str(p) for p in options.hide],
            "only": list(options.only), "selftest": options.selftest, "excuse_traced": options.excuse_traced}


def options_from_json(data: dict) -> GradeOptions:
    """The options back; a field unknown to Limits or one missing is an error, not a silent default."""
    fields = {f.name for f in dataclasses.fields(Limits)}
    limits = data["limits"]
    if set(limits) != fields:
        raise ValueError(f"limits {sorted(set(limits) ^ fields)}: the batch and its worker disagree on Limits")
    points = data["points"]
    return GradeOptions(points=None if points is None else {str(k): float(v) for k, v in points.items()},
                        limits=Limits(**limits), hidden=data["hidden"],
                        allow_weak_isolation=bool(data["allow_weak_isolation"]),
                        hide=tuple(Path(p) for p in data["hide"]), only=tuple(map(str, data["only"])),
                        selftest=bool(data["selftest"]), excuse_traced=bool(data["excuse_traced"]))


@dataclass(frozen=True)
class WorkerRequest:
    student: str
    source: Path  # the snapshot of the student's file
    reply: Path  # where the worker writes its WorkerReply
    options: GradeOptions
    #: Put the animation of the first failing scenario into the feedback page.
    animations: bool
    #: Written into the results' provenance: the key of the record.
    fingerprint: str
    #: The batch's pid: the worker stops if it is not its parent (the batch died before it started).
    parent: int
    #: Time the submission after its tests (batch --efficiency, or a rubric with [bonus]); the bonus rule, if any.
    efficiency: bool = False
    bonus: BonusRule | None = None
    #: Feedback pages without the hidden tests' inputs and answers (batch --withhold-hidden).
    withhold_hidden: bool = False

    def to_json(self) -> str:
        return json.dumps({"student": self.student, "source": str(self.source), "reply": str(self.reply),
                           "options": options_to_json(self.options), "animations": self.animations,
                           "fingerprint": self.fingerprint, "parent": self.parent, "efficiency": self.efficiency,
                           "bonus": None if self.bonus is None else dataclasses.asdict(self.bonus),
                           "withhold_hidden": self.withhold_hidden})

    @classmethod
    def from_json(cls, text: str) -> WorkerRequest:
        data = json.loads(text)
        return cls(str(data["student"]), Path(data["source"]), Path(data["reply"]),
                   options_from_json(data["options"]), bool(data["animations"]), str(data["fingerprint"]),
                   int(data["parent"]), bool(data.get("efficiency", False)),
                   None if data.get("bonus") is None else BonusRule(**data["bonus"]),
                   bool(data.get("withhold_hidden", False)))


@dataclass(frozen=True)
class WorkerReply:
    kind: str  # GRADED, FAULT or TOO_WEAK
    results: Results | None = None  # GRADED only
    page: str = ""  # feedback.html (GRADED only)
    cause: str = ""  # FAULT, TOO_WEAK: why
    #: The options grade_file was called with, as options_to_json gives them.
    options: dict | None = None

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "results": None if self.results is None else self.results.to_json(),
                           "page": self.page, "cause": self.cause, "options": self.options})

    @classmethod
    def from_json(cls, text: str | bytes) -> WorkerReply:
        """The reply back; ValueError (or ResultsError, naming the field) if it is not what a worker writes."""
        data = json.loads(text)
        kind = data.get("kind") if isinstance(data, dict) else None
        if kind not in (GRADED, FAULT, TOO_WEAK):
            raise ValueError(f"reply kind {kind!r}: expected {GRADED!r}, {FAULT!r} or {TOO_WEAK!r}")
        results = None if data.get("results") is None else Results.from_json(data["results"])
        if kind == GRADED and results is None:
            raise ValueError("a graded reply without results")
        return cls(kind, results, str(data.get("page", "")), str(data.get("cause", "")), data.get("options"))


def grade(request: WorkerRequest) -> WorkerReply:
    """Grade the request's file; the results and the page as ``check`` makes them."""
    from grader.grading import runner

    options = request.options
    with contextlib.ExitStack() as boxes:
        try:
            # The searches' box, then the animation's (one box less to start).
            spare = boxes.enter_context(runner.search_box(request.source, options, wanted=request.animations))
            graded = runner.grade_file(request.source, options, searches_in=spare)
        except errors.IsolationTooWeak as exc:
            return WorkerReply(TOO_WEAK, cause=str(exc)[:4 * TEXT_CAP], options=options_to_json(options))
        except errors.SandboxFault as exc:
            return WorkerReply(FAULT, cause=str(exc)[:4 * TEXT_CAP], options=options_to_json(options))
        return _with_page(request, graded, spare)


def _with_page(request: WorkerRequest, graded: GradeReport, spare: Sandbox | None) -> WorkerReply:
    """The results of ``graded`` and its feedback page; the animation goes on in the searches' box, ``spare``."""
    from grader.commands.animated import Animated, with_feedback_animation
    from grader.grading.results import Provenance
    from grader.reports import feedback

    options = request.options
    source = request.source.read_bytes()
    results = Results.from_report(graded).with_provenance(
        Provenance(request.student, hashlib.sha256(source).hexdigest(), request.fingerprint))
    if request.efficiency or request.bonus is not None:
        from grader.grading import efficiency

        results = efficiency.assess(request.source, results, options.limits, options.hide, request.bonus)
    animated = (with_feedback_animation(request.source, graded, results, options.limits, options.hide, spare)
                if request.animations else Animated(results, None))
    page = feedback.page(request.student, animated.results, source.decode("utf-8", "replace"), animated.gif,
                         animated.absent, request.withhold_hidden)
    return WorkerReply(GRADED, animated.results, page, options=options_to_json(options))


# -- the batch's side ------------------------------------------------------------
def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_stale() -> None:
    """Remove what killed batches and workers left: staging folders of dead batches, stale sandboxes."""
    stale_boxes = getattr(isolation, "cleanup_stale", None)
    if callable(stale_boxes):
        stale_boxes()
    for folder in Path(tempfile.gettempdir()).glob(f"{_STAGING_PREFIX}*"):
        found = re.fullmatch(rf"{_STAGING_PREFIX}(\d+)-.*", folder.name)
        try:
            info = folder.lstat()
        except OSError:
            continue
        if found and folder.is_dir() and not folder.is_symlink() and info.st_uid == os.geteuid() \
                and not _pid_alive(int(found[1])):
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Job:
    """A worker as the batch sees it."""

    submission: Submission
    process: subprocess.Popen | ForkedWorker
    started: float
    folder: Path  # the student's snapshot, the reply and the log (0700)
    tmp: Path  # the worker's TMPDIR: its sandbox folders

    def kill(self) -> None:
        if isinstance(self.process, ForkedWorker):
            self.process.kill()  # by its server, which knows whether the pid is still this worker's
        else:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process.wait()

    def failure(self) -> str:
        """Why the worker gave no reply, from its exit status and the last line of its log."""
        if isinstance(self.process, ForkedWorker) and self.process.lost:
            return f"the worker ended with its fork server: {self.process.lost}"
        code = self.process.returncode
        if code is not None and code < 0:
            return f"the worker was killed by signal {-code} ({signal.Signals(-code).name})"
        log = self.folder / "worker.log"
        text = log.read_bytes()[-4000:].decode("utf-8", "replace").strip() if log.exists() else ""
        return text.splitlines()[-1] if text else f"the worker stopped with exit code {code} and said nothing"

    def reply(self) -> WorkerReply | None:
        try:
            with open(self.folder / "reply.json", "rb") as f:
                return WorkerReply.from_json(f.read(READ_CAP))
        except (OSError, ValueError, KeyError, TypeError, ResultsError):
            return None

    def clean(self) -> None:
        """Remove the worker's folders; a worker that did not end well may have left sandboxes: clean them."""
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.process.returncode != 0:
            cleanup_stale()


class Staging:
    """Private folders of one batch: jobs/ (snapshots, replies, logs; 0700) and tmp/ (the workers' sandboxes).

    Workers are forked by a server that has the grader imported (grader.commands.batch.forkserver), started
    with the first; if it cannot start or stops, each worker is a fresh interpreter instead (slower, the same
    grades), and the batch says so once.
    """

    def __init__(self, warn: TextIO = sys.stderr) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"{_STAGING_PREFIX}{os.getpid()}-"))
        # Traversable, not listable: a sandbox running as a uid of its own must reach its folder under tmp/.
        self.root.chmod(0o711)
        self.jobs, self.tmp = self.root / "jobs", self.root / "tmp"
        self.jobs.mkdir(mode=0o700)
        self.tmp.mkdir(mode=0o711)
        self.count = 0
        self.server: ForkServer | None = None
        self.forking = True  # until the server fails
        self.warn = warn

    def start(self, submission: Submission, options: GradeOptions, animations: bool, print_: str,
              efficiency: bool = False, bonus: BonusRule | None = None, withhold_hidden: bool = False) -> Job:
        self.count += 1
        folder, tmp = self.jobs / str(self.count), self.tmp / str(self.count)
        folder.mkdir(mode=0o700)
        tmp.mkdir(mode=0o711)
        source = folder / spec.FILE_NAME
        source.write_bytes(submission.source or b"")
        request = WorkerRequest(submission.student, source, folder / "reply.json", options, animations, print_,
                                os.getpid(), efficiency, bonus, withhold_hidden)
        forked = self._forked(request, tmp)
        if forked is not None:
            return Job(submission, forked, time.monotonic(), folder, tmp)
        with open(folder / "worker.log", "wb") as log:
            process = subprocess.Popen([sys.executable, "-m", "grader.commands.batch.worker"], stdin=subprocess.PIPE,
                                       stdout=log, stderr=log, env=self._environment(options, tmp), cwd=PACKAGE_ROOT,
                                       start_new_session=True)
        assert process.stdin is not None
        process.stdin.write(request.to_json().encode())
        process.stdin.close()
        return Job(submission, process, time.monotonic(), folder, tmp)

    @staticmethod
    def _environment(options: GradeOptions, tmp: Path) -> dict[str, str]:
        return dict(os.environ, TMPDIR=str(tmp), **isolation.inherited_environment(options.limits.namespaces),
                    PYTHONPATH=os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")]))

    def _forked(self, request: WorkerRequest, tmp: Path) -> ForkedWorker | None:
        """The request's worker forked by the server (started now if need be); None once the server failed."""
        if not self.forking:
            return None
        folder = request.reply.parent
        (folder / "request.json").write_text(request.to_json())
        try:
            if self.server is None:
                self.server = ForkServer.start(self._environment(request.options, self.tmp), PACKAGE_ROOT,
                                               self.jobs / "forkserver.log", request.options.limits.namespaces)
            return self.server.fork(folder, tmp)
        except (ForkServerError, OSError) as exc:
            self.forking = False
            if self.server is not None:
                self.server.stop(str(exc))
            print(f"granular-grader: {exc}; each worker now starts a Python of its own (slower, the same grades)",
                  file=self.warn)
            return None

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
        shutil.rmtree(self.root, ignore_errors=True)


# -- the worker's side -------------------------------------------------------------
def die_with_parent(parent: int) -> None:
    """SIGKILL when the batch dies; stop now if it already has."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        sys.exit("granular-grader worker: the batch that started me has ended")


def main() -> int:
    request = WorkerRequest.from_json(sys.stdin.read())
    die_with_parent(request.parent)
    return run(request)


def run(request: WorkerRequest) -> int:
    """Grade the request, write its reply; the exit code."""
    reply = grade(request)
    fd = os.open(request.reply, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(reply.to_json())
    return {GRADED: EXIT_GRADED, FAULT: EXIT_FAULT, TOO_WEAK: EXIT_TOO_WEAK}[reply.kind]


if __name__ == "__main__":
    sys.exit(main())
