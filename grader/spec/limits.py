"""The limits on a submission's process, declared once.

Every time limit counts the CPU time of the submission's processes, not the
wall clock, so that the same file gets the same grade on a quiet and on a busy
machine. The wall clock is only a generous backstop (``WALL_BACKSTOP_FACTOR``
times the CPU limit, plus ``WALL_BACKSTOP_SLACK``) against code that sleeps or
blocks without using the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The largest granularGas.py any command grades, in bytes (check refuses a larger one; a batch reads no more).
SOURCE_BYTES = 1024**2


def too_large(name: str, size: int) -> str | None:
    """Why a file of ``size`` bytes is not graded, in every command's words; None if it may be."""
    if size <= SOURCE_BYTES:
        return None
    return (f"{name} has {size} bytes, more than the {SOURCE_BYTES} a submission may have; remove what it does not "
            "need (long comments, pasted data)")

#: One thread for numpy's BLAS and its kin, in the boxes (where threads would share out a call's CPU time) and in the
#: grader's commands, set before numpy loads (OpenBLAS's pool of threads spun for 70 ms of CPU at every import; one
#: thread also keeps a sum's order the same on any machine).
ONE_THREAD = {**{f"{library}_NUM_THREADS": "1" for library in ("OMP", "OPENBLAS", "MKL", "NUMEXPR")},
              "VECLIB_MAXIMUM_THREADS": "1"}  # Apple's Accelerate names its own differently

#: Wall-clock backstop of a CPU-time limit: factor and slack (seconds).
WALL_BACKSTOP_FACTOR = 10.0
WALL_BACKSTOP_SLACK = 30.0


#: A call that, once past its CPU limit in wall-clock time, used less than this
#: fraction of one core over the last IDLE_SECONDS is waiting, not computing
#: (sleeping, blocked on input): it is stopped then, not at the backstop. A
#: computing call gets its share of a core however busy the machine is.
IDLE_SECONDS = 3.0
IDLE_CPU_FRACTION = 0.01


#: Time asleep allowed per CPU second used (Limits.asleep_seconds). Only time with none of the box's tasks running or
#: ready to run counts (grader.sandbox.asleep: the kernel's counts of each task's time run and waited for a core), so
#: a file on a busy machine, waiting for a core, is not charged for it; one that sleeps is, whatever its slices
#: (tests/limit_samples/sleeps_nine_parts_in_ten.py, which stretched its grading to ten times its CPU time while ten
#: seconds of any waiting were allowed per CPU second).
ASLEEP_PER_CPU_SECOND = 0.25


#: CPU seconds a box's processes may use between its calls (in all, per child) before the box is stopped between
#: every two (client.Sandbox._pause_after; a box once stopped is stopped in every child after). What runs there is
#: charged to the next call, but how much runs while the grader works depends on the grader's speed: a file busy in
#: the background would be charged more on a slower machine. A file that only answers its calls uses none there (0
#: to 0.3 ms over a whole grading, measured).
BETWEEN_CALLS_CPU_SECONDS = 0.01


def wall_backstop(cpu_seconds: float) -> float:
    """Wall-clock seconds after which a call is stopped whatever its CPU use."""
    return cpu_seconds * WALL_BACKSTOP_FACTOR + WALL_BACKSTOP_SLACK


@dataclass(frozen=True)
class Limits:
    """Resource limits of the submission's process (command-line options)."""

    #: CPU seconds one call may use (``--timeout``).
    call_seconds: float = 5.0
    #: CPU seconds the import of the file may use (``--import-timeout``).
    import_seconds: float = 20.0
    #: Address space of each process (``--memory-mb``).
    memory_bytes: int = 2 * 1024**3
    #: Hard CPU limit of each process (RLIMIT_CPU), a last resort.
    cpu_seconds: int = 600
    #: Largest file the submission may write.
    file_bytes: int = 1024**2
    #: Size of the submission's private working folder (a quota where the sandbox supports it).
    disk_bytes: int = 32 * 1024**2
    #: Files and folders the submission may create in its working folder.
    files: int = 1000
    #: Processes the submission may run at once (``--processes``).
    processes: int = 32
    #: Files, pipes and sockets one of its processes may hold open: it also caps the sockets a user may have in
    #: flight (sent over a socket, not yet received), whose garbage collection runs in a kernel worker outside the
    #: box (a review's file kept 19 900 in flight: 4.8 s of CPU charged to nobody for 0.4 s charged to it).
    open_files: int = 256
    #: CPU seconds one function may use over all its calls: a slow function
    #: must not make the batch crawl, one call just under the limit at a time.
    function_seconds: float = 120.0
    #: CPU seconds the file may use in all in the boxes of one grading (the grading's and its searches'): every
    #: import and every call. Each restart after a crash or a timeout imports the file again: a red team's file that
    #: ended its process in most tests after an import just under its limit used 776 s (13 minutes; a batch's
    #: backstop was 15); crashes and function budgets mixed allow some 1 200 s. Past this, calls are not made and
    #: fail as timeouts. (The replays of the audits also have caps of their own; the efficiency measurement and the
    #: feedback animation, budgets of their own, even in the searches' box: client.Sandbox.new_budgets.)
    grading_seconds: float = 240.0
    #: Wall-clock seconds the calls of one grading may spend asleep in all (sleeping, waiting for input, stopped:
    #: none of the file's processes computing or ready to), plus ASLEEP_PER_CPU_SECOND per CPU second they used. A
    #: correct file is charged a second or two in all, even beside four CPU-bound processes (only calls too short to
    #: be read are charged their queueing); a file sleeping just under the idle detector in every call made one
    #: grading last hours (a red-team review: 1 800 calls of 4.5 s). Past it, calls are stopped as timeouts.
    asleep_seconds: float = 30.0
    #: Use Linux namespaces where the machine permits (``--no-namespaces``: off).
    namespaces: bool = True

    @property
    def call_wall_seconds(self) -> float:
        return wall_backstop(self.call_seconds)

    @property
    def import_wall_seconds(self) -> float:
        return wall_backstop(self.import_seconds)


#: CPU seconds of the feedback animation's box in all (imports and update's calls): it comes after a grading that
#: may have used the file's budgets up (it had 600 s of update alone).
FEEDBACK_ANIMATION_SECONDS = 60.0

#: Wall-clock seconds for the whole grading of one submission in a batch (``--submission-timeout``): a backstop
#: against a fault of the grader. A file's CPU budgets in all the boxes of its grading, and the time asleep they
#: allow, stay well under it on a machine that is not overloaded (tests/test_hostile.py adds them up).
SUBMISSION_SECONDS = 1200.0

#: Bytes kept of anything the submission controls that reaches a report:
#: an exception's message, a type name, a repr, a "where" line.
TEXT_CAP = 300

#: Bytes kept of what the submission printed (stdout and stderr together).
OUTPUT_CAP = 64 * 1024

#: Largest reply line the grader reads from the child; past it the reply is refused.
REPLY_CAP = 16 * 1024**2

#: Efficiency measurement (grader.grading.efficiency), after the tests: CPU seconds one timed call may use (a
#: call past it ends the growth of N: "not measured beyond"), and CPU seconds of the whole measurement.
EFFICIENCY_CALL_SECONDS = 2.0
EFFICIENCY_SECONDS = 20.0
