"""Sixteen sessions at once, in sixteen threads, on the fake CLIs: nothing mixes, one SIGINT
stops them all.

Calls of a fake take their scripts in the order they start, which threads make a race; so each
thread's session is matched to its call by the worktree the call ran in (its cwd), and every
check is made against that call: its stream, its prompt, its final message.

This machine may have two cores: time bounds here only catch hangs.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from sessionkit import InThread, assert_logged_exactly, every_pid, still_running

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    Choice,
    Interrupted,
    Logs,
    Sessions,
    ThirdshiftError,
    Watchdogs,
    claude,
    codex,
    interrupts,
)
from thirdshift._logs import command_stamp
from thirdshift.testing import steps
from thirdshift.testing.fakecli import FakeCall
from thirdshift.testing.fakecli import _steps as cli_steps

SESSIONS = 16
TOOL_LINES = 100
NOISE = b'{"type":"noise","text":"' + b"n" * 200 + b'"}\n'
NOISE_LINES = 2_000
CLAUDE_TOOL = (
    b'{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read",'
    b'"input":{"file_path":"/src/module.py"}}]}}\n'
)


def choice_for(index: int) -> Choice:
    return claude() if index % 2 == 0 else codex()


def kind_for(index: int) -> str:
    return f"s{index:02d}"


def log_for(tmp_path: Path, index: int) -> Path:
    return (
        tmp_path / f"logs{index:02d}" / f"wt{index:02d}-{command_stamp()}-{kind_for(index)}.jsonl"
    )


def worktree_for(tmp_path: Path, index: int) -> Path:
    return tmp_path / f"wt{index:02d}"


def busy_script(harness: str, number: int) -> tuple[steps.Step, ...]:
    """A stream of many progress lines and bulk, ending in a final message of its own."""
    if harness == "claude":
        lines: tuple[steps.Step, ...] = (cli_steps.raw(CLAUDE_TOOL, repeat=TOOL_LINES),)
    else:
        lines = tuple(
            cli_steps.emit(
                {
                    "type": "item.completed",
                    "item": {
                        "id": f"edit_{n}",
                        "type": "file_change",
                        "changes": [{"path": "src/module.py", "kind": "update"}],
                        "status": "completed",
                    },
                }
            )
            for n in range(TOOL_LINES)
        )
    return (
        steps.run("pwd"),
        *lines,
        cli_steps.raw(NOISE, repeat=NOISE_LINES),
        steps.say(f"final message of {harness} script {number}"),
    )


def final_message_in(call: FakeCall) -> str | None:
    if call.harness == "claude":
        results = [event for event in call.events if event["type"] == "result"]
        return results[-1]["result"] if results else None
    messages = [
        event["item"]["text"]
        for event in call.events
        if event["type"] == "item.completed" and event["item"]["type"] == "agent_message"
    ]
    return messages[-1] if messages else None


def call_in(calls: list[FakeCall], worktree: Path) -> FakeCall:
    (call,) = [call for call in calls if call.cwd == worktree]
    return call


def run_session(
    tmp_path: Path,
    index: int,
    progress: Callable[[str], None] | None = None,
    stop_grace: float = 10.0,
) -> str | None:
    worktree = worktree_for(tmp_path, index)
    worktree.mkdir(exist_ok=True)
    with Sessions.within(
        Logs(tmp_path / f"logs{index:02d}", f"wt{index:02d}"),
        worktree,
        choice_for(index),
        progress=progress,
        watchdogs=Watchdogs(stop_grace=stop_grace),
    ) as sessions:
        return sessions.run_to_final_message(kind_for(index), f"prompt of session {index:02d}")


def test_sixteen_sessions_at_once_keep_their_own_streams_results_and_lines(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    for number in range(SESSIONS // 2):
        fake_cli_on_path.claude.script(*busy_script("claude", number))
        fake_cli_on_path.codex.script(*busy_script("codex", number))
    threads = [
        InThread(partial(run_session, tmp_path, index), name=f"session {index}")
        for index in range(SESSIONS)
    ]

    for thread in threads:
        thread.start()
    results = [thread.outcome(timeout=120) for thread in threads]

    calls = fake_cli_on_path.calls
    assert len(calls) == SESSIONS
    assert len(set(results)) == SESSIONS
    for index, result in enumerate(results):
        worktree = worktree_for(tmp_path, index)
        call = call_in(calls, worktree)
        assert call.harness == choice_for(index).harness.name
        assert call.stdin == f"prompt of session {index:02d}"
        assert result == final_message_in(call)
        log = log_for(tmp_path, index)
        assert_logged_exactly(log, call)
        text = log.read_text()
        assert str(worktree) in text  # its own `pwd`
        others = [f"/wt{other:02d}" for other in range(SESSIONS) if other != index]
        assert not [other for other in others if other in text]
        assert still_running(every_pid(call)) == []

    # The default sink: whole lines only, each session's all there.
    err = capfd.readouterr().err
    line = re.compile(
        r"thirdshift: \d\d:\d\d:\d\d \[(?P<name>wt\d\d)\] "
        r"(?:logging the session to (?P<log>\S+)|(?P<kind>s\d\d): (?P<body>.+))"
    )
    per_kind: dict[str, list[str]] = {kind_for(index): [] for index in range(SESSIONS)}
    logged = []
    for text in err.splitlines():
        match = line.fullmatch(text)
        assert match, f"not a whole progress line: {text!r}"
        if match["log"]:
            logged.append(match["log"])
            assert Path(match["log"]).name.startswith(f"{match['name']}-")  # its own run's name
        else:
            per_kind[match["kind"]].append(match["body"])
            assert match["name"] == f"wt{match['kind'][1:]}"
    assert sorted(logged) == sorted(str(log_for(tmp_path, i)) for i in range(SESSIONS))
    for index in range(SESSIONS):
        bodies = per_kind[kind_for(index)]
        tool = "Read /src/module.py" if index % 2 == 0 else "Edit src/module.py"
        assert bodies[:2] == ["session started", "$ pwd"]
        assert bodies[2:-1] == [tool] * TOOL_LINES
        assert bodies[-1].startswith("session ended after ")


@pytest.fixture
def installed_interrupts() -> Iterator[None]:
    """``interrupts.install()`` for the test; the previous handlers come back after it."""
    previous = {signum: signal.getsignal(signum) for signum in interrupts.SIGNALS}
    interrupts.install()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        interrupts.clear()


def hanging_script(harness: str, number: int) -> tuple[steps.Step, ...]:
    """Hang, having left work behind; one in two ignores the first stop signal."""
    stubborn = number % 2 == 1
    ignore = ((signal.SIGTERM,) if harness == "claude" else (signal.SIGINT,)) if stubborn else ()
    leftovers = (cli_steps.escape_setsid(300),) if number % 4 == 3 else ()
    return (
        steps.background("sleep 300"),
        *leftovers,
        steps.say(f"{harness} script {number} is waiting"),
        steps.hang(ignore=ignore),
    )


@pytest.mark.usefixtures("installed_interrupts")
def test_one_sigint_stops_sixteen_sessions_and_later_ones_refuse_to_start(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    for number in range(SESSIONS // 2):
        fake_cli_on_path.claude.script(*hanging_script("claude", number))
        fake_cli_on_path.codex.script(*hanging_script("codex", number))
    threads = [
        InThread(
            partial(run_session, tmp_path, index, progress=list[str]().append, stop_grace=1.0),
            name=f"session {index}",
        )
        for index in range(SESSIONS)
    ]
    for thread in threads:
        thread.start()
    try:
        for number in range(SESSIONS // 2):
            fake_cli_on_path.claude.wait_for_call(number, hanging=True, timeout=60)
            fake_cli_on_path.codex.wait_for_call(number, hanging=True, timeout=60)
        sent = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)
        for thread in threads:
            thread.join(60)
    finally:
        interrupts.request()  # should the test fail early, still stop them all
        for thread in threads:
            thread.join(60)

    assert [thread.is_alive() for thread in threads] == [False] * SESSIONS
    assert all(isinstance(thread.error, Interrupted) for thread in threads), [
        thread.error for thread in threads
    ]
    finished = [thread.finished_at for thread in threads if thread.finished_at is not None]
    assert max(finished) - sent < 20  # promptly: the grace is 1 s; this only catches a hang
    calls = fake_cli_on_path.calls
    assert len(calls) == SESSIONS
    for index in range(SESSIONS):
        call = call_in(calls, worktree_for(tmp_path, index))
        first_stop = "SIGTERM" if call.harness == "claude" else "SIGINT"
        assert call.signals[0] == first_stop
        assert_logged_exactly(log_for(tmp_path, index), call)
    assert still_running([pid for call in calls for pid in every_pid(call)]) == []

    # Later sessions refuse to start: nothing spawned, nothing logged.
    for index in (SESSIONS, SESSIONS + 1):
        with pytest.raises(Interrupted):
            run_session(tmp_path, index, progress=list[str]().append)
        assert not log_for(tmp_path, index).exists()
    assert len(fake_cli_on_path.calls) == SESSIONS


def test_a_stop_that_arrives_after_its_session_ended_writes_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # interrupts.request() calls the stoppers it found outside its lock, so a session may be
    # told to stop just after it ended and let go of its pipes, whose numbers other threads'
    # files may have taken by then. A session whose CLI could not be started never sent a stop.
    stoppers = []
    registered = interrupts.stopping

    def recording(stop, *, kill=None):  # type: ignore[no-untyped-def]
        stoppers.append((stop, kill))
        return registered(stop, kill=kill)

    monkeypatch.setattr(interrupts, "stopping", recording)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/nonexistent/interpreter\n")
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    (tmp_path / "wt").mkdir()

    with (
        pytest.raises(ThirdshiftError, match="could not start"),
        Sessions.within(
            Logs(tmp_path / "logs", "wt"), tmp_path / "wt", claude(), progress=list[str]().append
        ) as sessions,
    ):
        sessions.run("implement", "go")
    others = [(tmp_path / f"other-{n}").open("wb", buffering=0) for n in range(16)]
    try:
        ((stop, kill),) = stoppers
        stop()  # late
        kill()  # a second interrupt, as late
    finally:
        for file in others:
            file.close()

    assert [(tmp_path / f"other-{n}").read_bytes() for n in range(16)] == [b""] * 16
