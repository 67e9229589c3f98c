"""How the cost of the submission grows with N: measured after the tests, rewarded by the rubric's [bonus].

The submission's ``minimum_contact_time`` and ``update`` are timed in a sandbox
of their own on standard gases (:func:`grader.spec.scenarios.random_gas`, fixed
packing, seeds drawn afresh for every call) of growing N. ``update`` is given a dt that holds exactly
``EVENTS`` contacts (found by the reference in the grader's process), so its
CPU divided by the searches it must make is the cost per event. The exponent
is the slope of log(cost) against log(N) (least squares) over the largest
``FIT_SIZES`` sizes measured: how the cost grows, not the fixed cost of a call
that flattens the small sizes (a vectorised search over all pairs fits 1.5
over N = 25 … 400, but 2 over 100 … 400).

CPU time, not wall: it is what the sandbox measures (the child's process CPU
clock, in nanoseconds), so a busy machine changes the figures less. The sizes
are swept ``ROUNDS`` times and the cheapest sweep counts per size: the first
call of a fresh process pays for warming up, and this machine's CPUs run at
half speed for seconds at a time. Every call gets a gas of its own, from a
seed drawn unpredictably (search and update apart), so no call can reuse what
an earlier one worked out nor look up answers worked out beforehand, and the
answers of every call at the largest N are checked.
N stops growing when a call times out, fails, or the measurement passes
``limits.EFFICIENCY_SECONDS``: "not measured beyond N", never a crash; a
measurement cut short earns no bonus. Only the submission's own inputs reach
its process; the reference's answers are compared here.
"""

from __future__ import annotations

import math
import os
import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from grader import spec
from grader.grading.results import Efficiency, Results
from grader.properties import oracle
from grader.sandbox.client import Sandbox, SubmissionError
from grader.spec import limits as declared
from grader.spec import tolerances
from grader.spec.limits import Limits
from grader.spec.rubric import BonusRule
from grader.spec.scenarios import Scenario, random_gas

#: The gases measured, smallest first, and their packing (their seeds are drawn afresh: gas_seed).
SIZES: tuple[int, ...] = (25, 50, 100, 200, 400)
PACKING = 0.15
#: Contacts inside the dt given to each timed update.
EVENTS = 8
#: The note of a measurement that earns no bonus, being made without a pid namespace (see measure).
NO_PID_NAMESPACE = "measured, but no bonus: without bubblewrap's pid namespace an orphan's CPU can leave the count"
#: Nor does one whose reference is not the compiled engine: the cost bar is a multiple of the reference's cost.
NOT_COMPILED = ("measured, but no bonus: the reference engine is not compiled here (install numba: pip install "
                "'.[fast]'), and the bonus's cost bar is a multiple of its cost")
#: Sweeps over the sizes (see measure).
ROUNDS = 3
#: The exponents are fitted over this many of the largest sizes measured.
FIT_SIZES = 3
#: The reference's timings (process_time, nanoseconds) need no long sums.
REFERENCE_REPEATS = 3
#: The functions measured: both must have passed all their tests.
MEASURED = ("minimum_contact_time", "update")


@dataclass(frozen=True)
class SearchLoad:
    """One gas for a timed ``minimum_contact_time``, and the reference's answer from rest (no previous contact)."""

    gas: Scenario
    search: tuple[float, np.ndarray]


@dataclass(frozen=True)
class Workload:
    """One gas for a timed ``update``: a dt holding exactly ``EVENTS`` contacts, the reference's answers."""

    gas: Scenario
    dt: float
    after: tuple[np.ndarray, np.ndarray, np.ndarray]  # the reference's x, v, indexOld after update(dt)


def fit_exponent(sizes: tuple[int, ...] | list[int], seconds: tuple[float, ...] | list[float]) -> float | None:
    """The slope of log(seconds) against log(sizes), least squares; None with fewer than two points."""
    pairs = [(n, s) for n, s in zip(sizes, seconds) if n > 0 and s > 0]
    if len({n for n, _ in pairs}) < 2:
        return None
    logn = np.log([n for n, _ in pairs])
    logs = np.log([s for _, s in pairs])
    return float(np.polyfit(logn, logs, 1)[0])


