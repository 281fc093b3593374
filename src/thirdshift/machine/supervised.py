"""The adapter's handle on one session's supervisor: starting it, talking to it, watching it."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from thirdshift.machine import supervisor as program
from thirdshift.machine.supervisor import (
    END,
    EXIT,
    GONE,
    KILL,
    LEFT,
    LEFT_UNLISTED,
    SPAWN_ERROR,
    STARTED,
    STOP,
)

SUPERVISOR = Path(program.__file__)
"""Run by its path, ``python -I -S SUPERVISOR ARGS...``: isolated from the environment and the
user's site, with the standard library only. Compiling it on each start costs under 1 ms."""
# The CLI's stdout pipe is grown to this when the system allows: a fast stream then arrives in
# a few large reads instead of many 64 KiB ones.
PIPE_SIZE = 1024 * 1024
# How often a supervisor that may be stopped is looked at, while waiting for it.
CHECK_SECONDS = 0.5
# Process states in /proc/PID/stat of a process that is stopped (by a signal, or traced).
STOPPED_STATES = (b"T", b"t")


@dataclass(frozen=True)
class CliExit:
    """How the CLI's own process ended: an exit code, or the signal that ended it."""

    code: int | None
    signal: signal.Signals | None

    @staticmethod
    def from_wait_status(status: int) -> CliExit:
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            return CliExit(code=None, signal=signal.Signals(-code))
        return CliExit(code=code, signal=None)


