"""The real processes a fake call starts: commands, background work, and hostile leftovers.

Commands run with ``/bin/bash -c`` in the session's cwd, with the fake's environment. (Codex
reports its commands as ``/bin/bash -lc '…'``; a login shell would re-read /etc/profile, which
on Debian resets PATH, so the fake only says ``-lc``.) Background work stays in the fake's own
process group, as a CLI's child: whoever stops the session by its group stops it too, and the
fake kills it itself at the end of the call, as the real CLIs do.
"""

from __future__ import annotations

import os
import signal

from .state import descendants, private_file, start_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

BASH = "/bin/bash"
SLEEP = "/usr/bin/sleep" if os.path.exists("/usr/bin/sleep") else "/bin/sleep"


def _returncode(code: int) -> int:
    """A Popen return code as a shell reports it: death by signal N is 128 + N."""
    return code if code >= 0 else 128 - code


def run_command(
    command: str, cwd: str, started: Callable[[int, int | None], None]
) -> tuple[str, str, int]:
    """Run ``command`` to its end; return its stdout, stderr and exit code.

    ``started(pid, start_time)`` is told at once, while the process is still ours to read
    (unreaped, its pid cannot be reused). If the fake is stopped meanwhile (a signal handler
    raises), the command and everything under it is killed before the stop goes on.
    """
    import subprocess

    process = subprocess.Popen(  # noqa: S603 - a scripted command, run as scripted
        [BASH, "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        started(process.pid, start_time(process.pid))
        out, err = process.communicate()
    except BaseException:
        kill_tree(process.pid)
        process.wait()
        raise
    return (
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        _returncode(process.returncode),
    )


class Task:
    """A command left running in the background; its output goes to a file."""

    def __init__(self, command: str, description: str, grace: float, cwd: str, output: str) -> None:
        import subprocess

        self.command = command
        self.description = description
        self.grace = grace
        self.output = output
        self.task_id = ""
        self.tool_use_id = ""
        with open(private_file(output, os.O_WRONLY | os.O_TRUNC), "wb") as sink:
            self._process: subprocess.Popen[bytes] = subprocess.Popen(  # noqa: S603 - scripted
                [BASH, "-c", command],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        self.pid = self._process.pid
        self.start = start_time(self.pid)
        self.finished = False

    def running(self) -> bool:
        return self._process.poll() is None

    @property
    def returncode(self) -> int | None:
        code = self._process.poll()
        return None if code is None else _returncode(code)

    def kill(self) -> None:
        """Kill the command and everything under it, and reap it."""
        kill_tree(self.pid)
        self._process.wait()
        self.finished = True


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and its descendants; stopped first, so that none can slip away."""
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


def spawn_sleeper(
    seconds: float,
    *,
    keep_stdout: bool = False,
    setsid: bool = False,
    ignore: tuple[signal.Signals, ...] = (),
    double_fork: bool = False,
) -> tuple[int, int | None]:
    """Start ``sleep seconds`` as a leftover of the kind asked for; return its pid and start.

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
            handled = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
            for signo in handled:
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
            # The child says its own pid and start time: a daemon's parent has exited by the
            # time we could look, and its pid alone could be reused before we read it.
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
    pid_text, start_text = data.decode().split()
    return int(pid_text), None if start_text == "None" else int(start_text)
