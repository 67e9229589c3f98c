"""CPU and wall time to grade one submission, phase by phase (targets: 2 s of CPU for a correct file, 4 s for a
failing one with its feedback animation).

    python benchmarks/grade_speed.py [--runs 3] [FILE ...]

Each run grades in a fresh process, as a batch worker does (grading.runner.grade_file, then for a failing file the
feedback animation and page), and measures every phase: the grader's own CPU, the CPU of the sandbox's processes
(the submission's calls and the child's work around them), and the wall time. Medians over the runs are printed.
By default: the two correct variants of the test corpus and two single-bug mutations of them. The grading uses a
cache folder of its own. The case cache is warmed first (it is drawn once per grader version); ``--cold`` also
times the drawing. ``--forked`` measures each grading as a batch's worker pays for it: in a process that has done
what a batch does once for all its workers (imports, matplotlib's fonts and the isolation probe in its fork server,
grader.commands.batch.forkserver.preload; the sandbox's self-test in batch.pool) before the clock starts; a `check`
pays them per run. A failing file is measured twice: as the first file that fails that way (no kept search,
grader.grading.paths) and as one whose failures were met before (its searches kept by an earlier grading).
Run as root, it also prints the CPU of each run's whole process tree from a cgroup of its own (TreeCpu): the
interpreter's start, the isolation probe's box and bubblewrap's own processes, which the phases miss, included.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import machine_speed  # this folder: the script's own

ROOT = Path(__file__).resolve().parents[1]
# This checkout's grader, in this process and in the graded ones (run as this script): not whichever one is
# installed, so that two checkouts can be timed side by side.
sys.path.insert(0, str(ROOT))
PHASES = ("imports", "isolation and self-test", "sandbox start", "cases", "properties", "searches",
          "feedback animation", "feedback page")


def _instrument() -> dict[str, list[float]]:
    """Wrap the grading's phases; returns {phase: [grader CPU, sandbox CPU, wall]}, filled as they run."""
    from grader.animation import render as animation
    from grader.grading import runner
    from grader.reports import feedback
    from grader.sandbox import channel, client, self_test

    spent: dict[str, list[float]] = {}
    current: list[str] = []

    def timed(owner: Any, name: str, phase: str) -> None:
        raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        is_classmethod = isinstance(raw, classmethod)
        function = raw.__func__ if is_classmethod else raw

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            current.append(phase)
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                current.pop()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                for outer in current:  # an inner phase's time is not the outer one's
                    row = spent.setdefault(outer, [0.0, 0.0, 0.0])
                    row[0], row[2] = row[0] - cpu, row[2] - wall
                row = spent.setdefault(phase, [0.0, 0.0, 0.0])
                row[0], row[2] = row[0] + cpu, row[2] + wall

        setattr(owner, name, classmethod(wrapper) if is_classmethod else wrapper)

    exchange: Callable = channel.Channel.exchange

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return exchange(self, *args, **kwargs)
        finally:
            spent.setdefault(current[-1] if current else "sandbox start", [0.0, 0.0, 0.0])[1] += self.cpu_used

    channel.Channel.exchange = counted  # type: ignore[method-assign]
    timed(runner.isolation, "probe", "isolation and self-test")
    timed(self_test, "selftest", "isolation and self-test")
    timed(client.Sandbox, "start", "sandbox start")
    timed(runner.CaseBook, "drawn", "cases")
    timed(runner, "replay_property", "properties")  # the drawn cases, in the grading's box
    timed(runner, "search_failure", "searches")  # the failing tests' smallest cases, in a box of their own
    timed(animation, "feedback_animation", "feedback animation")
    timed(feedback, "page", "feedback page")
    return spent


