"""Stopping everything of the session: each stop signal in turn with its grace, then a kill.

Under ``cgroup`` the members are signalled, then ``cgroup.kill``; otherwise every process found
below the supervisor is signalled (SIGKILL to its process group and session too), again and
again as new ones appear, until several looks find nothing.
"""

from __future__ import annotations

import os
import select
import signal
import time

from .cgroup import Cgroup
from .procs import read_once, signal_found, signal_group, signal_pid
from .protocol import KILL_WAIT_SECONDS
from .session import QUIET_LOOKS, Supervisor


def signal_until_gone(supervisor: Supervisor, signum: int, deadline: float) -> bool:
    """Send ``signum`` to everything below, again to what appears, until none is left.

    With SIGKILL each process's group is signalled too: a group signal reaches whichever
    member is alive at that instant, so a chain that forks and exits is caught mid-hop.
    """
    signalled: set[int] = set()  # a second SIGINT means "now" to some CLIs: once each
    groups: set[int] = set()
    own_group = os.getpgid(0)
    while time.monotonic() < deadline:
        targets = [] if not supervisor.own_children() else supervisor.below()
        if not targets:
            if supervisor.nothing_left():
                return True
            if signum == signal.SIGKILL:
                kill_own_children(supervisor, deadline)
            continue
        for process in targets:
            if process.pid in signalled:
                continue
            signalled.add(process.pid)
            # Only SIGKILL goes to groups: a stop signal twice is "now" to some CLIs. A
            # setsid escapee's session is its own group, so this reaches sessions too.
            group = (
                signum == signal.SIGKILL
                and process.group > 1
                and process.group != own_group
                and process.group not in groups
            )
            if group:
                groups.add(process.group)
            signal_found(process, signum, group=group)
        if signum == signal.SIGKILL:
            kill_own_children(supervisor, deadline)
        supervisor.wait_for([process.pid for process in targets], deadline, signum)
        if supervisor.kill_now and signum != signal.SIGKILL:
            return False
    return False


def kill_own_children(supervisor: Supervisor, deadline: float) -> None:
    """SIGKILL our own children as fast as they come, until a few looks find none.

    Every orphan of the session is re-parented here, so a chain of processes that each fork
    and exit becomes our child at each hop; a small file lists our children, and killing
    them by pid is safe (unreaped, they keep their pids). Nothing killed can fork again.
    """
    quiet = 0
    while quiet < QUIET_LOOKS and time.monotonic() < deadline:
        children = supervisor.own_children()
        for pid in children:
            signal_pid(pid, signal.SIGKILL)
        supervisor.reap()
        quiet = 0 if children else quiet + 1


def stop(supervisor: Supervisor, signals: list[int], grace: float) -> bool:
    """Stop everything of the session: each signal in turn with its grace, then a kill.

    True when nothing is left, as far as can be seen.
    """
    try:
        if supervisor.cgroup is not None:
            stop_cgroup(supervisor, supervisor.cgroup, signals, grace)
        for signum in [*signals, signal.SIGKILL]:
            if supervisor.kill_now and signum != signal.SIGKILL:
                continue
            wait = KILL_WAIT_SECONDS if signum == signal.SIGKILL else grace
            if supervisor.cgroup is not None and signum != signal.SIGKILL:
                continue  # the cgroup had its signals; this only catches what left it
            try:
                if signal_until_gone(supervisor, signum, time.monotonic() + wait):
                    break
            except Exception:  # any failure here must still end in SIGKILL
                continue
        else:
            kill_what_was_found(supervisor)
    except Exception:
        kill_what_was_found(supervisor)
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    try:
        while time.monotonic() < deadline:
            if supervisor.nothing_left():
                return True
            kill_own_children(supervisor, deadline)  # what a chase that gave up left running
            time.sleep(0.005)
    except OSError:
        pass
    return False


def stop_cgroup(supervisor: Supervisor, cgroup: Cgroup, signals: list[int], grace: float) -> None:
    """The stop signals to the cgroup's members, each with its grace, then ``cgroup.kill``.

    The kernel kills every member at once, however fast they fork; what waits is only for
    ``populated 0``. Each member is signalled through a pidfd, after checking that the pid
    is still a member (a pid read from ``cgroup.procs`` could be reused by then).
    """
    poller = select.poll()
    poller.register(cgroup.events_fd, select.POLLPRI)
    poller.register(supervisor.wake_fd, select.POLLIN)
    for signum in signals:
        if supervisor.kill_now or not cgroup.populated():
            break
        deadline = time.monotonic() + grace
        signalled: set[int] = set()
        while cgroup.populated() and not supervisor.kill_now:
            for pid in cgroup.members():
                if pid not in signalled:
                    signalled.add(pid)
                    _signal_member(cgroup, pid, signum)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _wait_on(supervisor, poller, min(left, 0.05))
    cgroup.kill()
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while cgroup.populated() and time.monotonic() < deadline:
        _wait_on(supervisor, poller, 0.05)


def _wait_on(supervisor: Supervisor, poller: select.poll, seconds: float) -> None:
    for fd, _ in poller.poll(seconds * 1000):
        if fd == supervisor.wake_fd:
            read_once(supervisor.wake_fd)
            supervisor.reap()
    if supervisor.control_open and select.select([supervisor.channel], [], [], 0)[0]:
        supervisor.read_control()


def _signal_member(cgroup: Cgroup, pid: int, signum: int) -> None:
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return  # gone already (or no descriptor: cgroup.kill will see to it)
    try:
        if cgroup.holds(pid, pidfd):
            signal.pidfd_send_signal(pidfd, signum)
            signal.pidfd_send_signal(pidfd, signal.SIGCONT)
    except OSError:
        pass
    finally:
        os.close(pidfd)


def kill_what_was_found(supervisor: Supervisor) -> None:
    """The last resort, when /proc could not be walked: SIGKILL all that was seen."""
    if supervisor.cgroup is not None:
        try:
            supervisor.cgroup.kill()
        except OSError:
            pass
    for process in supervisor.found:
        signal_pid(process.pid, signal.SIGKILL)
    if supervisor.cli_pid:
        signal_group(supervisor.cli_pid, signal.SIGKILL)
