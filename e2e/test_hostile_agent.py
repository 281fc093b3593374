"""A hostile agent: group signals, SIGSTOP, thousands of leftovers, a relative PATH.

Each session here runs the toy CLI under the real machine adapter; an escapee that left the
CLI's process group (``setsid``) is alive before the agent strikes. However the agent strikes,
the session ends and nothing it started is left running (the e2e fixture checks that, too).
What a hostile worktree can plant for the next session (an exclude symlink, a ``.claude``
swapped for a symlink while skills are copied) is in ``test_hostile_worktree.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from toy import Toy

from pytest_thirdshift import FakeCLIs, fakecli
from thirdshift import (
    Choice,
    CLINotFound,
    Ended,
    Interrupted,
    Logs,
    SessionFailed,
    Sessions,
    claude,
    interrupts,
)
from thirdshift.machine import MachineOutside

pytestmark = pytest.mark.usefixtures("toy_on_path")

# Generous: only a hang should ever take this long.
SESSION_TIMEOUT = 60.0


def outside_for(
    actions: list[str], worktree: Path, stop_grace: float = 0.5, drain: float = 0.2
) -> MachineOutside:
    return MachineOutside(
        worktree, Choice(Toy(actions)), progress=lambda _: None, stop_grace=stop_grace, drain=drain
    )


def pids_in(pidfile: Path) -> list[int]:
    return [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []


def running(pids: list[int]) -> list[int]:
    """Those of ``pids`` that run (zombies, which are only waiting to be reaped, do not)."""
    found = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.append(pid)
        except psutil.NoSuchProcess:
            continue
    return found


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class Session(threading.Thread):
    """One ``run_session`` in a thread of its own, so that a hang fails the test instead."""

    def __init__(self, outside: MachineOutside, log: Path) -> None:
        super().__init__(daemon=True)
        self._outside, self._log = outside, log
        self.result: Ended | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._outside.run_session("s", None, "p", self._log)
        except BaseException as error:  # kept for the test to look at
            self.error = error

    def outcome(self) -> Any:
        self.join(SESSION_TIMEOUT)
        assert not self.is_alive(), "the session hangs"
        if self.error is not None:
            raise self.error
        return self.result


@pytest.mark.parametrize("target", ["killgroup", "killparent"])
@pytest.mark.parametrize("signame", ["SIGUSR1", "SIGALRM", "SIGPWR", "SIGXCPU", "RTMIN+3"])
def test_a_signal_to_the_group_or_the_supervisor_changes_nothing(
    worktree: Path, tmp_path: Path, target: str, signame: str
) -> None:
    pidfile = tmp_path / "pids"
    outside = outside_for(
        [
            f"pidfile:{pidfile}",
            "escapee:300",
            f"ignore:{signame}",  # the CLI itself lives on: only the supervisor is at stake
            f"{target}:{signame}",
            "out:FINAL:done",
        ],
        worktree,
    )

    ended = outside.run_session("s", None, "p", tmp_path / "log")

    assert ended.final_message == "done"
    assert running(pids_in(pidfile)) == []


def test_a_stopped_supervisor_is_continued_and_the_session_ends(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    outside = outside_for(
        [f"pidfile:{pidfile}", "escapee:300", "killparent:SIGSTOP", "out:FINAL:done"], worktree
    )
    session = Session(outside, tmp_path / "log")

    session.start()
    ended = session.outcome()

    assert ended.final_message == "done"
    assert running(pids_in(pidfile)) == []


@contextlib.contextmanager
def started(session: Session) -> Iterator[Session]:
    """Run ``session``; should the test fail before it ends, interrupt it, then forget that."""
    session.start()
    try:
        yield session
    finally:
        interrupts.request()
        session.join(SESSION_TIMEOUT)
        interrupts.clear()


def test_a_stopped_group_is_stopped_on_interrupt(worktree: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    outside = outside_for([f"pidfile:{pidfile}", "escapee:300", "killgroup:SIGSTOP"], worktree)

    with started(Session(outside, tmp_path / "log")) as session:
        wait_until(lambda: len(pids_in(pidfile)) == 2, "the escapee")
        cli = pids_in(pidfile)[0]
        wait_until(lambda: psutil.Process(cli).status() == psutil.STATUS_STOPPED, "the stop")
        interrupts.request()
        with pytest.raises(Interrupted):
            session.outcome()

    assert running(pids_in(pidfile)) == []


def test_a_supervisor_stopped_while_idle_still_obeys_an_interrupt(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    outside = outside_for([f"pidfile:{pidfile}", "escapee:300", "hang"], worktree)
    session = Session(outside, tmp_path / "log")

    session.start()
    try:
        wait_until(lambda: len(pids_in(pidfile)) == 2, "the escapee")
        supervisor = psutil.Process(pids_in(pidfile)[0]).ppid()
        os.kill(supervisor, signal.SIGSTOP)
        wait_until(lambda: psutil.Process(supervisor).status() == psutil.STATUS_STOPPED, "the stop")
        interrupts.request()
        with pytest.raises(Interrupted):
            session.outcome()
    finally:
        interrupts.request()
        session.join(SESSION_TIMEOUT)
        interrupts.clear()

    assert running(pids_in(pidfile)) == []


def test_a_supervisor_lost_after_the_cli_exited_fails_the_session(
    worktree: Path, tmp_path: Path
) -> None:
    # The escapee ignores SIGTERM and the grace is long: the supervisor is still stopping it.
    pidfile = tmp_path / "pids"
    outside = outside_for([f"pidfile:{pidfile}", "escapee:300"], worktree, stop_grace=60)
    session = Session(outside, tmp_path / "log")

    session.start()
    try:
        wait_until(lambda: len(pids_in(pidfile)) == 2, "the escapee")
        cli, escapee = pids_in(pidfile)
        wait_until(lambda: not psutil.pid_exists(cli), "the CLI to be reaped")
        supervisor = psutil.Process(escapee).ppid()  # it took in the CLI's orphan
        os.kill(supervisor, signal.SIGKILL)
        with pytest.raises(SessionFailed) as failed:
            session.outcome()
    finally:
        for pid in running(pids_in(pidfile)):
            os.kill(pid, signal.SIGKILL)  # out of anyone's reach once the supervisor is gone

    assert str(failed.value) == (
        "toy's supervisor was lost before it stopped everything the session started"
    )
    assert failed.value.exit_code == 0


LEFTOVERS = 2000


def test_thousands_of_detached_leftovers_ignoring_sigterm_are_all_killed(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    outside = outside_for([f"pidfile:{pidfile}", f"swarm:{LEFTOVERS}"], worktree)

    outside.run_session("s", None, "p", tmp_path / "log")

    pids = pids_in(pidfile)
    assert len(pids) == LEFTOVERS + 1
    assert running(pids) == []


def test_leftovers_beyond_the_supervisors_descriptor_limit_are_all_killed(
    worktree: Path, tmp_path: Path
) -> None:
    # The limit is set in a child, which the supervisor inherits it from.
    pidfile = tmp_path / "pids"
    script = textwrap.dedent(
        f"""
        import resource, sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from toy import Toy
        from thirdshift import Choice
        from thirdshift.machine import MachineOutside

        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        outside = MachineOutside(
            Path({str(worktree)!r}),
            Choice(Toy(["pidfile:{pidfile}", "swarm:300"])),
            progress=print,
            stop_grace=0.5,
            drain=0.2,
        )
        outside.run_session("s", None, "p", Path({str(tmp_path / "log")!r}))
        print("ENDED")
        """
    )

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.stdout.splitlines()[-1:] == ["ENDED"], done.stderr
    assert len(pids_in(pidfile)) == 301
    assert running(pids_in(pidfile)) == []


def test_a_supervisor_with_no_descriptor_left_still_stops_everything(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    outside = outside_for([f"pidfile:{pidfile}", "escapee:300", "hang"], worktree)

    with started(Session(outside, tmp_path / "log")) as session:
        wait_until(lambda: len(pids_in(pidfile)) == 2, "the escapee")
        supervisor = psutil.Process(psutil.Process(pids_in(pidfile)[0]).ppid())
        # Not one more descriptor: no pidfd, and /proc cannot be listed without its spare one.
        # (The limit bounds a new descriptor's number: the lowest free one must be over it.)
        in_use = {int(fd) for fd in os.listdir(f"/proc/{supervisor.pid}/fd")}
        lowest_free = min(set(range(len(in_use) + 1)) - in_use)
        supervisor.rlimit(psutil.RLIMIT_NOFILE, (lowest_free, lowest_free))
        interrupts.request()
        with pytest.raises(Interrupted):
            session.outcome()

    assert running(pids_in(pidfile)) == []


def test_a_relative_path_entry_never_runs_a_program_from_the_worktree(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worktree comes from a pull request: it can hold a `bin/claude` of its own, and an
    # orchestrator whose PATH has a relative entry ("bin", ".", or an empty one) would find it.
    worktree = tmp_path / "worktree"
    planted = worktree / "bin" / "claude"
    planted.parent.mkdir(parents=True)
    ran = tmp_path / "the planted claude ran"
    planted.write_text(f"#!/bin/sh\ntouch '{ran}'\n")
    planted.chmod(0o755)
    monkeypatch.chdir(worktree)
    fake_cli_on_path.claude.script(fakecli.say("the real one"))
    monkeypatch.setenv("PATH", f"bin{os.pathsep}{os.pathsep}.{os.pathsep}{os.environ['PATH']}")

    with Sessions.within(Logs(tmp_path / "logs", "repo"), worktree, claude()) as sessions:
        assert sessions.run_to_final_message("implement", "go") == "the real one"

    assert not ran.exists()
    monkeypatch.setenv("PATH", "bin")
    with (
        pytest.raises(CLINotFound, match=r"only relative PATH entries hold it \(bin\)"),
        Sessions.within(Logs(tmp_path / "logs", "repo"), worktree, claude()) as sessions,
    ):
        sessions.run("implement", "go")
    assert not ran.exists()
