"""The per-session supervisor: a tiny process that owns everything a session starts.

The machine adapter runs this file by its path, ``python -I -S supervisor.py CONTROL STATUS
GRACE SIGNALS PROGRAM ARGS...``, in a new session of its own. It

1. ignores every signal it can (the session's processes can signal it by its pid) and makes
   itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the CLI starts that
   loses its parent (double-forked daemons, ``setsid`` escapees whose parent exited) is
   re-parented here instead of to init, so the whole tree stays findable below this pid;
2. starts the CLI in a process group of its own (a signal the agent sends to its group never
   reaches the supervisor), with default signal dispositions and an empty signal mask, and the
   supervisor's stdin, stdout and stderr; then lets go of its own copies, so that the stream
   ends when the CLI and what it started let go of it; it says ``started <pid>`` on STATUS;
3. reaps every child, writing ``exit <wait status>`` on STATUS when the CLI itself exits;
4. on ``end <seconds>`` from CONTROL (the CLI has exited and its session ended), waits up to
   that long for what is left to exit by itself, then reports each process still running
   directly below it (``left <hex of its /proc cmdline>``: background work the session leaves
   behind, see :func:`report_leftovers`) and stops them as on ``stop``;
   on ``stop`` from CONTROL (or CONTROL closing: the adapter died), sends each stop signal in
   turn (each followed by SIGCONT, so that a stopped process can act on it) to every process
   below it, waiting up to GRACE seconds for them to exit and moving on as soon as they all
   have, then SIGKILLs what remains; on ``kill``, SIGKILLs at once. Whatever goes wrong on the
   way (no file descriptor left, /proc unreadable) falls through to SIGKILL of all it found;
5. writes ``gone`` on STATUS once it has seen that nothing is left, and exits. If it cannot
   tell, it exits without ``gone``, and the adapter fails the session.

It imports only the standard library, so that it runs with ``-I -S`` and starts in a few tens
of milliseconds: every session waits for that start. The adapter imports this module too, for
the words of the protocol below. See docs/stopping.md for why this shape.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import signal
import sys
import time

# The protocol, one line per message. Status, from the supervisor:
STARTED = "started"  # started <pid>: the CLI runs, as the leader of its own process group
EXIT = "exit"  # exit <wait status>: the CLI itself exited
SPAWN_ERROR = "spawn-error"  # spawn-error <reason>: the CLI could not be started
GONE = "gone"  # nothing the session started is left; the supervisor exits
# left <hex>: a process still running after the CLI's exit and the drain, about to be stopped;
# its command line (/proc/PID/cmdline, NUL-separated, at most LEFT_BYTES) as hex digits, so
# that nothing in it can look like a line of the protocol.
LEFT = "left"
LEFT_UNLISTED = "left-unlisted"  # left-unlisted <n>: that many more, not listed one by one
# Control, from the adapter (end of file means stop, too):
STOP = "stop"  # stop signals in turn with their grace, then SIGKILL
KILL = "kill"  # SIGKILL now, even while a stop is under way
END = "end"  # end <seconds>: the session ended; wait that long, report what is left, stop it

PR_SET_CHILD_SUBREAPER = 36
# A process that ignores every signal but SIGKILL still dies; this only bounds waiting for
# an uninterruptible (D state) process to let go after SIGKILL.
KILL_WAIT_SECONDS = 30.0
# At most this many pidfds are open at once: what is left is watched in batches, so a few
# thousand leftovers never exhaust the descriptor limit.
PIDFD_BATCH = 256
# Without pidfds (old kernels, or no descriptor to spare) /proc is looked at this often.
POLL_SECONDS = 0.01
# What is reported of the work left running: at most this many processes, each by at most this
# much of its command line (the adapter shortens descriptions to far less).
LEFT_LISTED = 100
LEFT_BYTES = 1024
CATCHABLE = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def descendants(root: int) -> list[int]:
    """Every live process below ``root``, found by reading each process's parent in /proc."""
    children = _children()
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.append(child)
            queue.append(child)
    return found


