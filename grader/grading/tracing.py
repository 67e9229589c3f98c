"""Whether a wrong answer of minimum_contact_time is the one its helpers' wrong answers make it (see
:func:`explained`): then a case set aside for a wrong helper (grader.grading.audit) may still count for the caller.

Split from :mod:`grader.grading.audit`, whose recorded calls (positional arguments, pieces of calls about many pairs)
it reads the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np

from grader import spec
from grader.grading.audit import (
    AUDIT_CALLS,
    Replayer,
    mct_of,
    pairs_in,
    pieces,
    positional,
    replayed,
    same_value,
    time_of,
)
from grader.grading.reference_answers import prefetch, reference_answer, same_time
from grader.sandbox.calls import HelperCall, Returned
from grader.sandbox.client import CallTimeout, ChildDied, ProtocolViolation, Sandbox
from grader.spec.limits import Limits


class Recorder(Protocol):
    """Calls the submission's functions recording the first ``record`` calls each makes to its others (a Sandbox)."""

    def call(self, name: str, *args: Any, record: int = ...) -> Returned: ...


#: Replays a box for replays makes after this many of them ended its child: none (each would start a new child,
#: charged to no budget; a red team's file ended the auditor's child in every replay, hundreds per audited call). A
#: replay refused confirms nothing, as one that fails.
STOPS_ALLOWED = 3
#: What all the replays in one box for replays may spend: CPU seconds of its child (imports included), and seconds
#: asleep (client.Sandbox.asleep). A box's own limits are those of a grading (120 s of CPU per function, and more
#: asleep): a second red team's file spent 0.45 s and slept 4.2 s in each of hundreds of replays, 21 minutes after its
#: tests had ended. A correct file's replays take milliseconds each.
REPLAY_CPU_SECONDS, REPLAY_ASLEEP_SECONDS = 30.0, 30.0


class ReplayBox:
    """Replays in a box lent by its owner (who closes it), within the caps of replays (STOPS_ALLOWED, and
    REPLAY_CPU_SECONDS and REPLAY_ASLEEP_SECONDS counted from the moment it is lent) and within the box's own budgets
    (the searches' box goes on under the grading's: a slow file's replays may be refused sooner). The audits of the
    reported cases, which earn nothing either way (grading.set_aside.reported_cases), replay in the searches' box: a
    failing file's grading starts one box less. Replays that may earn points replay in a FreshBox."""

    def __init__(self, box: Sandbox | None) -> None:
        self.box = box
        self.calls = 0  # replays made here so far: with the traced excuse, the grading renews its own box after a test
        # that made any
        self.stops = 0  # replays that ended the child (a timeout, a crash, a protocol breach)
        self._before = (box.cpu_spent, box.asleep) if box is not None else (0.0, 0.0)  # what it spent until lent
        #: Boxes for replays whose use counts against the same caps (the public and the hidden tests' audits).
        self.peers: tuple[ReplayBox, ...] = ()

    def _started(self) -> Sandbox:
        assert self.box is not None, "a ReplayBox replays in the box it was lent"
        return self.box

    def used(self) -> tuple[int, float, float]:
        """Replays that ended the child, CPU seconds and seconds asleep of the replays made here so far."""
        if self.box is None:
            return self.stops, 0.0, 0.0
        cpu, asleep = self._before
        return self.stops, self.box.cpu_spent - cpu, self.box.asleep - asleep

    def call(self, name: str, *args: Any, record: int = 0) -> Returned:
        self.calls += 1
        stops, cpu, asleep = (sum(used) for used in zip(*(box.used() for box in (self, *self.peers)), strict=True))
        if stops >= STOPS_ALLOWED:
            raise ChildDied(f"no more replays: the child stopped {stops} times in the boxes for replays")
        if cpu > REPLAY_CPU_SECONDS or asleep > REPLAY_ASLEEP_SECONDS:
            raise CallTimeout(f"no more replays: this box's replays used more than {REPLAY_CPU_SECONDS:g} s of CPU "
                              f"or spent more than {REPLAY_ASLEEP_SECONDS:g} s asleep")
        box = self._started()
        try:
            return box.call(name, *args, record=record)
        except (CallTimeout, ChildDied, ProtocolViolation):
            self.stops += 1
            raise
        finally:
            box.pause()  # idle until its next replay, maybe never: nothing of it runs meanwhile


