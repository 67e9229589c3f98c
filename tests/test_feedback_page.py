"""What people see: a feedback page rendered by headless Chromium shows the table and the animation.

Chromium is Debian's ``chromium`` package (.ci/run installs it when missing).
The page's table header and the animation's frame have colours of their own
(grader/reports/feedback.py), looked for on the screenshot.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_grader_corpus import BUGS, VECTORISED, mutate

TABLE_HEADER = (0x3B, 0x6E, 0xA8)
ANIMATION_FRAME = (0x2A, 0x9D, 0x8F)
CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(name)), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (.ci/run installs Debian's chromium)")


def screenshot(page: Path, out: Path) -> "Image.Image":  # noqa: F821 - PIL is imported where used
    from PIL import Image

    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1100,2400", f"--screenshot={out}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert out.exists(), done.stderr[-2000:]
    return Image.open(out).convert("RGB")


def region(image, colour) -> tuple[int, tuple[int, int, int, int] | None]:
    """How many pixels have exactly this colour, and their bounding box."""
    import numpy as np

    pixels = np.asarray(image)
    mask = np.all(pixels == np.array(colour, dtype=np.uint8), axis=2)
    if not mask.any():
        return 0, None
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return int(mask.sum()), (int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1]))


def check_page(tmp_path: Path, submission: Path, name: str) -> Path:
    page = tmp_path / f"{name}.html"
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(submission), "--html", str(page), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    assert page.exists(), done.stderr
    return page


@needs_chromium
def test_feedback_page_shows_the_table_and_the_animation(tmp_path):
    import numpy as np

    bug = next(b for b in BUGS if b[0] == "no move before the contact")
    page = check_page(tmp_path, mutate(tmp_path, bug[1], bug[3]), "buggy")
    shot = screenshot(page, tmp_path / "buggy.png")
    count, _ = region(shot, TABLE_HEADER)
    assert count > 2000, "the points table is not on the page"
    count, box = region(shot, ANIMATION_FRAME)
    assert count > 2000 and box is not None, "the animation is not on the page"
    left, top, right, bottom = box
    assert right - left > 300 and bottom - top > 200
    inside = np.asarray(shot)[top + 8:bottom - 8, left + 8:right - 8].reshape(-1, 3)
    assert len({tuple(p) for p in inside[::7]}) > 20, "the animation frame is empty"


@needs_chromium
def test_a_page_with_nothing_to_animate_has_no_animation(tmp_path):
    page = check_page(tmp_path, VECTORISED, "correct")
    text = page.read_text()
    # check's results carry no file digest: the source's heading then names none (it read "(sha256 )").
    assert "The file that was graded</summary>" in text and "sha256 )" not in text
    shot = screenshot(page, tmp_path / "correct.png")
    assert region(shot, TABLE_HEADER)[0] > 2000
    assert region(shot, ANIMATION_FRAME)[0] == 0


@needs_chromium
def test_one_message_of_many_tests_is_shown_once_naming_them(tmp_path):
    """A review: a file with a syntax error showed the same SyntaxError 25 times on its page."""
    broken = tmp_path / "granularGas.py"
    broken.write_text("def contact_time_grains(x1, x2, v1, v2, R1, R2)\n    return 0\n")
    page = check_page(tmp_path, broken, "syntax")
    text = page.read_text()
    failed = text.split("What failed, and why", 1)[1]
    assert failed.count("SyntaxError") == 1 and "more tests failed with this same message" in failed
    shot = screenshot(page, tmp_path / "syntax.png")
    assert region(shot, TABLE_HEADER)[0] > 2000