def growth(sizes: tuple[int, ...], seconds: tuple[float, ...] | list[float]) -> float | None:
    """The exponent over the largest FIT_SIZES of ``sizes`` (ascending) and their costs (see fit_exponent)."""
    return fit_exponent(sizes[-FIT_SIZES:], list(seconds)[-FIT_SIZES:])


def gas_seed() -> int:
    """A fresh seed for one timed call's gas, drawn unpredictably: with seeds a submission could know (the student
    kit holds the gas generator) it could work the answers out at import time and look them up when timed."""
    return secrets.randbits(32)


def search_load(n: int, seed: int) -> SearchLoad:
    """The gas of n grains and the reference's search from rest (grader side)."""
    gas = random_gas(n=n, seed=seed, packing=PACKING)
    tc, index = oracle.reference().minimum_contact_time(gas.x, gas.v, gas.R, gas.w, gas.fresh_index())
    return SearchLoad(gas, (float(tc), np.asarray(index)))


def workload(n: int, seed: int) -> Workload:
    """The gas of n grains, and the dt halfway between its EVENTS-th and next contact (reference, grader side)."""
    ref = oracle.reference()
    gas = random_gas(n=n, seed=seed, packing=PACKING)
    x, v, last, t, times = gas.x.copy(), gas.v.copy(), np.array(spec.NO_PREVIOUS_CONTACT), 0.0, []
    for _ in range(EVENTS + 1):
        tc, index = ref.minimum_contact_time(x, v, gas.R, gas.w, last)
        t += tc
        times.append(t)
        x += v * tc
        i, j = int(index[0]), int(index[1])
        if j < 0:
            v[i] += ref.contact_solve_wall(gas.w[spec.wall_number(j)], x[i], v[i], gas.r)
        else:
            dv1, dv2 = ref.contact_solve_grains(x[i], x[j], v[i], v[j], gas.m[i], gas.m[j], gas.r)
            v[i] += dv1
            v[j] += dv2
        last = np.array(index)
    dt = 0.5 * (times[EVENTS - 1] + times[EVENTS])
    x, v, old = gas.x.copy(), gas.v.copy(), gas.fresh_index()
    ref.update(x, v, gas.R, gas.m, gas.w, old, gas.r, dt, 0.0)
    return Workload(gas, dt, (x, v, old))


def search_args(load: SearchLoad) -> tuple:
    g = load.gas
    return g.x, g.v, g.R, g.w, g.fresh_index()


def update_args(load: Workload) -> tuple:
    g = load.gas
    return g.x, g.v, g.R, g.m, g.w, g.fresh_index(), g.r, load.dt, 0.0


def reference_seconds(load: Workload) -> float:
    """The reference's CPU per event of update on this workload (grader's process, process_time): the same
    implementation at every N (oracle.timed_update)."""
    update = oracle.timed_update()
    best = math.inf
    for _ in range(REFERENCE_REPEATS + 1):  # the first run warms caches (and a JIT, if any) up: not counted
        x, v, old = load.gas.x.copy(), load.gas.v.copy(), load.gas.fresh_index()
        started = time.process_time()
        update(x, v, load.gas.R, load.gas.m, load.gas.w, old, load.gas.r, load.dt, 0.0)
        best = min(best, time.process_time() - started) if _ else math.inf
    return best / (EVENTS + 1)


class _Stop(Exception):
    """The measurement ends here; the message says why."""


_HALF_TICK = 0.5 / os.sysconf("SC_CLK_TCK")