def share_caps(*boxes: ReplayBox) -> None:
    """Make the replays of all ``boxes`` count against one set of caps (STOPS_ALLOWED, REPLAY_CPU_SECONDS,
    REPLAY_ASLEEP_SECONDS), as if they were made in one box."""
    for box in boxes:
        box.peers = tuple(other for other in boxes if other is not box)


class FreshBox(ReplayBox):
    """A box of its own for replays, started at the first (a fresh process, fresh work and temporary folders), so
    that what the replays show the file cannot steer its graded answers. The grading uses two:

    - the confirmer replays the helper calls a traced answer rests on, and the submission's caller never runs there.
      In the grading's box, a caller could leave state (a module's dict, a file) that a helper answers from: a red
      team's file stored the lie its wrong index needed, and the replay there "confirmed" it (15 points against
      3.75).
    - the auditor replays what an audit checks (grader.grading.audit, grading.set_aside): which calls are replayed
      tells which answers the reference disagrees with, and in the grading's box a red team's file learnt from it
      which of two formulas to use for the rest of its grading (78.75 points against 50).
    """

    def __init__(self, path: str | Path, limits: Limits, hide: tuple[Path, ...] = ()) -> None:
        super().__init__(None)
        self.path, self.limits, self.hide = path, limits, hide

    def _started(self) -> Sandbox:
        if self.box is None:
            box = Sandbox(self.path, self.limits, self.hide)
            box.__enter__()  # kept only once started: close() never ends a box that did not start
            self.box = box
        return self.box

    def close(self) -> None:
        if self.box is not None:
            box, self.box = self.box, None
            box.__exit__(None, None, None)

    def __enter__(self) -> FreshBox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Callers whose wrong answer can be traced to their helpers' answers.
TRACEABLE = ("minimum_contact_time",)
CONTACT_TIMES = ("contact_time_grains", "contact_time_walls")


def explained(caller: str, calls: list[tuple[tuple[Any, ...], Returned]], replayer: Replayer) -> bool:
    """Whether the caller's wrong answers in one case, ``calls`` (its arguments and what it returned, every helper
    call recorded), are those its helpers' answers make them, and would be right with the reference's answers in
    their place. Without this check, a file could call a wrong helper for show, ignore its answer, and have the
    cases where its own bug shows set aside.

    For minimum_contact_time: each call's time is the reference's, or is wrong and traced (:func:`traced`), and
    at least one is traced. Anything else (other callers, a wrong index with the right time) is not explained.
    """
    if caller not in TRACEABLE:
        return False
    seen = [traced(caller, args, returned, replayer) for args, returned in calls]
    return TRACED in seen and None not in seen


RIGHT, TRACED = "right", "traced"


