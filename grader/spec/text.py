"""Text from the submission made safe to show: what a terminal, a spreadsheet or a page may only display.

Declared here, in the lowest layer, because every layer that shows the submission's text uses it: the sandbox's
wire (every text from the child), the reports (the feedback page) and the commands (grades.csv).
"""

from __future__ import annotations

import re

#: Characters a terminal obeys rather than shows (C0 and C1 controls but tab and newline, DEL, bidirectional
#: marks and overrides): in the submission's text they could clear the screen, retitle the window or print a fake grade.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` as valid Unicode that only shows: controls written as escapes (ESC as \\x1b), lone surrogates
    (JSON may carry "\\ud800", which no terminal, file or font takes) as "?"."""
    if not text.isascii():
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    return _CONTROLS.sub(lambda m: ascii(m.group())[1:-1], text)
