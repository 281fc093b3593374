"""The per-session supervisor: a tiny process that owns everything a session starts.

The machine adapter runs this file by its path, ``python -I -S supervisor.py CONTAINMENT CWD
GRACE SIGNALS PROGRAM ARGS...``, in a new session of its own, with its channel to the adapter
(one end of a ``socketpair``) as fd 3 and, for the ``cgroup`` containment, the session's own
cgroup folder as fd 4. No descriptor number or secret is in its argv, and it makes itself
non-dumpable, so that no other process of the user can open its descriptors or read its memory
through ``/proc`` (a socket cannot be reopened through ``/proc`` at all). It

1. ignores every signal it can (the session's processes may signal it by its pid) and makes
   itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the CLI starts that
   loses its parent is re-parented here instead of to init, so the whole tree stays findable
   below this pid. Under the ``namespace`` containment it first enters new PID and mount
   namespaces (and a user namespace mapping only its own uid, when it is not root) and forks
   their pid 1, which does all that follows; its end makes the kernel kill everything in the
   namespace, and it dies with the outer process (``PR_SET_PDEATHSIG``). The outer process
   waits for it and says ``gone`` once it has ended;
2. starts the CLI (moved into the session's cgroup before it execs, under ``cgroup``) in a
   process group of its own with default signal dispositions, an empty signal mask and the
   supervisor's stdio, then lets go of its own copies of the stdio, so that the stream ends
   when the CLI and what it started let go of it; it says ``started <pid>`` with a pidfd of the
   CLI attached (``SCM_RIGHTS``; under ``namespace`` a pidfd of the namespace's pid 1 too), so
   that the adapter sees the CLI's exit, and signals it, without trusting any pid;
3. reaps every child, writing ``exit <wait status>`` when the CLI itself exits;
4. on ``end <seconds>`` (the CLI has exited and its session ended), waits up to that long for
   what is left to exit by itself, then reports each process still running directly below it
   (``left <hex of its /proc cmdline>``) and stops them as on ``stop``. On ``stop`` (or the
   channel closing: the adapter died) it sends each stop signal in turn (each followed by
   SIGCONT) to every process of the session, waiting up to GRACE seconds for them to exit,
   then kills what remains: ``cgroup.kill`` under ``cgroup``, SIGKILL of every process found
   (and of its process group and session) otherwise. ``kill`` skips to that at once;
5. writes ``gone`` once nothing is left (``cgroup.events`` says ``populated 0`` and no process
   is found below it; under ``scan``, several looks in a row found nothing and no child was
   reaped between them) and exits 0. If it cannot tell, it exits 1 without ``gone``, and the
   adapter kills the tree itself and fails the session.

It imports only the standard library, so that it runs with ``-I -S`` and starts in a few tens
of milliseconds. The adapter imports this module too, for the words of the protocol. See
docs/stopping.md for why this shape, and for each containment.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Iterator

# The protocol, one ASCII line per message. Status, from the supervisor:
STARTED = "started"  # started <pid>, with the CLI's pidfd (and pid 1's under namespace)
EXIT = "exit"  # exit <wait status>: the CLI itself exited
SPAWN_ERROR = "spawn-error"  # spawn-error <reason>: the CLI could not be started
GONE = "gone"  # nothing the session started is left; the supervisor exits 0
# left <hex>: a process still running after the CLI's exit and the drain, about to be stopped;
# its command line (/proc/PID/cmdline, NUL-separated, at most LEFT_BYTES) as hex digits, so
# that nothing in it can look like a line of the protocol.
LEFT = "left"
LEFT_UNLISTED = "left-unlisted"  # left-unlisted <n>: that many more, not listed one by one
# Control, from the adapter (end of file means stop, too):
STOP = "stop"  # stop signals in turn with their grace, then kill
KILL = "kill"  # kill now, even while a stop is under way
END = "end"  # end <seconds>: the session ended; wait that long, report what is left, stop it

# The containments (see docs/stopping.md), most isolated first.
CGROUP = "cgroup"
NAMESPACE = "namespace"
SCAN = "scan"
CONTAINMENTS = (CGROUP, NAMESPACE, SCAN)
PROBE = "probe-namespace"  # argv[0] that asks only whether the namespace can be made here

CHANNEL_FD = 3  # the adapter's socket
CGROUP_FD = 4  # the session's cgroup folder, under the cgroup containment
# No line of the protocol is longer than this (a `left` line of LEFT_BYTES as hex, and room).
MAX_LINE = 4096

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
PIDFD_SIGNAL_PROCESS_GROUP = 4  # pidfd_send_signal: the pidfd's process group (Linux 6.9)
# A process that ignores every signal but SIGKILL still dies; this only bounds waiting for
# an uninterruptible (D state) process to let go after SIGKILL.
KILL_WAIT_SECONDS = 30.0
# At most this many pidfds are open at once: what is left is watched in batches, so a few
# thousand leftovers never exhaust the descriptor limit.
PIDFD_BATCH = 256
# Without pidfds (old kernels, or no descriptor to spare) /proc is looked at this often.
POLL_SECONDS = 0.01
# "Nothing is left" under scan: this many looks in a row found nothing, none reaping a child.
QUIET_LOOKS = 3
# What is reported of the work left running: at most this many processes, each by at most this
# much of its command line (the adapter shortens descriptions to far less).
LEFT_LISTED = 100
LEFT_BYTES = 1024
CATCHABLE = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}

_libc = ctypes.CDLL(None, use_errno=True)


def _checked(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _prctl(option: int, value: int) -> None:
    _checked(_libc.prctl(option, value, 0, 0, 0), "prctl")


class Process:
    """One process as /proc shows it now."""

    __slots__ = ("group", "pid", "ppid", "session")

    def __init__(self, pid: int, ppid: int, group: int, session: int) -> None:
        self.pid, self.ppid, self.group, self.session = pid, ppid, group, session


def processes() -> list[Process]:
    """Every live process /proc shows (zombies left out: only their parent can end them)."""
    found: list[Process] = []
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
        if fields[0] in (b"Z", b"X"):
            continue
        found.append(Process(int(entry), int(fields[1]), int(fields[2]), int(fields[3])))
    return found


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

    A process with an empty command line (one that cleared it, or is exiting) is named by
    ``/proc/PID/comm`` as ``ps`` names it: ``[name]``.
    """
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        found = cmdline.read(LEFT_BYTES)
    if found:
        return found
    with open(f"/proc/{pid}/comm", "rb") as comm:
        return b"[" + comm.read(64).rstrip(b"\n") + b"]"


