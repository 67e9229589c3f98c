"""One root for every error the grader reports to its user.

:class:`GraderError` is what the command line catches, once, and prints as
``granular-grade: <message>`` with exit code 2. A message names the argument,
the value and the fix. Errors that describe the *submission* (it raised, hung,
died) are not here: they are results, reported in the student's feedback (see
:mod:`grader.sandbox.client`). A fault of the grader or of its sandbox is a
:class:`SandboxFault`: it is never turned into a student's 0.
"""

from __future__ import annotations


class GraderError(Exception):
    """The grader cannot do what was asked; the message says what to fix."""


class UsageError(GraderError):
    """A command-line value or a file given to the grader cannot be used."""


class SandboxFault(GraderError):
    """The sandbox itself could not start or answer: the grader's fault, not the student's."""


class IsolationTooWeak(GraderError):
    """Hidden tests were asked for, but no isolation strong enough to keep them secret is in force."""


class CacheError(GraderError):
    """A cache folder is not the grading user's alone; the message says what to fix."""
