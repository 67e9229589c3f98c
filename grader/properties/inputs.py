"""The inputs the public properties are checked on: plain dataclasses, built by grader.properties.strategies.

Apart from the strategies on purpose: grading a file that passes every test replays kept cases (unpickled into
these classes) and checks them, and needs no Hypothesis (see grader.properties.lazy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def unit(angle: float) -> np.ndarray:
    return np.array([np.cos(angle), np.sin(angle)])


def perp(u: np.ndarray) -> np.ndarray:
    return np.array([-u[1], u[0]])


@dataclass(frozen=True)
class GrainPair:
    """Two grains; ``expected`` is the contact time (NO_CONTACT cases: None)."""

    x1: np.ndarray
    x2: np.ndarray
    v1: np.ndarray
    v2: np.ndarray
    R1: float
    R2: float
    expected: float | None
    kind: str = "contact"

    @property
    def args(self) -> tuple:
        return (self.x1, self.x2, self.v1, self.v2, self.R1, self.R2)


@dataclass(frozen=True)
class WallCase:
    """A grain and a wall line; ``expected`` is the contact time or None."""

    w: np.ndarray
    x1: np.ndarray
    v1: np.ndarray
    R1: float
    expected: float | None
    kind: str = "contact"

    @property
    def args(self) -> tuple:
        return (self.w, self.x1, self.v1, self.R1)


@dataclass(frozen=True)
class GrainContact:
    """Two grains at contact (any separation direction) about to collide."""

    x1: np.ndarray
    x2: np.ndarray
    v1: np.ndarray
    v2: np.ndarray
    m1: float
    m2: float
    r: float

    @property
    def args(self) -> tuple:
        return (self.x1, self.x2, self.v1, self.v2, self.m1, self.m2, self.r)


@dataclass(frozen=True)
class WallContact:
    wall: np.ndarray
    x1: np.ndarray
    v1: np.ndarray
    r: float

    @property
    def args(self) -> tuple:
        return (self.wall, self.x1, self.v1, self.r)
