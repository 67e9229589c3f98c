"""A seccomp filter for the boxes: no file locks, no file notifications, no kernel keys, no foreign system-call ABI.

Boxes bind the same library files read-only, so the same inodes: a lock (fcntl's F_SETLK/F_OFD_SETLK, or flock)
taken in one box is seen by F_GETLK in another that runs at the same time, whatever the namespaces and uids. A red
team's file sent 64 bits this way from the grading's box to the box that confirms traced answers
(tracing.FreshBox); two students graded side by side in a batch could do the same. inotify, fanotify (open to any
user since Linux 5.13) and fcntl's F_NOTIFY tell one box what another opens; the kernel keyring (add_key, keyctl)
is shared by the boxes and outlives them. None of these is needed by Python or numpy: they fail with EPERM. So do
ways to hide CPU time from the box's meter: setting SIGCHLD's disposition, new namespaces, io_uring (program()).

bubblewrap loads the program (``--seccomp FD``); :func:`program` builds it as classic BPF, for the machine's own
architecture only (x86_64, aarch64): a system call of any other ABI (int 0x80 on x86_64) fails too, so that no
other system-call numbering can get round it.
"""

from __future__ import annotations

import os
import platform
import struct

# Classic BPF opcodes (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
# Offsets in struct seccomp_data: nr, arch, then the arguments (args[0]'s low half; args[1]'s low and high halves on
# little-endian machines).
_NR, _ARCH, _ARG0, _ARG1, _ARG1_HIGH = 0, 4, 16, 24, 28
#: SIGCHLD's number on both machines below.
SIGCHLD = 17
#: clone's flags for new namespaces (mount, cgroup, UTS, IPC, user, pid, network): refused.
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_X32_BIT = 0x40000000

#: fcntl commands refused: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_NOTIFY.
LOCK_COMMANDS = (5, 6, 7, 36, 37, 38, 1026)

#: Per machine: its audit architecture, the numbers of fcntl, rt_sigaction and clone, of the calls refused outright
#: (flock, inotify_init, inotify_init1, fanotify_init, fanotify_mark, add_key, request_key, keyctl, unshare, setns), and
#: of those said not to exist (clone3, io_uring_setup, io_uring_enter, io_uring_register).
_ABIS = {
    "x86_64": (0xC000003E, 72, 13, 56, (73, 253, 294, 300, 301, 248, 249, 250, 272, 308), (435, 425, 426, 427)),
    "aarch64": (0xC00000B7, 25, 134, 220, (32, 26, 262, 263, 217, 218, 219, 97, 268), (435, 425, 426, 427)),
}


#: What a box's CPU count misses where the filter is not loaded (program() says why each is refused).
UNFILTERED_CPU = "CPU spent through an ignored SIGCHLD, new namespaces or io_uring escapes the CPU count"


def supported() -> bool:
    """Whether :func:`program` knows this machine's system calls."""
    return platform.machine() in _ABIS


def program() -> bytes:
    """The filter as struct sock_filter entries (code u16, jt u8, jf u8, k u32), for bwrap --seccomp."""
    arch, fcntl, sigaction, clone, refused, absent = _ABIS[platform.machine()]
    # (code, k, jump-if-true label, jump-if-false label); labels: None = next, "signals", "fcntl", "allow", "deny",
    # "nosys" (forward only).
    steps: list[tuple[int, int, str | None, str | None]] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ, arch, None, "deny"),
        (_LD_W_ABS, _NR, None, None),
        (_JGE, _X32_BIT, "deny", None),
        *[(_JEQ, nr, "deny", None) for nr in refused],
        # No new namespaces (a box made and dropped network namespaces 2 000 times a second: their teardown in kernel
        # workers, 0.85 s uncharged per second charged). clone3 "does not exist" (its flags are out of a filter's
        # reach: the C library then uses clone), nor does io_uring (rings torn down in kernel workers: 0.64 s).
        *[(_JEQ, nr, "nosys", None) for nr in absent],
        (_JEQ, clone, None, "signals"),
        (_LD_W_ABS, _ARG0, None, None),
        (_JSET, CLONE_NEW_FLAGS, "deny", "allow"),
    ]
    signals_at = len(steps)
    steps += [
        # Setting SIGCHLD's disposition (reading it is allowed: a null new action): ignored, or SA_NOCLDWAIT, the
        # kernel reaps the children itself and their CPU time reaches no parent, so the box's CPU meter never sees
        # it (a review's file burnt 1.3 s in short-lived children and was charged 0.07 s).
        (_JEQ, sigaction, None, "fcntl"),
        (_LD_W_ABS, _ARG0, None, None),
        (_JEQ, SIGCHLD, None, "allow"),
        (_LD_W_ABS, _ARG1, None, None),
        (_JEQ, 0, None, "deny"),
        (_LD_W_ABS, _ARG1_HIGH, None, None),
        (_JEQ, 0, "allow", "deny"),
    ]
    fcntl_at = len(steps)
    steps += [
        (_LD_W_ABS, _NR, None, None),
        (_JEQ, fcntl, None, "allow"),
        (_LD_W_ABS, _ARG1, None, None),
        *[(_JEQ, command, "deny", None) for command in LOCK_COMMANDS],
        (_RET, _ALLOW, None, None),
        (_RET, _EPERM, None, None),
    ]
    steps.append((_RET, _ENOSYS, None, None))
    at = {"signals": signals_at, "fcntl": fcntl_at, "allow": len(steps) - 3, "deny": len(steps) - 2,
          "nosys": len(steps) - 1}
    out = b""
    for k, (code, value, yes, no) in enumerate(steps):
        jt = 0 if yes is None else at[yes] - k - 1
        jf = 0 if no is None else at[no] - k - 1
        out += struct.pack("=HBBI", code, jt, jf, value)
    return out


def program_fd() -> int:
    """A pipe's read end holding :func:`program` (bwrap reads it whole at start; the caller closes it after)."""
    read, write = os.pipe()
    try:
        os.write(write, program())  # a few hundred bytes: fits the pipe
    finally:
        os.close(write)
    return read
