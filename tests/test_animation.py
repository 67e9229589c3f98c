"""python -m grader animate: the student's gas next to the reference's, with what went wrong marked."""

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from grader.animation import reference_runs, render
from grader.animation.trajectories import STORED, Runs, Trajectory, compare, record, reference_step
from grader.sandbox.client import Sandbox
from grader.spec.limits import Limits

from .test_batch import LOADS_FROM_NETWORK
from .test_grader_corpus import BUGS, TEXTBOOK, mutate

ROOT = Path(__file__).resolve().parents[1]
ADA = ROOT / "examples" / "submissions" / "ada" / "granularGas.py"


def animate(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "grader", "animate", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def with_update(tmp_path, body: str) -> Path:
    """The textbook submission with another update."""
    text = TEXTBOOK.read_text()
    text = text[:text.index("def update(")] + "def update(x, v, R, m, w, indexOld, r, dt, t):\n" + body
    path = tmp_path / "granularGas.py"
    path.write_text(text)
    return path


def test_a_correct_gas_follows_the_reference(tmp_path):
    done = animate(ADA, "--out", tmp_path / "a.gif", "--scenario", "head_on", "--duration", "0.5")
    assert done.returncode == 0, done.stderr
    assert "follows the reference's all along" in done.stdout
    with Image.open(tmp_path / "a.gif") as gif:
        assert gif.n_frames == 26 and gif.size[0] > gif.size[1]  # two panels side by side


def test_a_wrong_collision_is_dated(tmp_path):
    bug = next(b for b in BUGS if b[0] == "no move before the contact")
    done = animate(mutate(tmp_path, bug[1], bug[3]), "--out", tmp_path / "b.gif", "--scenario", "single",
                   "--duration", "2")
    assert done.returncode == 0, done.stderr
    assert re.search(r"leaves the reference's at t = 0\.9", done.stdout), done.stdout


def test_overlaps_and_escapes_are_reported(tmp_path):
    ghost = with_update(tmp_path, "    x += v * dt\n")  # no contact at all
    done = animate(ghost, "--out", tmp_path / "c.gif", "--scenario", "head_on", "--duration", "2")
    assert done.returncode == 0, done.stderr
    assert "grains overlap from t = " in done.stdout and "a grain leaves the box" in done.stdout


def test_html_output_is_self_contained(tmp_path):
    done = animate(ADA, "--out", tmp_path / "a.html", "--scenario", "unequal", "--duration", "0.3")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "a.html").read_text()
    assert "<img" in page and "data:image/png;base64" in page and not LOADS_FROM_NETWORK.search(page)


def test_mp4_needs_ffmpeg_and_says_so(tmp_path):
    done = animate(ADA, "--out", tmp_path / "a.mp4", "--scenario", "single", "--duration", "0.2")
    if shutil.which("ffmpeg"):
        assert done.returncode == 0 and (tmp_path / "a.mp4").stat().st_size > 0
    else:
        assert done.returncode == 2 and "ffmpeg" in done.stderr and "Traceback" not in done.stderr


def test_a_hanging_or_broken_update_gives_a_message_not_a_hang(tmp_path):
    hang = with_update(tmp_path, "    while True:\n        pass\n")
    done = animate(hang, "--out", tmp_path / "d.gif", "--scenario", "single", "--timeout", "2", "--duration", "0.5",
                   timeout=120)
    assert done.returncode == 0, done.stderr
    assert "your update stopped at t = 0: update used more than 2 s of CPU time in one call" in done.stdout
    assert "the animation shows 1 frame" in done.stdout
    template = animate(ROOT / "student_template" / "granularGas.py", "--out", tmp_path / "e.gif", "--duration",
                       "0.5")
    assert "update is not written yet" in template.stdout + template.stderr and "Traceback" not in template.stderr


