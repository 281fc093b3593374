"""The real processes a fake call starts, and how the fakes tell them apart from later ones.

Commands run with ``/bin/bash -c`` in the session's cwd, with the fake's environment. (Codex
reports its commands as ``/bin/bash -lc '…'``; a login shell would re-read /etc/profile, which
on Debian resets PATH, so the fake only says ``-lc``.) Background work stays in the fake's own
process group, as a CLI's child: whoever stops the session by its group stops it too, and the
fake kills it itself at the end of the call, as Claude, Codex and Qwen do. opencode and Gemini
run each command in a session of its own instead, and never kill it: it outlives a stop of the
CLI's group, and the CLI itself (``own_session``).

Every process is recorded with its start time (``/proc/<pid>/stat`` field 22, clock ticks since
boot), taken while it cannot have been reused: pids wrap around (pid_max is often 32768), and a
pid alone may name another test's process by the time a teardown looks.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable

BASH = "/bin/bash"
SLEEP = "/usr/bin/sleep" if os.path.exists("/usr/bin/sleep") else "/bin/sleep"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None if there is no such."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].decode("ascii", "replace").split()


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), which tells a reused pid from its first."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def is_alive(pid: int, started: int | None) -> bool:
    """Whether ``pid`` runs and is the process that started at ``started`` (zombies are dead).

    An unknown start time counts as gone: the pid alone may name another process by now.
    """
    fields = _stat_fields(pid)
    if started is None or fields is None or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == started


def kill_if_still(pid: int, start: int | None) -> None:
    """SIGKILL ``pid`` if it is still the process that started at ``start``.

    Through a pidfd, checked once it is open: the pid cannot be reused between check and kill.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if is_alive(pid, start):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        os.close(pidfd)


def parent_of(pid: int) -> int:
    """The parent of ``pid`` (0 if it is gone)."""
    fields = _stat_fields(pid)
    return 0 if fields is None else int(fields[1])


def split_off_worker() -> int:
    """Go on as two processes, as Qwen Code runs: the entry and its worker; returns (in the
    worker, which plays the call) the entry's pid.

    The entry only waits, and then ends as the worker ended (by the same signal, or with the
    same exit code). A signal to the entry alone kills it at once and leaves the worker running,
    holding stdout open, as the real one does; the CLI stops only when its group is signalled.
    """
    entry = os.getpid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # no KeyboardInterrupt in either of the two
    worker = os.fork()
    if worker == 0:
        return entry
    while True:
        try:
            _, status = os.waitpid(worker, 0)
            break
        except InterruptedError:  # pragma: no cover - waitpid retries by itself (PEP 475)
            continue
    if os.WIFSIGNALED(status):
        signo = os.WTERMSIG(status)
        if signo not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be handled anyway
            signal.signal(signo, signal.SIG_DFL)
        os.kill(entry, signo)
        os._exit(128 + signo)  # a signal whose default is not to end a process
    os._exit(os.WEXITSTATUS(status))


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, children before their own children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    frontier = [pid]
    while frontier:
        frontier = [child for parent in frontier for child in children.get(parent, [])]
        found += frontier
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` (our unreaped child) and its descendants, stopped first: none slips away."""
    victims = [pid]
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return
    for _ in range(2):  # once more, for children made just before the stop
        for child in descendants(pid):
            if child not in victims:
                victims.append(child)
                try:
                    os.kill(child, signal.SIGSTOP)
                except ProcessLookupError:
                    pass
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _exit_code(code: int) -> int:
    """A Popen return code as a shell reports it: death by signal N is 128 + N."""
    return code if code >= 0 else 128 - code


class Command:
    """``command`` started with ``/bin/bash -c`` in ``cwd``; ``started(pid, start)`` is told
    at once, while the process is ours and unreaped (its pid cannot have been reused).

    ``own_session``: it runs in a session of its own, and a stop of the fake leaves it running.
    """

    def __init__(
        self,
        command: str,
        cwd: str,
        started: Callable[[int, int | None], None],
        stdout: int = subprocess.PIPE,
        stderr: int = subprocess.PIPE,
        *,
        own_session: bool = False,
    ) -> None:
        self.own_session = own_session
        self._process = subprocess.Popen(  # noqa: S603 - a scripted command, run as scripted
            [BASH, "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=own_session,
        )
        self.pid = self._process.pid
        self.finished = False
        try:
            started(self.pid, start_time(self.pid))
        except Exception:  # not recorded: it must not be left behind
            self.kill()
            raise
        except BaseException:  # a stop of the fake (a signal) once it was recorded
            if not own_session:
                self.kill()
            raise

    def output(self) -> tuple[str, str, int]:
        """Wait for its end; its stdout, stderr and exit code. If the fake is stopped meanwhile
        (a signal handler raises), the command and all under it is killed before the stop,
        unless it runs in its own session."""
        try:
            out, err = self._process.communicate()
        except BaseException:
            if not self.own_session:
                self.kill()
            raise
        self.finished = True
        code = _exit_code(self._process.returncode)
        return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), code

    def running(self) -> bool:
        return self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        code = self._process.poll()
        return None if code is None else _exit_code(code)

    def kill(self) -> None:
        """Kill the command and everything under it, and reap it."""
        kill_tree(self.pid)
        self._process.wait()
        self.finished = True


def spawn_sleeper(
    seconds: float,
    *,
    keep_stdout: bool = False,
    setsid: bool = False,
    ignore: tuple[signal.Signals, ...] = (),
    double_fork: bool = False,
) -> tuple[int, int | None]:
    """Start ``sleep seconds`` as a leftover of the sort asked for; return its pid and start.

    ``keep_stdout``: it inherits the fake's stdout and stderr (else /dev/null). ``setsid``: it
    leaves the fake's session and process group. ``ignore``: signals it ignores (kept across
    exec). ``double_fork``: started the way daemons start, through a parent that exits at once,
    so it is orphaned from the start. Returns only once ``sleep`` runs, so that it is already
    in its final state (ignoring, escaped) when the test goes on.
    """
    read_end, write_end = os.pipe()  # both close-on-exec: EOF on read_end means exec'd
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        try:
            os.close(read_end)
            for signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
                signal.signal(signo, signal.SIG_DFL)
            for signo in ignore:
                signal.signal(signo, signal.SIG_IGN)
            if setsid:
                os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            if not keep_stdout:
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
            if double_fork and os.fork() != 0:
                os._exit(0)
            # It says its own pid and start time: a daemon's parent is gone by the time we
            # could look, and its pid alone could be reused before we read it.
            os.write(write_end, f"{os.getpid()} {start_time(os.getpid())}".encode())
            os.execv(SLEEP, [SLEEP, f"{seconds:g}"])
        finally:
            os._exit(127)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 64):
        data += chunk
    os.close(read_end)
    if double_fork:
        os.waitpid(pid, 0)  # the short-lived parent; its child is now an orphan
    if not data:
        raise OSError(f"could not start {SLEEP}")
    child, start = data.decode().split()
    return int(child), int(start)
