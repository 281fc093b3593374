"""The adapter's side of a supervised session: spawning the supervisor and talking to it."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from thirdshift.machine import supervisor as _supervisor_module

SUPERVISOR = Path(_supervisor_module.__file__)
BOOT = (
    "import sys; sys.path.append(sys.argv[1].rpartition('/')[0]); "
    "import supervisor; supervisor.run(sys.argv[2:])"
)
"""How the supervisor is started: ``python -I -S -c BOOT SUPERVISOR ARGS...``.

Importing ``supervisor.py`` (from after the standard library on ``sys.path``) loads its cached
bytecode, where running the file by its path would compile it anew on every start.
"""
# The CLI's stdout pipe is grown to this when the system allows: a fast stream then arrives in
# a few large reads instead of many 64 KiB ones.
PIPE_SIZE = 1024 * 1024


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

    ``stdout`` is the CLI's stdout pipe; ``status`` is the supervisor's status pipe, which
    says ``exit <wait status>``, ``spawn-error <reason>`` and ``gone``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stderr: int,
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
                    "-c",
                    BOOT,
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
                stderr=stderr,
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
        self.status_fd = status_r
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self.stdin = self._process.stdin
        self.stdout_fd = self._process.stdout.fileno()
        self._stdout = self._process.stdout
        self.pipe_size = _grow_pipe(self.stdout_fd, PIPE_SIZE)
        """What the stdout pipe holds at most: one read of it never needs more."""

    @property
    def process_group(self) -> int:
        """The supervisor's process group, which the CLI shares unless it left it."""
        return self._process.pid

    def stop(self) -> None:
        """Ask for a clean stop: stop signals in turn, each with its grace, then SIGKILL."""
        self._say(b"stop\n")

    def kill(self) -> None:
        """Ask for SIGKILL now, even while a clean stop is under way."""
        self._say(b"kill\n")

    def _say(self, command: bytes) -> None:
        with self._control_lock:
            if self._control_w < 0:
                return  # closed: the session is over
            try:
                os.write(self._control_w, command)
            except OSError:
                pass  # the supervisor has finished already

    def close(self) -> None:
        """Wait for the supervisor to exit, and let go of every pipe.

        Closing the control pipe is itself a stop order: a supervisor whose adapter stops
        listening tears its session down rather than leaving it running.
        """
        with self._control_lock:
            control, self._control_w = self._control_w, -1
            os.close(control)
        self._process.wait()
        os.close(self.status_fd)
        self._stdout.close()
        try:
            self.stdin.close()
        except OSError:
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
