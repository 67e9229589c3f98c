"""Time to render 10 s of simulated time of a 200-grain gas, student beside reference.

    python benchmarks/render_speed.py [--grains 200] [--duration 10] [--dt 0.02] [--format gif]

Prints the seconds spent simulating the reference's gas (in process), and
drawing and writing the animation with both panels, in ms per frame (a GIF
draws the static figure once and redraws only the moving artists per frame;
--format html/mp4 redraw whole frames through matplotlib). The student's side costs
whatever the student's update costs: it is measured on a short window with
examples/submissions/ada (plain Python loops, O(n^2) per contact search) and
extrapolated, since 10 s of it would take the better part of an hour.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import machine_speed  # noqa: E402 (this folder: the script's own)

from grader.animation import render as animation  # noqa: E402
from grader.animation.trajectories import Runs, compare, record, reference_step, sandbox_step  # noqa: E402
from grader.sandbox.client import Sandbox  # noqa: E402

STUDENT = ROOT / "examples" / "submissions" / "ada" / "granularGas.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grains", type=int, default=200)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--dt", type=float, default=0.02, help="frame interval (data writing)")
    parser.add_argument("--format", default="gif", choices=["gif", "html", "mp4"])
    parser.add_argument("--student-duration", type=float, default=0.2, help="simulated time of the student's run")
    args = parser.parse_args()
    chosen = animation.scenario("gas", grains=args.grains, duration=args.duration).with_(dt=args.dt)
    frames = int(round(args.duration / args.dt)) + 1
    print(f"{args.grains} grains, {args.duration:g} s simulated, {frames} frames")
    print(machine_speed.line())

    short = chosen.with_(duration=args.student_duration)
    started = time.perf_counter()
    with Sandbox(STUDENT, animation.ANIMATION_LIMITS) as sandbox:
        student = record(sandbox_step(sandbox, short), short)
    per_frame = (time.perf_counter() - started) / max(len(student.times) - 1, 1)
    started = time.perf_counter()
    reference = record(reference_step(chosen), chosen)
    t_reference = time.perf_counter() - started
    # Both panels drawn in full: the reference's run stands in for a correct student.
    runs = Runs(chosen, reference, reference, compare(reference, reference, chosen))
    with tempfile.TemporaryDirectory() as tmp:
        started, cpu = time.perf_counter(), time.process_time()
        out = animation.save(animation.build(runs), Path(tmp) / f"gas.{args.format}")
        t_render, cpu_render = time.perf_counter() - started, time.process_time() - cpu
        size = out.stat().st_size
    print(f"{'reference, in process':<30} {t_reference:8.1f} s")
    print(f"{'drawing and writing ' + args.format:<30} {t_render:8.1f} s  ({size / 1e6:.1f} MB, "
          f"{1e3 * t_render / frames:.0f} ms per frame)")
    print(f"{'drawing and writing, per frame':<30} {1e3 * t_render / frames:8.0f} ms "
          f"({1e3 * cpu_render / frames:.0f} ms of CPU)")
    print(f"{'render total (reference side)':<30} {t_reference + t_render:8.1f} s")
    print(f"{'student (ada) in the sandbox':<30} {1e3 * per_frame:8.0f} ms per frame, about "
          f"{per_frame * (frames - 1) / 60:.0f} min for the whole run")
    if student.error:
        print(f"the student's run stopped {student.error}")
    print(machine_speed.line())


if __name__ == "__main__":
    main()
