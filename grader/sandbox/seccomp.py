"""A seccomp filter for the boxes: no file locks, no file notifications, no kernel keys, no foreign system-call ABI.

Boxes bind the same library files read-only, so the same inodes: a lock (fcntl's F_SETLK/F_OFD_SETLK, or flock)
taken in one box is seen by F_GETLK in another that runs at the same time, whatever the namespaces and uids. A red
team's file sent 64 bits this way from the grading's box to the box that confirms traced answers
(tracing.FreshBox); two students graded side by side in a batch could do the same. inotify, fanotify (open to any
user since Linux 5.13) and fcntl's F_NOTIFY tell one box what another opens; the kernel keyring (add_key, keyctl)
is shared by the boxes and outlives them. None of these is needed by Python or numpy: they fail with EPERM. So do
ways to hide CPU time from the box's meter: setting SIGCHLD's disposition, new namespaces, io_uring, and every way
for a process to continue one stopped while its box waits for its next call (program()); and changing a task's
priority, which could let it wait ready to run at a sliver of a core and get credit for it (grader.sandbox.asleep:
a box seen at a lowered priority gets none, and a priority lowered by these calls could be raised again between
two readings), or what tells an execve (its start of stack: personality turns its random placement off, prctl's
PR_SET_MM sets it back). The child then installs a second filter on itself (exec_program): no execve at all once it
has started, which a machine without address randomisation made necessary.

bubblewrap loads the program (``--seccomp FD``); :func:`program` builds it as classic BPF, for the machine's own
architecture only (x86_64, aarch64): a system call of any other ABI (int 0x80 on x86_64) fails too, so that no
other system-call numbering can get round it.
"""

from __future__ import annotations

import os
import platform
import struct
import sys
from dataclasses import dataclass

# Classic BPF opcodes (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET, _AND = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
# Offsets in struct seccomp_data: nr, arch, then the arguments' low halves (little-endian machines), and args[1]'s
# high half.
_NR, _ARCH, _ARG1_HIGH = 0, 4, 28
_ARG = (16, 24, 32)
#: Signal numbers on both machines below.
SIGCHLD, SIGCONT = 17, 18
#: clone's flags for new namespaces (mount, cgroup, UTS, IPC, user, pid, network): refused.
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_X32_BIT = 0x40000000

#: fcntl commands refused: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_NOTIFY, F_SETSIG.
FCNTL_COMMANDS = (5, 6, 7, 36, 37, 38, 1026, 10)
#: prctl's PR_SET_PDEATHSIG; PR_SET_MM, open to any process with PR_SET_MM_MAP (for checkpoint restore), which
#: rewrites the start of stack by which grader.sandbox.asleep tells an execve (a red team's file set it back after
#: each execve and cashed hoarded waits: 0.29 s charged of 6.3-s calls).
_PR_SET_PDEATHSIG, _PR_SET_MM = 1, 35


@dataclass(frozen=True)
class Abi:
    """One machine's system calls, by number."""

    arch: int  # its audit architecture
    #: Refused outright: flock, inotify_init, inotify_init1, fanotify_init, fanotify_mark, add_key, request_key,
    #: keyctl, unshare, setns; ptrace, setpgid, setsid, timer_create, mq_notify; setpriority, sched_setparam,
    #: sched_setscheduler, sched_setattr, personality.
    refused: tuple[int, ...]
    absent: tuple[int, ...]  # said not to exist: clone3, io_uring_setup, io_uring_enter, io_uring_register
    clone: int
    rt_sigaction: int
    #: (call, argument, values refused): fcntl's commands; SIGCONT sent by kill, tkill, tgkill, rt_sigqueueinfo,
    #: rt_tgsigqueueinfo, pidfd_send_signal; prctl's PR_SET_PDEATHSIG and PR_SET_MM.
    checked: tuple[tuple[int, int, tuple[int, ...]], ...]
    execs: tuple[int, ...]  # execve, execveat: refused by the child's own filter once it has started (exec_program)
    seccomp: int  # the seccomp system call, by which the child installs it on all its threads at once (TSYNC)


