"""The reference's gas, precomputed: the standard scenarios' trajectories as data files.

The student kit cannot ship the reference solution, so its animations and
feedback pages draw the reference's side from these files: positions and
velocities at the frame times (float64) of each standard scenario, written
by the reference on an instructor's install:

    python -m grader.animation.reference_runs --write     # rewrite the files
    python -m grader.animation.reference_runs             # check them against the reference

A file serves a scenario only when its initial state, walls, restitution
and frame interval are exactly those stored, and its duration is at most the
stored one (a shorter run is the stored run's first frames). Any other
scenario has no stored reference (None). Nothing here reaches the
submission's process: the data is drawn and compared in the grader's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from grader.animation.trajectories import Trajectory, record, reference_step
from grader.spec import scenarios
from grader.spec.scenarios import Scenario

#: Where the data files live (one ``<scenario>.npz`` each); the kit copies them.
DATA_DIR = Path(__file__).resolve().parent / "reference_data"
#: The stored gas: the one the feedback pages animate (grader.animation.render.first_failing).
GAS_GRAINS, GAS_SEED = 30, 0
#: Stored and recomputed runs agree to this (absolute, in box units): they come from the same code.
AGREEMENT = 1e-9
_INPUTS = ("x", "v", "R", "m", "w")


def standard() -> list[Scenario]:
    """The standard scenarios at their default parameters, full duration (gas: 30 grains, seed 0)."""
    return [scenarios.build(name, **({"n": GAS_GRAINS, "seed": GAS_SEED} if name == "gas" else {}))
            for name in ("single", "head_on", "unequal", "c12", "dem", "gas")]


def path_of(name: str) -> Path:
    return DATA_DIR / f"{name}.npz"


def _matches(data: np.lib.npyio.NpzFile, chosen: Scenario) -> bool:
    """The stored run starts from the chosen scenario's state and steps like it."""
    if any(data[key].shape != getattr(chosen, key).shape for key in _INPUTS):
        return False
    return (all(np.array_equal(data[key], getattr(chosen, key)) for key in _INPUTS)
            and float(data["r"]) == chosen.r and float(data["dt"]) == chosen.dt)


def stored(chosen: Scenario, data_dir: Path = DATA_DIR) -> Trajectory | None:
    """The reference's run of the chosen scenario from the data files (None: not stored)."""
    path = data_dir / f"{chosen.name}.npz"
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        if not _matches(data, chosen):
            return None
        frames = int(round(chosen.duration / chosen.dt)) + 1
        if frames > len(data["times"]):
            return None
        return Trajectory(data["times"][:frames].copy(), data["positions"][:frames].copy(),
                          data["velocities"][:frames].copy(), chosen.m.copy())


def write(data_dir: Path = DATA_DIR) -> list[Path]:
    """Run the reference on every standard scenario and store the runs (needs the reference)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for chosen in standard():
        run = record(reference_step(chosen, exact=True), chosen)
        if run.error:
            raise RuntimeError(f"the reference stopped on {chosen.name}: {run.error}")
        target = data_dir / f"{chosen.name}.npz"
        np.savez_compressed(target, x=chosen.x, v=chosen.v, R=chosen.R, m=chosen.m, w=chosen.w,
                            r=np.float64(chosen.r), dt=np.float64(chosen.dt), times=run.times,
                            positions=run.positions, velocities=run.velocities)
        written.append(target)
    return written


def disagreement(chosen: Scenario, data_dir: Path = DATA_DIR) -> str:
    """Why the stored run of a standard scenario is not the reference's ('' when it is)."""
    kept = stored(chosen, data_dir)
    if kept is None:
        return f"{path_of(chosen.name).name}: missing, or stored for other initial conditions"
    fresh = record(reference_step(chosen, exact=True), chosen)
    if fresh.positions.shape != kept.positions.shape:
        return f"{chosen.name}: {len(kept.times)} frames stored, the reference makes {len(fresh.times)}"
    gap = max(float(np.max(np.abs(fresh.positions - kept.positions))),
              float(np.max(np.abs(fresh.velocities - kept.velocities))))
    return f"{chosen.name}: stored and recomputed differ by {gap:.3g} > {AGREEMENT:g}" if gap > AGREEMENT else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the data files from the reference")
    args = parser.parse_args(argv)
    from grader.properties import oracle

    if not oracle.available():
        print("the reference solution is not installed: the stored runs can be neither written nor checked",
              file=sys.stderr)
        return 2
    if args.write:
        for target in write():
            print(f"wrote {target} ({target.stat().st_size / 1e3:.0f} kB)")
        return 0
    problems = [p for p in map(disagreement, standard()) if p]
    print("\n".join(problems) or f"the stored runs in {DATA_DIR} are the reference's")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