@pytest.mark.parametrize("args, fragment", [
    (["--scenario", "tornado"], "choose one of"),
    (["--grains", "0"], "at least 1"),
    (["--r", "2"], "[0, 1]"),
])
def test_bad_options_are_refused_clearly(tmp_path, args, fragment):
    done = animate(ADA, "--out", tmp_path / "x.gif", *args)
    assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr
    done = animate(ADA, "--out", tmp_path / "x.avi")
    assert done.returncode == 2 and ".gif, .mp4 or .html" in done.stderr


# -- the stored reference runs (the kit's reference gas) --------------------------
def test_stored_runs_are_the_reference_s_and_small():
    assert [s.name for s in reference_runs.standard()] == list(render.FEEDBACK_SCENARIOS)
    assert [reference_runs.disagreement(s) for s in reference_runs.standard()] == [""] * 6
    assert sum(p.stat().st_size for p in reference_runs.DATA_DIR.glob("*.npz")) < 300_000


def test_a_changed_stored_run_is_caught(tmp_path):
    single = reference_runs.standard()[0]
    with np.load(reference_runs.path_of("single")) as data:
        arrays = dict(data)
    arrays["positions"][40, 0, 0] += 1e-6
    np.savez(tmp_path / "single.npz", **arrays)
    assert "differ by 1e-06" in reference_runs.disagreement(single, tmp_path)


def test_a_stored_run_serves_only_its_own_scenario():
    gas = render.scenario("gas", grains=reference_runs.GAS_GRAINS)
    full = reference_runs.stored(gas)
    short = reference_runs.stored(gas.with_(duration=0.5))
    assert full is not None and short is not None and len(short.times) == 51
    assert np.array_equal(short.positions, full.positions[:51])
    assert reference_runs.stored(gas.with_(duration=gas.duration + 1)) is None
    assert reference_runs.stored(render.scenario("gas", grains=31)) is None
    assert reference_runs.stored(render.scenario("head_on", r=0.5)) is None
    assert reference_runs.stored(render.scenario("head_on").with_(dt=0.01)) is None


def test_without_the_reference_both_panels_come_from_the_stored_runs(monkeypatch):
    monkeypatch.setattr(render.oracle, "available", lambda: False)
    runs = render.simulate(ADA, render.scenario("head_on", duration=0.4))
    assert runs.reference_source == STORED and runs.differences.first_divergence is None
    assert runs.summary()["heading"] == "Your gas next to the reference"
    assert "stored in the kit" in render.outcome(runs, "a.gif")
    with Image.open(io.BytesIO(render.gif_bytes(runs, max_frames=5))) as gif:
        assert gif.size[0] >= 800 and gif.n_frames == 5
    other = render.first_failing(ADA, duration=0.3)
    assert other is None  # ada follows every stored run
    alone = render.simulate(ADA, render.scenario("head_on", r=0.5, duration=0.2))
    assert alone.reference is None and "not in the kit" in alone.summary()["heading"]
    assert "your gas alone" in render.outcome(alone, "a.gif")


# -- the figure ------------------------------------------------------------------
def _broken_runs() -> Runs:
    """The reference's gas and a student's that drifts, then stops with a long reason."""
    chosen = render.scenario("gas", grains=12, duration=0.3)
    reference = record(reference_step(chosen), chosen)
    student = Trajectory(reference.times[:20], reference.positions[:20] + 0.01, reference.velocities[:20],
                         reference.m, "at t = 0.19: " + "update used more than 5 s of CPU time in one call " * 4)
    return Runs(chosen, student, reference, compare(student, reference, chosen))


