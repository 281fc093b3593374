"""The supervisor's hold on its session: its channel, its children, its looks below, its waits.

:class:`Supervisor` is the state the other parts share: what the adapter said (``stop``,
``kill``, ``end``), what was found below, how many children were reaped. Stopping is in
:mod:`.stopping`, the work left at the end in :mod:`.left_running`.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import socket
import time

from .cgroup import Cgroup
from .procs import Process, descendants_of, processes, read_once, spare_fd
from .protocol import END, EXIT, KILL, KILL_WAIT_SECONDS, MAX_LINE, STOP

# At most this many pidfds are open at once: what is left is watched in batches, so a few
# thousand leftovers never exhaust the descriptor limit.
PIDFD_BATCH = 256
# Without pidfds (old kernels, or no descriptor to spare) /proc is looked at this often.
POLL_SECONDS = 0.01
# "Nothing is left" under scan: this many looks in a row found nothing, none reaping a child.
QUIET_LOOKS = 3


class Supervisor:
    """One session's supervisor: what it was told, what it found, what it reaped."""

    def __init__(self, channel: socket.socket, wake_fd: int, cgroup: Cgroup | None) -> None:
        self.channel = channel
        self.wake_fd = wake_fd
        self.cgroup = cgroup
        self.cli_pid = 0
        self.own_pid = os.getpid()
        self.reaped = 0  # children reaped so far: a look that reaped one was not a quiet look
        self.kill_now = False  # a "kill" arrived while stopping: skip to the kill
        self.stop_now = False  # a "stop" or "kill" arrived (or the channel closed): wait no more
        self.end_wait: float | None = None  # seconds, when the adapter said "end <seconds>"
        self.control_open = True
        self.control_buffer = b""
        self.found: list[Process] = []  # the processes below, as last seen
        self.spare_fd = spare_fd()  # given up to look at /proc should no descriptor be left
        open_max = os.sysconf("SC_OPEN_MAX")
        # Room for the channel, /proc and its entries: the rest of the limit, halved, for pidfds.
        self.batch = max(0, min(PIDFD_BATCH, (open_max - 16) // 2))

    def read_control(self) -> None:
        """Read what the adapter said: "stop", "kill", "end", or nothing (it closed its end)."""
        try:
            said = self.channel.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            said = b""
        if not said:
            self.control_open = False
            self.stop_now = True
            return
        *lines, self.control_buffer = (self.control_buffer + said).split(b"\n")
        self.control_buffer = self.control_buffer[-MAX_LINE:]
        for line in lines:
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

    def report(self, line: str, fds: list[int] | None = None) -> None:
        try:
            data = f"{line}\n".encode("ascii")
            if fds:
                socket.send_fds(self.channel, [data], fds, socket.MSG_NOSIGNAL)
            else:
                self.channel.sendall(data, socket.MSG_NOSIGNAL)
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
            self.reaped += 1
            if pid == self.cli_pid:
                self.report(f"{EXIT} {status}")

    def below(self) -> list[Process]:
        try:
            self.found = descendants_of(self.own_pid, processes())
        except OSError as error:
            if error.errno != errno.EMFILE or self.spare_fd < 0:
                raise
            # Out of descriptors: give up the one kept for this, look, and keep it again.
            os.close(self.spare_fd)
            try:
                self.found = descendants_of(self.own_pid, processes())
            finally:
                self.spare_fd = spare_fd()
        return self.found

    def own_children(self) -> list[int]:
        """This process's children, from one small file (far quicker than a look at /proc).

        Each is our child, unreaped, so its pid cannot have been reused.
        """
        try:
            with open(f"/proc/self/task/{self.own_pid}/children", "rb") as children:
                return [int(pid) for pid in children.read().split()]
        except OSError:
            return [process.pid for process in self.below() if process.ppid == self.own_pid]

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
                poller.register(self.channel.fileno(), select.POLLIN)
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
                    elif fd == self.channel.fileno():
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

    def nothing_left(self) -> bool:
        """Several looks in a row find nothing below and no child of ours, and no child was
        reaped between them. One look at all of /proc can miss a process that forks and exits
        while it is made; our own short list of children does not, and a chain's live process is
        always our child or the child of one."""
        if self.cgroup is not None and self.cgroup.populated():
            return False
        for _ in range(QUIET_LOOKS):
            reaped = self.reaped
            self.reap()
            # With no child of ours there is no descendant: each one's chain of parents ends
            # here, as every orphan of the session is re-parented to us.
            if self.own_children() or self.reaped != reaped:
                return False
            time.sleep(0.001)
        return self.cgroup is None or not self.cgroup.populated()
