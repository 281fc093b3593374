"""The session's own cgroup v2, as the supervisor sees it: join, look, freeze, kill."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Iterator

from .procs import parent_of


def join(folder: int) -> None:
    """Move the calling process into the cgroup whose folder ``folder`` is open on (done by
    the CLI's process, or bwrap's, before it execs). Any cgroup: v2, or a v1 hierarchy's."""
    fd = os.open("cgroup.procs", os.O_WRONLY, dir_fd=folder)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)


class Cgroup:
    """The session's own cgroup v2, as the folder descriptor the adapter handed over."""

    def __init__(self, folder_fd: int) -> None:
        self.folder_fd = folder_fd
        self.events_fd = os.open("cgroup.events", os.O_RDONLY, dir_fd=folder_fd)
        # How /proc/PID/cgroup names it: "0::" and its path, ending in the folder's own name.
        self.name = os.path.basename(os.readlink(f"/proc/self/fd/{folder_fd}")).encode()

    def populated(self) -> bool:
        for line in os.pread(self.events_fd, 512, 0).split(b"\n"):
            if line.startswith(b"populated "):
                return line != b"populated 0"
        return True

    def members(self) -> list[int]:
        fd = os.open("cgroup.procs", os.O_RDONLY, dir_fd=self.folder_fd)
        try:
            chunks = []
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
        finally:
            os.close(fd)
        return [int(pid) for pid in b"".join(chunks).split()]

    def holds(self, pid: int, pidfd: int) -> bool:
        """Whether ``pid``, which ``pidfd`` was opened on, is (still) one of ours."""
        try:
            with open(f"/proc/{pid}/cgroup", "rb") as membership:
                found = membership.read(65536)
            signal.pidfd_send_signal(pidfd, 0)  # the same process: it has not exited since
        except OSError:
            return False
        return any(
            line.startswith(b"0::") and line.endswith(b"/" + self.name)
            for line in found.split(b"\n")
        )

    def roots(self, supervisor: int) -> list[int]:
        """The members whose parent is ``supervisor``: the roots of what the CLI left."""
        found = []
        for pid in self.members():
            try:
                if parent_of(pid) == supervisor:
                    found.append(pid)
            except (OSError, ValueError, IndexError):
                continue
        return found

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """While active, every member is frozen (``cgroup.freeze``): none forks or exits."""
        self._write("cgroup.freeze", b"1")
        try:
            deadline = time.monotonic() + 1.0  # a member in D state may keep it from freezing
            poller = select.poll()
            poller.register(self.events_fd, select.POLLPRI)
            while b"frozen 1" not in os.pread(self.events_fd, 512, 0).split(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                poller.poll(min(left, 0.05) * 1000)
            yield
        finally:
            self._write("cgroup.freeze", b"0")

    def _write(self, name: str, value: bytes) -> None:
        fd = os.open(name, os.O_WRONLY, dir_fd=self.folder_fd)
        try:
            os.write(fd, value)
        finally:
            os.close(fd)

    def kill(self) -> None:
        self._write("cgroup.kill", b"1")