def traced(caller: str, request_args: tuple[Any, ...], returned: Returned, replayer: Replayer) -> str | None:
    """RIGHT if minimum_contact_time's time and index are the reference's; TRACED if it is wrong but is the least of the
    contact times its helpers gave (all recorded, each about two grains or a grain and a wall of the request), its
    index names a pair that gave it, that answer confirmed by a replay when it is wrong, and the least of the
    reference's answers on the same calls is the reference's time; else None (a call about made-up bodies, a raised
    or unreadable call, an ill-conditioned input, a wrong time or index of its own)."""
    own, expected = mct_of(returned.value), reference_answer(caller, request_args)
    if own is None or expected is None:
        return None
    reference_time = float(expected[0])
    if same_time(own[0], reference_time):
        # The right time with a wrong index is the caller's own bug, as in agrees(): neither right nor traced.
        index = tuple(sorted(int(i) for i in np.ravel(expected[1])))
        return RIGHT if reference_time == spec.NO_CONTACT or own[1] == index else None
    if returned.helper_calls_total > len(returned.helper_calls):
        return None
    calls = _readable_pieces(returned, request_args)
    if calls is None:
        return None
    given: list[tuple[float, float, HelperCall, tuple[Any, ...], tuple[Any, ...]]] = []
    prefetch((call.name, piece) for call, _, piece, _ in calls)
    for call, args, piece, time in calls:
        if _solved_just_before(call.name, piece, request_args):
            continue  # left out by the caller (indexOld), whatever the helper said
        right = reference_answer(call.name, piece)
        if right is None:
            return None
        given.append((time, float(right), call, args, piece))
    if not given or not same_time(min(g[1] for g in given), reference_time):
        return None
    least, right, call, args, piece = min(given, key=lambda g: g[0])
    if not same_time(own[0], least):
        return None
    if least != spec.NO_CONTACT and _least_pairs(given, least, request_args) != {own[1]}:
        return None
    # Every wrong answer the caller's rests on is confirmed: the least, if wrong, and each that hid an earlier contact
    # (the reference's time before the least). A record never replayed could otherwise hide the contact the
    # caller's own bug missed (a file searched no wall of grain 0, and recorded "no contact" for them).
    leaned = [g for g in given if not same_time(g[0], g[1]) and (g[0] == least or g[1] < least)]
    if sum(g[4] is not g[3] for g in leaned) > PAIRS_CONFIRMED_ALONE:
        return None
    return TRACED if _confirmed(replayer, leaned) else None


def _least_pairs(given: list[tuple[float, float, HelperCall, tuple[Any, ...], tuple[Any, ...]]], least: float,
                 request_args: tuple[Any, ...]) -> set[tuple[int, ...]]:
    """The indices of the pairs whose helper answer is the least time. The caller's index must be the only one: a red
    team's helper, wrong only where the caller's own index was wrong, made that index look traced (+7.5), and when
    any pair at the least time would do, so did answering the least time for every pair, or once more for the pair
    the wrong index names."""
    return {index for t, _, call, _, piece in given if t == least for index in _indices(call.name, piece, request_args)}


#: Pairs of calls about many pairs replayed alone to trace one answer, at most (else it is left untraced): each is a
#: call of the submission, and a file choosing its calls must not make the grader replay without bound.
PAIRS_CONFIRMED_ALONE = 64


def _confirmed(replayer: Replayer,
               leaned: list[tuple[float, float, HelperCall, tuple[Any, ...], tuple[Any, ...]]]) -> bool:
    """Whether the helper gives these wrong times again: each pair of a call about many pairs, replayed alone (the
    form its own tests call it in), gives its time; then each call, replayed whole once, gives what was recorded. A
    helper wrong only when called on many pairs at once, where its own tests never look, excuses nothing. The pairs
    go first: a red team's helper, shown the whole call (every body of the request), worked out the lie its caller
    needed and kept it for the pair alone."""
    for time, _, call, args, piece in leaned:
        if piece is not args:  # one pair of a call about many (audit.pieces)
            replay = replayed(replayer, call.name, piece)
            alone = None if replay is None else time_of(replay.value)
            if alone is None or not same_time(alone, time):
                return False
    calls = {id(call): (call, args) for _, _, call, args, _ in leaned}
    for call, args in calls.values():
        replay = replayed(replayer, call.name, args)
        if replay is None or not same_value(replay.value, call.result):
            return False
    return True


