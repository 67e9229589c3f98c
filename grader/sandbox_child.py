"""Runs inside the sandboxed child process: imports the submission and serves calls.

Standalone on purpose: it is started with ``python -I -S`` and a sys.path
holding only the standard library, numpy and the submission, so it imports
nothing of the grader (and cannot reach the reference solution).

Protocol: one JSON object per line, requests on fd REQUEST_FD, replies on fd
REPLY_FD, so the submission's prints and reads of stdin never interfere. Values
travel as plain numbers; nothing is pickled.
"""

import json
import os
import sys
import traceback


def encode(value, depth=0):
    """Plain-JSON description of a returned value (numbers only, never code)."""
    import numpy as np

    if depth > 4:
        return {"other": "deeply nested value"}
    if value is None:
        return {"none": True}
    if isinstance(value, (tuple, list)):
        return {"seq": [encode(v, depth + 1) for v in value[:64]], "type": type(value).__name__, "len": len(value)}
    try:
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf" and arr.size <= 1_000_000:
            return {
                "shape": list(arr.shape),
                "data": arr.astype(float).ravel().tolist(),
                "kind": arr.dtype.kind,
                "type": type(value).__name__,
            }
    except Exception:  # noqa: BLE001 - any value the student returns is acceptable input here
        pass
    try:
        text = repr(value)[:80]
    except Exception:  # noqa: BLE001
        text = "?"
    return {"other": f"{type(value).__name__}: {text}"}


def decode(obj):
    import numpy as np

    if isinstance(obj, dict) and "array" in obj:
        return np.array(obj["array"], dtype=obj.get("dtype", "float"))
    return obj


def describe_exception(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if f.filename.endswith("granularGas.py")]
    where = f" (granularGas.py, line {own[-1].lineno}: {own[-1].line})" if own else ""
    message = str(exc)
    if len(message) > 300:
        message = message[:300] + "..."
    return {"error": type(exc).__name__, "message": message, "where": where}


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


def main():
    request_fd, reply_fd, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sys.stdout = CappedOutput(sys.stdout, 64 * 1024)
    sys.stderr = CappedOutput(sys.stderr, 64 * 1024)
    sys.path.append(sys.argv[5])  # numpy only
    requests = os.fdopen(request_fd, "r")
    replies = os.fdopen(reply_fd, "w")

    dumps, loads = json.dumps, json.loads  # the submission may patch the json module

    serving = {"id": 0}  # the request being served: every reply names it
    main_pid = os.getpid()

    def reply(obj):
        if os.getpid() != main_pid:
            # A copy the submission forked, back in our code: only the
            # original answers the grader.
            os._exit(0)
        replies.write(dumps({**obj, "id": serving["id"]}) + "\n")
        replies.flush()

    import importlib.util

    try:
        spec = importlib.util.spec_from_file_location("granularGas", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["granularGas"] = module
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt at import are reported too
        reply({"ready": False, **describe_exception(exc)})
        return
    names = json.loads(sys.argv[4])
    reply({"ready": True, "functions": [n for n in names if callable(getattr(module, n, None))]})

    def proxy(name):
        """Stand-in for one of the submission's own functions: the grader answers."""

        def call_grader(*args):
            reply({"callback": name, "args": [encode(a) for a in args]})
            answer = loads(requests.readline())
            if "error" in answer:
                raise ValueError(f"{name} called with bad arguments: {answer['error']}")
            result = [decode(r) for r in answer["result"]]
            return tuple(result) if answer.get("tuple") else result[0]

        return call_grader

    while True:
        line = requests.readline()
        if not line:
            return
        request = loads(line)
        serving["id"] = request.get("id", 0)
        args = [decode(a) for a in request["args"]]
        isolated = request.get("isolate", [])
        # A missing function gets a proxy too: its absence costs its own points only.
        originals = {n: getattr(module, n, None) for n in isolated}
        for n in isolated:
            setattr(module, n, proxy(n))
        try:
            result = getattr(module, request["call"])(*args)
        except BaseException as exc:  # noqa: BLE001 - report everything, including sys.exit
            reply({"ok": False, **describe_exception(exc)})
            continue
        finally:
            for n, f in originals.items():
                if f is None:
                    delattr(module, n)
                else:
                    setattr(module, n, f)
        reply({"ok": True, "result": encode(result), "args_after": [encode(a) for a in args]})


if __name__ == "__main__":
    main()
