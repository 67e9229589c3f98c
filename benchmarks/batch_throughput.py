"""Wall time and throughput of a batch of submissions on 1 and 2 jobs.

    python benchmarks/batch_throughput.py [--mix typical|hard] [--jobs 1 2] [--copies 1]

``--mix typical`` (the default) is a class that mostly did the work: of every 20 submissions, 15 correct ones
in eight styles (the corpus's correct and honest files and the sample ``ada``), 4 with one bug, and 1 with
functions not written (the sample ``ben``); the figure to quote is
submissions per hour. ``--mix hard`` holds the two correct variants of the test corpus, its 24
single-bug mutations, the five sample submissions of examples/ and hostile
ones (hangs at import and in a function, a fork bomb, a memory bomb, an
output flood, os._exit, killing its parent, the network, an unpickling bomb,
a float that equals anything): 41 files. Each file is graded from scratch (--force) by a worker forked from
the batch's fork server (grader.commands.batch.forkserver); what a hostile or hanging file costs (its limits) shows
in the hard mix. The batch uses a cache folder of its own: the drawn cases are warm (drawn once per grader
version), and every run starts with no kept search (grader.grading.paths), as a class's first batch does: only
failures met earlier in the same run are walked.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import machine_speed  # noqa: E402 (this folder: the script's own)

from grader.commands.batch import pool as batch  # noqa: E402
from grader.commands.batch.submissions import scan  # noqa: E402
from grader.grading import runner  # noqa: E402
from tests.test_grader_corpus import BUGS, TEXTBOOK, VECTORISED, mutate  # noqa: E402
from tests.test_hostile import hostile  # noqa: E402

HOSTILE = {
    "hang_at_import": ("while True:\n    pass\n", ""),
    "sleep_in_function": ("", "time.sleep(3600)"),
    "fork_bomb": ("", "while True:\n    os.fork()"),
    "memory_bomb": ("", "hog = [bytearray(10**8) for _ in range(100)]"),
    "flood": ("for _ in range(10**5):\n    print('x' * 100)\n", "print('y' * 10**6)"),
    "exit_at_import": ("os._exit(0)\n", ""),
    "kill_parent": ("", "os.kill(os.getppid(), 9)\nos.kill(-1, 9)"),
    "network": ("import socket\ntry:\n    socket.create_connection(('pypi.org', 443), timeout=2)\n"
                "except OSError:\n    pass\n", ""),
    "unpickle_bomb": ("class Bomb:\n    def __reduce__(self):\n        return (os.system, ('true',))\n",
                      "return Bomb()"),
    "liar_float": ("class Liar(float):\n    __eq__ = lambda s, o: True\n", "return Liar(1.0)"),
}


#: The correct files of a typical class: every honest style of the corpus, and the sample ada.
TYPICAL_CORRECT = [TEXTBOOK, VECTORISED, *sorted((ROOT / "tests" / "submissions").glob("honest_*.py")),
                   ROOT / "examples" / "submissions" / "ada" / "granularGas.py"]
BEN = ROOT / "examples" / "submissions" / "ben.py"


def build_typical(folder: Path, copies: int) -> int:
    """copies x 20 files: 15 correct, 4 with one bug, 1 with functions not written."""
    for copy in range(copies):
        for k in range(15):
            source = TYPICAL_CORRECT[(15 * copy + k) % len(TYPICAL_CORRECT)]
            (folder / f"correct_{copy}_{k:02d}.py").write_text(source.read_text())
        for k in range(4):
            _, source, _, changes = BUGS[(4 * copy + k) * 5 % len(BUGS)]
            mutate(folder, source, changes, name=f"bug_{copy}_{k}.py")
        (folder / f"unwritten_{copy}.py").write_text(BEN.read_text())
    return len(list(folder.glob("*.py")))


def build(folder: Path, copies: int) -> int:
    for copy in range(copies):
        (folder / f"correct_textbook_{copy}.py").write_text(TEXTBOOK.read_text())
        (folder / f"correct_vectorised_{copy}.py").write_text(VECTORISED.read_text())
        for k, (_, source, _, changes) in enumerate(BUGS):
            mutate(folder, source, changes, name=f"bug{k:02d}_{copy}.py")
        for name, (at_import, in_wall) in HOSTILE.items():
            hostile(folder, at_import, in_wall, name=f"{name}_{copy}.py")
        for example in sorted((ROOT / "examples" / "submissions").iterdir()):
            source = example / "granularGas.py" if example.is_dir() else example
            (folder / f"example_{example.stem}_{copy}.py").write_text(source.read_text())
    return len(list(folder.glob("*.py")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--mix", choices=["typical", "hard"], default="typical",
                        help="a typical class (20 files a copy), or the corpus with hostile files (41 a copy)")
    parser.add_argument("--copies", type=int, default=1, help="copies of the whole set")
    parser.add_argument("--no-animations", action="store_true", help="feedback pages without animations")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        os.environ["GRANULAR_CACHE_DIR"] = str(cache)
        runner.draw_cases()
        subs = Path(tmp) / "subs"
        subs.mkdir()
        count = (build_typical if args.mix == "typical" else build)(subs, args.copies)
        print(f"{count} submissions ({args.mix} mix)")
        print(machine_speed.line())
        print(f"{'jobs':>4} {'wall s':>8} {'per hour':>9} {'median s':>9} {'max s':>7}  statuses")
        for jobs in args.jobs:
            out = Path(tmp) / f"out{jobs}"
            for kept in cache.glob("paths-*"):
                kept.unlink()
            options = batch.Options(jobs=jobs, force=True, animations=not args.no_animations)
            started = time.perf_counter()
            found = scan(subs)
            outcomes = batch.run(list(found.submissions), subs, out, options, io.StringIO(), skipped=found.skipped)
            wall = time.perf_counter() - started
            seconds = [o.results.seconds for o in outcomes if o.results] or [0.0]
            statuses: dict[str, int] = {}
            for o in outcomes:
                key = o.status.split(":")[0]
                statuses[key] = statuses.get(key, 0) + 1
            print(f"{jobs:>4} {wall:8.1f} {3600 * len(outcomes) / wall:9.0f} {statistics.median(seconds):9.2f} "
                  f"{max(seconds):7.2f}  {statuses}")
        print(machine_speed.line())


if __name__ == "__main__":
    main()
