"""Watching one supervised call (one run of the CLI) to its end: when to stop it, how it ended.

The watch waits on the CLI's stdout and stderr (handed to a
:class:`~thirdshift._machine.follow.StdoutCopy` and a
:class:`~thirdshift._machine.follow.StderrCopy`)
and on the supervisor's status (handed to the :class:`~thirdshift._machine.supervised.Supervised`
handle). It asks the supervisor to stop what is left once the CLI has exited and its stream has
ended, or once the drain after the CLI's exit runs out (something it started still holds
stdout). Such a stop, at the call's normal end, is an ``end``: the supervisor lets what is
left exit by itself until the drain after the CLI's exit is over, then reports what remains
(the work the call left behind, in ``Watched.left``) and stops it. Any other stop (an
interrupt, a cancel, a watchdog, a log that cannot be written) reports nothing. The watch ends
when the supervisor is gone and the stream has ended (or, the supervisor lost, once a drain has
passed). A supervisor found stopped is continued; one that has not finished a stop within its
budget is taken over: the watch SIGKILLs the tree itself.
"""

from __future__ import annotations

import selectors
import time
from dataclasses import dataclass

from thirdshift._machine.follow import HeldInterrupt, StderrCopy, StdoutCopy
from thirdshift._machine.supervised import CHECK_SECONDS, CliExit, Supervised
from thirdshift._machine.watchdogs import Fired, Watchdog


@dataclass(frozen=True)
class Watched:
    """What the watch saw of a supervised call's end, as the adapter is handed it."""

    cli_exit: CliExit | None
    """None when the supervisor was lost before it could say."""
    spawn_error: str | None
    log_error: OSError | None
    all_gone: bool
    """The supervisor said that nothing the call started is left."""
    interrupted: bool
    fired: Fired | None = None
    """The watchdog that stopped the call, if one did."""
    left: tuple[tuple[str, ...], ...] = ()
    """The argv of each process still running at the call's normal end, once the drain was
    over; the supervisor stopped them. Empty when the call was stopped otherwise."""
    left_unlisted: int = 0
    """How many more there were, not listed one by one."""
    violation: str | None = None
    """What the supervisor said that its protocol does not allow: then the tree was killed."""
    supervisor_lost: bool = False
    """The supervisor's channel ended before it said that all was gone (it was killed)."""
    containment: str = ""
    """Which containment held the call's processes (``cgroup``, ``namespace``, ``scan``)."""
    log_dropped: int = 0
    """Bytes of stdout past the Session log's cap: neither logged nor read."""

    @property
    def cut_short(self) -> bool:
        """Whether the call ended before its CLI could: interrupted, the supervisor's
        protocol violated, the CLI never started, or its log not written."""
        return (
            self.interrupted
            or self.violation is not None
            or self.spawn_error is not None
            or self.log_error is not None
        )