def grade_one(path: Path, forked: bool = False) -> dict[str, list[float]]:
    """The phases of one grading (run in a fresh process; forked: after the fork server's preloads)."""
    if forked:
        from grader.commands.batch import forkserver

        forkserver.preload(True)
    tree = TreeCpu(os.environ.get(GROUP_ENV))
    at_start = tree.seconds() if tree.folder and forked else None
    cpu, wall = time.process_time(), time.perf_counter()
    from grader.animation import render as animation
    from grader.grading import runner
    from grader.grading.results import AnimationNote, Results
    from grader.reports import feedback

    spent = _instrument()
    spent["imports"] = [time.process_time() - cpu, 0.0, time.perf_counter() - wall]
    # A batch runs the sandbox's self-test once, before its workers (batch.pool), which then skip it.
    options = runner.GradeOptions(selftest=not forked)
    # As a worker (batch.worker.grade) and check do: the searches' box goes on for the animation.
    with runner.search_box(path, options) as spare:
        graded = runner.grade_file(path, options, searches_in=spare)
        results = Results.from_report(graded)
        gif = None
        if not graded.all_passed and not graded.import_error:
            made = animation.feedback_animation(path, options.limits, box=spare)
            if made is not None:
                gif, summary = made
                results = results.with_animation(AnimationNote.from_json(summary))
    feedback.page(path.stem, results, path.read_text(), gif)
    spent["score"] = [graded.score, 0.0, 0.0]
    if at_start is not None:  # a worker's own share: not its start, preloads or exit (a worker leaves by os._exit)
        spent["tree"] = [tree.seconds() - at_start, 0.0, 0.0]
    return spent


#: The measured child's cgroup folder (empty: none), so that a forked run can leave its preloads out of the count.
GROUP_ENV = "GRANULAR_BENCH_CGROUP"
#: Where a cgroup of our own can hold a measured run: cgroup v2 (alone, or beside v1 as here), then v1's cpuacct.
CGROUP_ROOTS = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpuacct"))