def _timed(sandbox: Sandbox, name: str, args: tuple, spent: list[float]) -> tuple[float, object]:
    """The CPU of one call of ``name(*args)`` and its Returned."""
    try:
        returned = sandbox.call(name, *args, record=0)  # recording helper calls would be timed too
    except SubmissionError as exc:
        raise _Stop(f"{name} stopped ({str(exc)[:120]})") from None
    spent[0] += returned.cpu_seconds
    if spent[0] > declared.EFFICIENCY_SECONDS:
        raise _Stop(f"the measurement passed its {declared.EFFICIENCY_SECONDS:g} s of CPU")
    # Where the process clock cannot be read, CPU comes in 10 ms ticks and a call may read 0: the exponent needs a
    # positive cost, so 0 counts as half a tick.
    return returned.cpu_seconds if returned.cpu_seconds > 0 else _HALF_TICK, returned


def _search_right(load: SearchLoad, returned: object) -> bool:
    """The submission's search on this gas equals the reference's (time within tolerance, same pair)."""
    try:
        tc, index = returned.value.items  # type: ignore[attr-defined]
        if not tolerances.close(tc.array, load.search[0], abs(load.search[0]) + 1.0, tolerances.TIME_RTOL):
            return False
        return sorted(index.array.astype(int).tolist()) == sorted(load.search[1].astype(int).tolist())
    except (AttributeError, ValueError, TypeError, IndexError):
        return False


def _update_right(load: Workload, returned: object) -> bool:
    """The submission's state after update equals the reference's (the state tolerance, relative to the box)."""
    try:
        x, v, old = (returned.args_after[k].array for k in (0, 1, 5))  # type: ignore[attr-defined]
    except (AttributeError, ValueError, TypeError, IndexError):
        return False
    rx, rv, rold = load.after
    speed = float(np.max(np.abs(rv))) + 1.0
    return (tolerances.close(x, rx, 1.0, tolerances.STATE_RTOL) and tolerances.close(v, rv, speed,
                                                                                    tolerances.STATE_RTOL)
            and sorted(np.asarray(old).astype(int).tolist()) == sorted(np.asarray(rold).astype(int).tolist()))


@dataclass(frozen=True)
class _Sweep:
    """One sweep's timing at one N: the search's CPU, the update's CPU per event, whether both answers were right,
    and the update's workload (the reference is timed on it afterwards)."""

    search: float
    event: float
    right: bool
    load: Workload


def _sweep(sandbox: Sandbox, n: int, spent: list[float]) -> _Sweep:
    """One sweep's timing at N = n, each call on a gas of its own."""
    searched_on, load = search_load(n, gas_seed()), workload(n, gas_seed())
    search, searched = _timed(sandbox, "minimum_contact_time", search_args(searched_on), spent)
    update, updated = _timed(sandbox, "update", update_args(load), spent)
    return _Sweep(search, update / (EVENTS + 1), _search_right(searched_on, searched) and _update_right(load, updated),
                  load)


