"""Runs inside the sandboxed child process: imports the submission and serves calls.

Standalone on purpose: it is started with ``python -s -S`` in an environment of
the grader's alone (so not -I, which would ignore its PYTHONHASHSEED) and a
sys.path holding only the standard library, numpy, matplotlib and their
dependencies, so it imports nothing of the grader (and cannot reach the
reference solution).

Protocol: one JSON object per line, requests on fd REQUEST_FD, replies on fd
REPLY_FD, so the submission's prints and reads of stdin never interfere. Values
travel as plain numbers; nothing is pickled. Every reply names the request it
answers ("id"; 0 while starting). The first reply, ``{"booted": true}``, comes
after numpy imported and before the submission is: a child that never sends it
is the grader's fault, not the student's. The grader trusts none of this (see
grader.sandbox.wire): the submission runs in this process and can write to the reply
fd itself.

Usage: child.py REQUEST_FD REPLY_FD SUBMISSION CONFIG_JSON
CONFIG_JSON: {"module": str, "functions": [...], "site": [...], "kept": int, "record_cap": int,
"reply_cap": int, "text_cap": int, "output_cap": int, "no_exec": {...}}
"""

import functools
import json
import os
import sys
import traceback

TEXT_CAP = 300  # replaced by the grader's value from the config
#: The submission's path (set by main): its frames are the ones quoted in error messages.
SUBMISSION = ["granularGas.py"]


def encode(value, depth=0, array_cap=1_000_000):
    """Plain-JSON description of a value (numbers only, never code)."""
    import numpy as np

    if depth > 4:
        return {"other": "deeply nested value"}
    if value is None:
        return {"none": True}
    if isinstance(value, (tuple, list)):
        return {"seq": [encode(v, depth + 1, array_cap) for v in value[:64]], "type": type(value).__name__,
                "len": len(value)}
    try:
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf":
            if arr.size > array_cap:
                return {"other": f"an array of {arr.size} numbers (too large to record)"}
            return {
                "shape": list(arr.shape),
                "data": arr.astype(float).ravel().tolist(),
                "kind": arr.dtype.kind,
                "type": type(value).__name__[:TEXT_CAP],
            }
    except Exception:  # noqa: BLE001 - any value the student returns is acceptable input here
        pass
    try:
        text = repr(value)[:80]
    except BaseException:  # noqa: BLE001 - a __repr__ may raise anything, SystemExit included
        text = "?"
    return {"other": f"{type(value).__name__[:TEXT_CAP]}: {text}"}


def decode(obj):
    import numpy as np

    if isinstance(obj, dict) and "array" in obj:
        return np.array(obj["array"], dtype=obj.get("dtype", "float"))
    return obj


def describe_exception(exc):
    try:
        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if os.path.basename(f.filename) == os.path.basename(SUBMISSION[0])]
        where = f" ({os.path.basename(SUBMISSION[0])}, line {own[-1].lineno}: {own[-1].line})" if own else ""
    except Exception:  # noqa: BLE001
        where = ""
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - the student's __str__ may raise anything
        message = "(the exception's message could not be read)"
    if len(message) > TEXT_CAP:
        message = message[:TEXT_CAP] + "..."
    return {"error": type(exc).__name__[:TEXT_CAP], "message": message, "where": where[:TEXT_CAP]}


class CappedOutput:
    """sys.stdout/sys.stderr that keep the first bytes and drop the rest.

    A student's debugging prints must not fail their function when they pass
    the file size limit; they are just no longer recorded.
    """

    def __init__(self, stream, limit):
        self.stream, self.left, self.encoding = stream, limit, "utf-8"

    def write(self, text):
        text = str(text)
        if self.left > 0:
            data = text[: self.left]
            self.left -= len(data)
            try:
                self.stream.write(data if self.left > 0 else data + "\n[further output dropped]\n")
                self.stream.flush()
            except (OSError, ValueError):
                self.left = 0
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


