"""Run a submission's functions in a separate, limited process.

The submission is imported by :mod:`grader.sandbox_child` in a child started
with ``python -I -S`` in its own session, with resource limits, a private
working folder and a sys.path of the standard library, numpy and the
submission only; where Linux permits, inside namespaces that hide everything
else (see :mod:`grader.isolation`). Every call has a wall-clock limit; a call that hangs or
kills the child costs that function only: the child is restarted for the
others, and the broken function fails its remaining tests without being
called again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from grader import isolation, spec, wire

CHILD = Path(__file__).with_name("sandbox_child.py")


@dataclass(frozen=True)
class Limits:
    """Resource limits of the child process (options with sensible defaults)."""

    call_seconds: float = 5.0
    import_seconds: float = 20.0
    memory_bytes: int = 2 * 1024**3
    cpu_seconds: int = 600
    file_bytes: int = 1024**2
    processes: int = 32
    #: Wall time one function may use over all its calls (a slow function
    #: must not make the batch crawl, one call just under the limit at a time).
    function_seconds: float = 120.0
    #: Use Linux namespaces when the machine permits (off: resource limits only).
    namespaces: bool = True


class SubmissionError(Exception):
    """Something the submission did wrong; the message is for the student."""


class FunctionMissing(SubmissionError):
    pass


class CallTimeout(SubmissionError):
    pass


class CallRaised(SubmissionError):
    def __init__(self, message: str, error: str):
        super().__init__(message)
        self.error = error


class ChildDied(SubmissionError):
    pass


class ImportFailed(SubmissionError):
    pass


@dataclass(frozen=True)
class Returned:
    """What a call gave back: the value and the arguments after the call."""

    value: Any
    args_after: tuple


def _library_dir(root: Path, site_inside: str) -> Path:
    """A folder with links to numpy only: the child's sole site-packages."""
    lib = root / "lib"
    lib.mkdir()
    origin = importlib.util.find_spec("numpy").submodule_search_locations[0]
    site = Path(origin).parent
    for name in ("numpy", "numpy.libs"):
        if (site / name).exists():
            (lib / name).symlink_to(Path(site_inside) / name)
    return lib


def _package_dirs() -> list[Path]:
    """The grader and the reference on disk: hidden from the child."""
    dirs = [Path(__file__).resolve().parent]
    found = importlib.util.find_spec("reference")
    if found is not None and found.submodule_search_locations:
        dirs += [Path(d).resolve() for d in found.submodule_search_locations]
    return dirs


_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None
_PR_SET_PDEATHSIG = 1


def _limit_child(limits: Limits, nproc: int | None, uid: int | None = None) -> None:
    """Runs in the child between fork and exec."""
    os.setsid()
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    if _LIBC is not None:
        # If the grader dies (killed, interrupted), the submission dies too.
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Past the file size limit a write fails instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