def _alive_here(pid: int) -> bool:
    try:
        return _running(pid)
    except OSError:
        return False


def _running(pid: int) -> bool:
    """Whether ``pid`` is running, not exiting: neither a zombie nor a process whose memory
    (and so its command line) is already gone. One with an empty command line is looked at
    again a moment later, as one that is exiting will have become a zombie by then."""
    for attempt in range(2):
        with open(f"/proc/{pid}/stat", "rb") as stat:
            if stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                return False
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if cmdline.read(1):
                return True
        if attempt == 0:
            time.sleep(0.005)
    return True  # one that cleared its own command line: named by its comm


def _without_exiting_twins(lines: list[bytes]) -> list[bytes]:
    """``lines`` less each ``[name]`` (a process whose command line was gone) that names the
    program of another entry: a hop of a chain caught exiting beside the hop that goes on."""
    programs = {os.path.basename(line.split(b"\0", 1)[0])[:15] for line in lines}
    return [
        line
        for line in lines
        if not (line.startswith(b"[") and line.endswith(b"]") and line[1:-1] in programs)
    ]


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


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_group(group: int, signum: int) -> None:
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
        _signal(process.pid, signum)
        if group:
            _signal_group(process.group, signum)
        return
    try:
        if _parent_of(process.pid) != process.ppid:
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
                _signal_group(process.group, signum)  # before Linux 6.9; the group lives
    except OSError:
        pass
    finally:
        os.close(pidfd)


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return int(stat.read().rsplit(b")", 1)[1].split()[1])


class Cgroup:
    """The session's own cgroup v2, as the folder descriptor the adapter handed over."""

    def __init__(self, folder_fd: int) -> None:
        self.folder_fd = folder_fd
        self.events_fd = os.open("cgroup.events", os.O_RDONLY, dir_fd=folder_fd)
        # How /proc/PID/cgroup names it: "0::" and its path, ending in the folder's own name.
        self.name = os.path.basename(os.readlink(f"/proc/self/fd/{folder_fd}")).encode()

    def join(self) -> None:
        """Move the calling process in (done by the CLI's process before it execs)."""
        self._write("cgroup.procs", b"0")

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
                if _parent_of(pid) == supervisor:
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


