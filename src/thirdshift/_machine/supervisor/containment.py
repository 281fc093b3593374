"""Entering the session's containment: a cgroup, or PID and mount namespaces, or neither.

Also the kernel calls that ``os`` lacks (``prctl``, ``unshare``, ``mount``), through libc.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket

from .cgroup import Cgroup
from .protocol import CGROUP, CGROUP_FD, CHANNEL_FD, GONE, NAMESPACE

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


def _checked(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def prctl(option: int, value: int) -> None:
    _checked(_libc.prctl(option, value, 0, 0, 0), "prctl")


def _enter_namespace() -> None:
    """Unshare PID and mount namespaces (and a user namespace mapping only our own uid and
    gid, unless we are root). Only children of this process are in the new PID namespace."""
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWUSER if uid != 0 else 0)
    _checked(_libc.unshare(flags), "unshare")
    if uid != 0:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as mapping:
                mapping.write(text)


def _remount_proc() -> None:
    """As the new PID namespace's pid 1: private mounts, and a /proc of this namespace."""
    _checked(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    _checked(
        _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
        "mount proc",
    )


def outer_process(init: int) -> int:
    """The namespace's outer process: wait for its pid 1, then say that all is gone.

    pid 1's end makes the kernel kill every process in the namespace, and its wait status is
    given only once they are gone: past that, nothing of the session is left. The outer
    process lets go of the session's stdio at once, and holds only the channel.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    os.waitpid(init, 0)
    try:
        socket.socket(fileno=CHANNEL_FD).sendall(f"{GONE}\n".encode(), socket.MSG_NOSIGNAL)
    except OSError:
        pass
    return 0


def enter_containment(containment: str, joins: list[int]) -> tuple[Cgroup | None, int | None]:
    """Set up the containment; return the cgroup, if any, and, in a namespace's outer process,
    its pid 1's pid (the caller's only job then is to wait for it). ``joins`` are the folders
    of the cgroups the CLI joins (the session's own first, under ``cgroup``)."""
    for fd in joins:
        os.set_inheritable(fd, False)
    if containment != NAMESPACE:
        prctl(PR_SET_DUMPABLE, 0)
        if containment == CGROUP:
            return Cgroup(CGROUP_FD), None
        return None, None
    _enter_namespace()
    # Only now: a non-dumpable process may not write its own uid_map. Nothing of the session
    # runs yet, and the fork below inherits it.
    prctl(PR_SET_DUMPABLE, 0)
    held_r, held_w = os.pipe()  # the outer process holds the write end open while it lives
    init = os.fork()
    if init:
        os.close(held_r)
        return None, init
    os.close(held_w)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.set_blocking(held_r, False)
    try:
        if os.read(held_r, 1) == b"":
            os._exit(1)  # the outer process died before we could follow it
    except BlockingIOError:
        pass
    os.close(held_r)
    _remount_proc()
    return None, None


def probe_namespace() -> int:
    """Exit 0 if this machine lets us make the namespace containment, else 1."""
    try:
        _enter_namespace()
        prctl(PR_SET_DUMPABLE, 0)  # as the real one does, before pid 1 mounts /proc
        init = os.fork()
        if init == 0:
            try:
                _remount_proc()
            except OSError:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(init, 0)
        return 0 if os.waitstatus_to_exitcode(status) == 0 else 1
    except OSError:
        return 1
