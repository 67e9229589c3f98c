"""The theory side of reference.cooling: the two laws of the homogeneous regime and the fits of a run's trace.

Split from :mod:`reference.cooling` (which simulates; its docstring derives the laws): the functions here only
evaluate formulas and read traces (deviations from the laws, the crossover, decay exponents, an ensemble's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

DIAMETER, MASS, T0 = 1.0, 1.0, 1.0
#: The homogeneous regime checked against Haff's law: the first HOMOGENEOUS_C collisions per grain.
HOMOGENEOUS_C = 10.0
#: Largest relative deviation of E from Haff's law (in time and in collisions) allowed there, for the ensemble
#: mean of tests/test_cooling.py (and reported for a single run).
HAFF_TOLERANCE = 0.03
#: The clustering regime's window, in t/tau, over which the ensemble's exponent is fitted (the 1/t of Nie,
#: Ben-Naim and Chen would give 1).
CLUSTERING_WINDOW = (1e2, 1e4)


@dataclass(frozen=True)
class Trace:
    """Kinetic energy per grain E/N (= temperature) at times t, after c collisions per grain (grain-grain only)."""

    t: np.ndarray
    c: np.ndarray
    energy: np.ndarray
    collapsed: bool  # stopped early: contacts piled up (inelastic collapse in a cluster)


def pair_correlation(phi: float) -> float:
    """Contact value of the pair correlation of hard disks (Henderson): (1 - 7 phi/16) / (1 - phi)^2."""
    return (1.0 - 7.0 * phi / 16.0) / (1.0 - phi) ** 2


def collision_frequency(density: float, phi: float, T: float, sigma: float = DIAMETER, m: float = MASS) -> float:
    """Enskog collision frequency per grain of 2-D disks: 2 n sigma g2(phi) sqrt(pi T / m)."""
    return 2.0 * density * sigma * pair_correlation(phi) * math.sqrt(math.pi * T / m)


def haff_time(r: float, omega0: float) -> float:
    """Haff's time tau = 4 / ((1 - r^2) omega0)."""
    return 4.0 / ((1.0 - r * r) * omega0)


def haff_energy(t: np.ndarray, e0: float, tau: float) -> np.ndarray:
    """Haff's law E(t) = E0 / (1 + t/tau)^2."""
    return e0 / (1.0 + np.asarray(t) / tau) ** 2


def energy_by_collisions(c: np.ndarray, e0: float, r: float) -> np.ndarray:
    """E(c) = E0 exp(-(1 - r^2) c / 2), c collisions per grain."""
    return e0 * np.exp(-(1.0 - r * r) * np.asarray(c) / 2.0)


def analyse(trace: Trace, e0: float, tau: float, r: float) -> dict[str, Any]:
    """Deviations from the two laws in the homogeneous regime, the crossover and the decay exponents later on."""
    haff_t = haff_energy(trace.t, e0, tau)
    dev_t = trace.energy / haff_t - 1.0
    dev_c = trace.energy / energy_by_collisions(trace.c, e0, r) - 1.0
    homogeneous = trace.c <= HOMOGENEOUS_C
    away = np.nonzero(np.abs(dev_t) > HAFF_TOLERANCE)[0]
    first = int(away[0]) if len(away) else None
    late = trace.t >= trace.t[-1] / 4.0  # the last two octaves of time
    return {
        "max_deviation_time": float(np.max(np.abs(dev_t[homogeneous]))),
        "max_deviation_collisions": float(np.max(np.abs(dev_c[homogeneous]))),
        "crossover": None if first is None else {"t": float(trace.t[first]), "t_over_tau": float(trace.t[first] / tau),
                                                 "collisions_per_grain": float(trace.c[first]),
                                                 "energy_ratio_to_haff": float(trace.energy[first] / haff_t[first])},
        "late_exponent": decay_exponent(trace, late) if trace.t[-1] > 8 * tau else None,
        "decay_exponents": decade_exponents(trace, tau),
    }


def decade_exponents(trace: Trace, tau: float) -> list[dict[str, Any]]:
    """The decay exponent over each whole decade of t/tau from 1 on."""
    decades = range(int(math.log10(max(trace.t[-1] / tau, 1.0))))
    return [{"t_over_tau": [10.0**k, 10.0 ** (k + 1)],
             "exponent": decay_exponent(trace, (trace.t >= 10.0**k * tau) & (trace.t <= 10.0 ** (k + 1) * tau))}
            for k in decades]


def ensemble_exponents(traces: list[Trace], tau: float) -> dict[str, Any]:
    """Decay exponents of the ensemble mean of ln E (runs of one n, density and T0, so one tau) on a common grid of
    t/tau: per decade from 1 on, and over CLUSTERING_WINDOW (None where not every run reaches)."""
    reach = min(float(trace.t[-1]) for trace in traces) / tau
    grid = np.geomspace(1.0, max(reach, 1.0), 40 * max(1, math.ceil(math.log10(max(reach, 10.0)))))
    mean = Trace(grid * tau, np.zeros(len(grid)),
                 np.exp(np.mean([np.interp(np.log(grid * tau), np.log(trace.t[1:]), np.log(trace.energy[1:]))
                                 for trace in traces], axis=0)), any(trace.collapsed for trace in traces))
    lo, hi = CLUSTERING_WINDOW
    return {"runs": len(traces), "reached_t_over_tau": reach, "decay_exponents": decade_exponents(mean, tau),
            "clustering_window_t_over_tau": [lo, hi],
            "clustering_exponent": decay_exponent(mean, (grid >= lo) & (grid <= hi)) if reach >= hi else None,
            "t_over_tau": grid.tolist(), "energy": mean.energy.tolist()}


def decay_exponent(trace: Trace, where: np.ndarray) -> float | None:
    """-d ln E / d ln t fitted over the samples ``where`` (Haff's law: 2 for t >> tau; clustering: about 1).

    None if fewer than 3 samples fall there (no fit worth the name).
    """
    if np.count_nonzero(where) < 3:
        return None
    return float(-np.polyfit(np.log(trace.t[where]), np.log(trace.energy[where]), 1)[0])