def measure(path: str | Path, limits: Limits = Limits(), hide: tuple[Path, ...] = (),
            sizes: tuple[int, ...] = SIZES) -> Efficiency:
    """Time the submission at ``path`` on gases of the given sizes; an Efficiency (note says what was not done).

    The first sweep grows N until a call stops; ``ROUNDS - 1`` more sweeps time the sizes reached again and the
    cheapest sweep counts per size: this machine's CPUs run at half speed for seconds at a time, and a sweep that
    met a slow spell at one size only would tilt the exponent.
    """
    if not oracle.available():
        return Efficiency(note="not measured: the reference solution is not installed")
    box = replace(limits, call_seconds=min(limits.call_seconds, declared.EFFICIENCY_CALL_SECONDS),
                  function_seconds=declared.EFFICIENCY_SECONDS)
    sweeps: list[list[_Sweep]] = []  # per size reached, its sweeps
    note, spent = "", [0.0]
    with Sandbox(path, box, hide) as sandbox:
        if sandbox.import_failure is not None:
            return Efficiency(note="not measured: granularGas.py could not be imported")
        if not sandbox.box.own_pid_namespace:
            # An orphan reaped by the host's init takes its CPU out of the count, and the next calls' CPU is not
            # counted until the count is back (processes.CpuMeter never goes backwards): a cheap sweep for free.
            note = NO_PID_NAMESPACE
        elif not oracle.engine_compiled():
            # The Python reference is some 250 times slower at N = 400: a bar of 100 times it lets padding through.
            note = NOT_COMPILED
        for n in sizes:
            try:
                sweeps.append([_sweep(sandbox, n, spent)])
            except _Stop as stop:
                cut = f"not measured beyond N = {sizes[len(sweeps) - 1]}: {stop}" if sweeps else f"not measured: {stop}"
                note = f"{cut}; {note}" if note and sweeps else cut
                break
        ns = sizes[:len(sweeps)]
        try:
            for _ in range(1, ROUNDS):
                for n, done in zip(ns, sweeps):
                    done.append(_sweep(sandbox, n, spent))
        except _Stop as stop:
            # The sizes stay measured and the sweeps done so far count, but fail closed: no bonus on a measurement
            # whose later sweep stopped (a call that passed its limit there may have answered nothing).
            note = f"{note}; a later sweep stopped: {stop}" if note else f"measured, but no bonus: a later sweep " \
                                                                        f"stopped: {stop}"
    search = [min(one.search for one in done) for done in sweeps]
    event = [min(one.event for one in done) for done in sweeps]
    # The reference is timed once the submission's processes are gone or stopped (they could otherwise load the
    # machine while it runs; the searches' box kept for the animation is stopped: runner._searched), on the same
    # gases, the cheapest per size.
    reference = [min(reference_seconds(one.load) for one in done) for done in sweeps]
    right = bool(sweeps) and all(one.right for one in sweeps[-1])
    return Efficiency(ns, tuple(event), tuple(search), tuple(reference), growth(ns, event), growth(ns, search),
                      growth(ns, reference), right, note)


def with_bonus(efficiency: Efficiency, rule: BonusRule | None) -> Efficiency:
    """The efficiency with the bonus it earns under ``rule`` (0 without a rule, a measure, or right answers)."""
    if rule is None:
        return replace(efficiency, bonus=0.0, bonus_max=0.0)
    # A measurement cut short (its note says why) earns nothing: a flat fit on the small sizes only would reward a
    # code too slow to reach the large ones, and where it is cut depends on the machine's load.
    # The exponent alone can be had by burning CPU at the smaller sizes (a pad growing like N): CPU time cannot tell
    # work from waste, so the cost at the largest N must also be near the reference's.
    earned = (efficiency.exponent is not None and efficiency.right_at_largest and not efficiency.note
              and efficiency.exponent < rule.exponent_below and bool(efficiency.event_seconds)
              and bool(efficiency.reference_seconds)
              and efficiency.event_seconds[-1] <= rule.cost_ratio_below * efficiency.reference_seconds[-1])
    return replace(efficiency, bonus=rule.points if earned else 0.0, bonus_max=rule.points)


def eligible(results: Results) -> str:
    """Why the efficiency is not measured for these results ("" when it is): the measured functions must pass."""
    for name in MEASURED:
        item = results.item(name)
        if item.max_score <= 0 or item.score < item.max_score:
            return f"not measured: {name} did not pass all its tests"
    return ""


def assess(path: str | Path, results: Results, limits: Limits = Limits(), hide: tuple[Path, ...] = (),
           rule: BonusRule | None = None) -> Results:
    """The results with their efficiency (and bonus): measured only when the measured functions passed."""
    why = eligible(results)
    efficiency = Efficiency(note=why) if why else measure(path, limits, hide)
    return results.with_efficiency(with_bonus(efficiency, rule))


__all__ = ["SIZES", "EVENTS", "FIT_SIZES", "ROUNDS", "BonusRule", "SearchLoad", "Workload", "fit_exponent", "growth",
           "gas_seed", "search_load", "workload", "measure", "with_bonus", "eligible", "assess"]
