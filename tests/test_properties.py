"""The property suite on its own, without a sandbox: the reference passes every
property; do-nothing files score at most 5/100; each single-clause bug fails
the property that should catch it, with a clean, bounded message.

A DirectCaller calls a module's functions in this process, on deep copies of
the arguments, and hands back what the sandbox would: the result and the
arguments after the call, through the wire format (child.encode,
wire.decode_value).
"""

from __future__ import annotations

import copy
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample, Unsatisfiable

from grader import spec
from grader.properties import contacts as contact_props
from grader.properties import hidden as hidden_props
from grader.properties import physics as physics_props
from grader.properties import system as system_props
from grader.properties.property import MESSAGE_CAP, Discard, Property, PropertyFailed
from grader.sandbox import child, wire
from grader.sandbox.calls import Returned
from grader.spec import rubric
from grader.spec.scenarios import channel

try:
    from grader.sandbox.client import CallRaised, SubmissionError
except ImportError:  # the sandbox module being rewritten must not stop these tests
    class SubmissionError(Exception):  # type: ignore[no-redef]
        pass

    class CallRaised(SubmissionError):  # type: ignore[no-redef]
        def __init__(self, message: str, error: str):
            super().__init__(message)
            self.error = error

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_FILE = ROOT / "reference" / "granularGas.py"
PUBLIC = contact_props.PROPERTIES + system_props.PROPERTIES + physics_props.PROPERTIES
ALL = PUBLIC + hidden_props.PROPERTIES


def wire_value(value: Any) -> Any:
    return wire.decode_value(child.encode(value))


#: Python's default recursion limit, which the sandbox's child keeps.
CHILD_RECURSION_LIMIT = 1000


def stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


class DirectCaller:
    """Calls a module's functions directly; what comes back is what the sandbox would give."""

    def __init__(self, module: ModuleType):
        self.module = module

    def call(self, name: str, *args: Any) -> Returned:
        function = getattr(self.module, name, None)
        if function is None:
            raise SubmissionError(f"{name} is missing")
        args = copy.deepcopy(args)
        # The sandbox's child runs a call with Python's default recursion limit above a few frames of its own;
        # Hypothesis raises the limit around a test, which would let a recursive update through here.
        saved = sys.getrecursionlimit()
        sys.setrecursionlimit(stack_depth() + CHILD_RECURSION_LIMIT)
        try:
            result = function(*args)
        except Exception as exc:  # noqa: BLE001 - the module under test may raise anything
            raise CallRaised(f"{name} raised {type(exc).__name__}: {str(exc)[:200]}", type(exc).__name__) from None
        finally:
            sys.setrecursionlimit(saved)
        return Returned(value=wire_value(result), args_after=tuple(wire_value(a) for a in args))


def load_file(path: Path, name: str) -> ModuleType:
    spec_ = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    return module


def load_source(name: str, source: str) -> ModuleType:
    module = ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def reference_with(**overrides: Any) -> ModuleType:
    """A fresh copy of the reference file with some functions replaced (its update calls the replacements)."""
    module = load_file(REFERENCE_FILE, f"ref_variant_{len(overrides)}_{id(overrides)}")
    for name, function in overrides.items():
        if callable(function) and getattr(function, "__code__", None) is not None:
            function = type(function)(function.__code__, module.__dict__, name, function.__defaults__,
                                      function.__closure__)
        setattr(module, name, function)
    return module


def check_settings(examples: int, shrink: bool) -> settings:
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), phases=phases, report_multiple_bugs=False)


def first_failure(prop: Property, caller: DirectCaller, shrink: bool = False) -> str | None:
    """The message of a failing example of ``prop``, or None when it holds (as the runner searches)."""

    def fails(case: Any) -> bool:
        try:
            prop.verify(caller, case)
        except (PropertyFailed, SubmissionError):
            return True
        except Discard:
            return False
        return False

    try:
        case = find(prop.strategy, fails, settings=check_settings(prop.examples, shrink))
    except (NoSuchExample, Unsatisfiable):
        return None
    try:
        prop.verify(caller, case)
    except (PropertyFailed, SubmissionError) as exc:
        return str(exc)
    return "not reproducible"


def score(module: ModuleType) -> tuple[float, list[str]]:
    """Default-rubric score over the public and hidden properties, and the properties passed."""
    points = rubric.default_points()
    per_item = {name: sum(p.item == name for p in ALL) for name in spec.ITEM_NAMES}
    caller, total, passed = DirectCaller(module), 0.0, []
    for prop in ALL:
        if first_failure(prop, caller) is None:
            total += points[prop.item] / per_item[prop.item]
            passed.append(prop.id)
    return total, passed


# -- the reference passes everything -------------------------------------------