class Recorder:
    """The calls between the submission's own functions while one request is served.

    The first ``kept`` calls are recorded with their arguments as they were
    when the call was made; later ones are only counted, so a recursion of
    thousands of calls costs one counter each.
    """

    def __init__(self, kept, record_cap, max_kept):
        self.default_kept, self.max_kept = kept, max_kept
        self.kept, self.record_cap = kept, record_cap
        self.serving, self.total, self.records = False, 0, []
        # The recursion limit is set absolutely from ``base`` and the number of
        # wrapper frames on the stack, never nudged up and down: a lowering that
        # fails while a RecursionError unwinds must not leave the limit higher.
        self.base, self.depth = sys.getrecursionlimit(), 0
        self.in_force = self.base  # the limit as this recorder last left it

    def expected_limit(self):
        # A wrapper's frame is pushed before it raises the limit for itself: one in advance.
        return self.base + self.depth + 1

    def set_limit(self):
        try:
            sys.setrecursionlimit(self.expected_limit())
            self.in_force = self.expected_limit()
        except RecursionError:
            pass  # too deep to lower now; the next frame up sets it again

    def begin(self):
        self.serving, self.total, self.records = True, 0, []
        self.base, self.depth = sys.getrecursionlimit(), 0
        self.in_force = self.base
        self.set_limit()

    def end(self):
        self.serving = False
        self.depth = 0
        try:
            sys.setrecursionlimit(self.base)
        except RecursionError:
            pass
        return self.records, self.total

    def enter(self):
        if sys.getrecursionlimit() != self.in_force:
            # The student's own sys.setrecursionlimit: it becomes the base.
            self.base = sys.getrecursionlimit() - self.depth - 1
        self.depth += 1
        self.set_limit()

    def leave(self):
        self.depth -= 1
        self.set_limit()

    def wrap(self, name, function):
        """A transparent stand-in for ``function`` that records its calls.

        Each wrapper adds a frame; the recursion limit is raised by one per
        wrapper on the stack, so a recursion fails at the same depth as
        without the wrapper (and the student's own setrecursionlimit holds).
        """
        snap = functools.partial(encode, array_cap=self.record_cap)

        @functools.wraps(function)
        def recorded(*args, **kwargs):
            if not self.serving:
                return function(*args, **kwargs)
            self.total += 1
            entry = self.snapshot(name, snap, args, kwargs) if self.total <= self.kept else None
            self.enter()
            try:
                result = function(*args, **kwargs)
            except BaseException as exc:
                if entry is not None:
                    entry["raised"] = type(exc).__name__[:TEXT_CAP]
                raise
            finally:
                self.leave()
            if entry is not None:
                try:
                    entry["result"] = snap(result)
                except Exception:  # noqa: BLE001
                    entry["result"] = {"other": "a value that could not be described"}
            return result

        return recorded

    def snapshot(self, name, snap, args, kwargs):
        """Record a call's arguments as they are now (copied); None if they cannot be described."""
        try:
            entry = {"name": name, "args": [snap(a) for a in args],
                     "kwargs": {str(k)[:TEXT_CAP]: snap(v) for k, v in kwargs.items()}}
        except Exception:  # noqa: BLE001 - an argument that cannot be described is not recorded
            return None
        self.records.append(entry)
        return entry


def refuse_exec(no_exec):
    """Install the grader's second seccomp filter (grader.sandbox.seccomp.exec_program) on every thread of this
    process, for good: no execve from here on. no_exec: {"filter": its bytes in hex, "seccomp": the system call's
    number}, or {} where the grader does not know this machine's calls."""
    if not no_exec:
        return
    import ctypes

    class Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    code = bytes.fromhex(no_exec["filter"])
    steps = ctypes.create_string_buffer(code, len(code))
    program = Program(len(code) // 8, ctypes.addressof(steps))
    libc = ctypes.CDLL(None, use_errno=True)
    # PR_SET_NO_NEW_PRIVS (set already under bubblewrap); then seccomp(SECCOMP_SET_MODE_FILTER, TSYNC, program).
    long = ctypes.c_long  # variadic arguments: whole registers, not ints
    if (libc.prctl(38, long(1), long(0), long(0), long(0)) != 0
            or libc.syscall(long(no_exec["seccomp"]), long(1), long(1), ctypes.byref(program)) != 0):
        raise OSError(ctypes.get_errno(), "the box could not refuse execve (seccomp)")


def import_submission(path, name):
    import importlib.util

    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


def main():
    global TEXT_CAP
    request_fd, reply_fd, path, config = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
    SUBMISSION[0] = path
    TEXT_CAP = config["text_cap"]
    sys.stdout = CappedOutput(sys.stdout, config["output_cap"])
    sys.stderr = CappedOutput(sys.stderr, config["output_cap"])
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p != here] + config["site"]  # not this folder: python was not run with -I
    requests = os.fdopen(request_fd, "r")
    replies = os.fdopen(reply_fd, "w")

    dumps, loads = json.dumps, json.loads  # the submission may patch the json module
    serving = {"id": 0}  # the request being served: every reply names it
    main_pid = os.getpid()

    def reply(obj):
        if os.getpid() != main_pid:
            # A copy the submission forked, back in our code: only the original answers the grader.
            os._exit(0)
        line = dumps({**obj, "id": serving["id"]}) + "\n"
        if len(line) > config["reply_cap"] and obj.get("helper_calls"):
            # The records are the grader's extra: without them, the answer itself may fit.
            line = dumps({**obj, "helper_calls": [], "id": serving["id"]}) + "\n"
        if len(line) > config["reply_cap"]:
            line = dumps({"ok": False, "error": "ReplyTooLarge", "where": "", "id": serving["id"],
                          "message": f"the value returned is too large to send back ({len(line)} bytes)"}) + "\n"
        replies.write(line)
        replies.flush()

    import numpy  # noqa: F401 - imported before booting: a failure here is the sandbox's, not the student's

    refuse_exec(config["no_exec"])  # before booting too: a box that cannot refuse it is the grader's fault

    respond, decoding = responder(), decode  # before the submission can patch anything they use
    reply({"booted": True})
    try:
        module = import_submission(path, config["module"])
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt at import are reported too
        reply({"ready": False, **describe_exception(exc)})
        return
    originals = {n: getattr(module, n) for n in config["functions"] if callable(getattr(module, n, None))}
    recorder = Recorder(config["kept"], config["record_cap"], config["max_kept"])
    for name, function in originals.items():
        setattr(module, name, recorder.wrap(name, function))
    reply({"ready": True, "functions": sorted(originals)})
    serve(requests, loads, reply, serving, originals, recorder, respond, decoding)


