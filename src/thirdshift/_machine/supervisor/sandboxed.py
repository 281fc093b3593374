"""The two sides of a sandboxed session: the outer process, and the sandbox's pid 1.

The outer process is the supervisor the adapter starts (argv ``sandbox CGROUPS PROGRAM
ARGS...``). It starts PROGRAM, ``bwrap``, in the session's cgroups (joined before the exec, so
that everything in the sandbox is born inside them and the cgroup namespace ``bwrap`` makes has
them as its root), hands the CLI's stdio to the sandbox's pid 1 over a socket of their own,
waits for ``bwrap`` to end and says ``gone``: ``bwrap`` ends only once its pid 1 has, and the
kernel ends everything else in a PID namespace whose pid 1 is gone. If the sandbox could not be
made, it says why (``spawn-error``), from what ``bwrap`` wrote on stderr.

The stdio goes over a socket, not as ``bwrap``'s own stdio, because ``bwrap``'s outer process
keeps every descriptor it was started with until the end: the stream would stay open after the
CLI's exit, and every session would wait out its drain.

The pid 1 (argv ``init LISTEN CWD GRACE SIGNALS PROGRAM ARGS...``) takes the stdio, makes the
listening sockets of the sandbox's network that the adapter asked for (``LISTEN``: ``-`` or
``host:port`` joined by commas) and hands them to the adapter (``listening <n>``), which serves
them from outside; then it supervises the CLI as under the ``namespace`` containment, of which
it is the pid 1 (its end ends the namespace).
"""

from __future__ import annotations

import os
import signal
import socket

from .cgroup import join
from .containment import PR_SET_DUMPABLE, prctl
from .protocol import (
    CGROUP_FD,
    CHANNEL_FD,
    GONE,
    LISTENING,
    SPAWN_ERROR,
    STDIO_FD,
)
from .session import Supervisor

# How much of bwrap's stderr is kept to say why a sandbox could not be made.
_ERROR_KEPT = 4096
_READY = b"+"


def outer(argv: list[str], catchable: frozenset[int]) -> int:
    """The outer process of a sandboxed session; its exit status."""
    count, program, *args = argv
    cgroups = [CGROUP_FD + index for index in range(int(count))]
    prctl(PR_SET_DUMPABLE, 0)
    channel = socket.socket(fileno=CHANNEL_FD)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    errors_r, errors_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        _exec_bwrap(
            program,
            args,
            cgroups=cgroups,
            stdio=theirs.fileno(),
            errors=errors_w,
            catchable=catchable,
        )
    theirs.close()
    os.close(errors_w)
    for fd in cgroups:
        os.close(fd)
    ready = False
    try:
        socket.send_fds(ours, [b"stdio"], [0, 1, 2])
        ready = ours.recv(1) == _READY  # pid 1 took them: the sandbox stands
    except OSError:
        pass
    ours.close()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # let go of the session's stdio: pid 1 holds it now
    os.close(devnull)
    said = _read_to_end(errors_r)
    os.waitpid(pid, 0)  # pid 1 has ended, and so has everything in the sandbox
    report = Supervisor(channel, -1, None).report
    if not ready:
        why = " ".join(said.decode("utf-8", "replace").split()) or "bwrap ended without a word"
        clean = "".join(c if " " <= c <= "~" else "?" for c in why)[:512]
        report(f"{SPAWN_ERROR} the sandbox could not be made: {clean}")
    report(GONE)
    return 0 if ready else 1


def _exec_bwrap(
    program: str,
    args: list[str],
    *,
    cgroups: list[int],
    stdio: int,
    errors: int,
    catchable: frozenset[int],
) -> None:
    """In the outer process's child: join the cgroups, then become bwrap."""
    try:
        for folder in cgroups:
            join(folder)
            os.close(folder)
        os.dup2(stdio, STDIO_FD)  # inheritable, as dup2 makes it
        os.set_inheritable(CHANNEL_FD, True)  # for pid 1, which speaks on it
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(errors, 2)
        for signum in catchable:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        os.execv(program, [program, *args])
    except BaseException as error:
        reason = getattr(error, "strerror", None) or str(error)
        os.write(errors, f"could not start {program}: {reason}".encode("utf-8", "replace"))
    os._exit(127)


def _read_to_end(fd: int) -> bytes:
    """What bwrap writes on stderr until it ends (the last :data:`_ERROR_KEPT` bytes): read to
    the end, so that bwrap never writes into a pipe no one reads."""
    kept = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        if not chunk:
            break
        kept = (kept + chunk)[-_ERROR_KEPT:]
    os.close(fd)
    return kept


def ready_inside(listen: str, channel: socket.socket) -> bool:
    """As a sandbox's pid 1: take the CLI's stdio, make the listening sockets ``listen`` names
    and hand them to the adapter. False, having said why, if that failed."""
    report = Supervisor(channel, -1, None).report
    try:
        _take_stdio()
        listeners = [_listener(text) for text in listen.split(",") if text and listen != "-"]
    except OSError as error:
        report(f"{SPAWN_ERROR} in the sandbox: {error.strerror or error}")
        return False
    if listeners:
        report(f"{LISTENING} {len(listeners)}", [sock.fileno() for sock in listeners])
        for sock in listeners:
            sock.close()
    return True


def _take_stdio() -> None:
    """The CLI's stdio, from the outer process, as this process's 0, 1 and 2."""
    with socket.socket(fileno=STDIO_FD) as handed:
        _, fds, _, _ = socket.recv_fds(handed, 16, 3)
        if len(fds) != 3:
            raise OSError(0, "the CLI's stdio did not arrive")
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        handed.sendall(_READY)


def _listener(text: str) -> socket.socket:
    """A listening socket at ``host:port`` (``[v6]:port``) in the sandbox's network."""
    host, _, port = text.rpartition(":")
    family = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host.strip("[]"), int(port)))
        sock.listen(128)
    except OSError as error:
        sock.close()
        raise OSError(error.errno, f"could not listen on {text}: {error.strerror}") from None
    return sock


__all__ = ["outer", "ready_inside"]
