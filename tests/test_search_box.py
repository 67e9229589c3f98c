"""The searches' box goes on after the grading (runner.search_box): the reported cases' audits and the feedback
animation run there, under budgets of their own (Sandbox.new_budgets), so a failing file's `check --html` and batch
grading start two boxes, not four. Nothing run there is graded: a file that keeps state from its searches into its
animation changes its animation only."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.animation import render
from grader.commands import cli
from grader.grading import runner
from grader.properties import oracle
from grader.sandbox import client, processes
from grader.spec.limits import TEXT_CAP, Limits

from . import pin_corpus
from .conftest import attack_and_control
from .test_isolation import mode, readable_python  # noqa: F401 - fixtures: with namespaces and without
from .test_load import busy_machine
from .test_set_aside import RIGHT_ROOT, wrong_root_file

pytestmark = pytest.mark.skipif(not oracle.available(), reason="the feedback animation compares with the reference")


@pytest.fixture
def boots(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose children were started (a box's start, or its restart), in order."""
    started: list[str] = []
    boot = client.Sandbox._boot

    def counted(self: client.Sandbox) -> Any:
        started.append(str(self.path))
        return boot(self)

    monkeypatch.setattr(client.Sandbox, "_boot", counted)
    return started


def _checked(path: Path, out: Path) -> tuple[dict, bytes | None]:
    """check --json --animation on ``path``: the results and the GIF written (None: none)."""
    out.mkdir()
    gif = out / "gas.gif"
    cli.check_main(str(path), json_path=str(out / "results.json"), animation_path=str(gif), quiet=True)
    return json.loads((out / "results.json").read_text()), (gif.read_bytes() if gif.exists() else None)


@pytest.mark.skipif(not processes.can_freeze(), reason="without pidfds a box is emptied between uses, not stopped")
def test_a_failing_file_is_graded_searched_audited_and_animated_in_three_boxes(tmp_path: Path, boots: list[str]):
    """The wrong-root file: its grading's box, then one box for its public tests' searches, the audits of their
    reported cases and its animation, and one for its hidden tests' searches and audits, which may not reach the
    public ones (tests/test_hidden_apart.py). The animation is the one a box of its own makes, to the byte."""
    path = wrong_root_file(tmp_path)
    results, gif = _checked(path, tmp_path / "check")
    assert results["score"] < 100 and gif is not None
    assert [box for box in boots if "granular-selftest-" not in box] == [str(path)] * 3, boots  # and the self-test
    own = render.feedback_animation(path, Limits())
    assert own is not None and own[0] == gif


def test_the_animation_goes_on_under_budgets_of_its_own_in_the_same_child(tmp_path: Path):
    """A box whose file used up the grading's CPU refuses its calls; given new budgets, it calls the same child
    again (what it learnt is kept: the animation is not graded)."""
    path = tmp_path / "granularGas.py"
    path.write_text("import os\nimport time\n\n\ndef contact_time_grains(x1, x2, v1, v2, R1, R2):\n"
                    "    end = time.process_time() + R1\n    while time.process_time() < end:\n        pass\n"
                    "    return float(os.getpid())\n")
    args = (np.zeros(2), np.array([1.0, 0.0]), np.zeros(2), np.zeros(2))
    with client.Sandbox(path, Limits(grading_seconds=0.5)) as box:
        pid = box.call("contact_time_grains", *args, 0.6, 0.1).value
        with pytest.raises(client.CallTimeout, match="more than 0.5 s of CPU in this grading"):
            box.call("contact_time_grains", *args, 0.0, 0.1)
        box.new_budgets(Limits(grading_seconds=60.0))
        assert box.cpu_spent == 0.0
        assert box.call("contact_time_grains", *args, 0.0, 0.1).value == pid


