"""The spec's conventions the reference needs, copied so that reference/ imports nothing from grader.

The reference must run wherever numpy does (it is also graded as a model
answer, alone in a sandbox). tests/test_reference_standalone.py checks that
these equal grader.spec's.
"""

from __future__ import annotations

import sys

#: Time returned when there is no (non-negative) contact time.
NO_CONTACT: float = sys.float_info.max

#: ``indexOld`` before any contact has happened.
NO_PREVIOUS_CONTACT: tuple[int, int] = (-1, -1)


def wall_code(k: int) -> int:
    """Second entry of ``index`` for a contact with wall ``w[k]``: ``-(k + 1)``."""
    if k < 0:
        raise ValueError(f"wall number k={k} must be >= 0")
    return -(k + 1)


def wall_number(code: int) -> int:
    """Inverse of :func:`wall_code`: the wall ``k`` such that ``w[k]`` is meant."""
    if code >= 0:
        raise ValueError(f"index entry {code} is a grain, not a wall (walls are negative)")
    return -(code + 1)
