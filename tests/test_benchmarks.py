"""Every benchmark script starts: its imports still resolve after the package moves (--help only, no timing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def test_there_are_benchmarks():
    assert {p.name for p in SCRIPTS} >= {"grade_speed.py", "batch_throughput.py", "render_speed.py", "engine.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_a_benchmark_starts_and_explains_itself(script: Path):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


@pytest.mark.parametrize("command", [["engine.py", "--sizes", "100"], ["engine_memory.py", "--events", "10"]])
def test_the_engine_benchmarks_refuse_to_time_the_interpreted_engine(command: list[str]):
    # Interpreted, N = 10^5 takes hours: a fresh machine without numba got a silent, endless run.
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / command[0]), *command[1:]],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "NUMBA_DISABLE_JIT": "1"})
    assert done.returncode != 0 and 'pip install -e ".[fast]"' in done.stderr
