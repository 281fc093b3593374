"""The adapter's handle on one session's supervisor: starting it, talking to it, watching it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from thirdshift._containment import Containment
from thirdshift._machine import launch
from thirdshift._machine.allowed import SessionCgroup, resolved
from thirdshift._machine.caps import DEFAULT_CAPS, CapGroups, Caps
from thirdshift._machine.status import StatusReader
from thirdshift._machine.supervisor import procs
from thirdshift._machine.supervisor.protocol import (
    CGROUP,
    END,
    EXIT,
    INIT,
    KILL,
    KILL_WAIT_SECONDS,
    LISTENING,
    NAMESPACE,
    PIDFD_SIGNAL_PROCESS_GROUP,
    SANDBOX,
    STOP,
)

if TYPE_CHECKING:
    from thirdshift._machine.sandbox import Sandboxed

SUPERVISOR = launch.SUPERVISOR
"""The supervisor started for each session; this module's own name, so that a test can start
another program in its place."""
# The CLI's output sockets' buffers are grown to this when the system allows: a fast stream then
# arrives in a few large reads instead of many small ones.
STREAM_BUFFER = 1024 * 1024
# How often a supervisor that may be stopped is looked at, while waiting for it.
CHECK_SECONDS = 0.5
# Process states in /proc/PID/stat of a process that is stopped (by a signal, or traced).
STOPPED_STATES = (b"T", b"t")
# Descriptors handed to the supervisor are first moved at least this high, so that none of
# them can be 0, 1 or 2 (closed in a daemon's orchestrator) and be overwritten by another.
_LOWEST_FD = 10


@dataclass(frozen=True)
class CliExit:
    """How the CLI's own process ended: an exit code, or the signal that ended it."""

    code: int | None
    signal: signal.Signals | None

    @staticmethod
    def from_wait_status(status: int) -> CliExit:
        try:
            code = os.waitstatus_to_exitcode(status)
            if code < 0:
                return CliExit(code=None, signal=signal.Signals(-code))
        except ValueError:
            return CliExit(code=None, signal=None)  # no status a process could end with
        return CliExit(code=code, signal=None)