def _readable_pieces(returned: Returned, request_args: tuple[Any, ...]
                     ) -> list[tuple[HelperCall, tuple[Any, ...], tuple[Any, ...], float]] | None:
    """The contact-time calls of ``returned``, one per pair: (call, its arguments, the pair's, the pair's time); None
    if any is unreadable, raised, about bodies not in the request, or more pairs than an audit reads (found before
    the reference is asked anything, so that it is asked only about calls that can count)."""
    grains = set(_bodies(request_args))  # the request's bodies, once
    w = request_args[3]
    calls: list[tuple[HelperCall, tuple[Any, ...], tuple[Any, ...], float]] = []
    for call in returned.helper_calls:
        if call.name not in CONTACT_TIMES:
            continue
        args = positional(call)
        if args is None or call.raised:
            return None
        if len(calls) + pairs_in(call.result) > AUDIT_CALLS:
            return None  # more pairs than an audit reads: untraced, and never split without bound
        for piece, answer in pieces(call.name, args, call.result):
            time = time_of(answer)
            if time is None or not _about(call.name, piece, grains, w):
                return None
            calls.append((call, args, piece, time))
    return calls


def _about(name: str, args: tuple[Any, ...], grains: set[tuple[Any, ...]], w: np.ndarray) -> bool:
    """Whether a contact-time call is about bodies of minimum_contact_time(x, v, R, w, indexOld): two of its
    ``grains`` ((position, velocity, radius) as given), or one of them and one of its walls ``w``."""
    if name == "contact_time_walls":
        wall, x1, v1, r1 = args
        body = _body(x1, v1, r1)
        return body is not None and body in grains and any(np.array_equal(wall, k) for k in w)
    x1, x2, v1, v2, r1, r2 = args
    one, other = _body(x1, v1, r1), _body(x2, v2, r2)
    return one is not None and other is not None and one != other and one in grains and other in grains


def _indices(name: str, piece: tuple[Any, ...], request_args: tuple[Any, ...]) -> set[tuple[int, ...]]:
    """The indices minimum_contact_time(x, v, R, w, indexOld) would give the contact a call is about, sorted as mct_of
    sorts them (every match, should two grains or walls of the request be equal)."""
    bodies, w = _bodies(request_args), request_args[3]

    def grains(body: tuple[Any, ...] | None) -> list[int]:
        return [i for i, known in enumerate(bodies) if body == known]

    if name == "contact_time_walls":
        wall, x1, v1, r1 = piece
        walls = [-(k + 1) for k in range(len(w)) if np.array_equal(wall, w[k])]
        return {tuple(sorted((i, k))) for i in grains(_body(x1, v1, r1)) for k in walls}
    x1, x2, v1, v2, r1, r2 = piece
    return {tuple(sorted((i, j))) for i in grains(_body(x1, v1, r1)) for j in grains(_body(x2, v2, r2)) if i != j}


def _bodies(request_args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The grains of minimum_contact_time(x, v, R, w, indexOld), keyed as :func:`_body` keys a call's."""
    x, v, R = request_args[:3]
    return [(tuple(x[i]), tuple(v[i]), float(R[i])) for i in range(len(x))]


def _body(x: Any, v: Any, r: Any) -> tuple[Any, ...] | None:
    """A grain as the request's are keyed (position, velocity, radius); None for arguments of any other shape (the
    submission chooses them: numbers for vectors, arrays of many grains)."""
    if not (isinstance(x, np.ndarray) and isinstance(v, np.ndarray) and x.shape == v.shape == (2,)):
        return None
    if isinstance(r, np.ndarray):
        return None
    return tuple(x), tuple(v), float(r)


def _solved_just_before(name: str, args: tuple[Any, ...], request_args: tuple[Any, ...]) -> bool:
    """Whether a contact-time call is about the contact minimum_contact_time(x, v, R, w, indexOld) leaves out."""
    x, v, _, w, index = request_args
    a, b = (int(i) for i in np.ravel(index))
    if a < 0 or a >= len(x):
        return False
    if name == "contact_time_walls":
        k = -(b + 1)
        return 0 <= k < len(w) and np.array_equal(args[0], w[k]) and np.array_equal(args[1], x[a])
    if not 0 <= b < len(x):
        return False
    ends = {(tuple(args[0]), tuple(args[2])), (tuple(args[1]), tuple(args[3]))}
    return ends == {(tuple(x[a]), tuple(v[a])), (tuple(x[b]), tuple(v[b]))}