class Sandbox:
    """A submission imported in a child process, called function by function."""

    def __init__(self, path: str | os.PathLike, limits: Limits = Limits(), hide: tuple[Path, ...] = ()):
        """hide: folders the submission must not see (other submissions, the output)."""
        self.path = Path(path)
        self.limits = limits
        self.root = Path(tempfile.mkdtemp(prefix="granular-grader-"))
        self.guard = isolation.wrap(self.root, [*_package_dirs(), *map(Path, hide)], limits.processes,
                                    limits.namespaces)
        self.lib = _library_dir(self.root, self.guard.site)
        self.work = self.root / "work"
        self.work.mkdir()
        # Outside the working folder: under its own uid, the submission cannot
        # rewrite the file it is graded on.
        self.source = self.root / "granularGas.py"
        shutil.copyfile(self.path, self.source)
        shutil.copyfile(CHILD, self.root / "child.py")
        for mountpoint in ("python", "site"):
            (self.root / mountpoint).mkdir()
        if self.guard.uid is not None:
            self.root.chmod(0o755)
            os.chown(self.work, self.guard.uid, self.guard.uid)
        #: What fenced the submission in, for the report.
        self.protections = self.guard.protections
        self.process: subprocess.Popen | None = None
        self.functions: set[str] = set()
        self.import_error: str | None = None
        self.import_failure: SubmissionError | None = None
        self.broken: dict[str, SubmissionError] = {}
        #: The call that broke each broken function, to reproduce it.
        self.broken_call: dict[str, tuple[str, tuple]] = {}
        self.trace: list[tuple[str, tuple]] = []
        self.spent: dict[str, float] = {}
        #: Correct versions of the six functions, answering the submission's
        #: calls between its own functions (None: its own functions run).
        self.helpers: dict[str, Callable] | None = None
        self._buffer = b""
        self._request_id = 0

    # -- process management -------------------------------------------------
    def start(self) -> None:
        """Start the child and import the submission (raises nothing)."""
        self._stop()
        req_read, self._req_write = os.pipe()
        self._reply_read, reply_write = os.pipe()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.work), "LANG": "C.UTF-8",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        drop_to = self.guard.uid if self.guard.setuid_in_preexec else None
        nproc = None
        if self.guard.nproc_in_preexec:
            uid = os.geteuid()
            # Root is exempt; the child's own uid starts from zero processes.
            # Otherwise the limit counts every process of the user.
            extra = 0 if uid == 0 else isolation.process_count(uid)
            nproc = None if extra is None else self.limits.processes + extra
        with open(self.root / "stdout.txt", "ab") as out, open(self.root / "stderr.txt", "ab") as err:
            self.process = subprocess.Popen(
                [*self.guard.argv, self.guard.python, "-I", "-S", str(self.root / "child.py"), str(req_read),
                 str(reply_write), str(self.source), json.dumps(spec.FUNCTION_NAMES),
                 str(self.lib)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=self.root if self.guard.argv else self.work,
                env=env,
                pass_fds=(req_read, reply_write), preexec_fn=lambda: _limit_child(self.limits, nproc, drop_to),
            )
        os.close(req_read)
        os.close(reply_write)
        self._buffer = b""
        try:
            hello = self._read_reply(self.limits.import_seconds, "importing granularGas.py")
        except SubmissionError as exc:
            self.import_error, self.import_failure = str(exc), exc
            self._stop()
            return
        if not hello.get("ready"):
            self.import_error = f"importing granularGas.py raised {hello.get('error')}: {hello.get('message')}{hello.get('where', '')}"
            self.import_failure = ImportFailed(self.import_error)
            self._stop()
            return
        self.import_error = self.import_failure = None
        self.functions = set(hello.get("functions", []))

    def _stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        for fd in (self._req_write, self._reply_read):
            try:
                os.close(fd)
            except OSError:
                pass
        self.process = None

    def close(self) -> None:
        self._stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "Sandbox":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def output(self, limit: int = 2000) -> str:
        """The start of what the submission printed (stdout then stderr)."""
        text = ""
        for name in ("stdout.txt", "stderr.txt"):
            p = self.root / name
            if p.exists():
                with open(p, "rb") as f:
                    text += f.read(limit).decode("utf-8", "replace")
        return text[:limit]

    # -- calls ---------------------------------------------------------------
    def call(self, name: str, *args: Any, helpers: dict[str, Callable] | None = None) -> Returned:
        """Call ``name(*args)`` in the child; SubmissionError if it goes wrong.

        helpers: correct versions of the submission's other functions. While
        ``name`` runs, its calls to them are answered by these instead (over
        the channel), so a bug in one function costs points only once.
        """
        self.trace.append((name, args))
        if name in self.broken:
            raise self.broken[name]
        if self.process is None and self.import_error is None:
            self.start()  # after a crash; a failed import is final
        if self.import_error:
            raise ImportFailed(self.import_error)
        if name not in self.functions:
            raise FunctionMissing(f"granularGas.py defines no function {name}()")
        helpers = self.helpers if helpers is None else helpers
        isolate = sorted(set(helpers or ()) - {name})
        self._request_id += 1
        request = {"call": name, "args": [wire.encode_arg(a) for a in args], "isolate": isolate,
                   "id": self._request_id}
        started = time.monotonic()
        deadline = started + self.limits.call_seconds
        try:
            self._send(request)
            while True:
                reply = self._read_reply(self.limits.call_seconds, f"{name}", deadline, self._request_id)
                if "callback" not in reply:
                    break
                self._send(wire.answer_callback(helpers, reply))
        except (BrokenPipeError, SubmissionError) as exc:
            error = exc if isinstance(exc, SubmissionError) else ChildDied(f"{name} killed the grading process")
            self.broken[name] = error
            self.broken_call[name] = (name, args)
            self._stop()
            raise error from None
        finally:
            self.spent[name] = self.spent.get(name, 0.0) + time.monotonic() - started
        if self.spent[name] > self.limits.function_seconds and name not in self.broken:
            self.broken[name] = CallTimeout(f"{name} took more than {self.limits.function_seconds:g} s over all "
                                            "its calls; it is far too slow")
            self.broken_call[name] = (name, args)
        if not reply.get("ok"):
            error = reply.get("error", "error")
            hint = ""
            if error == "RecursionError":
                hint = (": the recursive version of update runs out of stack past ~1000 contacts in one dt; "
                        "write update as a loop")
            elif error == "NotImplementedError":
                hint = ": this function is not written yet"
            raise CallRaised(f"{name} raised {error}: {reply.get('message')}{reply.get('where', '')}{hint}", error)
        return Returned(wire.decode_value(reply["result"]), tuple(wire.decode_value(a) for a in reply["args_after"]))

    def _send(self, message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(self._req_write, data):]

    def _read_reply(self, seconds: float, what: str, deadline: float | None = None,
                    request_id: int | None = None) -> dict:
        """The next reply to request ``request_id`` (None: any). Replies to
        earlier requests, e.g. from copies of the child that the submission
        forked, are dropped."""
        while True:
            reply = self._next_line(seconds, what, deadline)
            if request_id is None or reply.get("id") == request_id:
                return reply

    def _next_line(self, seconds: float, what: str, deadline: float | None = None) -> dict:
        deadline = deadline if deadline is not None else time.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            selector.register(self._reply_read, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise CallTimeout(f"{what} did not return within {seconds:g} s")
                chunk = os.read(self._reply_read, 1 << 16)
                if not chunk:
                    raise ChildDied(self._death(what))
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise ChildDied(f"{what} garbled the grader's channel") from None

    def _death(self, what: str) -> str:
        assert self.process is not None
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return f"{what} closed the grader's channel"
        if code < 0:
            name = signal.Signals(-code).name
            reason = {"SIGXCPU": "used up its CPU time", "SIGKILL": "was killed (out of memory?)",
                      "SIGSEGV": "crashed (segmentation fault)"}.get(name, f"was killed by {name}")
            return f"{what}: the process {reason}"
        return f"{what} ended the process (exit code {code}, e.g. os._exit)"
