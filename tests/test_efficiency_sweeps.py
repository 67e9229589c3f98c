"""The efficiency measure's sweeps, and attacks on it: each timed call on a gas of its own, drawn afresh; the
cheapest sweep; no bonus without a pid namespace, for remembered answers or for CPU burnt at the smaller sizes."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import pytest

from grader.grading import efficiency
from grader.properties import oracle
from grader.reports import efficiency_view
from grader.sandbox import isolation
from grader.sandbox.client import SubmissionError
from grader.spec import limits as declared
from grader.spec import rubric

SUBMISSIONS = Path(__file__).parent / "submissions"
needs_reference = pytest.mark.skipif(not oracle.available(), reason="the reference solution is not installed")


class _Recorder:
    """A stand-in sandbox that keeps the gas of every call (its x) and charges N^2 microseconds."""

    def __init__(self, own_pid_namespace: bool = True) -> None:
        self.gases: list[bytes] = []
        self.import_failure = None
        self.box = types.SimpleNamespace(own_pid_namespace=own_pid_namespace)

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def call(self, name: str, *args: object, record: int = 0) -> object:
        self.gases.append(bytes(args[0]))  # type: ignore[arg-type]
        return types.SimpleNamespace(cpu_seconds=1e-6 * len(args[0]) ** 2, value=None, args_after=())  # type: ignore


@needs_reference
def test_every_timed_call_gets_a_gas_of_its_own(monkeypatch: pytest.MonkeyPatch):
    # Repeating a call's inputs would pay a submission that remembers its answers (the cheapest sweep counts), and
    # a search on the update's gas could work the update out beforehand and be timed apart from it.
    fake = _Recorder()
    monkeypatch.setattr(efficiency, "Sandbox", lambda *args, **kwargs: fake)
    measured = efficiency.measure("granularGas.py", sizes=(25, 50, 100))
    assert measured.sizes == (25, 50, 100)
    assert len(fake.gases) == 2 * 3 * efficiency.ROUNDS
    assert len(set(fake.gases)) == len(fake.gases)
    # Nor are they the same from one measurement to the next: fixed seeds let a submission that copies the kit's
    # gas generator work the answers out at import time (a helper's attack fitted 0.8 so, and earned the bonus).
    again = _Recorder()
    monkeypatch.setattr(efficiency, "Sandbox", lambda *args, **kwargs: again)
    efficiency.measure("granularGas.py", sizes=(25, 50, 100))
    assert not set(again.gases) & set(fake.gases)


@needs_reference
def test_without_a_pid_namespace_the_cost_is_shown_but_earns_no_bonus(monkeypatch: pytest.MonkeyPatch):
    # There the host's init reaps an orphan, whose CPU then leaves the count: the calls after it look cheap.
    monkeypatch.setattr(efficiency, "Sandbox", lambda *args, **kwargs: _Recorder(own_pid_namespace=False))
    measured = efficiency.measure("granularGas.py", sizes=(25, 50, 100))
    assert measured.exponent == pytest.approx(2.0) and measured.note == efficiency.NO_PID_NAMESPACE
    fast = dataclasses.replace(measured, exponent=1.0, right_at_largest=True, event_seconds=measured.reference_seconds)
    assert efficiency.with_bonus(fast, rubric.BonusRule()).bonus == 0
    assert efficiency.with_bonus(dataclasses.replace(fast, note=""), rubric.BonusRule()).bonus > 0
    assert "no bonus" in efficiency_view.line(measured)


def test_a_box_knows_whether_its_child_has_a_pid_namespace_of_its_own(tmp_path):
    from grader.sandbox import isolation

    for mode in isolation.Mode:  # a plain box cannot start here (the interpreter is root's): the rule, by mode
        box = object.__new__(isolation.Box)
        box.mode = mode
        assert box.own_pid_namespace == mode.name.startswith("BWRAP"), mode
    if not any(p.startswith("own process namespace") for p in isolation.probe().protections):
        pytest.skip("bubblewrap cannot start here")
    source = tmp_path / "granularGas.py"
    source.write_text("")
    boxed = isolation.Box(source, source, declared.Limits())
    try:
        assert boxed.own_pid_namespace
    finally:
        boxed.close()


@needs_reference
def test_without_the_compiled_engine_the_cost_is_shown_but_earns_no_bonus(monkeypatch: pytest.MonkeyPatch):
    # The Python reference is some 250 times slower at N = 400: a bar of 100 times its cost would let padding through.
    monkeypatch.setattr(efficiency, "Sandbox", lambda *args, **kwargs: _Recorder())
    monkeypatch.setattr(efficiency.oracle, "engine_compiled", lambda: False)
    measured = efficiency.measure("granularGas.py", sizes=(25, 50, 100))
    assert measured.exponent == pytest.approx(2.0) and measured.note == efficiency.NOT_COMPILED
    fast = dataclasses.replace(measured, exponent=1.0, right_at_largest=True, event_seconds=measured.reference_seconds)
    assert efficiency.with_bonus(fast, rubric.BonusRule()).bonus == 0


class _StopsLater(_Recorder):
    """Times out at its ``stop``-th call (a later sweep's): that call answers nothing."""

    def __init__(self, stop: int) -> None:
        super().__init__()
        self.stop = stop

    def call(self, name: str, *args: object, record: int = 0) -> object:
        if len(self.gases) + 1 == self.stop:
            self.gases.append(b"")
            raise SubmissionError(f"{name} used more than 2 s of CPU time in one call")
        return super().call(name, *args, record=record)


@needs_reference
def test_a_later_sweep_that_stops_keeps_the_sizes_but_earns_no_bonus(monkeypatch: pytest.MonkeyPatch):
    fake = _StopsLater(stop=2 * 3 + 4)  # the second sweep's N = 50 update
    monkeypatch.setattr(efficiency, "Sandbox", lambda *args, **kwargs: fake)
    measured = efficiency.measure("granularGas.py", sizes=(25, 50, 100))
    assert measured.sizes == (25, 50, 100) and measured.exponent == pytest.approx(2.0)
    assert "a later sweep stopped" in measured.note and "update" in measured.note
    assert len(fake.gases) == fake.stop  # nothing was called after it
    fast = dataclasses.replace(measured, exponent=1.0, right_at_largest=True, event_seconds=measured.reference_seconds)
    assert efficiency.with_bonus(fast, rubric.BonusRule()).bonus == 0


MEMO = """

# Remembers every answer, keyed on the inputs: only the first call with given inputs does the work.
import hashlib as _hashlib

_search, _update, _memo = minimum_contact_time, update, {}


def _key(*arrays):
    digest = _hashlib.blake2b()
    for a in arrays:
        digest.update(np.ascontiguousarray(np.asarray(a, dtype=float)).tobytes())
    return digest.digest()


def minimum_contact_time(x, v, R, w, indexOld):
    key = ("s", _key(x, v, indexOld))
    if key not in _memo:
        _memo[key] = _search(x, v, R, w, indexOld)
    return _memo[key]


def update(x, v, R, m, w, indexOld, r, dt, t):
    key = ("u", _key(x, v, indexOld, [dt, t]))
    if key not in _memo:
        _update(x, v, R, m, w, indexOld, r, dt, t)
        _memo[key] = (x.copy(), v.copy(), np.array(indexOld, copy=True))
    x[...], v[...], indexOld[...] = _memo[key]
"""


@needs_reference
def test_remembering_answers_earns_no_bonus(tmp_path, monkeypatch: pytest.MonkeyPatch):
    # The search over all pairs, vectorised, with a memo: with repeated inputs it fitted 1.0 and earned the bonus.
    monkeypatch.setattr(declared, "EFFICIENCY_CALL_SECONDS", 10.0)  # a slow spell must not cut the sizes short
    path = tmp_path / "granularGas.py"
    path.write_text((SUBMISSIONS / "honest_vectorised_pairs.py").read_text() + MEMO)
    graded = efficiency.with_bonus(efficiency.measure(path, sizes=(50, 100, 200, 400)), rubric.BonusRule())
    assert graded.sizes == (50, 100, 200, 400), graded.note
    assert graded.exponent is not None and graded.exponent > 1.4  # 2.1 measured without the memo, 1.0 with it
    assert graded.right_at_largest and graded.bonus == 0


PAD = """

# Burns CPU in update until its cost is C * N at N >= 100: the fitted exponent becomes 1, whatever the algorithm.
import time as _time

_honest_update = update


def _calibrate():
    rng = np.random.default_rng(1)
    n = 400
    x, v, R = rng.uniform(0.05, 0.95, (n, 2)), rng.uniform(-1, 1, (n, 2)), np.full(n, 0.005)
    w = np.array([[[0, 0], [1, 0]], [[1, 0], [1, 1]], [[1, 1], [0, 1]], [[0, 1], [0, 0]]], dtype=float)
    best = 1e9
    for _ in range(3):
        started = _time.process_time()
        minimum_contact_time(x, v, R, w, np.array([-1, -1]))
        best = min(best, _time.process_time() - started)
    return 3.0 * 9 * best / n  # three times the honest cost per grain at N = 400


_C = _calibrate()


def update(x, v, R, m, w, indexOld, r, dt, t):
    started = _time.process_time()
    out = _honest_update(x, v, R, m, w, indexOld, r, dt, t)
    if len(x) >= 100:
        while _time.process_time() - started < _C * len(x):
            pass
    return out
"""


@needs_reference
def test_burning_cpu_at_the_smaller_sizes_earns_no_bonus(tmp_path, monkeypatch: pytest.MonkeyPatch):
    # A helper's attack: the search over all pairs, padded to a cost growing like N, fitted 1.0 and earned 5.
    monkeypatch.setattr(declared, "EFFICIENCY_CALL_SECONDS", 10.0)  # a slow spell must not cut the sizes short
    path = tmp_path / "granularGas.py"
    path.write_text((SUBMISSIONS / "honest_vectorised_pairs.py").read_text() + PAD)
    measured = efficiency.measure(path, sizes=(100, 200, 400))
    graded = efficiency.with_bonus(measured, rubric.BonusRule())
    assert graded.sizes == (100, 200, 400) and graded.note == "" and graded.right_at_largest
    assert graded.event_seconds[-1] > rubric.BonusRule().cost_ratio_below * graded.reference_seconds[-1]
    assert graded.bonus == 0
    # The pad did flatten the fit (else the test would show nothing): what denies the bonus is the cost.
    assert graded.exponent is not None and graded.exponent < 1.5


class _SlowSpell(_Recorder):
    """The stand-in sandbox with calls twice as dear at N = ``slow`` during the first sweep (this machine's CPUs run
    at half speed for seconds at a time)."""

    def __init__(self, slow: int) -> None:
        super().__init__()
        self.slow, self.calls = slow, []

    def call(self, name: str, *args: object, record: int = 0) -> object:
        n = len(args[0])  # type: ignore[arg-type]
        self.calls.append((name, n))
        returned = super().call(name, *args, record=record)
        if n == self.slow and sum(1 for _, m in self.calls if m == n) <= 2:  # the first sweep's search and update
            returned.cpu_seconds *= 2.0  # type: ignore[attr-defined]
        return returned


@needs_reference
def test_a_slow_spell_during_one_sweep_does_not_tilt_the_exponent(monkeypatch: pytest.MonkeyPatch):
    fake = _SlowSpell(slow=100)
    monkeypatch.setattr(efficiency, "Sandbox", lambda *args, **kwargs: fake)
    measured = efficiency.measure("granularGas.py", sizes=(25, 50, 100))
    assert measured.sizes == (25, 50, 100) and measured.note == ""
    assert measured.exponent == pytest.approx(2.0, abs=1e-9)  # the first sweep's N = 100 was twice as dear
    assert [n for _, n in fake.calls].count(100) == 2 * efficiency.ROUNDS


def efficient_submission() -> str:
    """honest_vectorised_pairs.py with the efficient update of efficiency_samples/efficient_update.py."""
    update = (Path(__file__).parent / "efficiency_samples" / "efficient_update.py").read_text()
    helpers = update[update.index("def _candidate_pairs"):]  # without its docstring and linters' import
    return (SUBMISSIONS / "honest_vectorised_pairs.py").read_text() + "\n\n" + helpers


@needs_reference
def test_an_efficient_file_earns_the_bonus(tmp_path):
    """check --efficiency with the default [bonus] on an efficient file: every point, and the bonus. The bars must
    be within reach: candidate pairs kept between events, O(N) per event, fits 0.3-0.9 at 13-44 times the reference
    at N = 400 (measured quiet or with two CPU hogs), where the search over all pairs fits 2.2 at about 390 times."""
    import json

    from grader.commands import cli

    if not oracle.engine_compiled():
        pytest.skip("the reference engine is not compiled here (numba): no bonus is granted")
    if not any(p.startswith("own process namespace") for p in isolation.probe().protections):
        pytest.skip("bubblewrap cannot start here: no bonus is granted")
    path = tmp_path / "granularGas.py"
    path.write_text(efficient_submission())
    rubric_file = tmp_path / "rubric.toml"
    points = "".join(f"{name} = {value}\n" for name, value in rubric.default_points().items())
    rubric_file.write_text(f"[points]\n{points}[bonus]\n")
    out = tmp_path / "results.json"
    assert cli.main(["check", str(path), "--efficiency", "--rubric", str(rubric_file), "--json", str(out),
                     "--quiet"]) == 0
    written = json.loads(out.read_text())
    assert written["score"] == written["max_score"] > 0
    measured, rule = written["extra_data"]["efficiency"], rubric.BonusRule()
    assert measured["note"] == "" and measured["right_at_largest"] and measured["exponent"] < rule.exponent_below
    assert measured["event_seconds"][-1] < rule.cost_ratio_below * measured["reference_seconds"][-1]
    assert written["extra_data"]["bonus"] == rule.points


@needs_reference
def test_what_a_failing_call_says_reaches_the_page_bounded_and_escaped(tmp_path):
    # The submission writes the exception; the note quotes it, in the check line and on the feedback page.
    from grader.grading.results import Results
    from grader.reports import feedback

    source = (SUBMISSIONS / "honest_vectorised_pairs.py").read_text() + (
        "\n\n_update = update\n\n\ndef update(x, v, R, m, w, indexOld, r, dt, t):\n"
        "    if len(x) > 25:\n        raise ValueError('<script>alert(1)</script>' + 'x' * 1_000_000)\n"
        "    return _update(x, v, R, m, w, indexOld, r, dt, t)\n")
    path = tmp_path / "granularGas.py"
    path.write_text(source)
    measured = efficiency.measure(path, sizes=(25, 50))
    assert measured.sizes == (25,) and "not measured beyond N = 25" in measured.note
    assert "<script>alert(1)</script>" in measured.note and len(measured.note) < 400
    results = Results("granularGas.py", 100.0, 100.0, (), "graded", None, True, (), (), False, "", 1.0, ())
    page = feedback.page("ann", results.with_efficiency(measured))
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "xxxxxxxxxx" * 50 not in page
