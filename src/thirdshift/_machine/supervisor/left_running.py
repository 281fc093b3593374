"""The session's normal end: what is left may exit by itself; the rest is reported, then stopped.

Each process still running below once the CLI has exited and the drain is over is reported
(``left <hex of its command line>``, ``left-unlisted <n>``) before the stop: it is background
work the session left behind.
"""

from __future__ import annotations

import signal
import time

from . import stopping
from .procs import alive_here, command_line, running, signal_pid, without_exiting_twins
from .protocol import LEFT, LEFT_LISTED, LEFT_UNLISTED
from .session import QUIET_LOOKS, Supervisor


def wait_for_leftovers(supervisor: Supervisor, seconds: float) -> None:
    """Wait up to ``seconds`` for what is left below to exit by itself, unless told to stop."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not supervisor.stop_now:
        if not supervisor.own_children() and supervisor.nothing_left():
            return
        targets = [process.pid for process in supervisor.below()]
        if not targets:
            return
        supervisor.wait_for(targets, deadline, 0)


def report_leftovers(supervisor: Supervisor) -> None:
    """Say which processes are still running below: the session left them behind.

    Only the roots of what is left, the supervisor's own children (the CLI has exited: its
    orphans are re-parented here): one background command is one entry, not one per
    process of its tree. At most ``LEFT_LISTED`` are listed; a process that cannot be
    read, or past the cap, is counted in ``left-unlisted``. The roots are stopped first
    (SIGSTOP; each stop signal later comes with a SIGCONT), so that a chain that forks
    and exits holds still long enough to be read.
    """
    if supervisor.cgroup is not None:
        with supervisor.cgroup.frozen():  # nothing in it forks or exits while it is read
            _report_roots(supervisor, supervisor.cgroup.roots(supervisor.own_pid))
        return
    roots = hold_still(supervisor)
    for _ in range(QUIET_LOOKS):  # one look at the list of children can miss a hop
        if any(alive_here(pid) for pid in roots):
            break
        time.sleep(0.001)
        # The list of children is no snapshot while they fork and exit; /proc is another
        # view, and what was stopped holds still in it.
        roots = hold_still(supervisor) or [
            process.pid for process in supervisor.below() if process.ppid == supervisor.own_pid
        ]
    _report_roots(supervisor, roots)


def _report_roots(supervisor: Supervisor, roots: list[int]) -> None:
    listed: list[bytes] = []
    unlisted = max(0, len(roots) - LEFT_LISTED)
    for pid in roots[:LEFT_LISTED]:
        try:
            if running(pid):
                listed.append(command_line(pid))
        except (FileNotFoundError, ProcessLookupError):
            continue  # it exited after all: not left behind
        except OSError:
            unlisted += 1
    if not listed and not unlisted and anything_below(supervisor):
        unlisted = 1  # seen, not read: counted all the same, never taken for nothing
    for line in without_exiting_twins(listed):
        supervisor.report(f"{LEFT} {line.hex()}")
    if unlisted:
        supervisor.report(f"{LEFT_UNLISTED} {unlisted}")


def anything_below(supervisor: Supervisor) -> bool:
    """Whether anything of the session still runs (a zombie does not: it has ended)."""
    if supervisor.cgroup is not None:
        return supervisor.cgroup.populated()
    supervisor.reap()
    try:
        return bool(supervisor.below())
    except OSError:
        return True


def hold_still(supervisor: Supervisor) -> list[int]:
    """SIGSTOP our children until no new one appears; return them.

    Safe by pid: they are ours and unreaped. A stopped hop of a chain cannot exit, so what
    it forked before it stopped comes here only once that child exits in turn: a few rounds
    catch them all.
    """
    stopped: set[int] = set()
    for _ in range(50):
        supervisor.reap()
        children = supervisor.own_children()
        new = [pid for pid in children if pid not in stopped]
        if not new:
            return children
        for pid in new:
            signal_pid(pid, signal.SIGSTOP)
            stopped.add(pid)
        time.sleep(0.001)
    return supervisor.own_children()


def end(supervisor: Supervisor, seconds: float, signals: list[int], grace: float) -> bool:
    """The session ended: let what is left exit by itself, report the rest, stop it."""
    try:
        wait_for_leftovers(supervisor, seconds)
        if not supervisor.stop_now:
            report_leftovers(supervisor)
    except Exception:  # whatever fails here, the stop must still happen
        pass
    return stopping.stop(supervisor, signals, grace)
