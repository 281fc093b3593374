"""A hostile agent: group signals, SIGSTOP, thousands of leftovers, a relative PATH, fork chains
that outrun a look at /proc, a forged or fuzzed supervisor channel.

Each session here runs the toy CLI under the real machine adapter; an escapee that left the
CLI's process group (``setsid``) is alive before the agent strikes. However the agent strikes,
the session ends and nothing it started is left running (the e2e fixture checks that, too).
What a hostile worktree can plant for the next session (a ``.claude`` swapped for a symlink
while skills are copied, an exclude that is a FIFO) is in ``test_hostile_worktree.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionkit import MARK, processes_with_env
from toy import Toy

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    Choice,
    CLINotFound,
    Ended,
    Interrupted,
    Logs,
    SessionFailed,
    Sessions,
    ThirdshiftError,
    Watchdogs,
    claude,
    interrupts,
)
from thirdshift._containment import Containment
from thirdshift._machine import MachineOutside, supervised
from thirdshift._machine.allowed import allowed
from thirdshift._machine.launch import LAUNCH, SUPERVISOR
from thirdshift.testing import steps

pytestmark = pytest.mark.usefixtures("toy_on_path")

# Generous: only a hang should ever take this long.
SESSION_TIMEOUT = 60.0


def outside_for(
    actions: list[str], worktree: Path, stop_grace: float = 0.5, drain: float = 0.2
) -> MachineOutside:
    return MachineOutside(
        worktree,
        Choice(Toy(actions)),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=stop_grace),
        drain=drain,
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

    # Killed once the CLI was reaped, the supervisor has most often passed on its exit status
    # (0) by then; under load it may not have, and the failure says that instead. Either way
    # the session fails, naming the lost supervisor.
    lost = (
        ("toy's supervisor was lost before it stopped everything the session started", 0),
        ("toy ended with no exit status (its supervisor was lost)", None),
    )
    assert (str(failed.value), failed.value.exit_code) in lost


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
        from thirdshift import Choice, Watchdogs
        from thirdshift._machine import MachineOutside

        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        outside = MachineOutside(
            Path({str(worktree)!r}),
            Choice(Toy(["pidfile:{pidfile}", "swarm:300"])),
            progress=print,
            watchdogs=Watchdogs(stop_grace=0.5),
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
    fake_cli_on_path.claude.script(steps.say("the real one"))
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


# Nothing outruns the stop: each containment, forced, against what a hostile agent can start.
# This machine allows all three to root. Besides the e2e fixture's check that nothing is left,
# these check that the session said what happened (the work it left was killed and counted; it
# never silently succeeded) and how long the stop took: a chase that cannot win spends its whole
# 30 s SIGKILL budget, so the bound below tells a caught chain from one given up on (the
# figures themselves are in bench/).

MECHANISMS: list[Containment] = ["cgroup", "namespace", "scan"]
GRACE = 1.0  # the containment tests'
DRAIN = 0.5
# The stop's own share (grace + 1 s, as promised) plus the drain and room for a loaded machine;
# well under the 30 s a stop spends chasing what it cannot catch.
STOP_BOUND = GRACE + 1.0 + DRAIN + 8.0
CHAIN_ONCE = (
    "perl -e use POSIX; POSIX::setsid(); "
    "while (1) { select(undef, undef, undef, 0.00002); exit 0 if fork() }"
)
CHAIN_EVERY = (
    "perl -e use POSIX; "
    "while (1) { POSIX::setsid(); select(undef, undef, undef, 0.00002); exit 0 if fork() }"
)


def contained(actions: list[str], worktree: Path, containment: Containment) -> MachineOutside:
    return MachineOutside(
        worktree,
        Choice(Toy(actions), containment=containment),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=GRACE),
        drain=DRAIN,
    )


def test_this_machine_allows_every_containment_to_root() -> None:
    # The premise of the parametrised tests below: CI runs them all as root here.
    assert os.geteuid() == 0
    assert allowed() == ("cgroup", "namespace", "scan")


@pytest.mark.parametrize("containment", MECHANISMS)
@pytest.mark.parametrize("hops", ["once", "every"])
def test_a_fork_chain_left_running_is_caught_killed_and_counted(
    containment: Containment, hops: str, worktree: Path, tmp_path: Path
) -> None:
    outside = contained([f"chain:{hops}"], worktree, containment)

    started = time.monotonic()
    ended = outside.run_session("s", None, "p", tmp_path / "log")
    took = time.monotonic() - started

    assert ended.containment == containment
    # One entry, or two when a hop was caught between its fork and its exit.
    chain = CHAIN_ONCE if hops == "once" else CHAIN_EVERY
    assert told(ended.killed, containment, chain) == {chain}
    assert took < STOP_BOUND


@pytest.mark.parametrize("containment", MECHANISMS)
def test_a_chain_left_running_gets_its_one_resume_and_each_record_names_the_containment(
    containment: Containment, worktree: Path, tmp_path: Path
) -> None:
    lines: list[str] = []
    choice = Choice(Toy(["out:ID:toy-1", "out:FINAL:done", "chain:once"]), containment=containment)
    with Sessions.within(
        Logs(tmp_path / "logs", "run"),
        worktree,
        choice,
        progress=lines.append,
        watchdogs=Watchdogs(stop_grace=GRACE),
    ) as sessions:
        final = sessions.run_to_final_message("implement", "p")

    # The Resume starts the chain again: it ends the same way, and the rules carry on.
    assert final == "done"
    assert [record.kind for record in sessions.records] == ["implement", "implement-resume"]
    assert [told(record.killed, containment) for record in sessions.records] == [
        {CHAIN_ONCE},
        {CHAIN_ONCE},
    ]
    assert [record.containment for record in sessions.records] == [containment, containment]
    assert any("resuming it once" in line for line in lines)
    assert any("may have been abandoned" in line for line in lines)


def made_cgroup(lines: list[str]) -> Path:
    """The session's cgroup, as its toy printed it (``CGROUP:<folder>``)."""
    (folder,) = {line.split("CGROUP:", 1)[1] for line in lines if "CGROUP:" in line}
    return Path(folder)


