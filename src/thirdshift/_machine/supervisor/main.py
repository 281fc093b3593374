"""The supervisor's program: read its argv, enter the containment, start the CLI, see it through.

``run(argv)`` is what the adapter's ``LAUNCH`` calls (see _machine/launch.py).
"""

from __future__ import annotations

import errno
import os
import select
import signal
import socket

from . import left_running, sandboxed, stopping
from .cgroup import Cgroup, join
from .containment import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    enter_containment,
    outer_process,
    prctl,
    probe_namespace,
)
from .procs import read_once
from .protocol import (
    CGROUP_FD,
    CHANNEL_FD,
    GONE,
    INIT,
    NAMESPACE,
    PROBE,
    SANDBOX,
    SPAWN_ERROR,
    STARTED,
)
from .session import Supervisor

CATCHABLE = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


def main(argv: list[str]) -> int:
    if argv[:1] == [PROBE]:
        return probe_namespace()
    os.set_inheritable(CHANNEL_FD, False)
    # Any process of the session can signal this pid. Ignored, a signal is dropped (blocked,
    # it would queue: a flood of realtime signals would use up the user's pending-signal
    # limit). Only SIGCHLD is caught, and it only makes the supervisor reap.
    for signum in CATCHABLE - {signal.SIGCHLD}:
        signal.signal(signum, signal.SIG_IGN)
    if argv[:1] == [SANDBOX]:
        return sandboxed.outer(argv[1:], CATCHABLE)
    channel = socket.socket(fileno=CHANNEL_FD)
    if argv[:1] == [INIT]:
        listen, cwd, grace_text, signal_text, program, *args = argv[1:]
        if not sandboxed.ready_inside(listen, channel):
            return 1
        return supervise(
            NAMESPACE,
            channel,
            cgroup=None,
            joins=[],
            command=(program, args, cwd),
            signals=[int(s) for s in signal_text.split(",") if s],
            grace=float(grace_text),
        )
    containment, count, cwd, grace_text, signal_text, program, *args = argv
    grace = float(grace_text)
    signals = [int(s) for s in signal_text.split(",") if s]
    joins = [CGROUP_FD + index for index in range(int(count))]
    try:
        cgroup, init = enter_containment(containment, joins)
    except OSError as error:
        # Before a namespace's fork, or in its pid 1 (the outer process says "gone" then).
        report = Supervisor(channel, -1, None).report
        report(f"{SPAWN_ERROR} {containment} containment: {error.strerror or error}")
        if os.getpid() != 1:
            report(GONE)
        return 1
    if init is not None:
        channel.detach()  # the outer process writes only "gone", once pid 1 has ended
        return outer_process(init)

    return supervise(
        containment,
        channel,
        cgroup=cgroup,
        joins=joins,
        command=(program, args, cwd),
        signals=signals,
        grace=grace,
    )


def supervise(
    containment: str,
    channel: socket.socket,
    *,
    cgroup: Cgroup | None,
    joins: list[int],
    command: tuple[str, list[str], str],
    signals: list[int],
    grace: float,
) -> int:
    """Start the CLI (``command``: program, arguments, folder) in the cgroup folders ``joins``
    and see its session through."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # the thread that started us may block some
    supervisor = Supervisor(channel, wake_r, cgroup)
    program, args, cwd = command
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        supervisor.cli_pid = _spawn(program, args, cwd, joins)
        fds = [os.pidfd_open(supervisor.cli_pid)]
        if containment == NAMESPACE:
            fds.append(os.pidfd_open(os.getpid()))
    except OSError as error:
        supervisor.report(f"{SPAWN_ERROR} {error.strerror or error}")
        supervisor.reap()
        return finished(containment, supervisor, stopped=False)
    supervisor.report(f"{STARTED} {supervisor.cli_pid}", fds)
    for fd in fds:
        os.close(fd)

    # Let go of the session's stdio: the stream must end when the CLI's side lets go of it.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)

    poller = select.poll()
    poller.register(channel.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        ready = dict(poller.poll())
        if wake_r in ready:
            read_once(wake_r)
            supervisor.reap()
        if channel.fileno() in ready:
            # "stop", "kill", "end", or end of file: the adapter exited or died without a word.
            supervisor.read_control()
            if not supervisor.stop_now and supervisor.end_wait is None:
                continue
            if supervisor.end_wait is not None and not supervisor.stop_now:
                stopped = left_running.end(supervisor, supervisor.end_wait, signals, grace)
            else:
                stopped = stopping.stop(supervisor, signals, grace)
            return finished(containment, supervisor, stopped=stopped)


def finished(containment: str, supervisor: Supervisor, *, stopped: bool) -> int:
    """Say "gone" if nothing is left, and the exit status to end with.

    A namespace's pid 1 never says it: its outer process does once the kernel has ended
    everything in the namespace, which pid 1's exit makes it do.
    """
    if containment == NAMESPACE:
        return 0 if stopped else 1
    if stopped:
        supervisor.report(GONE)
        return 0
    return 1


def run(argv: list[str]) -> None:
    """Supervise, then exit at once with :func:`main`'s status: nothing is left to tear down."""
    os._exit(main(argv))


def _spawn(program: str, args: list[str], cwd: str, joins: list[int]) -> int:
    """Start the CLI: in its own process group, in the cgroups if any, with default signals,
    the OOM killer's first pick.

    A fork then exec, so that the child can join the cgroups before it runs anything of the
    CLI's: every process of the session is born inside. An error before the exec comes back
    through a close-on-exec pipe. Its ``oom_score_adj`` (inherited by all it starts) is the
    highest, so that memory running out on the machine ends a session's processes first,
    never the orchestrator or a supervisor.
    """
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_r)
            signal.set_wakeup_fd(-1)
            for signum in CATCHABLE:
                signal.signal(signum, signal.SIG_DFL)
            for folder in joins:
                join(folder)
            # Dumpable again, as the exec would make it anyway: a non-dumpable process's /proc
            # files are root's, and only root could write its oom_score_adj.
            prctl(PR_SET_DUMPABLE, 1)
            with open("/proc/self/oom_score_adj", "w") as adjust:
                adjust.write("1000")
            os.setpgid(0, 0)
            os.chdir(cwd)
            signal.pthread_sigmask(signal.SIG_SETMASK, ())
            os.execve(program, [program, *args], os.environ)
        except BaseException as error:
            reason = getattr(error, "strerror", None) or str(error)
            os.write(report_w, reason.encode("utf-8", "replace")[:512])
        os._exit(127)
    os.close(report_w)
    try:
        failure = b""
        while chunk := os.read(report_r, 512):
            failure += chunk
    finally:
        os.close(report_r)
    if failure:
        os.waitpid(pid, 0)
        raise OSError(errno.ENOEXEC, failure.decode("utf-8", "replace"))
    return pid