class Supervised:
    """One CLI run under its own supervisor (see :mod:`thirdshift.machine.supervisor`).

    The handle owns the supervisor's pipes: ``stdin``, ``stdout_fd`` and ``stderr_fd`` are the
    CLI's, and
    ``status_fd`` is where the supervisor reports. :meth:`read_status` takes in its reports;
    what they said is in ``cli_pid``, ``cli_exit``, ``spawn_error``, ``left``, ``gone`` and
    ``lost``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stop_signals: Sequence[signal.Signals],
        grace: float,
    ) -> None:
        # Held while the control pipe is written or closed: an interrupt may tell a session to
        # stop from another thread just as it ends, and a write to a closed pipe's number could
        # land in whatever file took that number since. Re-entrant, for the signal handler.
        self._control_lock = threading.RLock()
        control_r, self._control_w = os.pipe()
        status_r, status_w = os.pipe()
        try:
            self._process = subprocess.Popen(  # noqa: S603 - argv is ours, no shell
                [
                    sys.executable,
                    "-I",
                    "-S",
                    str(SUPERVISOR),
                    str(control_r),
                    str(status_w),
                    repr(float(grace)),
                    ",".join(str(int(s)) for s in stop_signals),
                    *argv,
                ],
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(control_r, status_w),
                start_new_session=True,
            )
        except BaseException:
            os.close(self._control_w)
            os.close(status_r)
            raise
        finally:
            os.close(control_r)
            os.close(status_w)
        self.pid = self._process.pid
        self.stop_budget = grace * len(stop_signals) + 2 * program.KILL_WAIT_SECONDS + 5
        """How long a stop may take before the supervisor is taken to be stuck."""
        self.status_fd = status_r
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        assert self._process.stderr is not None
        self.stdin = self._process.stdin
        self.stdout_fd = self._process.stdout.fileno()
        self._stdout = self._process.stdout
        self.stderr_fd = self._process.stderr.fileno()
        self._stderr = self._process.stderr
        self.pipe_size = _grow_pipe(self.stdout_fd, PIPE_SIZE)
        """What the stdout pipe holds at most: one read of it never needs more."""
        self._status_buffer = b""
        self.status_open = True
        self.cli_pid: int | None = None
        self.cli_exit: CliExit | None = None
        self.spawn_error: str | None = None
        self.left: list[tuple[str, ...]] = []
        """The argv of each process the supervisor found still running as the session ended."""
        self.left_unlisted = 0
        """How many more it found, not listed one by one."""
        self.gone = False
        """The supervisor said that nothing the session started is left."""
        self.lost = False
        """The supervisor ended without saying so (killed, or it could not tell)."""

    def stop(self) -> None:
        """Ask for a clean stop: stop signals in turn, each with its grace, then SIGKILL."""
        self._say(STOP)

    def kill(self) -> None:
        """Ask for SIGKILL now, even while a clean stop is under way."""
        self._say(KILL)

    def end(self, seconds: float) -> None:
        """Say the session ended: what is left may exit by itself within ``seconds``; what
        has not is reported in ``left``, then stopped as by :meth:`stop`.

        A :meth:`stop` or :meth:`kill` after this cuts the wait short and reports nothing.
        """
        self._say(f"{END} {max(0.0, seconds):.3f}")

    def _say(self, command: str) -> None:
        with self._control_lock:
            if self._control_w < 0:
                return  # closed: the session is over
            try:
                os.write(self._control_w, f"{command}\n".encode())
            except OSError:
                pass  # the supervisor has finished already

    def read_status(self) -> list[str]:
        """Read what the supervisor has said since last time; return the words it began with.

        When the status pipe ends without ``gone``, the supervisor was lost: what is left of
        the CLI's process group is killed, as nothing else would stop it now.
        """
        data = os.read(self.status_fd, 4096)
        if not data:
            self.status_open = False
            if not self.gone:
                self.lost = True
                self._kill_cli_group()
            return []
        self._status_buffer += data
        *lines, self._status_buffer = self._status_buffer.split(b"\n")
        words = []
        for line in lines:
            word, _, rest = line.decode().partition(" ")
            if word == STARTED:
                self.cli_pid = int(rest)
            elif word == EXIT:
                self.cli_exit = CliExit.from_wait_status(int(rest))
            elif word == SPAWN_ERROR:
                self.spawn_error = rest
            elif word == LEFT:
                self.left.append(_argv_of(rest))
            elif word == LEFT_UNLISTED:
                self.left_unlisted += int(rest)
            elif word == GONE:
                self.gone = True
            words.append(word)
        return words

    def wake_if_stopped(self) -> bool:
        """SIGCONT the supervisor if something stopped it (SIGSTOP cannot be ignored)."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return False  # it exited; its status pipe will say how
        if state not in STOPPED_STATES:
            return False
        os.kill(self.pid, signal.SIGCONT)  # our unreaped child: its pid cannot be reused
        return True

    def take_over(self) -> None:
        """Stop the tree without the supervisor, which is not answering: SIGKILL for all.

        Everything below the supervisor first (while it lives, the tree hangs together below
        it), again until none is found, then the CLI's group, then the supervisor itself.
        """
        try:
            for _ in range(100):  # each round kills what the last one's victims started
                targets = program.descendants(self.pid)
                if not targets:
                    break
                for pid in targets:
                    _kill(pid)
        except OSError:
            pass  # no descriptor left to look with: the CLI's group is all we can reach
        self._kill_cli_group()
        _kill(self.pid)

    def _kill_cli_group(self) -> None:
        if self.cli_pid is not None:
            try:
                os.killpg(self.cli_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        """Wait for the supervisor to exit, and let go of every pipe.

        Closing the control pipe is itself a stop order: a supervisor whose adapter stops
        listening tears its session down rather than leaving it running.
        """
        with self._control_lock:
            control, self._control_w = self._control_w, -1
            os.close(control)
        deadline = time.monotonic() + self.stop_budget
        while True:
            try:
                self._process.wait(CHECK_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if not self.wake_if_stopped() and time.monotonic() > deadline:
                    self.take_over()
        os.close(self.status_fd)
        self._stdout.close()
        self._stderr.close()
        try:
            self.stdin.close()
        except OSError:
            pass


def _argv_of(hex_digits: str) -> tuple[str, ...]:
    """The argv in a ``left`` report: NUL-separated bytes, as hex; undecodable bytes escaped."""
    raw = bytes.fromhex(hex_digits)
    return tuple(arg.decode("utf-8", "backslashreplace") for arg in raw.rstrip(b"\0").split(b"\0"))


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _grow_pipe(fd: int, size: int) -> int:
    """Ask for the pipe ``fd`` to hold ``size`` bytes; return what it holds now."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except OSError:
        pass  # above /proc/sys/fs/pipe-max-size or the user's pipe quota: keep what it has
    try:
        return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    except OSError:
        return 64 * 1024  # Linux's default