def test_cgroups_an_agent_makes_inside_its_sessions_are_removed_with_it(
    worktree: Path, tmp_path: Path
) -> None:
    lines: list[str] = []
    actions = ["cgroups:mine", "cgroups:mine/deeper", "cgroups:other"]
    outside = MachineOutside(
        worktree,
        Choice(Toy(actions), containment="cgroup"),
        progress=lines.append,
        watchdogs=Watchdogs(stop_grace=GRACE),
        drain=DRAIN,
    )

    ended = outside.run_session("s", None, "p", tmp_path / "log")

    folder = made_cgroup(lines)
    assert not folder.exists()  # it stayed, the cgroups made inside it keeping it
    assert ended.killed  # the sleepers in them, killed with the session's cgroup
    assert not [line for line in lines if "could not remove" in line]


def test_a_sessions_cgroup_that_cannot_be_removed_is_said(worktree: Path, tmp_path: Path) -> None:
    lines: list[str] = []
    outside = MachineOutside(
        worktree,
        Choice(Toy(["pinned:pin"]), containment="cgroup"),
        progress=lines.append,
        watchdogs=Watchdogs(stop_grace=GRACE),
        drain=DRAIN,
    )
    try:
        outside.run_session("s", None, "p", tmp_path / "log")

        folder = made_cgroup(lines)
        assert (
            f"s: could not remove the session's cgroup {folder}: {folder / 'pin'}, made "
            "inside it, could not be removed: Device or resource busy" in lines
        )
    finally:
        folder = made_cgroup(lines)
        subprocess.run(["umount", str(folder / "pin")], check=False)
        (folder / "pin").rmdir()
        folder.rmdir()


_UNREAD = re.compile(r"(?:and )?\d+ (?:more|processes)")
"""How the supervisor counts processes it could not read before they exited."""


def told(killed: tuple[str, ...], containment: Containment, chain: str = CHAIN_ONCE) -> set[str]:
    """What ``killed`` says, one entry or two when a hop was caught between fork and exit.

    Under ``cgroup`` the cgroup is frozen while it is read, so the chain is always named; under
    ``scan`` and ``namespace`` a hop may exit while it is read, and is then counted unnamed
    ("1 processes") or not seen at all, which is taken here for the chain: what these tests
    hold to outside a cgroup is that nothing is left running (the e2e fixture checks it).
    """
    if containment == "cgroup":
        return set(killed)
    # A hop caught exiting is named by its comm, or counted unread ("N processes", "and N more":
    # under load a look can catch a dozen); none caught at all leaves the report empty
    # (docs/stopping.md: the limit of a look at /proc). Either way the chain is killed.
    named = {chain if entry == "[perl]" or _UNREAD.fullmatch(entry) else entry for entry in killed}
    return named or {chain}


def live_here(containment: Containment, pids: list[int]) -> list[int]:
    """Those of ``pids`` still running; under ``namespace`` the toy wrote the namespace's own
    pids, which name nothing out here (the e2e fixture checks every process of the test)."""
    return [] if containment == "namespace" else running(pids)