SEARCHED_STATE = '''

# The attack: once a call of the grader comes again in this process (never in the grading's box, which answers a
# repeat from its memory; in the searches' box, whose searches and audits ask some calls twice), every later call uses
# the right root, the animation's among them. Calls between the file's own functions are not the grader's.
TRICK = True
_SEEN, _STATE = set(), {"repeated": False, "depth": 0}
_OWN = {f.__name__: f for f in (contact_time_grains, minimum_contact_time, update)}

''' + RIGHT_ROOT + '''

def _called(name, *args):
    if _STATE["depth"] == 0:  # the grader's call
        key = (name, repr([np.asarray(a, float).tolist() if hasattr(a, "__len__") else a for a in args]))
        _STATE["repeated"] = _STATE["repeated"] or (TRICK and key in _SEEN)
        _SEEN.add(key)
    _STATE["depth"] += 1
    try:
        if name == "contact_time_grains" and _STATE["repeated"]:
            return _right_ctg(*args)
        return _OWN[name](*args)
    finally:
        _STATE["depth"] -= 1


def contact_time_grains(x1, x2, v1, v2, R1, R2):
    return _called("contact_time_grains", x1, x2, v1, v2, R1, R2)


def minimum_contact_time(x, v, R, w, indexOld):
    return _called("minimum_contact_time", x, v, R, w, indexOld)


def update(x, v, R, m, w, indexOld, r, dt, t):
    return _called("update", x, v, R, m, w, indexOld, r, dt, t)
'''


def test_state_kept_from_the_searches_into_the_animation_changes_the_animation_only(tmp_path: Path):
    """A wrong-root file whose calls all turn right once a call comes again in its process: that happens in the
    searches' box only, so it earns what the file without the trick earns, test by test; what it buys is an
    animation of its gas that looks right (none is written: every feedback scenario runs as the reference's)."""
    sample = tmp_path / "sample.py"
    sample.write_text(wrong_root_file(tmp_path).read_text() + SEARCHED_STATE)
    attack, control = attack_and_control(tmp_path, sample)
    (results, gif), (control_results, control_gif) = (_checked(path, tmp_path / f"checked-{name}")
                                                      for name, path in (("attack", attack), ("control", control)))
    assert control_results["score"] < 100 and control_gif is not None
    assert results["score"] == control_results["score"]
    assert [(t["name"], t["score"]) for t in results["tests"]] == [
        (t["name"], t["score"]) for t in control_results["tests"]]
    assert gif != control_gif  # the trick reached the animation, and only it


def test_a_lent_box_whose_import_failed_on_a_restart_gives_way_to_a_box_of_its_own(tmp_path: Path, boots: list[str]):
    """A restart in the searches' box imports under the budgets the grading left, and a failed import is final there;
    the animation then starts a box of its own (it would have before), rather than giving up."""
    path = wrong_root_file(tmp_path)
    with client.Sandbox(path, Limits()) as lent:
        lent.import_failure = client.ImportFailed("importing granularGas.py took too long (its restart)")
        made = render.feedback_animation(path, Limits(), box=lent)
        assert lent.import_failure is not None and lent.limits == Limits()  # left as it was
    assert made is not None and made[0] == render.feedback_animation(path, Limits())[0]
    assert len(boots) == 3  # the lent box, the animation's own, and the one to compare with


def test_a_box_in_use_is_refused_for_the_searches(tmp_path: Path):
    """grade_file's searches go on from the grading's budgets in a box nothing ran in: a started one is refused,
    with the argument named, before anything is graded."""
    from grader.errors import UsageError
    from grader.grading import runner

    path = wrong_root_file(tmp_path)
    options = runner.GradeOptions(only=("contact_time_grains",))
    with client.Sandbox(path, Limits()) as used:
        with pytest.raises(UsageError, match="searches_in: give a box that has not started"):
            runner.grade_file(path, options, searches_in=used)


# -- the cheating questions, asked of the lent box with real files --------------------------------------------------

def _graded_and_animated(path: Path, limits: Limits = Limits(), hide: tuple[Path, ...] = (),
                         hidden: bool | None = None) -> tuple[Any, tuple[bytes, dict] | None]:
    """As check --html grades: the searches, the reported cases' audits and the animation in one lent box."""
    options = runner.GradeOptions(limits=limits, hide=hide, hidden=hidden)
    with runner.search_box(path, options) as spare:
        graded = runner.grade_file(path, options, searches_in=spare)
        made = None if graded.all_passed or graded.import_error else render.feedback_animation(
            path, limits, hide=hide, box=spare)
    return graded, made


@pytest.mark.parametrize("name", ["trivial_constants.py", "trivial_pass.py"])
def test_a_file_of_constants_graded_with_a_lent_box_earns_what_its_pin_says(name: str):
    """A do-nothing file and a constants file, graded as check --html grades them: every score, test outcome and
    report is the pinned one (graded without a lent box)."""
    path = Path(__file__).parent / "submissions" / name
    graded, _ = _graded_and_animated(path)
    assert pin_corpus.differences(pin_corpus.load_pin()[pin_corpus.key_of(path)], pin_corpus.record_of(graded)) == []