def _checked(fcntl: int, kill: int, tkill: int, tgkill: int, sigqueue: int, tgsigqueue: int,
             prctl: int) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    return ((fcntl, 1, FCNTL_COMMANDS), (kill, 1, (SIGCONT,)), (tkill, 1, (SIGCONT,)), (tgkill, 2, (SIGCONT,)),
            (sigqueue, 1, (SIGCONT,)), (tgsigqueue, 2, (SIGCONT,)), (424, 1, (SIGCONT,)),
            (prctl, 0, (_PR_SET_PDEATHSIG, _PR_SET_MM)))


_ABIS = {
    "x86_64": Abi(0xC000003E, (73, 253, 294, 300, 301, 248, 249, 250, 272, 308, 101, 109, 112, 222, 244,
                              141, 142, 144, 314, 135),
                  (435, 425, 426, 427), 56, 13, _checked(72, 62, 200, 234, 129, 297, 157), (59, 322), 317),
    "aarch64": Abi(0xC00000B7, (32, 26, 262, 263, 217, 218, 219, 97, 268, 117, 154, 157, 107, 184,
                               140, 118, 119, 274, 92),
                   (435, 425, 426, 427), 220, 134, _checked(25, 129, 130, 131, 138, 240, 167), (221, 281), 277),
}


def refuses_exec() -> bool:
    """Whether the child refuses execve here (exec_program): in every mode, on Linux, where the filters know the
    machine's system calls and the child's ABI is the machine's own (a 64-bit Python)."""
    return platform.machine() in _ABIS and sys.platform == "linux" and struct.calcsize("P") == 8


#: What a box's CPU count misses where the first filter is not loaded (program() says why each is refused).
UNFILTERED_CPU = ("CPU spent through an ignored SIGCHLD, new namespaces or io_uring escapes the CPU count, "
                  "processes a box leaves running can resume themselves while it waits for its next call, and a task "
                  "may lower its priority between two readings" + ("" if refuses_exec() else ", or hide an execve,")
                  + " to hide sleep")


#: A step: (code, k, where to jump if true, if false); a jump names a label placed later (None: the next step).
_Step = tuple[int, int, "str | None", "str | None"]


def supported() -> bool:
    """Whether :func:`program` knows this machine's system calls."""
    return platform.machine() in _ABIS


def _own_abi_only(abi: Abi) -> list[_Step | str]:
    """A filter's first steps: a call of another ABI (another architecture, x32) goes to "deny"; else the system
    call's number is loaded."""
    return [(_LD_W_ABS, _ARCH, None, None), (_JEQ, abi.arch, None, "deny"), (_LD_W_ABS, _NR, None, None),
            (_JGE, _X32_BIT, "deny", None)]