@pytest.mark.parametrize("containment", MECHANISMS)
def test_four_thousand_processes_started_at_once_are_all_killed(
    containment: Containment, worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    # Just under every session's default cap of 4,096 processes (e2e/test_caps.py).
    outside = contained([f"pidfile:{pidfile}", "swarm:4000"], worktree, containment)

    ended = outside.run_session("s", None, "p", tmp_path / "log")

    assert len(pids_in(pidfile)) == 4001
    assert live_here(containment, pids_in(pidfile)) == []
    assert ended.killed[-1].endswith("more")  # counted, capped


@pytest.mark.parametrize("containment", MECHANISMS)
def test_a_process_that_ignores_every_signal_is_killed_within_the_grace(
    containment: Containment, worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    outside = contained([f"pidfile:{pidfile}", "stubborn:300"], worktree, containment)

    started = time.monotonic()
    ended = outside.run_session("s", None, "p", tmp_path / "log")
    took = time.monotonic() - started

    assert live_here(containment, pids_in(pidfile)) == []
    assert len(ended.killed) == 1
    assert took < STOP_BOUND


FORGED = b"exit 0\ngone\n".hex()


def forged_into(lines: list[str]) -> list[str]:
    """What kinds of the supervisor's descriptors took the toy's forged bytes."""
    [said] = [line for line in lines if line.startswith("s: line forged")]
    return said.split()[3:]


def forging_session(
    worktree: Path, containment: Containment, pidfile: Path, lines: list[str]
) -> MachineOutside:
    actions = [
        f"pidfile:{pidfile}",
        "escapee:300",
        "grandchild:300",
        f"forge:{FORGED}",
        "killparent:SIGKILL",
        "sleep:0.5",
    ]
    outside = MachineOutside(
        worktree,
        Choice(Toy(actions), containment=containment),
        progress=lines.append,
        watchdogs=Watchdogs(stop_grace=GRACE),
        drain=DRAIN,
    )
    return outside


def forged_and_failed(worktree: Path, tmp_path: Path, containment: Containment) -> Path:
    """Run a forging session under ``containment``, which must fail; the file of its pids."""
    pidfile = tmp_path / "pids"
    lines: list[str] = []
    outside = forging_session(worktree, containment, pidfile, lines)

    with pytest.raises(SessionFailed) as failed:
        outside.run_session("s", None, "p", tmp_path / "log")

    # Only its signal wake-up pipe can be reopened (as root); the channel is a socket.
    assert "socket" not in forged_into(lines)
    assert failed.value.containment == containment
    return pidfile


def test_a_forged_word_and_a_killed_supervisor_fail_a_cgroup_session_and_kill_its_tree(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = forged_and_failed(worktree, tmp_path, "cgroup")

    assert running(pids_in(pidfile)) == []  # the escapee too: cgroup.kill reached it


def test_a_forged_word_and_a_killed_supervisor_fail_a_scan_session(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = forged_and_failed(worktree, tmp_path, "scan")

    # The limit of scan (docs/stopping.md): with its supervisor dead, a setsid escapee may be
    # out of reach (re-parented to init, unless the adapter's look caught it first); what
    # stayed in the CLI's group was killed. The session failed either way.
    cli, escapee, grandchild = pids_in(pidfile)
    assert running([cli, grandchild]) == []
    for pid in running([escapee]):
        os.kill(pid, 9)


def test_in_a_namespace_the_supervisor_is_out_of_the_agents_reach(
    worktree: Path, tmp_path: Path
) -> None:
    # Its pid 1 ignores SIGKILL from inside the namespace, and the outer process has no pid
    # there: the session ends as any other, its left work killed and counted.
    lines: list[str] = []
    outside = forging_session(worktree, "namespace", tmp_path / "pids", lines)

    ended = outside.run_session("s", None, "p", tmp_path / "log")

    assert "socket" not in forged_into(lines)
    assert isinstance(ended, Ended)
    assert len(ended.killed) == 2  # the escapee and the grandchild


JUNK_SUPERVISOR = Path(__file__).parent / "programs" / "junk_supervisor.py"


def junk_first(worktree: Path, junk: bytes, monkeypatch: pytest.MonkeyPatch) -> MachineOutside:
    """A session whose supervisor writes ``junk`` on its channel before the real words."""
    monkeypatch.setattr(supervised, "SUPERVISOR", JUNK_SUPERVISOR)
    env = {
        "THIRDSHIFT_JUNK": junk.hex(),
        "THIRDSHIFT_REAL_SUPERVISOR": str(SUPERVISOR),
        "THIRDSHIFT_REAL_LAUNCH": LAUNCH,
    }
    return MachineOutside(
        worktree,
        Choice(Toy(["escapee:300", "grandchild:300", "out:FINAL:x"]), env=tuple(env.items())),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=GRACE),
        drain=DRAIN,
    )


@pytest.mark.parametrize(
    "junk",
    [b"\xff\xfe\n", b"exit x\n", b"left zz\n", b"exit 0\ngone\n", b"started 1\n", b"9" * 5000],
)
def test_a_supervisor_that_breaks_its_protocol_fails_the_session_and_its_tree_is_killed(
    junk: bytes, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = junk_first(worktree, junk, monkeypatch)

    with pytest.raises(SessionFailed, match="supervisor protocol violated"):
        outside.run_session("s", None, "p", tmp_path / "log")


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.binary(max_size=64))
def test_whatever_bytes_reach_the_adapter_the_session_ends_with_an_answer_and_nothing_left(
    junk: bytes, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = junk_first(worktree, junk, monkeypatch)
    before = set(processes_with_env(MARK, os.environ[MARK]))

    try:
        ended = outside.run_session("s", None, "p", tmp_path / f"log-{junk.hex()}")
    except ThirdshiftError:
        pass
    else:
        assert not junk  # only a clean channel is believed
        assert ended.final_message == "x"

    deadline = time.monotonic() + 2.0
    while (left := set(processes_with_env(MARK, os.environ[MARK])) - before) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.02)
    assert not left