REFERENCE = load_file(REFERENCE_FILE, "reference_under_test")


@pytest.mark.parametrize("prop", ALL, ids=[p.id + (" (hidden)" if p.hidden else "") for p in ALL])
def test_reference_passes(prop: Property) -> None:
    assert first_failure(prop, DirectCaller(REFERENCE)) is None


def test_busy_channel_makes_more_contacts_than_promised_and_the_reference_ends_where_the_closed_form_says() -> None:
    counts = {"n": 0}

    def counting(function):
        def counted(*args):
            counts["n"] += 1
            return function(*args)
        return counted

    module = reference_with()
    module.contact_solve_wall = counting(module.contact_solve_wall)
    module.contact_solve_grains = counting(module.contact_solve_grains)
    for seed in system_props.CHANNEL_SEEDS:
        gas = channel(system_props.CHANNEL_GRAINS, seed, system_props.CHANNEL_GAP)
        x, v, index = gas.x.copy(), gas.v.copy(), np.array([-1, -1])
        counts["n"] = 0
        module.update(x, v, gas.R, gas.m, gas.w, index, gas.r, system_props.CHANNEL_DT, 0.0)
        xe, ve, gap = system_props.channel_end_state(gas, system_props.CHANNEL_DT)
        assert counts["n"] > system_props.CHANNEL_CONTACTS > sys.getrecursionlimit()
        assert gap > 1e-4  # no tie at the end: the closed form's velocities are unambiguous
        assert np.allclose(x, xe, rtol=0, atol=1e-9) and np.allclose(v, ve, rtol=0, atol=1e-9)


# -- do-nothing files score at most 5 -------------------------------------------

SIX = ("contact_time_grains(x1, x2, v1, v2, R1, R2)", "contact_time_walls(w, x1, v1, R1)",
       "minimum_contact_time(x, v, R, w, indexOld)", "contact_solve_wall(wall, x1, v1, r)",
       "contact_solve_grains(x1, x2, v1, v2, m1, m2, r)", "update(x, v, R, m, w, indexOld, r, dt, t)")


def six(*bodies: str) -> str:
    head = "import sys\nimport numpy as np\n\n"
    return head + "\n".join(f"def {sig}:\n    {body}\n" for sig, body in zip(SIX, bodies, strict=True))


MAX = "return sys.float_info.max"
TRIVIAL = {
    "pass": six(*["pass"] * 6),
    "constants": six(MAX, MAX, "return sys.float_info.max, np.array([0, 1])", "return np.zeros(2)",
                     "return np.zeros(2), np.zeros(2)", "pass"),
    "free flight": six(MAX, MAX, "return sys.float_info.max, np.array([-1, -1])", "return np.zeros(2)",
                       "return np.zeros(2), np.zeros(2)", "x += v * dt"),
    "inputs": six("return R1", "return R1", "return R[0], indexOld", "return v1", "return v1, v2", "return x"),
    "zeros": six("return 0.0", "return 0.0", "return 0.0, np.array([0, 1])", "return -v1",
                 "return -v1, -v2", "x += v * dt\n    v *= -1"),
    # Found by a red-team review: grains that barely move break no rule of a gas (7.5 points with the DEM pair's
    # contact time as a constant, before update had to fly free grains by v dt and the pair was also asked earlier).
    "jitter": six("return 0.5", *["raise NotImplementedError"] * 4, "x += 1e-9 * v"),
    # A later review: velocities nudged by an ulp, or reversed, so that no grain seemed to fly freely (5 points).
    "ulp": six(*["raise NotImplementedError"] * 5, "x += 1e-9 * v * dt\n    v[:] = np.nextafter(v, 0.0)"),
    "flip": six(*["raise NotImplementedError"] * 5, "x += 1e-9 * v * dt\n    v *= -1.0"),
}


@pytest.mark.parametrize("name", TRIVIAL)
def test_trivial_files_score_at_most_5(name: str) -> None:
    total, passed = score(load_source(f"trivial_{name.replace(' ', '_')}", TRIVIAL[name]))
    assert total <= 5, f"{name} scores {total:.1f}/100, passing {passed}"
    if name in ("jitter", "ulp", "flip"):  # barely moving grains: no rule of a gas may hold for them
        assert not any("gas physics" in p for p in passed), passed


# -- single-clause bugs fail the property that should catch them -----------------

def inf_along_walls(w, x1, v1, R1):
    t = w[1] - w[0]
    if float(v1 @ np.array([-t[1], t[0]])) == 0.0:
        return math.inf
    return contact_time_walls_ref(w, x1, v1, R1)  # noqa: F821 - bound in the module copy


def inf_when_no_contact(x1, x2, v1, v2, R1, R2):
    tc = contact_time_grains_ref(x1, x2, v1, v2, R1, R2)  # noqa: F821
    return math.inf if tc == sys.float_info.max else tc


