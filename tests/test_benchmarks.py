"""Every benchmark script starts: its imports still resolve after the package moves (--help only, no timing)."""

from __future__ import annotations

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
