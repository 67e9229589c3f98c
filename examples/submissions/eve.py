"""Eve's submission (hostile): it tries to read the reference solution,
to overwrite the other students' files and to forge its own grade. The
sandbox stops all of it; Eve gets the grade of what she wrote: nothing."""
import glob
import json
import os
import socket

for pattern in ("/*/*/reference/granularGas.py", "/tmp/*/*/granularGas.py", "../../*/granularGas.py",
                "/tmp/*/*/results.json"):
    for path in glob.glob(pattern)[:20]:
        try:
            with open(path, "w") as f:
                json.dump({"score": 100, "max_score": 100, "tests": []}, f)
            print("overwrote", path)
        except OSError as exc:
            print("blocked:", exc)
try:
    socket.create_connection(("pypi.org", 443), timeout=2)
    print("network: connected")
except OSError as exc:
    print("network blocked:", exc)
os.system("sleep 1000 &")
