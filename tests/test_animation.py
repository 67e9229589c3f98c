"""python -m grader animate: the student's gas next to the reference's, with what went wrong marked."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

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
    assert "used more than 2 s of CPU time in one call" in done.stdout
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
