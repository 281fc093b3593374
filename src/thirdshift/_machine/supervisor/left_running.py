"""The session's normal end: what is left may exit by itself; the rest is reported, then stopped.

Each process still running below once the CLI has exited and the drain is over is reported
(``left <hex of its command line>``, ``left-unlisted <n>``) before the stop: it is background
work the session left behind.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence

from . import stopping
from .procs import (
    alive_here,
    command_line,
    forked_and_ended,
    running,
    signal_pid,
    without_exiting_twins,
)
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
    roots, later = hold_still(supervisor)
    for _ in range(QUIET_LOOKS):  # one look at the list of children can miss a hop
        if any(alive_here(pid) for pid in (*roots, *later)):
            break
        time.sleep(0.001)
        # The list of children is no snapshot while they fork and exit; /proc is another
        # view, and what was stopped holds still in it.
        roots, later = hold_still(supervisor)
        if not roots and not later:
            own = supervisor.own_pid
            roots = [process.pid for process in supervisor.below() if process.ppid == own]
    _report_roots(supervisor, roots, later)


def _report_roots(supervisor: Supervisor, roots: list[int], later: Sequence[int] = ()) -> None:
    """Report ``roots``, each running one by its command line; then each of ``later`` whose
    command line none of them has (see :func:`hold_still`). A fork chain is one entry."""
    found: list[tuple[int, bytes]] = []
    unlisted = max(0, len(roots) - LEFT_LISTED)
    for pid in roots[:LEFT_LISTED]:
        try:
            if running(pid):
                found.append((pid, command_line(pid)))
        except (FileNotFoundError, ProcessLookupError):
            continue  # it exited after all: not left behind
        except OSError:
            unlisted += 1
    found = _one_per_chain(found)
    for pid in later:
        try:
            line = command_line(pid) if running(pid) else None
        except OSError:
            continue  # below a root: its work is said already, or counted below
        if line is not None and all(line != known for _, known in found):
            if len(found) < LEFT_LISTED:
                found.append((pid, line))
            else:
                unlisted += 1
    if not found and not unlisted and anything_below(supervisor):
        unlisted = 1  # seen, not read: counted all the same, never taken for nothing
    for line in without_exiting_twins([line for _, line in found]):
        supervisor.report(f"{LEFT} {line.hex()}")
    if unlisted:
        supervisor.report(f"{LEFT_UNLISTED} {unlisted}")


def _one_per_chain(found: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """``found`` less each hop of a fork chain caught between its fork and its exit: one whose
    children have all exited, beside one of the same command line that runs on (the next hop,
    re-parented here as the hop between them exited). Two copies of one command are kept."""
    between = {pid for pid, _ in found if forked_and_ended(pid)}
    return [
        (pid, line)
        for pid, line in found
        if pid not in between
        or not any(line == same and other not in between for other, same in found)
    ]


def anything_below(supervisor: Supervisor) -> bool:
    """Whether anything of the session still runs (a zombie does not: it has ended)."""
    if supervisor.cgroup is not None:
        return supervisor.cgroup.populated()
    supervisor.reap()
    try:
        return bool(supervisor.below())
    except OSError:
        return True


def hold_still(supervisor: Supervisor) -> tuple[list[int], list[int]]:
    """SIGSTOP our children until no new one appears; return those that were there at first,
    and those that came later.

    Safe by pid: they are ours and unreaped. A stopped hop of a chain cannot exit, so what
    it forked before it stopped comes here only once that child exits in turn: a few rounds
    catch them all. What comes later is below what was there at first (each came here as the
    parent it had below one of them exited): a fork chain's next hops, say, which are the
    same work as the hop caught first, not more of it (one chain was named up to 4 times).
    """
    stopped: set[int] = set()
    first: list[int] | None = None
    for _ in range(50):
        supervisor.reap()
        children = supervisor.own_children()
        first = children if first is None else first
        new = [pid for pid in children if pid not in stopped]
        if not new:
            break
        for pid in new:
            signal_pid(pid, signal.SIGSTOP)
            stopped.add(pid)
        time.sleep(0.001)
    else:
        children = supervisor.own_children()
    at_first = set(first or ())
    return [pid for pid in children if pid in at_first], [
        pid for pid in children if pid not in at_first
    ]


def end(supervisor: Supervisor, seconds: float, signals: list[int], grace: float) -> bool:
    """The session ended: let what is left exit by itself, report the rest, stop it."""
    try:
        wait_for_leftovers(supervisor, seconds)
        if not supervisor.stop_now:
            report_leftovers(supervisor)
    except Exception:  # whatever fails here, the stop must still happen
        pass
    return stopping.stop(supervisor, signals, grace)