class Watch:
    """Follows one supervised CLI until its stream has ended and its supervisor is gone.

    ``run`` may be called again after it was interrupted (a ``KeyboardInterrupt`` raised while
    waiting): it carries on where it was, so that what the CLI writes while it is being stopped
    still reaches the log.
    """

    def __init__(
        self,
        supervised: Supervised,
        copy: StdoutCopy,
        stderr: StderrCopy,
        *,
        drain_seconds: float,
        interrupt: HeldInterrupt,
        watchdog: Watchdog | None = None,
    ) -> None:
        self._supervised = supervised
        self._copy = copy
        self._stderr = stderr
        self._drain_seconds = drain_seconds
        self._interrupt = interrupt
        self._watchdog = watchdog
        self._fired: Fired | None = None
        self._selector = selectors.DefaultSelector()
        self._selector.register(supervised.stdout_fd, selectors.EVENT_READ)
        self._selector.register(supervised.status_fd, selectors.EVENT_READ)
        self._selector.register(supervised.stderr_fd, selectors.EVENT_READ)
        self._watching = {supervised.stdout_fd, supervised.status_fd}
        self._cli_pidfd: int | None = None  # watched once the supervisor hands it over
        self._drain_deadline: float | None = None  # past it, stop what holds stdout
        self._let_go_deadline: float | None = None  # past it, stop waiting for stdout to end
        self._stop_deadline: float | None = None  # past it, the supervisor is taken over
        self._taken_over = False
        self._stop_sent = False
        self._end_sent = False
        self._exit_seen_at: float | None = None
        self._next_check = time.monotonic() + CHECK_SECONDS

    def stop(self) -> None:
        """Ask the supervisor to stop everything; watching goes on until all is gone.

        After an :meth:`_end`, this cuts its wait short: the call did not end normally.
        """
        if self._stop_deadline is None:
            self._stop_deadline = time.monotonic() + self._supervised.stop_budget
        if not self._stop_sent:
            self._stop_sent = True
            self._supervised.stop()

    def _end(self) -> None:
        """The CLI exited and the call ended: stop what is left once the drain is over.

        The drain counts from the CLI's exit: what exits by itself within it was no work
        left behind. Whatever is still running then is reported, and stopped.
        """
        if self._stop_deadline is not None:
            return  # stopping already
        now = time.monotonic()
        exited_at = self._exit_seen_at if self._exit_seen_at is not None else now
        wait = max(0.0, exited_at + self._drain_seconds - now)
        self._stop_deadline = now + wait + self._supervised.stop_budget
        self._end_sent = True
        self._supervised.end(wait)

    def kill(self) -> None:
        """Ask the supervisor for SIGKILL of everything, now."""
        self.stop()
        self._supervised.kill()

    def run(self) -> None:
        supervised, copy = self._supervised, self._copy
        while True:
            # What to do follows from where things stand, not from the event just read: an
            # interrupt between reading an event and acting on it then loses nothing.
            self._act()
            if not self._watching:
                self._stderr.finish()  # what is left of it; nothing waits for its end
                return
            now = time.monotonic()
            if self._watchdog is not None and self._stop_deadline is None:
                fired = self._watchdog.check(now, cli_running=not supervised.cli_exited)
                if fired is not None:
                    self._fired = fired
                    self.stop()
                    continue
            if self._drain_deadline is not None and now >= self._drain_deadline:
                self._drain_deadline = None
                self._end()  # something the CLI started still holds stdout
                continue
            if self._let_go_deadline is not None and now >= self._let_go_deadline:
                copy.finish()  # held by what a lost supervisor left behind: let go of it
                continue
            if now >= self._next_check:
                self._check_on_the_supervisor(now)
                continue
            watchdog_deadline = (
                self._watchdog.next_deadline(cli_running=not supervised.cli_exited)
                if self._watchdog is not None and self._stop_deadline is None
                else None
            )
            deadlines = (
                self._next_check,
                self._drain_deadline,
                self._let_go_deadline,
                watchdog_deadline,
            )
            timeout = min(d for d in deadlines if d is not None) - now
            for key, _ in self._selector.select(timeout):
                if key.fd == supervised.stdout_fd:
                    copy.copy_ready()
                elif key.fd == supervised.stderr_fd:
                    if not self._stderr.copy_ready():
                        self._selector.unregister(supervised.stderr_fd)
                elif key.fd == self._cli_pidfd:
                    self._selector.unregister(key.fd)
                    supervised.notice_cli_exit()
                else:
                    self._interrupt.hold()
                    try:
                        supervised.read_status()
                    finally:
                        self._interrupt.release()
                    self._watch_the_cli()

    def _act(self) -> None:
        supervised, copy = self._supervised, self._copy
        if supervised.cli_exited and self._exit_seen_at is None:
            self._exit_seen_at = time.monotonic()
            copy.cli_exited()  # what it wrote is read; what comes after is only logged
            if copy.open and self._stop_deadline is None:
                self._drain_deadline = time.monotonic() + self._drain_seconds
        if not supervised.status_open and copy.open and self._let_go_deadline is None:
            self._let_go_deadline = time.monotonic() + self._drain_seconds
        if copy.log_error is not None:
            # The log is what stays of the call: one that cannot keep it is stopped, not
            # run on with what it does unrecorded.
            self.stop()
        if copy.full and self._fired is None:
            self._fired = Fired("log_limit", f"its Session log reached {copy.max_log_bytes} bytes")
            self.stop()
        if not copy.open:
            self._drain_deadline = self._let_go_deadline = None
            self._unwatch(supervised.stdout_fd)
            if supervised.cli_exited:
                self._end()  # the CLI and its stream are done: clear away whatever is left
        if not supervised.status_open:
            self._unwatch(supervised.status_fd)

    def _watch_the_cli(self) -> None:
        """Once the CLI's pidfd has come, its exit is seen there, whatever the channel says."""
        pidfd = self._supervised.cli_pidfd
        if self._cli_pidfd is None and pidfd is not None and not self._supervised.cli_exited:
            self._cli_pidfd = pidfd
            self._selector.register(pidfd, selectors.EVENT_READ)

    def _unwatch(self, fd: int) -> None:
        if fd in self._watching:
            self._watching.discard(fd)
            self._selector.unregister(fd)

    def _check_on_the_supervisor(self, now: float) -> None:
        self._next_check = now + CHECK_SECONDS
        if not self._supervised.status_open:
            return
        self._supervised.wake_if_stopped()
        if self._stop_deadline is not None and now >= self._stop_deadline and not self._taken_over:
            self._taken_over = True
            self._supervised.take_over()

    def close(self) -> None:
        self._selector.close()

    def watched(self, *, interrupted: bool) -> Watched:
        return Watched(
            cli_exit=self._supervised.cli_exit,
            spawn_error=self._supervised.spawn_error,
            log_error=self._copy.log_error,
            all_gone=self._supervised.gone,
            interrupted=interrupted,
            fired=self._fired,
            left=tuple(self._supervised.left) if self._end_sent and not self._stop_sent else (),
            left_unlisted=(
                self._supervised.left_unlisted if self._end_sent and not self._stop_sent else 0
            ),
            violation=self._supervised.violation,
            supervisor_lost=self._supervised.lost,
            containment=self._supervised.containment,
            log_dropped=self._copy.dropped,
        )
