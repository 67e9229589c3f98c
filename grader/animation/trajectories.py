"""Record a simulation frame by frame and compare two of them.

Frames are written at regular times (every ``scenario.dt``, the hand-out's
regular data writing): between two frames ``update`` jumps from contact to
contact. The student's ``update`` runs in the sandbox, the reference's in
this process; a broken student run stops at the frame it broke, with the
reason.

Shapes: positions and velocities (frames, n, 2); times, energy (frames,);
momentum (frames, 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.properties.property import PropertyFailed
from grader.properties.readers import state_after_update
from grader.sandbox.client import Sandbox, SubmissionError
from grader.spec.scenarios import Scenario
from grader.spec.tolerances import OVERLAP_RTOL, STATE_RTOL


@dataclass
class Trajectory:
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    m: np.ndarray
    #: Why the run stopped before the end (empty: it ran to the end).
    error: str = ""

    @property
    def energy(self) -> np.ndarray:
        return 0.5 * np.sum(self.m[None, :] * np.sum(self.velocities**2, axis=2), axis=1)

    @property
    def momentum(self) -> np.ndarray:
        return np.sum(self.m[None, :, None] * self.velocities, axis=1)


Step = Callable[[np.ndarray, np.ndarray, np.ndarray, float, float], tuple[np.ndarray, np.ndarray, np.ndarray]]


def record(step: Step, scenario: Scenario, frames: int | None = None) -> Trajectory:
    """Run ``step(x, v, indexOld, dt, t) -> (x, v, indexOld)`` frame after frame."""
    count = frames if frames is not None else int(round(scenario.duration / scenario.dt))
    x, v, index = scenario.x.copy(), scenario.v.copy(), scenario.fresh_index()
    times, xs, vs = [0.0], [x.copy()], [v.copy()]
    error = ""
    for k in range(count):
        try:
            x, v, index = step(x, v, index, scenario.dt, k * scenario.dt)
        except (SubmissionError, PropertyFailed) as exc:
            error = f"at t = {k * scenario.dt:.3g}: {exc}"
            break
        times.append((k + 1) * scenario.dt)
        xs.append(x.copy())
        vs.append(v.copy())
    return Trajectory(np.array(times), np.array(xs), np.array(vs), scenario.m.copy(), error)


def reference_step(scenario: Scenario, exact: bool = False) -> Step:
    """The reference's update (in this process, trusted): the oracle's (the compiled engine where numba is
    installed), or with ``exact`` the vectorised reference's on every machine (the kit's stored runs: a gas's
    trajectory amplifies round-off differences between the two to about 1e-7 over its run)."""
    from grader.properties import oracle

    update = (oracle.vectorised() if exact else oracle.reference()).update

    def step(x, v, index, dt, t):
        x, v, index = x.copy(), v.copy(), index.copy()
        update(x, v, scenario.R, scenario.m, scenario.w, index, scenario.r, dt, t)
        return x, v, index

    return step


def sandbox_step(sandbox: Sandbox, scenario: Scenario) -> Step:
    """The student's update, in the sandbox, on its own functions."""

    def step(x, v, index, dt, t):
        returned = sandbox.call("update", x, v, scenario.R, scenario.m, scenario.w, index, scenario.r, dt, t,
                               record=0)  # the animation reads no helper call: none recorded, sent or decoded
        x, v, index = state_after_update(returned, x.shape, v.shape)
        if not np.all(np.isfinite(x)) or not np.all(np.isfinite(v)):
            raise SubmissionError("update made a position or velocity infinite or NaN")
        return x.copy(), v.copy(), index.astype(int)

    return step


@dataclass(frozen=True)
class Differences:
    """Where a student's run goes wrong, frame by frame (None: never)."""

    first_divergence: int | None  # first frame away from the reference beyond tolerance
    overlaps: list[int]  # frames where two grains overlap
    outside: list[int]  # frames where a grain is outside the walls

    @property
    def any(self) -> bool:
        return self.first_divergence is not None or bool(self.overlaps) or bool(self.outside)


def overlapping(positions: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Grains overlapping another (by more than the tolerance), shape (n,) bool."""
    gap = np.linalg.norm(positions[:, None, :] - positions[None, :, :], axis=2) - (R[:, None] + R[None, :])
    np.fill_diagonal(gap, np.inf)
    return np.any(gap < -OVERLAP_RTOL * R.max(), axis=1)


def outside(positions: np.ndarray, R: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Grains crossing the box's walls, shape (n,) bool (box: the walls' bounding square)."""
    lo, hi = w.reshape(-1, 2).min(axis=0), w.reshape(-1, 2).max(axis=0)
    slack = OVERLAP_RTOL * R.max()
    return np.any((positions - R[:, None] < lo - slack) | (positions + R[:, None] > hi + slack), axis=1)


def compare(student: Trajectory, reference: Trajectory | None, scenario: Scenario) -> Differences:
    size = float(np.ptp(scenario.w.reshape(-1, 2), axis=0).max())
    first = None
    if reference is not None:
        frames = min(len(student.times), len(reference.times))
        for k in range(frames):
            if np.max(np.abs(student.positions[k] - reference.positions[k])) > STATE_RTOL * size:
                first = k
                break
    overlaps = [k for k in range(len(student.times)) if overlapping(student.positions[k], scenario.R).any()]
    out = [k for k in range(len(student.times)) if outside(student.positions[k], scenario.R, scenario.w).any()]
    return Differences(first, overlaps, out)


#: Where the reference's side of an animation came from.
COMPUTED, STORED, ABSENT = "computed", "stored", "absent"


@dataclass
class Runs:
    """The student's run beside the reference's (None: no reference run for this scenario)."""

    scenario: Scenario
    student: Trajectory
    reference: Trajectory | None
    differences: Differences
    #: COMPUTED (the reference ran here), STORED (the kit's data files) or ABSENT.
    reference_source: str = COMPUTED

    @property
    def heading(self) -> str:
        """What a page or a figure calls this animation."""
        if self.reference is not None:
            return "Your gas next to the reference"
        return f"Your gas alone: the reference's run of this {self.scenario.name} scenario is not in the kit"

    def stopped(self) -> str:
        """Why and when the student's run stopped early ('' when it ran to the end)."""
        if not self.student.error:
            return ""
        shown = len(self.student.times)
        return (f"your update stopped {self.student.error} \N{EM DASH} the animation shows {shown} "
                f"frame{'s' if shown != 1 else ''}")

    def summary(self) -> dict:
        """What the feedback page says about this animation."""
        def at(frame: int | None) -> float | None:
            return None if frame is None else float(self.student.times[frame])

        d = self.differences
        return {"scenario": self.scenario.name, "first_divergence_t": at(d.first_divergence),
                "first_overlap_t": at(d.overlaps[0] if d.overlaps else None),
                "first_outside_t": at(d.outside[0] if d.outside else None), "error": self.student.error,
                "reference": self.reference_source if self.reference is not None else ABSENT,
                "heading": self.heading}