def index_as(entries):
    def minimum(x, v, R, w, indexOld):
        tc, index = minimum_contact_time_ref(x, v, R, w, indexOld)  # noqa: F821
        return tc, np.array(entries(index), dtype=float)
    return minimum


def update_stopping_after_1000(x, v, R, m, w, indexOld, r, dt, t):
    elapsed = 0.0
    for _ in range(1000):
        tc, index = minimum_contact_time(x, v, R, w, indexOld)  # noqa: F821
        if tc > dt - elapsed:
            break
        x += v * tc
        elapsed += tc
        i, j = int(index[0]), int(index[1])
        if j < 0:
            v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)  # noqa: F821
        else:
            dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)  # noqa: F821
            v[i] += dv1
            v[j] += dv2
        indexOld[0], indexOld[1] = i, j
    x += v * (dt - elapsed)


def update_recursive(x, v, R, m, w, indexOld, r, dt, t):
    tc, index = minimum_contact_time(x, v, R, w, indexOld)  # noqa: F821
    if tc > dt:
        x += v * dt
        return
    x += v * tc
    i, j = int(index[0]), int(index[1])
    if j < 0:
        v[i] += contact_solve_wall(w[-(j + 1)], x[i], v[i], r)  # noqa: F821
    else:
        dv1, dv2 = contact_solve_grains(x[i], x[j], v[i], v[j], m[i], m[j], r)  # noqa: F821
        v[i] += dv1
        v[j] += dv2
    indexOld[:] = index
    update(x, v, R, m, w, indexOld, r, dt - tc, t + tc)  # noqa: F821 - the module's own update


def equal_masses(x1, x2, v1, v2, m1, m2, r):
    return contact_solve_grains_ref(x1, x2, v1, v2, 1.0, 1.0, r)  # noqa: F821


def mutating_bounce(wall, x1, v1, r):
    dv = contact_solve_wall_ref(wall, x1, v1, r)  # noqa: F821
    v1 += dv
    return dv


def with_refs(**overrides: Any) -> ModuleType:
    """The reference with overrides; each override can reach the original as <name>_ref."""
    module = reference_with(**overrides)
    for name in spec.FUNCTION_NAMES:
        setattr(module, f"{name}_ref", getattr(REFERENCE, name))
    return module


def returning(name: str, value: Any):
    def function(*args):
        return value
    function.__name__ = name
    return function


BUGS = {
    "inf along a wall": (dict(contact_time_walls=inf_along_walls), "contact_time_walls: no contact",
                         "Not inf"),
    "inf for no contact": (dict(contact_time_grains=inf_when_no_contact), "contact_time_grains: no contact",
                           "Not inf"),
    "float index": (dict(minimum_contact_time=index_as(lambda i: i)), "minimum_contact_time: earliest contact",
                    "integer"),
    "[inf, 0] index": (dict(minimum_contact_time=index_as(lambda i: [math.inf, 0])),
                       "minimum_contact_time: earliest contact", "integer"),
    "nan index": (dict(minimum_contact_time=index_as(lambda i: [math.nan, 1e300])),
                  "minimum_contact_time: excludes indexOld", "integer"),
    "huge tc": (dict(minimum_contact_time=returning("m", (1e300, np.array([0, 1])))),
                "minimum_contact_time: earliest contact", "away from touching"),
    "int64 index out of range": (dict(minimum_contact_time=returning("m", (0.5, np.array([2**62, -2**62])))),
                                 "minimum_contact_time: earliest contact", "names no contact"),
    "update stops after 1000 contacts": (dict(update=update_stopping_after_1000),
                                         "update: many contacts in one dt", "loop"),
    "recursive update": (dict(update=update_recursive), "update: many contacts in one dt", "RecursionError"),
    "equal-mass formula": (dict(contact_solve_grains=equal_masses), "contact_solve_grains: momentum", "momentum"),
    "zero increments": (dict(contact_solve_grains=returning("z", (np.zeros(2), np.zeros(2)))),
                        "contact_solve_grains: momentum", "law"),
    "zero increments (energy)": (dict(contact_solve_grains=returning("z", (np.zeros(2), np.zeros(2)))),
                                 "contact_solve_grains: energy", "energy"),
    "zero increments (swap)": (dict(contact_solve_grains=returning("z", (np.zeros(2), np.zeros(2)))),
                               "contact_solve_grains: swapping the grains", "law"),
    "nan time": (dict(contact_time_grains=returning("n", math.nan)), "contact_time_grains: contact time", "nan"),
    "negative zero": (dict(contact_time_grains=returning("z", -0.0)), "contact_time_grains: contact time",
                      "expected tc"),
    "huge time": (dict(contact_time_walls=returning("h", 1e308)), "contact_time_walls: contact time", "expected tc"),
    "wrong shape": (dict(contact_solve_wall=returning("s", np.zeros((3, 3)))), "contact_solve_wall: restitution law",
                    "shape (2,)"),
    "nan increments": (dict(contact_solve_grains=returning("n", (np.full(2, math.nan), np.zeros(2)))),
                       "contact_solve_grains: restitution law", "not finite"),
    "modifies v1": (dict(contact_solve_wall=mutating_bounce), "contact_solve_wall: restitution law", "modified"),
    "update by rebinding": (dict(update=returning("u", None)), "update: gas physics", "in place"),
}