def serve(requests, loads, reply, serving, originals, recorder, respond, decode):
    """Answer requests until the grader closes the channel.

    Each request is handled in a frame of its own that ends with it: nothing
    of one call lingers in a frame the submission can walk to in the next.
    """
    while True:
        line = requests.readline()
        if not line:
            return
        request = loads(line)
        serving["id"] = request["id"]
        kept = request.get("kept", recorder.default_kept)
        recorder.kept = min(kept, recorder.max_kept) if type(kept) is int else recorder.default_kept
        reply(respond(originals[request["call"]], [decode(a) for a in request["args"]], recorder))
        del line, request


def responder():
    """respond(function, args, recorder): the reply to one call of the submission's ``function``.

    Made before the submission is imported, from private references to what it uses (numpy's ndarray and its
    tobytes, isinstance, encode, describe_exception): a submission that replaces this module's functions or
    builtins to make a changed argument look unchanged (a red-team review's file replaced ``snapshot`` and earned
    25 points) changes nothing here. The arguments are held in a tuple of their own, which no code can change.
    A submission runs in this very process, so a determined one (ctypes, a trace or profile function rewriting
    this frame's locals, these closures' cells) can still lie; this makes lying take more than patching a name.
    """
    import numpy as np

    ndarray, tobytes, is_instance, zipped = np.ndarray, np.ndarray.tobytes, isinstance, zip
    astype, ravel, tolist, listed = np.ndarray.astype, np.ndarray.ravel, np.ndarray.tolist, list
    encoded, described, same = encode, describe_exception, SAME

    def snapshot(value):
        """What an argument is, to tell whether the call changed it (None: a number, which no call can change)."""
        return (value.shape, value.dtype.str, tobytes(value)) if is_instance(value, ndarray) else None

    def changed(value):
        """A changed argument (an ndarray, as decode made it) as encode describes it, through the ndarray type's
        own methods: a file that replaced numpy's functions (np.asarray) must not describe it for us."""
        return {"shape": listed(value.shape), "data": tolist(ravel(astype(value, float))), "kind": value.dtype.kind,
                "type": "ndarray"}

    def respond(function, args, recorder):
        held = tuple(args)
        before = tuple(snapshot(a) for a in held)
        recorder.begin()
        try:
            result = function(*args)
        except BaseException as exc:  # noqa: BLE001 - report everything, including sys.exit
            records, total = recorder.end()
            return {"ok": False, **described(exc), "helper_calls": records, "helper_calls_total": total}
        records, total = recorder.end()
        try:
            reply = {"ok": True, "result": encoded(result),
                     "args_after": [same if s is None or snapshot(a) == s else changed(a)
                                    for a, s in zipped(held, before)]}
        except BaseException as exc:  # noqa: BLE001 - a returned object whose methods raise
            return {"ok": False, **described(exc)}
        return {**reply, "helper_calls": records, "helper_calls_total": total}

    return respond


#: An argument the call left as it was sent (the grader rebuilds it from what it sent; see wire.SAME).
SAME = {"same": True}


if __name__ == "__main__":
    main()
