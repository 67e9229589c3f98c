"""What a property's check calls in a search (grader.grading.search): the submission's functions, with the trace of
the current case, and where the failing cases it meets are audited."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from grader.grading import audit, tracing
from grader.sandbox.calls import Returned
from grader.sandbox.client import Sandbox


@dataclass(frozen=True)
class Audits:
    """How a search audits the failing cases it meets: with the traced excuse only (grader.grading.runner); by default
    it audits nothing, and the reported cases are audited once the grading's box is closed (set_aside)."""

    #: Where the calls a traced answer rests on are replayed (tracing.FreshBox; the grading's box if None).
    confirmer: audit.Replayer | None = None
    #: Where an audit replays calls (another tracing.FreshBox; the grading's box if None): in the grading's own,
    #: which calls it replays told the file which of its answers the reference disagrees with, and a red team's file
    #: learnt which of two formulas to use for the rest of its grading (78.75 points against 50).
    auditor: tracing.Recorder | None = None
    #: Whether a case traced to a wrong helper may still count for its caller (GradeOptions.excuse_traced): only then
    #: is the trace worked out (its replays cost a box of their own).
    excuse_traced: bool = False


class Session:
    """What a property's check calls: the submission's functions, with the trace of the current case."""

    def __init__(self, sandbox: Sandbox, audits: Audits = Audits(), audited: str | None = None):
        self.sandbox = sandbox
        #: The function whose calls an audit reads (the property's): the helper calls recorded in other calls are
        #: not kept (None: all are). A red team's file sent the largest records in each of the 200 calls of a
        #: scenario's reported case, all held at once: 5 GB in the grader's process.
        self.audited = audited
        self.excuse_traced = audits.excuse_traced
        self.confirmer = audits.confirmer or sandbox
        self.auditor = audits.auditor or sandbox
        #: The calls between the submission's functions its child records: none while searching (an audit
        #: replays a failing call with them), the first few for the reported case (the cause names a helper).
        self.record = 0
        self.trace: list[tuple[str, tuple[Any, ...]]] = []
        self.returns: list[tuple[str, tuple[Any, ...], Returned]] = []

    def call(self, name: str, *args: Any) -> Returned:
        self.trace.append((name, args))
        returned = self.sandbox.call(name, *args, record=self.record)
        kept = returned if self.audited in (None, name) else replace(returned, helper_calls=())
        self.returns.append((name, args, kept))
        return returned

    def new_case(self) -> None:
        self.trace, self.returns = [], []