def _children() -> dict[int, list[int]]:
    """Each live process's live children, by its pid, as /proc has them now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError as error:
            if error.errno in (errno.EMFILE, errno.ENFILE):
                raise  # not a process that exited: we cannot look at all
            continue  # it exited while we looked
        state, ppid = fields[0], int(fields[1])
        if state in (b"Z", b"X"):
            continue  # exited already: nothing to signal, its parent (or we) will reap it
        children.setdefault(ppid, []).append(int(entry))
    return children


def command_line(pid: int) -> bytes:
    """The start of ``pid``'s command line (its argv, NUL-separated), else its name in brackets.

    A process with an empty command line (one that cleared it, or is exiting) is named by
    ``/proc/PID/comm`` as ``ps`` names it: ``[name]``.
    """
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        found = cmdline.read(LEFT_BYTES)
    if found:
        return found
    with open(f"/proc/{pid}/comm", "rb") as comm:
        return b"[" + comm.read(64).rstrip(b"\n") + b"]"


def _spare_fd() -> int:
    try:
        return os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return -1


def read_once(fd: int) -> bytes:
    """What ``fd`` holds now (up to 4 KiB), or nothing if it holds nothing yet."""
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""


class Supervisor:
    def __init__(self, control_fd: int, status_fd: int, wake_fd: int) -> None:
        self.control_fd = control_fd
        self.status_fd = status_fd
        self.wake_fd = wake_fd
        self.cli_pid = 0
        self.own_pid = os.getpid()
        self.kill_now = False  # a "kill" arrived while stopping: skip to SIGKILL
        self.stop_now = False  # a "stop" or "kill" arrived (or CONTROL closed): wait no more
        self.end_wait: float | None = None  # seconds, when the adapter said "end <seconds>"
        self.control_open = True
        self.found: list[int] = []  # the processes below, as last seen
        self.spare_fd = _spare_fd()  # given up to look at /proc should no descriptor be left
        open_max = os.sysconf("SC_OPEN_MAX")
        # Room for the pipes, /proc and its entries: the rest of the limit, halved, for pidfds.
        self.batch = max(0, min(PIDFD_BATCH, (open_max - 16) // 2))

    def read_control(self) -> None:
        """Read what the adapter said: "stop", "kill", or nothing (it closed the pipe)."""
        said = read_once(self.control_fd)
        if not said:
            self.control_open = False
            self.stop_now = True
        for line in said.split(b"\n"):
            word, _, rest = line.partition(b" ")
            if word == KILL.encode():
                self.kill_now = self.stop_now = True
            elif word == STOP.encode():
                self.stop_now = True
            elif word == END.encode() and self.end_wait is None:
                try:
                    self.end_wait = max(0.0, min(float(rest), KILL_WAIT_SECONDS))
                except ValueError:
                    self.end_wait = 0.0

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
                self.report(f"{EXIT} {status}")

    def below(self) -> list[int]:
        try:
            self.found = descendants(self.own_pid)
        except OSError as error:
            if error.errno != errno.EMFILE or self.spare_fd < 0:
                raise
            # Out of descriptors: give up the one kept for this, look, and keep it again.
            os.close(self.spare_fd)
            try:
                self.found = descendants(self.own_pid)
            finally:
                self.spare_fd = _spare_fd()
        return self.found

    def wait_for(self, targets: list[int], deadline: float, signum: int) -> None:
        """Wait until a batch of ``targets`` has exited, the deadline passes, or a "kill" comes.

        Each watched pid has a pidfd, which becomes readable as the process exits, so waiting
        costs no polling; without pidfds, this returns after a short while for another look.
        """
        pidfds: list[int] = []
        try:
            for pid in targets[: self.batch]:
                try:
                    pidfds.append(os.pidfd_open(pid))
                except ProcessLookupError:
                    continue  # exited already
                except OSError:
                    break  # no pidfds here, or no descriptor left: watch what we have
            poller = select.poll()
            for fd in (*pidfds, self.wake_fd):
                poller.register(fd, select.POLLIN)
            if self.control_open:
                poller.register(self.control_fd, select.POLLIN)
            open_fds = set(pidfds)
            while not self._cut_short(signum):
                left = deadline - time.monotonic()
                if left <= 0 or (pidfds and not open_fds):
                    return
                ready = poller.poll((left if open_fds else min(left, POLL_SECONDS)) * 1000)
                for fd, _ in ready:
                    if fd == self.wake_fd:
                        read_once(self.wake_fd)
                        self.reap()
                    elif fd == self.control_fd:
                        self.read_control()
                        if not self.control_open:
                            poller.unregister(fd)
                    elif fd in open_fds:
                        poller.unregister(fd)
                        open_fds.discard(fd)
                if not pidfds:
                    return  # nothing to wait on: time for another look at /proc
        finally:
            for fd in pidfds:
                os.close(fd)

    def _cut_short(self, signum: int) -> bool:
        """Whether the adapter said to stop waiting: "kill" ends a grace, "stop" an end's wait."""
        if signum == 0:
            return self.stop_now
        return self.kill_now and signum != signal.SIGKILL

    def wait_for_leftovers(self, seconds: float) -> None:
        """Wait up to ``seconds`` for what is left below to exit by itself, unless told to stop."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stop_now:
            targets = self.below()
            if not targets:
                return
            self.wait_for(targets, deadline, 0)

    def report_leftovers(self) -> None:
        """Say which processes are still running below: the session left them behind.

        Only the roots of what is left, the processes whose parent is the supervisor (the CLI
        has exited: its orphans are re-parented here): one background command is one entry,
        not one per process of its tree. At most ``LEFT_LISTED`` are listed; a process that
        cannot be read, or past the cap, is counted in ``left-unlisted``.
        """
        roots = _children().get(self.own_pid, [])
        unlisted = max(0, len(roots) - LEFT_LISTED)
        for pid in roots[:LEFT_LISTED]:
            try:
                self.report(f"{LEFT} {command_line(pid).hex()}")
            except (FileNotFoundError, ProcessLookupError):
                continue  # it exited after all: not left behind
            except OSError:
                unlisted += 1
        if unlisted:
            self.report(f"{LEFT_UNLISTED} {unlisted}")

    def end(self, seconds: float, signals: list[int], grace: float) -> bool:
        """The session ended: let what is left exit by itself, report the rest, stop it."""
        try:
            self.wait_for_leftovers(seconds)
            if not self.stop_now:
                self.report_leftovers()
        except Exception:  # whatever fails here, the stop must still happen
            pass
        return self.stop(signals, grace)

    def signal_until_gone(self, signum: int, deadline: float) -> bool:
        """Send ``signum`` to everything below, again to what appears, until none is left."""
        signalled: set[int] = set()  # a second SIGINT means "now" to some CLIs: once each
        while time.monotonic() < deadline:
            targets = self.below()
            if not targets:
                return True
            for pid in targets:
                if pid in signalled:
                    continue
                signalled.add(pid)
                try:
                    os.kill(pid, signum)
                    if signum != signal.SIGKILL:
                        os.kill(pid, signal.SIGCONT)  # a stopped process acts on it only then
                except ProcessLookupError:
                    pass
            self.wait_for(targets, deadline, signum)
            if self.kill_now and signum != signal.SIGKILL:
                return False
        return not self.below()

    def stop(self, signals: list[int], grace: float) -> bool:
        """Stop everything below: each signal in turn with its grace, then SIGKILL.

        True when nothing is left below, as far as can be seen.
        """
        for signum in [*signals, signal.SIGKILL]:
            if self.kill_now and signum != signal.SIGKILL:
                continue
            wait = KILL_WAIT_SECONDS if signum == signal.SIGKILL else grace
            try:
                if self.signal_until_gone(signum, time.monotonic() + wait):
                    break
            except Exception:  # any failure here must still end in SIGKILL
                continue
        else:
            self.kill_what_was_found()
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        while self.reap() and time.monotonic() < deadline:
            time.sleep(0.005)  # zombies re-parented to us in the last instant
        try:
            return not self.below()
        except OSError:
            return False

    def kill_what_was_found(self) -> None:
        """The last resort, when /proc could not be walked: SIGKILL all that was seen."""
        for pid in self.found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.cli_pid:
            try:
                os.killpg(self.cli_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main(argv: list[str]) -> int:
    control_fd, status_fd = int(argv[0]), int(argv[1])
    grace = float(argv[2])
    signals = [int(s) for s in argv[3].split(",") if s]
    program, *args = argv[4:]
    for fd in (control_fd, status_fd):
        os.set_inheritable(fd, False)

    # Any process of the session can signal this pid. Ignored, a signal is dropped (blocked,
    # it would queue: a flood of realtime signals would use up the user's pending-signal
    # limit). Only SIGCHLD is caught, and it only makes the supervisor reap.
    for signum in CATCHABLE - {signal.SIGCHLD}:
        signal.signal(signum, signal.SIG_IGN)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # the thread that started us may block some
    supervisor = Supervisor(control_fd, status_fd, wake_r)

    try:
        _become_subreaper()
        supervisor.cli_pid = os.posix_spawn(
            program,
            [program, *args],
            dict(os.environ),
            setpgroup=0,
            setsigdef=CATCHABLE,
            setsigmask=(),
        )
    except OSError as error:
        supervisor.report(f"{SPAWN_ERROR} {error.strerror or error}")
        supervisor.report(GONE)
        return 1
    supervisor.report(f"{STARTED} {supervisor.cli_pid}")

    # Let go of the session's stdio: the stream must end when the CLI's side lets go of it.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)

    poller = select.poll()
    poller.register(control_fd, select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        ready = dict(poller.poll())
        if wake_r in ready:
            read_once(wake_r)
            supervisor.reap()
        if control_fd in ready:
            # "stop", "kill", or end of file: the adapter exited or died without a word.
            supervisor.read_control()
            if supervisor.end_wait is not None and not supervisor.stop_now:
                stopped = supervisor.end(supervisor.end_wait, signals, grace)
            else:
                stopped = supervisor.stop(signals, grace)
            if stopped:
                supervisor.report(GONE)
                return 0
            return 1


def run(argv: list[str]) -> None:
    """Supervise, then exit at once with :func:`main`'s status: nothing is left to tear down."""
    os._exit(main(argv))


if __name__ == "__main__":
    run(sys.argv[1:])