@pytest.mark.parametrize("bug", BUGS)
def test_single_clause_bug_fails_its_property(bug: str) -> None:
    overrides, prop_id, words = BUGS[bug]
    prop = next(p for p in ALL if p.id == prop_id and not p.hidden)
    message = first_failure(prop, DirectCaller(with_refs(**overrides)), shrink=True)
    assert message is not None, f"{bug}: {prop_id} passed"
    assert words in message, message
    assert len(message) <= MESSAGE_CAP


def test_properties_need_no_stand_ins_or_sandbox() -> None:
    import dataclasses

    assert "isolated" not in {f.name for f in dataclasses.fields(Property)}
    for module in (contact_props, system_props, physics_props):
        source = Path(module.__file__).read_text()
        assert "grader.sandbox.client" not in source and "oracle" not in source and "reference.granularGas" not in source


# -- messages, numbers and the reference's contact count ---------------------------

def test_fmt_writes_numbers_as_typed_and_bounded() -> None:
    from grader.properties.readers import VALUE_CAP, fmt

    assert fmt(np.float64(1.5)) == "1.5" and fmt(np.int64(3)) == "3"
    assert fmt(sys.float_info.max) == "sys.float_info.max" and fmt(math.inf) == "inf" and fmt(-0.0) == "-0.0"
    assert fmt(np.array([1.5, math.nan])) == "[1.5, nan]"
    assert len(fmt(np.arange(100_000.0))) <= VALUE_CAP and len(fmt(list(range(10_000)))) <= VALUE_CAP
    assert fmt(wire_value((0.5, np.array([0, 1])))).startswith("tuple of 2")


def test_fail_caps_its_message() -> None:
    from grader.properties.property import fail

    with pytest.raises(PropertyFailed) as caught:
        fail("x" * 10_000)
    assert len(str(caught.value)) <= MESSAGE_CAP


def test_importing_the_suite_leaves_numpy_print_options_alone() -> None:
    import subprocess

    code = ("import numpy as np; before = np.get_printoptions(); "
            "import grader.properties.contacts, grader.properties.system, grader.properties.hidden, grader.properties.physics; "
            "assert np.get_printoptions() == before, np.get_printoptions()")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_hidden_update_finds_grain_contacts_with_the_reference_and_always_ends() -> None:
    from grader.spec.scenarios import head_on, single_grain

    gas = head_on()  # gap 0.4 closing at speed 1: the grains meet at t = 0.4
    assert not hidden_props.has_grain_contact(gas, 0.3)
    assert hidden_props.has_grain_contact(gas, 0.5)
    # One grain bouncing for ever: no grain contact, and the search gives up after its wall hits.
    assert not hidden_props.has_grain_contact(single_grain(), 1e9)


def test_wall_heights_of_all_points_are_bitwise_the_single_wall_heights() -> None:
    """check_is_earliest tests every grain against every wall at once: the same numbers as one at a time."""
    from grader.properties.geometry import wall_height, wall_heights

    rng = np.random.default_rng(7)
    for _ in range(200):
        n, k = int(rng.integers(1, 9)), int(rng.integers(1, 6))
        w = rng.normal(size=(k, 2, 2)) * rng.choice([1e-3, 1.0, 1e3])
        points = rng.normal(size=(n, 2))
        one_by_one = np.array([[wall_height(w[b], points[a]) for b in range(k)] for a in range(n)])
        assert np.array_equal(wall_heights(w, points), one_by_one)


def test_a_gas_the_reference_cannot_run_tests_nothing_instead_of_stopping_the_grader() -> None:
    """A red team's wrong update led the hidden test's shrinking to r = 0, where contacts pile up and the reference's
    update raises InelasticCollapseError: the grader stopped with a traceback, and the student got no grade. Such a
    gas tests nothing (Discard), before the submission is even called."""
    from grader.spec.scenarios import random_gas

    gas = random_gas(n=3, seed=7, packing=0.35, r=0.0)  # found by a scan: collapses within the test's 20 steps
    with pytest.raises(Discard):
        hidden_props.check_update(DirectCaller(REFERENCE), gas)