def test_a_short_gif_ends_on_the_last_frame_where_a_stopped_run_says_why():
    """A review's find: frames taken every stride-th from the first skipped the last, the only one where a run
    that stopped at its end says so (a 50-frame feedback GIF often lost the note)."""
    chosen = render.scenario("gas", grains=12, duration=0.3)
    reference = record(reference_step(chosen), chosen)
    student = Trajectory(reference.times, reference.positions + 0.01, reference.velocities, reference.m,
                         "at t = 0.30: update used more than 5 s of CPU time in one call")
    movie = render.build(Runs(chosen, student, reference, compare(student, reference, chosen)), max_frames=4)
    assert len(movie.frames) == 4 and movie.frames[0] == 0 and movie.frames[-1] == len(reference.times) - 1
    last, stride = len(reference.times) - 1, -(-len(reference.times) // 4)
    assert last not in range(0, last + 1, stride)  # every stride-th frame from the first missed it
    texts = [t.get_text() for t in movie.draw(movie.frames[-1]) if hasattr(t, "get_text")]
    assert any("your update stopped at t = 0.30" in text for text in texts), texts


def test_a_students_error_message_with_dollar_signs_is_text_not_mathtext():
    """A review's file raised ValueError(r"$\\undefinedcommand{$"): the notes parsed it as mathtext, the
    animation crashed, and the grading with it (a grader error in a batch)."""
    chosen = render.scenario("gas", grains=12, duration=0.3)
    reference = record(reference_step(chosen), chosen)
    student = Trajectory(reference.times[:10], reference.positions[:10], reference.velocities[:10], reference.m,
                         "at t = 0.09: update raised ValueError: $\\undefinedcommand{$")
    with Image.open(io.BytesIO(render.gif_bytes(Runs(chosen, student, reference,
                                                     compare(student, reference, chosen)), max_frames=3))) as gif:
        assert gif.n_frames == 3


def test_the_figure_has_separate_labelled_curves_a_colour_bar_and_no_clipped_text():
    runs = _broken_runs()
    assert "your update stopped at t = 0.19" in runs.stopped() and runs.stopped().endswith("shows 20 frames")
    movie = render.build(runs)
    movie.draw(movie.frames[-1])
    fig = movie.fig
    fig.canvas.draw()
    gases, bar, energy, momentum = fig.axes[0:2], fig.axes[2], fig.axes[3], fig.axes[4]
    assert "speed" in bar.get_ylabel() and "energy" in energy.get_ylabel() and "momentum" in momentum.get_ylabel()
    assert energy.get_position().y0 > momentum.get_position().y1  # stacked, not twins
    assert not energy.yaxis.get_major_formatter().get_useOffset()
    assert fig.bbox.width >= 800
    texts = [t for t in fig.texts + [ax.title for ax in gases] if t.get_text()]
    assert any("stopped" in t.get_text() for t in texts)
    for text in texts:
        box = text.get_window_extent()
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, text
    for a, b in [(a, b) for i, a in enumerate(texts) for b in texts[i + 1:]]:
        assert not a.get_window_extent().overlaps(b.get_window_extent()), (a.get_text(), b.get_text())


def test_gif_frames_are_drawn_over_the_static_figure(tmp_path):
    runs = _broken_runs()
    render.save(render.build(runs, max_frames=4), tmp_path / "a.gif")
    with Image.open(tmp_path / "a.gif") as gif:
        assert gif.n_frames == 4 and gif.size[0] >= 800
        frames = []
        for k in (0, 3):
            gif.seek(k)
            frames.append(np.asarray(gif.convert("RGB")).astype(int))
    reds = [((f[..., 0] > 150) & (f[..., 1] < 130) & (f[..., 2] < 130)).sum() for f in frames]
    assert reds[1] > reds[0] + 500  # the last frame adds the red lines saying why the run stopped
    assert np.abs(frames[0] - frames[1]).sum(axis=2).astype(bool).sum() > 1000  # the grains moved


def test_a_text_pasted_again_gives_the_pixels_drawing_it_gives(monkeypatch):
    """The GIF's moving texts are drawn once per string and pasted after (figure._TextPatches): frame for frame,
    the same pixels as drawing every text, and the notes, the same over many frames, were pasted."""
    runs = _broken_runs()
    made = []
    start = render.figure._TextPatches.__init__

    def kept(self, canvas):
        start(self, canvas)
        made.append(self)

    monkeypatch.setattr(render.figure._TextPatches, "__init__", kept)
    with_patches = render.gif_bytes(runs, max_frames=20)
    monkeypatch.setattr(render.figure._TextPatches, "draw", lambda self, artist: False)
    drawn = render.gif_bytes(runs, max_frames=20)
    assert with_patches == drawn
    assert made[0].pasted >= 10  # 20 frames: the notes say the same from frame 2 on


def test_the_feedback_animation_has_one_functions_budget_in_all(tmp_path, monkeypatch):
    """The feedback page's animation runs after a grading that may have used the file's budgets up; a slow update
    is stopped there after the grading's budget for one function (at most FEEDBACK_ANIMATION_SECONDS, imports
    included; it had 600 s)."""
    slow = with_update(tmp_path, "    spent = time.process_time()\n    while time.process_time() - spent < 0.15:\n"
                                 "        pass\n    x += v * dt\n    return x, v, indexOld, t + dt\n")
    slow.write_text("import time\n" + slow.read_text())
    calls = []
    call = Sandbox.call
    monkeypatch.setattr(Sandbox, "call", lambda self, name, *args, **kw: calls.append(name) or call(self, name, *args,
                                                                                                     **kw))
    made = render.feedback_animation(slow, Limits(call_seconds=1.0, function_seconds=0.6))
    assert made is not None and "used more than 0.6 s of CPU" in made[1]["error"], made and made[1]
    assert 0.6 / 0.15 <= len(calls) <= 0.6 / 0.15 + 2, len(calls)


BLOWS_UP = """

_real_update = update


def update(x, v, R, m, w, indexOld, r, dt, t):
    out = _real_update(x, v, R, m, w, indexOld, r, dt, t)
    if t > 0.05:  # the gas blows up: speeds of 1e200, an energy of inf
        v *= 1e200
        x[:] = 1.7e308
    return out
"""


def test_a_gas_that_blows_up_to_inf_is_animated_and_keeps_its_grade(tmp_path):
    """A red team's update scaled the velocities by 1e200: the energy axis got a limit of inf, and check stopped with
    a traceback, no results and no page (a batch row said "grader error")."""
    path = tmp_path / "granularGas.py"
    path.write_text((Path(__file__).resolve().parents[1] / "reference" / "granularGas.py").read_text() + BLOWS_UP)
    page, results = tmp_path / "page.html", tmp_path / "results.json"
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(path), "--only", "update", "--html", str(page),
                           "--json", str(results), "--quiet"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    assert results.exists() and page.read_text().count("data:image/gif;base64,") == 1


def test_a_drawing_fault_leaves_the_grade_and_says_whose_it_is(monkeypatch, tmp_path):
    from grader.commands import animated
    from grader.grading import runner
    from grader.grading.results import Results

    def broken(*args, **kwargs):
        raise ValueError("Axis limits cannot be NaN or Inf")

    monkeypatch.setattr(render, "feedback_animation", broken)
    path = tmp_path / "granularGas.py"
    path.write_text((Path(__file__).resolve().parents[1] / "reference" / "granularGas.py").read_text() + BLOWS_UP)
    graded = runner.grade_file(path, runner.GradeOptions(only=("update",)))
    made = animated.with_feedback_animation(path, graded, Results.from_report(graded), Limits(), (), None)
    assert made.gif is None and made.results == Results.from_report(graded)
    assert made.absent is not None and "(ValueError), a fault of the grader's" in made.absent


def test_mp4_without_ffmpeg_is_refused_before_the_simulation(tmp_path, monkeypatch):
    """A review: animate --out x.mp4 simulated for 6 s, then said ffmpeg was missing, with matplotlib's warning."""
    from matplotlib.animation import FFMpegWriter

    monkeypatch.setattr(FFMpegWriter, "isAvailable", classmethod(lambda cls: False))
    monkeypatch.setattr(render, "simulate", lambda *args, **kwargs: pytest.fail("simulated before refusing"))
    with pytest.raises(render.AnimationError, match="needs ffmpeg"):
        render.animate_main(str(ROOT / "reference" / "granularGas.py"), str(tmp_path / "gas.mp4"))