LOOKS_AROUND = '''

def update(x, v, R, m, w, indexOld, r, dt, t):
    # The attack: in the lent box, after the searches, read another student's file, the reference and the hidden
    # tests, and say in the animation's error what was read.
    found = []
    for where in {paths!r}:
        try:
            with open(where) as f:
                found.append((where, f.read(40)))
        except OSError:
            pass
    raise RuntimeError("read: " + repr(found))
'''


def test_the_lent_box_sees_nothing_outside_it(tmp_path: Path, mode: str):  # noqa: F811 - the fixture
    """With namespaces and without: a file whose update, run for the animation in the searches' box, tries to read
    another student's file (a hidden folder), the reference and the hidden tests. With namespaces it reads none of
    them; without, the other student's file stays unread (the reference and the grader's source are readable there,
    which is why the hidden tests are refused without namespaces: they are left out here)."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "granularGas.py").write_text("SECRET of another student\n")
    root = Path(__file__).resolve().parents[1]
    paths = [str(other / "granularGas.py"), str(root / "reference" / "granularGas.py"),
             str(root / "grader" / "properties" / "hidden.py")]
    path = tmp_path / "mine" / "granularGas.py"
    path.parent.mkdir()
    path.write_text(wrong_root_file(tmp_path).read_text() + LOOKS_AROUND.format(paths=paths))
    strong = mode == "bwrap"
    _, made = _graded_and_animated(path, Limits(namespaces=strong), hide=(other,), hidden=None if strong else False)
    assert made is not None and "raised RuntimeError: read: [" in made[1]["error"], made and made[1]["error"]
    assert "SECRET" not in made[1]["error"] and (not strong or "read: []" in made[1]["error"]), made[1]["error"]


LEAVES_A_CHILD = '''

_CHILD = []


def update(x, v, R, m, w, indexOld, r, dt, t):
    # The attack: once per process (the lent box's first is in the searches), fork a child named {marker} that
    # sleeps on; every call raises a megabyte of text naming it.
    import ctypes, os, time
    if not _CHILD:
        pid = os.fork()
        if pid == 0:
            ctypes.CDLL(None).prctl(15, b"{marker}", 0, 0, 0)
            while True:
                time.sleep(0.05)
        time.sleep(0.2)
        with open(f"/proc/{{pid}}/comm") as f:  # the child, as the box sees it
            _CHILD.append(f.read().strip())
    raise RuntimeError("forked " + _CHILD[0] + " " + "x" * 1_000_000)
'''


def _named(marker: str) -> list[str]:
    """The pids of the host's processes whose name is ``marker``."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == marker:
                found.append(comm.parent.name)
        except OSError:
            continue
    return found


def test_what_the_file_leaves_in_the_lent_box_is_bounded_and_ends_with_it(tmp_path: Path):
    """A file whose update, in the searches' box, forks a child that sleeps on and raises a megabyte of text: the
    animation's note of the error is bounded, and once check's grading is over no process of the box is left."""
    marker = f"lent{os.getpid() % 100000}"
    path = tmp_path / "mine" / "granularGas.py"
    path.parent.mkdir()
    path.write_text(wrong_root_file(tmp_path).read_text() + LEAVES_A_CHILD.format(marker=marker))
    _, made = _graded_and_animated(path)
    assert made is not None and f"forked {marker}" in made[1]["error"] and len(made[1]["error"]) < 5 * TEXT_CAP
    assert _named(marker) == []


def test_the_same_grade_with_a_lent_box_on_a_busy_machine():
    """ben.py (functions not written, a failing file whose searches, audits and animation use the lent box), graded
    beside four CPU-bound processes: its scores and test outcomes are the pinned ones."""
    path = Path(__file__).parents[1] / "examples" / "submissions" / "ben.py"
    with busy_machine():
        graded, made = _graded_and_animated(path)
    pinned, fresh = pin_corpus.load_pin()[pin_corpus.key_of(path)], pin_corpus.record_of(graded)
    assert made is not None
    assert [pinned[f] for f in ("score", "items", "tests")] == [fresh[f] for f in ("score", "items", "tests")]