class TreeCpu:
    """CPU seconds of a run's whole process tree, read from a cgroup of its own (root only; None elsewhere).

    The phases count the grader's process and the sandbox's processes while they live (the box's CPU meter); this
    also counts the interpreter's start, the isolation probe's box and bubblewrap's own processes, which no rusage
    sees (they end with their pid namespace, reaped by nobody the grader waits for): 0.15-0.4 s of a fresh check.
    """

    def __init__(self, folder: str | None = None) -> None:
        """A new cgroup; or, given its folder (GROUP_ENV in a measured child), the one this process is in."""
        self.folder: Path | None = None
        if folder:
            self.folder, self.v2 = Path(folder), (Path(folder) / "cpu.stat").exists()
            return
        for root in CGROUP_ROOTS:
            v2 = (root / "cgroup.controllers").exists()
            if not (v2 or (root / "cpuacct.usage").exists()):
                continue
            folder = root / f"granular-bench-{os.getpid()}"
            try:
                folder.mkdir(exist_ok=True)
                (folder / "cgroup.procs").stat()
            except OSError:
                continue
            self.folder, self.v2 = folder, v2
            return

    def join(self) -> None:
        """Run in the measured child before it starts (preexec_fn): it and all it starts count here."""
        assert self.folder is not None
        (self.folder / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        assert self.folder is not None
        if self.v2:
            stat = dict(line.split() for line in (self.folder / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return int((self.folder / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        if self.folder is not None:
            try:
                self.folder.rmdir()
            except OSError:
                pass  # a process still in it (none should be): the folder goes with the next reboot


def measure(path: Path, forked: bool = False) -> dict[str, list[float]]:
    """One grading in a fresh process (forked: timed after the fork server's preloads)."""
    wall = time.perf_counter()
    tree = TreeCpu()
    try:
        before = tree.seconds() if tree.folder else 0.0
        run = subprocess.run([sys.executable, __file__, "--one", str(path), *(["--forked"] if forked else [])],
                             capture_output=True, text=True, cwd=ROOT, check=False,
                             preexec_fn=tree.join if tree.folder else None,
                             env={**os.environ, GROUP_ENV: str(tree.folder or "")})
        spent = tree.seconds() - before if tree.folder else None
    finally:
        tree.close()
    if run.returncode != 0:
        raise SystemExit(f"grading {path} failed:\n{run.stderr[-2000:]}")
    phases = json.loads(run.stdout.strip().splitlines()[-1])
    phases["total"] = [0.0, 0.0, time.perf_counter() - wall]
    if spent is not None:  # forked: what the child counted from its clock's start to its grading's end
        phases["process tree"] = phases.pop("tree", [spent, 0.0, 0.0])
    return phases


def submissions(tmp: Path) -> list[tuple[str, Path]]:
    from tests.test_grader_corpus import BUGS, TEXTBOOK, VECTORISED

    chosen = [("correct (textbook)", TEXTBOOK), ("correct (vectorised)", VECTORISED)]
    for k, (bug, source, _, changes) in enumerate(BUGS[::12][:2]):
        text = source.read_text()
        for old, new in changes:
            text = text.replace(old, new)
        path = tmp / f"bug{k}.py"
        path.write_text(text)
        chosen.append((f"bug: {bug}", path))
    return chosen


def report(label: str, runs: list[dict[str, list[float]]]) -> None:
    def median(phase: str, k: int) -> float:
        return statistics.median(r.get(phase, [0.0, 0.0, 0.0])[k] for r in runs)

    print(f"\n{label}  (score {median('score', 0):g}; median of {len(runs)} runs)")
    print(f"  {'phase':<26} {'grader CPU':>11} {'sandbox CPU':>12} {'wall':>8}")
    for phase in PHASES:
        if any(phase in r for r in runs):
            print(f"  {phase:<26} {median(phase, 0):10.2f}s {median(phase, 1):11.2f}s {median(phase, 2):7.2f}s")
    grader = statistics.median(sum(r[p][0] for p in PHASES if p in r) for r in runs)
    sandbox = statistics.median(sum(r[p][1] for p in PHASES if p in r) for r in runs)
    print(f"  {'all (CPU: grader + sandbox)':<26} {grader:10.2f}s {sandbox:11.2f}s {median('total', 2):7.2f}s"
          f"   = {grader + sandbox:.2f} s of CPU (wall: the whole process)")
    if all("process tree" in r for r in runs):
        print(f"  {'whole process tree':<26} {median('process tree', 0):10.2f}s   of CPU, everything the run started "
              f"included (a cgroup's count)")
    else:
        print("  (whole process tree not measured: no cgroup could be made here; run as root to see it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="granularGas.py files (default: corpus variants)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="draw the cases afresh in every run (an empty cache)")
    parser.add_argument("--forked", action="store_true",
                        help="time each grading as a batch worker, after the fork server's preloads")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        from grader.commands.cli import one_thread  # loads no numpy

        one_thread()  # as the command line does
        print(json.dumps(grade_one(args.one, args.forked)))
        return
    # Byte-compiled first, as any checkout whose Python may write its bytecode has it (this machine sets
    # PYTHONDONTWRITEBYTECODE: every module edited since its last compile was compiled again in every run, 40 ms).
    for package in ("grader", "reference"):
        compileall.compile_dir(ROOT / package, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        chosen = [(str(f), f) for f in args.files] or submissions(Path(tmp))
        cache = Path(tmp) / "cache"
        os.environ["GRANULAR_CACHE_DIR"] = str(cache)
        if not args.cold:
            measure(chosen[0][1])  # the cache of drawn cases, as every grading after the first finds it
        print(machine_speed.line())
        if args.forked:
            print("as a batch worker: imports, fonts, isolation probe and sandbox self-test paid once per batch")
        for label, path in chosen:
            runs = []
            for _ in range(args.runs):
                for kept in cache.glob("*" if args.cold else "paths-*"):
                    kept.unlink()
                runs.append(measure(path, args.forked))
            failing = any("feedback animation" in r for r in runs)
            report(f"{label}{', first failing that way' if failing else ''}", runs)
            if failing:  # the searches of the last run are kept: graded again, it walks them
                report(f"{label}, failures met before", [measure(path, args.forked) for _ in range(args.runs)])
        print(machine_speed.line())

if __name__ == "__main__":
    main()