def _high(fd: int) -> int:
    """``fd`` moved to a close-on-exec descriptor of at least ``_LOWEST_FD``."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _LOWEST_FD)
    os.close(fd)
    return moved


class Supervised:
    """One CLI run under its own supervisor (see :mod:`thirdshift._machine.supervisor`).

    The handle owns the supervisor's channel and pipes: ``stdin``, ``stdout_fd`` and
    ``stderr_fd`` are the CLI's, and ``status_fd`` is where the supervisor reports.
    :meth:`read_status` takes in its reports; what they said is in ``cli_pid``, ``cli_exit``,
    ``spawn_error``, ``left``, ``violation``; ``gone`` is true only once the supervisor said
    so, exited 0 and (under ``cgroup``) the cgroup is empty by the adapter's own look.

    With ``sandbox`` the supervisor is the sandbox's outer process, and the CLI runs inside (see
    :mod:`thirdshift._machine.sandbox`): ``env`` is then the sandbox's, and the listening
    sockets its pid 1 hands over go to ``on_listening``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stop_signals: Sequence[signal.Signals],
        grace: float,
        containment: Containment = "auto",
        sandbox: Sandboxed | None = None,
        on_listening: Callable[[list[int]], None] | None = None,
        caps: Caps = DEFAULT_CAPS,
    ) -> None:
        # A sandbox's PID namespace holds its processes whatever the machine's namespace probe
        # said; only a cgroup is the adapter's to make.
        self.containment = containment if sandbox is not None else resolved(containment)
        self.sandboxed = sandbox is not None
        self._on_listening = on_listening
        # Held while the channel is written or shut: an interrupt may tell a session to stop
        # from another thread just as it ends. Re-entrant, for the signal handler.
        self._control_lock = threading.RLock()
        self._control_open = True
        self._cgroup = SessionCgroup.create() if self.containment == CGROUP else None
        try:
            self._caps = CapGroups.create(caps, self._cgroup.path if self._cgroup else None)
        except BaseException:
            if self._cgroup is not None:
                self._cgroup.remove()
            raise
        self._status = StatusReader()
        self.cli_pidfd: int | None = None
        self._init_pidfd: int | None = None
        self.cli_exited = False
        """The CLI's own process has exited (its pidfd said so, or the supervisor did)."""
        self.status_open = True
        self.lost = False
        """The supervisor ended without saying that all was gone (killed, or it could not tell)."""
        self.exit_status: int | None = None
        """The supervisor's exit code once it has exited (-1: killed by a signal)."""
        self.cgroup_left: str | None = None
        """Once closed: why the session's cgroup could not be removed, if it could not."""
        self.stop_budget = grace * len(stop_signals) + 2 * KILL_WAIT_SECONDS + 5
        """How long a stop may take before the supervisor is taken to be stuck."""
        # The supervisor's argv: CONTAINMENT CGROUPS CWD GRACE SIGNALS PROGRAM ARGS...; in a
        # sandbox, the outer's is SANDBOX CGROUPS BWRAP... -- and the pid 1's INIT LISTEN CWD...
        cgroups = str(len(self._cgroup_fds()))
        settings = [str(cwd), repr(float(grace)), ",".join(str(int(s)) for s in stop_signals)]
        if sandbox is None:
            args = [self.containment, cgroups, *settings, *argv]
        else:
            inside = launch.launch_argv(SUPERVISOR, [INIT, sandbox.listen, *settings, *argv])
            args = [SANDBOX, cgroups, *sandbox.bwrap, "--", *inside]
            env = sandbox.env
        try:
            self._start(args, env)
        except BaseException:
            if self._cgroup is not None:
                self._cgroup.remove()
            self._caps.remove()
            raise
        self.pipe_size = _buffer_size(self.stdout_fd)
        """What the stdout socket holds at most: one read of it never needs more."""

    def _start(self, args: list[str], env: Mapping[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        stdin_r, stdin_w = os.pipe()
        # The CLI's stdout and stderr are sockets, not pipes: a pipe can be opened again through
        # /proc/<pid>/fd by any process of the user (to write a forged event after the CLI's
        # own, or to read the stream away from us); a socket cannot.
        streams = [_stream_pair() for _ in range(2)]
        handed = [_high(stdin_r), *(_high(cli_end) for _, cli_end in streams)]
        kept = [_high(stdin_w), *(_high(our_end) for our_end, _ in streams)]
        handed.append(_high(os.dup(theirs.fileno())))
        theirs.close()
        for fd in self._cgroup_fds():
            handed.append(_high(os.dup(fd)))
        actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(handed)]
        try:
            self.pid = os.posix_spawn(
                sys.executable,
                launch.launch_argv(SUPERVISOR, args),
                dict(env),
                file_actions=actions,
                setsid=True,
                setsigmask=(),
            )
        except BaseException:
            ours.close()
            for fd in kept:
                os.close(fd)
            raise
        finally:
            for fd in handed:
                os.close(fd)
        self._pidfd = os.pidfd_open(self.pid)  # our unreaped child: the right process
        self._channel = ours
        self.status_fd = ours.fileno()
        stdin_w, self.stdout_fd, self.stderr_fd = kept
        self.stdin: IO[bytes] = os.fdopen(stdin_w, "wb", buffering=0)

    def _cgroup_fds(self) -> list[int]:
        """The cgroups the CLI joins: the session's own first (under ``cgroup``), then those
        that only cap it."""
        own = [] if self._cgroup is None else [self._cgroup.fd]
        return [*own, *self._caps.fds]

    # What the supervisor said, for the watch and the adapter.
    @property
    def cli_pid(self) -> int | None:
        return self._status.cli_pid

    @property
    def cli_exit(self) -> CliExit | None:
        status = self._status.wait_status
        return None if status is None else CliExit.from_wait_status(status)

    @property
    def spawn_error(self) -> str | None:
        return self._status.spawn_error

    @property
    def left(self) -> list[tuple[str, ...]]:
        """The argv of each process the supervisor found still running as the session ended."""
        return [_argv_of(raw) for raw in self._status.left]

    @property
    def left_unlisted(self) -> int:
        """How many more it found, not listed one by one."""
        return self._status.left_unlisted

    @property
    def violation(self) -> str | None:
        """What broke the protocol, if anything did: then the tree was killed."""
        return self._status.violation

    @property
    def gone(self) -> bool:
        """Nothing the session started is left: the supervisor said so and exited 0 after it,
        nothing broke the protocol, and a cgroup is empty by our own look."""
        return (
            self._status.said_gone
            and self.exit_status == 0
            and self._status.violation is None
            and not (self._cgroup is not None and self._cgroup.populated())
        )

    def stop(self) -> None:
        """Ask for a clean stop: stop signals in turn, each with its grace, then a kill."""
        self._say(STOP)

    def kill(self) -> None:
        """Ask for a kill now, even while a clean stop is under way."""
        self._say(KILL)

    def end(self, seconds: float) -> None:
        """Say the session ended: what is left may exit by itself within ``seconds``; what
        has not is reported in ``left``, then stopped as by :meth:`stop`.

        A :meth:`stop` or :meth:`kill` after this cuts the wait short and reports nothing.
        """
        self._say(f"{END} {max(0.0, seconds):.3f}")

    def _say(self, command: str) -> None:
        with self._control_lock:
            if not self._control_open:
                return  # shut: the session is over
            with contextlib.suppress(OSError):  # the supervisor has finished already
                self._channel.sendall(f"{command}\n".encode(), socket.MSG_NOSIGNAL)

    def read_status(self) -> list[str]:
        """Read what the supervisor has said since last time; return the words it began with.

        When the channel ends without ``gone``, or says what the protocol does not allow, the
        supervisor is not to be believed: the tree is killed, as nothing else would stop it.
        """
        try:
            data, fds, flags, _ = socket.recv_fds(self._channel, 65536, 2)
        except BlockingIOError:
            return []
        except OSError:
            data, fds, flags = b"", [], 0
        for fd in fds[2:]:
            os.close(fd)
        if flags & socket.MSG_CTRUNC:
            fds = [*fds, -1]  # more descriptors than any started line carries
        if not data:
            self._close_fds(fds)
            self.status_open = False
            if not self._status.said_gone:
                self.lost = True
                self.kill_tree()
            return []
        words = self._status.feed(data, len(fds))
        if fds and LISTENING in words and self._status.violation is None:
            self._take_listeners(fds)
        elif fds:
            self._take_pidfds(fds)
        if EXIT in words and self.cli_pidfd is not None and not _ended(self.cli_pidfd):
            self._status.violation = "'exit' while the CLI still runs"
        if self._status.cli_pid is not None and self.cli_pidfd is None:
            self._status.violation = self._status.violation or "'started' without a pidfd"
        if self._status.violation is not None:
            self.status_open = False
            self.take_over()  # a supervisor that breaks its protocol is not believed either
            return []
        if self.cli_exit is not None:
            self.cli_exited = True
        return words

    def _take_listeners(self, fds: list[int]) -> None:
        """A sandbox's listening sockets: to be served from outside, or closed."""
        if self._on_listening is None or not self.sandboxed:
            self._status.violation = "listening sockets no sandbox asked for"
            self._close_fds(fds)
            return
        self._on_listening(fds)

    def _take_pidfds(self, fds: list[int]) -> None:
        wanted = 2 if self.containment == NAMESPACE or self.sandboxed else 1
        if self._status.violation is not None or len(fds) != wanted or -1 in fds:
            self._status.violation = self._status.violation or "the wrong descriptors"
            self._close_fds(fds)
            return
        self.cli_pidfd = fds[0]
        if wanted == 2:
            self._init_pidfd = fds[1]

    @staticmethod
    def _close_fds(fds: list[int]) -> None:
        for fd in fds:
            if fd >= 0:
                os.close(fd)

    def notice_cli_exit(self) -> None:
        """The CLI's pidfd became readable: its process has exited, whatever the channel says."""
        self.cli_exited = True

    def wake_if_stopped(self) -> bool:
        """SIGCONT the supervisor if something stopped it (SIGSTOP cannot be ignored)."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return False  # it exited; its channel will say how
        if state not in STOPPED_STATES:
            return False
        signal.pidfd_send_signal(self._pidfd, signal.SIGCONT)
        return True

    def take_over(self) -> None:
        """Stop the tree without the supervisor, which is not answering: kill it all."""
        self.kill_tree()
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def kill_tree(self) -> None:
        """Kill everything of the session ourselves, trusting no pid the supervisor gave.

        Under ``cgroup``, ``cgroup.kill``; under ``namespace``, the supervisor (our own child),
        whose pid 1 then dies with it and the kernel ends the namespace; under ``scan``, what
        hangs below the supervisor while it lives, and the CLI's group through its pidfd.
        """
        if self._cgroup is not None:
            self._cgroup.kill()
        if self.sandboxed and self._init_pidfd is not None:
            with contextlib.suppress(OSError):  # its end ends the sandbox's PID namespace
                signal.pidfd_send_signal(self._init_pidfd, signal.SIGKILL)
        if self.containment == NAMESPACE or self.sandboxed:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            return
        with contextlib.suppress(OSError):
            for _ in range(100):  # each round kills what the last one's victims started
                targets = procs.descendants_of(self.pid, procs.processes())
                if not targets:
                    break
                for process in targets:
                    procs.signal_found(process, signal.SIGKILL, group=False)
        if self.cli_pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(
                    self.cli_pidfd, signal.SIGKILL, None, PIDFD_SIGNAL_PROCESS_GROUP
                )

    def close(self) -> None:
        """Wait for the supervisor to exit, make sure nothing is left, and let go of it all.

        Shutting our side of the channel is itself a stop order: a supervisor whose adapter
        stops listening tears its session down rather than leaving it running.
        """
        with self._control_lock:
            if self._control_open:
                self._control_open = False
                with contextlib.suppress(OSError):
                    self._channel.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + self.stop_budget
        while not select.select([self._pidfd], [], [], CHECK_SECONDS)[0]:
            if not self.wake_if_stopped() and time.monotonic() > deadline:
                self.take_over()
        # Looked at unreaped, so that the pid still names the supervisor while the tree is
        # killed; reaped once that is done.
        exited = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        assert exited is not None  # WNOHANG was not asked for
        self.exit_status = exited.si_status if exited.si_code == os.CLD_EXITED else -1
        if not self.gone:
            self.kill_tree()
        os.waitpid(self.pid, 0)
        if self._init_pidfd is not None:
            # The namespace's pid 1 ends only once the kernel has ended everything inside.
            select.select([self._init_pidfd], [], [], KILL_WAIT_SECONDS)
        if self._cgroup is not None:
            self.cgroup_left = self._cgroup.remove()
        self._caps.remove()
        self._close_fds([self._pidfd, self.stdout_fd, self.stderr_fd])
        self._close_fds([fd for fd in (self.cli_pidfd, self._init_pidfd) if fd is not None])
        self._channel.close()
        with contextlib.suppress(OSError):
            self.stdin.close()


def _ended(pidfd: int) -> bool:
    return bool(select.select([pidfd], [], [], 0)[0])


def _argv_of(raw: bytes) -> tuple[str, ...]:
    """The argv in a ``left`` report: NUL-separated bytes; undecodable bytes escaped."""
    return tuple(arg.decode("utf-8", "backslashreplace") for arg in raw.rstrip(b"\0").split(b"\0"))


def _stream_pair() -> tuple[int, int]:
    """A socket pair for one of the CLI's output streams: our end, which only reads, and the
    CLI's, which only writes; each end's buffer grown where the system allows."""
    ours, cli = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.shutdown(socket.SHUT_WR)
    cli.shutdown(socket.SHUT_RD)
    for end, option in ((cli, socket.SO_SNDBUF), (ours, socket.SO_RCVBUF)):
        with contextlib.suppress(OSError):  # above net.core.[rw]mem_max: the system's cap holds
            end.setsockopt(socket.SOL_SOCKET, option, STREAM_BUFFER)
    return ours.detach(), cli.detach()


def _buffer_size(fd: int) -> int:
    """What a stream socket of ours holds at most, as the kernel counts it."""
    with socket.socket(fileno=os.dup(fd)) as stream:
        return int(stream.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