class Supervisor:
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
        self.spare_fd = _spare_fd()  # given up to look at /proc should no descriptor be left
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
                self.spare_fd = _spare_fd()
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

    def wait_for_leftovers(self, seconds: float) -> None:
        """Wait up to ``seconds`` for what is left below to exit by itself, unless told to stop."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stop_now:
            if not self.own_children() and self.nothing_left():
                return
            targets = [process.pid for process in self.below()]
            if not targets:
                return
            self.wait_for(targets, deadline, 0)

    def report_leftovers(self) -> None:
        """Say which processes are still running below: the session left them behind.

        Only the roots of what is left, the supervisor's own children (the CLI has exited: its
        orphans are re-parented here): one background command is one entry, not one per
        process of its tree. At most ``LEFT_LISTED`` are listed; a process that cannot be
        read, or past the cap, is counted in ``left-unlisted``. The roots are stopped first
        (SIGSTOP; each stop signal later comes with a SIGCONT), so that a chain that forks
        and exits holds still long enough to be read.
        """
        if self.cgroup is not None:
            with self.cgroup.frozen():  # nothing in it forks or exits while it is read
                self._report_roots(self.cgroup.roots(self.own_pid))
            return
        roots = self.hold_still()
        for _ in range(QUIET_LOOKS):  # one look at the list of children can miss a hop
            if any(_alive_here(pid) for pid in roots):
                break
            time.sleep(0.001)
            # The list of children is no snapshot while they fork and exit; /proc is another
            # view, and what was stopped holds still in it.
            roots = self.hold_still() or [
                process.pid for process in self.below() if process.ppid == self.own_pid
            ]
        self._report_roots(roots)

    def _report_roots(self, roots: list[int]) -> None:
        listed: list[bytes] = []
        unlisted = max(0, len(roots) - LEFT_LISTED)
        for pid in roots[:LEFT_LISTED]:
            try:
                if _running(pid):
                    listed.append(command_line(pid))
            except (FileNotFoundError, ProcessLookupError):
                continue  # it exited after all: not left behind
            except OSError:
                unlisted += 1
        if not listed and not unlisted and self.anything_below():
            unlisted = 1  # seen, not read: counted all the same, never taken for nothing
        for line in _without_exiting_twins(listed):
            self.report(f"{LEFT} {line.hex()}")
        if unlisted:
            self.report(f"{LEFT_UNLISTED} {unlisted}")

    def anything_below(self) -> bool:
        """Whether anything of the session still runs (a zombie does not: it has ended)."""
        if self.cgroup is not None:
            return self.cgroup.populated()
        self.reap()
        try:
            return bool(self.below())
        except OSError:
            return True

    def hold_still(self) -> list[int]:
        """SIGSTOP our children until no new one appears; return them.

        Safe by pid: they are ours and unreaped. A stopped hop of a chain cannot exit, so what
        it forked before it stopped comes here only once that child exits in turn: a few rounds
        catch them all.
        """
        stopped: set[int] = set()
        for _ in range(50):
            self.reap()
            children = self.own_children()
            new = [pid for pid in children if pid not in stopped]
            if not new:
                return children
            for pid in new:
                _signal(pid, signal.SIGSTOP)
                stopped.add(pid)
            time.sleep(0.001)
        return self.own_children()

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
        """Send ``signum`` to everything below, again to what appears, until none is left.

        With SIGKILL each process's group is signalled too: a group signal reaches whichever
        member is alive at that instant, so a chain that forks and exits is caught mid-hop.
        """
        signalled: set[int] = set()  # a second SIGINT means "now" to some CLIs: once each
        groups: set[int] = set()
        own_group = os.getpgid(0)
        while time.monotonic() < deadline:
            targets = [] if not self.own_children() else self.below()
            if not targets:
                if self.nothing_left():
                    return True
                if signum == signal.SIGKILL:
                    self.kill_own_children(deadline)
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
                self.kill_own_children(deadline)
            self.wait_for([process.pid for process in targets], deadline, signum)
            if self.kill_now and signum != signal.SIGKILL:
                return False
        return False

    def kill_own_children(self, deadline: float) -> None:
        """SIGKILL our own children as fast as they come, until a few looks find none.

        Every orphan of the session is re-parented here, so a chain of processes that each fork
        and exit becomes our child at each hop; a small file lists our children, and killing
        them by pid is safe (unreaped, they keep their pids). Nothing killed can fork again.
        """
        quiet = 0
        while quiet < QUIET_LOOKS and time.monotonic() < deadline:
            children = self.own_children()
            for pid in children:
                _signal(pid, signal.SIGKILL)
            self.reap()
            quiet = 0 if children else quiet + 1

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

    def stop(self, signals: list[int], grace: float) -> bool:
        """Stop everything of the session: each signal in turn with its grace, then a kill.

        True when nothing is left, as far as can be seen.
        """
        try:
            if self.cgroup is not None:
                self.stop_cgroup(self.cgroup, signals, grace)
            for signum in [*signals, signal.SIGKILL]:
                if self.kill_now and signum != signal.SIGKILL:
                    continue
                wait = KILL_WAIT_SECONDS if signum == signal.SIGKILL else grace
                if self.cgroup is not None and signum != signal.SIGKILL:
                    continue  # the cgroup had its signals; this only catches what left it
                try:
                    if self.signal_until_gone(signum, time.monotonic() + wait):
                        break
                except Exception:  # any failure here must still end in SIGKILL
                    continue
            else:
                self.kill_what_was_found()
        except Exception:
            self.kill_what_was_found()
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        try:
            while time.monotonic() < deadline:
                if self.nothing_left():
                    return True
                self.kill_own_children(deadline)  # what a chase that gave up left running
                time.sleep(0.005)
        except OSError:
            pass
        return False

    def stop_cgroup(self, cgroup: Cgroup, signals: list[int], grace: float) -> None:
        """The stop signals to the cgroup's members, each with its grace, then ``cgroup.kill``.

        The kernel kills every member at once, however fast they fork; what waits is only for
        ``populated 0``. Each member is signalled through a pidfd, after checking that the pid
        is still a member (a pid read from ``cgroup.procs`` could be reused by then).
        """
        poller = select.poll()
        poller.register(cgroup.events_fd, select.POLLPRI)
        poller.register(self.wake_fd, select.POLLIN)
        for signum in signals:
            if self.kill_now or not cgroup.populated():
                break
            deadline = time.monotonic() + grace
            signalled: set[int] = set()
            while cgroup.populated() and not self.kill_now:
                for pid in cgroup.members():
                    if pid not in signalled:
                        signalled.add(pid)
                        self._signal_member(cgroup, pid, signum)
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wait_on(poller, min(left, 0.05))
        cgroup.kill()
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        while cgroup.populated() and time.monotonic() < deadline:
            self._wait_on(poller, 0.05)

    def _wait_on(self, poller: select.poll, seconds: float) -> None:
        for fd, _ in poller.poll(seconds * 1000):
            if fd == self.wake_fd:
                read_once(self.wake_fd)
                self.reap()
        if self.control_open and select.select([self.channel], [], [], 0)[0]:
            self.read_control()

    @staticmethod
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

    def kill_what_was_found(self) -> None:
        """The last resort, when /proc could not be walked: SIGKILL all that was seen."""
        if self.cgroup is not None:
            try:
                self.cgroup.kill()
            except OSError:
                pass
        for process in self.found:
            _signal(process.pid, signal.SIGKILL)
        if self.cli_pid:
            _signal_group(self.cli_pid, signal.SIGKILL)


def _spawn(program: str, args: list[str], cwd: str, cgroup: Cgroup | None) -> int:
    """Start the CLI: in its own process group, in the cgroup if any, with default signals.

    A fork then exec, so that the child can join the cgroup before it runs anything of the
    CLI's: every process of the session is born inside. An error before the exec comes back
    through a close-on-exec pipe.
    """
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_r)
            signal.set_wakeup_fd(-1)
            for signum in CATCHABLE:
                signal.signal(signum, signal.SIG_DFL)
            if cgroup is not None:
                cgroup.join()
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


def _enter_namespace() -> None:
    """Unshare PID and mount namespaces (and a user namespace mapping only our own uid and
    gid, unless we are root). Only children of this process are in the new PID namespace."""
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWUSER if uid != 0 else 0)
    _checked(_libc.unshare(flags), "unshare")
    if uid != 0:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as mapping:
                mapping.write(text)


def _remount_proc() -> None:
    """As the new PID namespace's pid 1: private mounts, and a /proc of this namespace."""
    _checked(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    _checked(
        _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
        "mount proc",
    )


def _outer_process(init: int) -> int:
    """The namespace's outer process: wait for its pid 1, then say that all is gone.

    pid 1's end makes the kernel kill every process in the namespace, and its wait status is
    given only once they are gone: past that, nothing of the session is left. The outer
    process lets go of the session's stdio at once, and holds only the channel.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    os.waitpid(init, 0)
    try:
        socket.socket(fileno=CHANNEL_FD).sendall(f"{GONE}\n".encode(), socket.MSG_NOSIGNAL)
    except OSError:
        pass
    return 0


def _enter_containment(containment: str) -> tuple[Cgroup | None, int | None]:
    """Set up the containment; return the cgroup, if any, and, in a namespace's outer process,
    its pid 1's pid (the caller's only job then is to wait for it)."""
    if containment != NAMESPACE:
        _prctl(PR_SET_DUMPABLE, 0)
        if containment == CGROUP:
            os.set_inheritable(CGROUP_FD, False)
            return Cgroup(CGROUP_FD), None
        return None, None
    _enter_namespace()
    # Only now: a non-dumpable process may not write its own uid_map. Nothing of the session
    # runs yet, and the fork below inherits it.
    _prctl(PR_SET_DUMPABLE, 0)
    held_r, held_w = os.pipe()  # the outer process holds the write end open while it lives
    init = os.fork()
    if init:
        os.close(held_r)
        return None, init
    os.close(held_w)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.set_blocking(held_r, False)
    try:
        if os.read(held_r, 1) == b"":
            os._exit(1)  # the outer process died before we could follow it
    except BlockingIOError:
        pass
    os.close(held_r)
    _remount_proc()
    return None, None


def probe_namespace() -> int:
    """Exit 0 if this machine lets us make the namespace containment, else 1."""
    try:
        _enter_namespace()
        _prctl(PR_SET_DUMPABLE, 0)  # as the real one does, before pid 1 mounts /proc
        init = os.fork()
        if init == 0:
            try:
                _remount_proc()
            except OSError:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(init, 0)
        return 0 if os.waitstatus_to_exitcode(status) == 0 else 1
    except OSError:
        return 1


def main(argv: list[str]) -> int:
    if argv[:1] == [PROBE]:
        return probe_namespace()
    containment, cwd, grace_text, signal_text, program, *args = argv
    grace = float(grace_text)
    signals = [int(s) for s in signal_text.split(",") if s]
    os.set_inheritable(CHANNEL_FD, False)
    # Any process of the session can signal this pid. Ignored, a signal is dropped (blocked,
    # it would queue: a flood of realtime signals would use up the user's pending-signal
    # limit). Only SIGCHLD is caught, and it only makes the supervisor reap.
    for signum in CATCHABLE - {signal.SIGCHLD}:
        signal.signal(signum, signal.SIG_IGN)
    channel = socket.socket(fileno=CHANNEL_FD)
    try:
        cgroup, init = _enter_containment(containment)
    except OSError as error:
        # Before a namespace's fork, or in its pid 1 (the outer process says "gone" then).
        report = Supervisor(channel, -1, None).report
        report(f"{SPAWN_ERROR} {containment} containment: {error.strerror or error}")
        if os.getpid() != 1:
            report(GONE)
        return 1
    if init is not None:
        channel.detach()  # the outer process writes only "gone", once pid 1 has ended
        return _outer_process(init)

    return supervise(
        containment,
        channel,
        cgroup=cgroup,
        command=(program, args, cwd),
        signals=signals,
        grace=grace,
    )


def supervise(
    containment: str,
    channel: socket.socket,
    *,
    cgroup: Cgroup | None,
    command: tuple[str, list[str], str],
    signals: list[int],
    grace: float,
) -> int:
    """Start the CLI (``command``: program, arguments, folder) and see its session through."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # the thread that started us may block some
    supervisor = Supervisor(channel, wake_r, cgroup)
    program, args, cwd = command
    try:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        supervisor.cli_pid = _spawn(program, args, cwd, cgroup)
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
                stopped = supervisor.end(supervisor.end_wait, signals, grace)
            else:
                stopped = supervisor.stop(signals, grace)
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


if __name__ == "__main__":
    run(sys.argv[1:])
