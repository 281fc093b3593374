"""The session's processes as ``/proc`` shows them, and signalling them without a reused pid."""

from __future__ import annotations

import errno
import os
import signal
import time

from .protocol import LEFT_BYTES, PIDFD_SIGNAL_PROCESS_GROUP


class Process:
    """One process as /proc shows it now."""

    __slots__ = ("group", "pid", "ppid", "session")

    def __init__(self, pid: int, ppid: int, group: int, session: int) -> None:
        self.pid, self.ppid, self.group, self.session = pid, ppid, group, session


def processes() -> list[Process]:
    """Every live process /proc shows (zombies left out: only their parent can end them; but
    not a process whose main thread exited while its other threads run on, which /proc shows
    in a zombie's state)."""
    found: list[Process] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if fields[0] in _ENDED and live_thread(int(entry)) is None:
                continue
        except OSError as error:
            if error.errno in (errno.EMFILE, errno.ENFILE):
                raise  # not a process that exited: we cannot look at all
            continue  # it exited while we looked
        found.append(Process(int(entry), int(fields[1]), int(fields[2]), int(fields[3])))
    return found


_ENDED = (b"Z", b"X")


def _state(stat_path: str) -> bytes:
    with open(stat_path, "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()[0]


def live_thread(pid: int) -> int | None:
    """A thread of ``pid`` that runs: ``pid`` itself, or, when its main thread has exited and
    others run on (its state then reads as a zombie's, and its command line as empty), one of
    those; None once every thread has ended."""
    if _state(f"/proc/{pid}/stat") not in _ENDED:
        return pid
    for entry in os.listdir(f"/proc/{pid}/task"):
        if entry == str(pid):
            continue
        try:
            if _state(f"/proc/{pid}/task/{entry}/stat") not in _ENDED:
                return int(entry)
        except OSError:
            continue  # that thread ended while we looked
    return None


def descendants_of(root: int, found: list[Process]) -> list[Process]:
    """The processes of ``found`` below ``root``."""
    children: dict[int, list[Process]] = {}
    for process in found:
        children.setdefault(process.ppid, []).append(process)
    below: list[Process] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            below.append(child)
            queue.append(child.pid)
    return below


def command_line(pid: int) -> bytes:
    """The start of ``pid``'s command line (its argv, NUL-separated), else its name in brackets.

    Read through a thread that runs (:func:`live_thread`): a process whose main thread exited
    shows an empty command line but through its other threads. A process with an empty command
    line (one that cleared it, or is exiting) is named by ``/proc/PID/comm`` as ``ps`` names
    it: ``[name]``.
    """
    thread = live_thread(pid) or pid
    with open(f"/proc/{pid}/task/{thread}/cmdline", "rb") as cmdline:
        found = cmdline.read(LEFT_BYTES)
    if found:
        return found
    with open(f"/proc/{pid}/comm", "rb") as comm:
        return b"[" + comm.read(64).rstrip(b"\n") + b"]"


def alive_here(pid: int) -> bool:
    try:
        return running(pid)
    except OSError:
        return False


def running(pid: int) -> bool:
    """Whether ``pid`` is running, not exiting: neither a zombie (but for one whose other
    threads run on: :func:`live_thread`) nor a process whose memory (and so its command line)
    is already gone. One with an empty command line is looked at again a moment later, as one
    that is exiting will have become a zombie by then."""
    for attempt in range(2):
        thread = live_thread(pid)
        if thread is None:
            return False
        with open(f"/proc/{pid}/task/{thread}/cmdline", "rb") as cmdline:
            if cmdline.read(1):
                return True
        if attempt == 0:
            time.sleep(0.005)
    return True  # one that cleared its own command line: named by its comm


def forked_and_ended(pid: int) -> bool:
    """Whether ``pid`` has children and every one of them has exited (a zombie it has not
    reaped): a hop of a fork chain, stopped between its fork and its own exit."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as listed:
            children = [int(child) for child in listed.read().split()]
        return bool(children) and all(live_thread(child) is None for child in children)
    except OSError:
        return False  # it exited, or a child was reaped since: no hop caught in the middle


def without_exiting_twins(lines: list[bytes]) -> list[bytes]:
    """``lines`` less each ``[name]`` (a process whose command line was gone) that names the
    program of another entry: a hop of a chain caught exiting beside the hop that goes on."""
    programs = {os.path.basename(line.split(b"\0", 1)[0])[:15] for line in lines}
    return [
        line
        for line in lines
        if not (line.startswith(b"[") and line.endswith(b"]") and line[1:-1] in programs)
    ]


def spare_fd() -> int:
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


def signal_pid(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


def signal_found(process: Process, signum: int, *, group: bool) -> None:
    """Send ``signum`` (then SIGCONT, unless it is SIGKILL) to a process found in /proc, and to
    its process group if ``group``: through a pidfd, once its parent is seen to be the one it
    was found with (so its pid was not reused since the look). Without a descriptor to spare,
    by pid."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except ProcessLookupError:
        return
    except OSError:
        signal_pid(process.pid, signum)
        if group:
            signal_group(process.group, signum)
        return
    try:
        if parent_of(process.pid) != process.ppid:
            return  # not the process found, or re-parented since: the next look sees it anew
        signal.pidfd_send_signal(pidfd, signum)
        if signum != signal.SIGKILL:
            signal.pidfd_send_signal(pidfd, signal.SIGCONT)  # a stopped process acts only then
        if group:
            try:
                signal.pidfd_send_signal(pidfd, signum, None, PIDFD_SIGNAL_PROCESS_GROUP)
            except OSError as error:
                if error.errno != errno.EINVAL:
                    raise
                signal_group(process.group, signum)  # before Linux 6.9; the group lives
    except OSError:
        pass
    finally:
        os.close(pidfd)


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return int(stat.read().rsplit(b")", 1)[1].split()[1])
