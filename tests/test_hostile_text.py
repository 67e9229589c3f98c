"""Hostile bytes and text from the submission: names, messages and printed output that are not clean UTF-8 or
carry terminal escapes. Each is a real file run in the sandbox; none may crash the grader (which would cost every
grading on the machine, not only this one) or reach a report unescaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.sandbox.client import CallRaised, Sandbox

from .test_hostile import FAST, GRAINS_ARGS, WALL_ARGS, hostile, still_answers

#: The process renames itself with bytes that are not UTF-8 (the grader reads every /proc/<pid>/stat).
BAD_COMM = "open('/proc/self/comm', 'wb').write(b'\\xff\\xfe\\xfd')\n"


def test_a_process_named_with_bytes_that_are_not_utf8_crashes_nothing(tmp_path: Path) -> None:
    with Sandbox(hostile(tmp_path, at_import=BAD_COMM), FAST) as sandbox:
        assert sandbox.import_failure is None, sandbox.import_error
        still_answers(sandbox)
        assert sandbox.call("contact_solve_grains", *GRAINS_ARGS).value is not None


#: contact_solve_wall prints terminal escapes, then raises an exception whose class name, message and source line
#: carry more (clear the screen, retitle the window, a fake grade), and lone surrogates.
ESCAPES = ("print('\\x1b[2J\\x1b[Hprinted escape \\udcff')\n"
           "E = type('\\x1b[31mGRADE_100\\x1b[0m', (Exception,), {})\n"
           "raise E('\\x1b]0;title\\x07\\x1b[32m100 / 100 points\\x1b[0m\\rFAKE \\u202e \\x9b \\ud800')  # \\x1b[5m")


def test_escapes_and_lone_surrogates_from_the_submission_reach_no_report_raw(tmp_path: Path) -> None:
    with Sandbox(hostile(tmp_path, in_wall=ESCAPES), FAST) as sandbox:
        with pytest.raises(CallRaised) as raised:
            sandbox.call("contact_solve_wall", *WALL_ARGS)
        printed = sandbox.output()
    message = str(raised.value)
    assert "GRADE_100" in raised.value.error and "FAKE" in message and "printed escape" in printed
    texts = [message, raised.value.error, printed]
    for text in texts:
        text.encode("utf-8")  # no lone surrogate left
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text), repr(text)
    assert "\\x1b[2J" in printed and "\\x1b]0;title\\x07" in message  # shown, not obeyed


def test_a_grades_csv_cell_shows_escapes_and_starts_no_formula() -> None:
    from grader.commands.batch.pool import csv_cell

    assert csv_cell("\x1b[2Jalice\r") == "\\x1b[2Jalice\\r"
    assert csv_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and csv_cell(12.5) == 12.5


def test_printable_and_shown_share_one_escaper_and_printable_keeps_lines():
    from grader.spec.text import printable, shown

    text = "a\tb\nc\x1b[2J\u202e\u2028\u200b\\d"
    assert printable(text) == "a\tb\nc\\x1b[2J\\u202e\\u2028\\u200b\\d"  # every Unicode control or format char
    assert shown(text) == "a\\tb\\nc\\x1b[2J\\u202e\\u2028\\u200b\\\\d"  # one line, backslashes doubled