def program() -> bytes:
    """The filter as struct sock_filter entries (code u16, jt u8, jf u8, k u32), for bwrap --seccomp."""
    abi = _ABIS[platform.machine()]
    steps: list[_Step | str] = [
        *_own_abi_only(abi),
        *[(_JEQ, nr, "deny", None) for nr in abi.refused],
        # No new namespaces (a box made and dropped network namespaces 2 000 times a second: their teardown in kernel
        # workers, 0.85 s uncharged per second charged). clone3 "does not exist" (its flags are out of a filter's
        # reach: the C library then uses clone), nor does io_uring (rings torn down in kernel workers: 0.64 s).
        *[(_JEQ, nr, "nosys", None) for nr in abi.absent],
        (_JEQ, abi.clone, None, "sigaction"),
        (_LD_W_ABS, _ARG[0], None, None),
        (_JSET, CLONE_NEW_FLAGS, "deny", None),
        (_AND, 0xFF, None, None),  # the signal the parent gets when the child ends
        (_JEQ, SIGCONT, "deny", "allow"),
        "sigaction",
        # Setting SIGCHLD's disposition (reading it is allowed: a null new action): ignored, or SA_NOCLDWAIT, the
        # kernel reaps the children itself and their CPU time reaches no parent, so the box's CPU meter never sees
        # it (a review's file burnt 1.3 s in short-lived children and was charged 0.07 s).
        (_JEQ, abi.rt_sigaction, None, "checked0"),
        (_LD_W_ABS, _ARG[0], None, None),
        (_JEQ, SIGCHLD, None, "allow"),
        (_LD_W_ABS, _ARG[1], None, None),
        (_JEQ, 0, None, "deny"),
        (_LD_W_ABS, _ARG1_HIGH, None, None),
        (_JEQ, 0, "allow", "deny"),
    ]
    # A box waiting for its next call is stopped (Sandbox.pause): nothing in it may continue a stopped process, so no
    # SIGCONT sent (kill and the like; a file's F_SETSIG; a message queue's; a parent's death; a child's end, above),
    # no tracer, no new process group or session (whose orphaning, or its terminal's hangup, makes the kernel send
    # one), no timer (its SIGKILL ends a stopped process, whose end signals another).
    for k, (nr, argument, values) in enumerate(abi.checked):
        steps += [f"checked{k}", (_LD_W_ABS, _NR, None, None), (_JEQ, nr, None, f"checked{k + 1}"),
                  (_LD_W_ABS, _ARG[argument], None, None), *[(_JEQ, v, "deny", None) for v in values],
                  (_RET, _ALLOW, None, None)]
    steps += [f"checked{len(abi.checked)}", "allow", (_RET, _ALLOW, None, None), "deny", (_RET, _EPERM, None, None),
              "nosys", (_RET, _ENOSYS, None, None)]
    return _assembled(steps)


def exec_refusal() -> dict[str, object]:
    """What the child needs to refuse execve (its config's "no_exec"; empty where the machine is not known)."""
    if not refuses_exec():
        return {}
    return {"filter": exec_program().hex(), "seccomp": _ABIS[platform.machine()].seccomp}

def exec_program() -> bytes:
    """A second filter, which grader.sandbox.child installs on itself before it imports the submission: execve and
    execveat fail with EPERM, and so does any system call of a foreign ABI (the first filter is not loaded in plain
    modes). A task that calls execve takes over its process's first task and its counts (grader.sandbox.asleep tells
    it by its start of stack, which a machine without address randomisation, kernel.randomize_va_space = 0 or a
    grader under setarch -R, leaves unchanged: a red team cashed waits hoarded at import so); the submission needs
    no program of the machine."""
    abi = _ABIS[platform.machine()]
    steps: list[_Step | str] = [
        *_own_abi_only(abi),
        *[(_JEQ, nr, "deny", None) for nr in abi.execs],
        "allow", (_RET, _ALLOW, None, None), "deny", (_RET, _EPERM, None, None),
    ]
    return _assembled(steps)


def _assembled(steps: list[_Step | str]) -> bytes:
    """The steps as struct sock_filter entries, each label (a string among them) resolved to the step after it
    (jumps go forward, at most 255 steps: struct.error otherwise)."""
    k, at = 0, {}
    for step in steps:
        if isinstance(step, str):
            at[step] = k
        else:
            k += 1
    out, k = b"", 0
    for step in steps:
        if isinstance(step, str):
            continue
        code, value, yes, no = step
        jt = 0 if yes is None else at[yes] - k - 1
        jf = 0 if no is None else at[no] - k - 1
        out += struct.pack("=HBBI", code, jt, jf, value)
        k += 1
    return out


def program_fd() -> int:
    """A pipe's read end holding :func:`program` (bwrap reads it whole at start; the caller closes it after)."""
    read, write = os.pipe()
    try:
        os.write(write, program())  # a few hundred bytes: fits the pipe
    finally:
        os.close(write)
    return read
