"""The per-session supervisor: a tiny process that owns everything a session starts.

Run by the machine adapter with ``python -I -S`` and the arguments ``CONTROL STATUS GRACE SIGNALS
PROGRAM ARGS...`` in a new session (its own process group), it

1. makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the CLI starts
   that loses its parent (double-forked daemons, ``setsid`` escapees whose parent exited) is
   re-parented here instead of to init, so the whole tree stays findable below this pid;
2. starts the CLI with the supervisor's stdin, stdout and stderr, then lets go of its own copies,
   so that the stream ends when the CLI and what it started let go of it;
3. reaps every child, writing ``exit <wait status>`` on STATUS when the CLI itself exits;
4. on ``stop`` from CONTROL (or CONTROL closing: the adapter died), sends each stop signal in
   turn to every process below it, waiting up to GRACE seconds for them to exit and moving on as
   soon as they all have, then SIGKILLs what remains; on ``kill``, SIGKILLs at once;
5. writes ``gone`` on STATUS once nothing is left, and exits.

It imports only the standard library and runs with ``-I -S`` so that it starts in a few tens of
milliseconds: every session waits for that start. To the same end it imports ``_signal`` (the
``signal`` module less its enums, whose ``enum`` import took a fifth of the start), the adapter
runs it from its cached bytecode (:data:`thirdshift.machine.supervised.BOOT`), and it ends with
``os._exit``, as nothing is left to flush or tear down. It knows nothing of Harnesses or
streams. See docs/stopping.md for why this shape.
"""

from __future__ import annotations

import ctypes
import os
import select
import sys
import time

TYPE_CHECKING = False  # typing itself costs milliseconds to import
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal  # the same functions and numbers, without enums

PR_SET_CHILD_SUBREAPER = 36
# A process that ignores every signal but SIGKILL still dies; this only bounds waiting for
# an uninterruptible (D state) process to let go after SIGKILL.
KILL_WAIT_SECONDS = 30.0


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _descendants(root: int) -> list[int]:
    """Every live process below ``root``, found by reading each process's parent in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # it exited while we looked
        state, ppid = fields[0], int(fields[1])
        if state in (b"Z", b"X"):
            continue  # exited already: nothing to signal, its parent (or we) will reap it
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.append(child)
            queue.append(child)
    return found


class Supervisor:
    def __init__(self, control_fd: int, status_fd: int, wake_fd: int) -> None:
        self.control_fd = control_fd
        self.status_fd = status_fd
        self.wake_fd = wake_fd
        self.cli_pid = 0
        self.me = os.getpid()
        self.hurry = False  # a "kill" arrived while stopping: skip to SIGKILL
        self.control_open = True

    def read_control(self) -> None:
        """Read what the adapter said: "stop", "kill", or nothing (it closed the pipe)."""
        said = _drain(self.control_fd)
        if not said:
            self.control_open = False
        if b"kill" in said:
            self.hurry = True

    def report(self, line: str) -> None:
        try:
            os.write(self.status_fd, f"{line}\n".encode())
        except OSError:
            pass  # the adapter is gone; carry on tearing down

    def reap(self) -> bool:
        """Reap every exited child; report the CLI's status. True while children remain."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.cli_pid:
                self.report(f"exit {status}")

    def wait_until_gone(self, pids: list[int], deadline: float) -> None:
        """Wait until ``pids`` have all exited, the deadline passes, or a "kill" arrives.

        Each pid is watched through a pidfd, which becomes readable as the process exits, so
        that waiting costs no polling; a kernel without pidfds falls back to polling /proc.
        """
        watching: list[int] = []
        for pid in pids:
            try:
                watching.append(os.pidfd_open(pid))
            except ProcessLookupError:
                continue  # exited already
            except OSError:
                watching.append(-1)  # no pidfds here: poll below
        try:
            while watching and not self.hurry:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                pidfds = [fd for fd in watching if fd >= 0]
                timeout = left if len(pidfds) == len(watching) else min(left, 0.01)
                control = [self.control_fd] if self.control_open else []
                ready, _, _ = select.select([*pidfds, self.wake_fd, *control], [], [], timeout)
                if self.wake_fd in ready:
                    _drain(self.wake_fd)
                    self.reap()
                if self.control_fd in ready:
                    self.read_control()
                for fd in ready:
                    if fd in pidfds:
                        watching.remove(fd)
                        os.close(fd)
                if len(pidfds) < len(watching) and not _descendants(self.me):
                    return
        finally:
            for fd in watching:
                if fd >= 0:
                    os.close(fd)

    def stop(self, signals: list[int], grace: float) -> None:
        """Stop everything below: each signal in turn with its grace, then SIGKILL."""
        for signum in [*signals, signal.SIGKILL]:
            if self.hurry and signum != signal.SIGKILL:
                continue
            wait = KILL_WAIT_SECONDS if signum == signal.SIGKILL else grace
            deadline = time.monotonic() + wait
            # Again within the grace: what is signalled may start more processes as it exits.
            while (targets := _descendants(self.me)) and time.monotonic() < deadline:
                for pid in targets:
                    try:
                        os.kill(pid, signum)
                    except ProcessLookupError:
                        pass
                self.wait_until_gone(targets, deadline)
                if self.hurry and signum != signal.SIGKILL:
                    break
            if not _descendants(self.me):
                break
        while self.reap():
            time.sleep(0.005)  # zombies re-parented to us in the last instant


def _drain(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""


def main(argv: list[str]) -> int:
    control_fd, status_fd = int(argv[0]), int(argv[1])
    grace = float(argv[2])
    signals = [int(s) for s in argv[3].split(",") if s]
    program, *args = argv[4:]
    for fd in (control_fd, status_fd):
        os.set_inheritable(fd, False)

    # Interrupts are the adapter's to handle; the supervisor only obeys its control pipe.
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    supervisor = Supervisor(control_fd, status_fd, wake_r)

    try:
        _become_subreaper()
        # The CLI gets default dispositions, not the ignored ones above.
        supervisor.cli_pid = os.posix_spawn(
            program,
            [program, *args],
            dict(os.environ),
            setsigdef=(signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT),
        )
    except OSError as error:
        supervisor.report(f"spawn-error {error.strerror or error}")
        supervisor.report("gone")
        return 1

    # Let go of the session's stdio: the stream must end when the CLI's side lets go of it.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)

    while True:
        ready, _, _ = select.select([control_fd, wake_r], [], [])
        if wake_r in ready:
            _drain(wake_r)
            supervisor.reap()
        if control_fd in ready:
            # "stop", "kill", or end of file: the adapter exited or died without a word.
            supervisor.read_control()
            supervisor.stop(signals, grace)
            supervisor.report("gone")
            return 0


def run(argv: list[str]) -> None:
    """Supervise, then exit at once with :func:`main`'s status: nothing is left to tear down."""
    os._exit(main(argv))


if __name__ == "__main__":
    run(sys.argv[1:])
