"""Text from the submission made safe to show: what a terminal, a spreadsheet or a page may only display.

Declared here, in the lowest layer, because every layer that shows the submission's text uses it: the sandbox's
wire (every text from the child), the reports (the feedback page) and the commands (grades.csv, the batch's
terminal lines and summary). Escapes are written as repr() writes them (ESC as \\x1b, U+202E as \\u202e).
"""

from __future__ import annotations

import re
import unicodedata

#: The only ASCII characters a terminal obeys rather than shows (C0 controls but tab and newline, DEL): the fast
#: path of printable, for the ASCII texts that are nearly all of them.
_ASCII_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
#: Unicode categories a terminal obeys rather than shows: controls, format characters (bidirectional marks and
#: overrides, zero-width ones), line and paragraph separators.
_OBEYED = ("Cc", "Cf", "Zl", "Zp")
_SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    """One character as repr() writes it (\\r, \\x1b, \\u202e)."""
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` as valid Unicode that only shows, lines and tabs kept: what a terminal would obey (controls,
    bidirectional overrides: they could clear the screen, retitle the window or print a fake grade) written as
    escapes, lone surrogates (JSON may carry "\\ud800", which no terminal, file or font takes) as "?"."""
    if text.isascii():
        return _ASCII_CONTROLS.sub(lambda m: _escape(m.group()), text)
    text = text.encode("utf-8", errors="replace").decode("utf-8")
    return "".join(_escape(c) if c not in "\t\n" and unicodedata.category(c) in _OBEYED else c for c in text)


def shown(text: str) -> str:
    """``text`` on one line for a terminal (a student's name, a path): every control, format or separator
    character escaped as in repr(), line breaks and backslashes included."""
    return "".join(_escape(c) if _escaped_on_one_line(c) else c for c in text)


def _escaped_on_one_line(c: str) -> bool:
    return c in _SHORT_ESCAPES or (unicodedata.category(c)[0] in "CZ" and c != " ")


def one_line(text: str) -> str:
    """A grader's message on one line for a terminal: as :func:`shown`, but backslashes kept, because the
    submission's text in it (a file name in a status) was escaped by :func:`shown` when the message was made,
    and escaping its backslashes again would print ``\\x1b`` for an ESC. Still safe on any text."""
    return "".join(_escape(c) if c != "\\" and _escaped_on_one_line(c) else c for c in text)
