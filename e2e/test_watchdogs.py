"""The watchdogs on real processes (the fake CLIs): idle, after the result, wall clock, and a
Resume that started another session. Every stop is the whole-tree stop, and the Session log keeps
every byte written up to it; the e2e conftest fails a test that leaves a process running.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from sessionkit import assert_logged_exactly, log_of

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    Choice,
    Logs,
    ResumeTargetMissing,
    Sessions,
    SessionStalled,
    Watchdogs,
    claude,
    codex,
)
from thirdshift._machine import MachineOutside
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))


def run(
    tmp_path: Path,
    choice: Choice,
    lines: list[str] | None = None,
    watchdogs: Watchdogs | None = None,
    still_running_every: float | None = 300.0,
) -> str | None:
    logs = Logs(tmp_path / "logs", "repo")
    sink = lines.append if lines is not None else (lambda _line: None)
    with Sessions.within(
        logs,
        tmp_path,
        choice,
        progress=sink,
        watchdogs=watchdogs,
        still_running_every=still_running_every,
    ) as sessions:
        return sessions.run_to_final_message("implement", "go")


def test_a_cli_silent_past_the_idle_timeout_is_stopped_as_stalled(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("thinking"), steps.hang())
    lines: list[str] = []

    with pytest.raises(SessionStalled) as stalled:
        run(tmp_path, claude(), lines, Watchdogs(idle=1.5))

    assert str(stalled.value) == "claude was stopped: no output for 1.5s"  # as set, unrounded
    assert stalled.value.why == "no output for 1.5s"
    (ended,) = [line for line in lines if "session ended after" in line]
    assert ended.endswith(": failed (claude was stopped: no output for 1.5s)")
    assert stalled.value.session_id == "fake-session-1"
    (call,) = fake_cli_on_path.claude.calls
    assert call.signals == ["SIGTERM"]  # Claude's stop signal: the whole-tree stop
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)


def test_output_keeps_the_idle_watchdog_away(fake_cli_on_path: FakeCLIs, tmp_path: Path) -> None:
    script = [step for _ in range(6) for step in (fake.sleep(0.4), steps.say("still here"))]
    fake_cli_on_path.claude.script(*script, steps.say("done"))

    assert run(tmp_path, claude(), watchdogs=Watchdogs(idle=1.0)) == "done"


def test_a_cli_still_running_after_its_result_is_stopped_and_the_result_stands(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(
        steps.say("all done"),
        cli_steps.emit(
            {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}
        ),
        steps.hang(),
    )
    lines: list[str] = []

    assert run(tmp_path, codex(), lines, Watchdogs(after_result=1.0)) == "all done"

    assert (
        "implement: codex was still running 1s after its result; stopped it, the result stands"
    ) in lines
    (call,) = fake_cli_on_path.codex.calls
    assert call.signals == ["SIGINT"]  # Codex's first stop signal


def test_a_session_over_its_wall_clock_limit_is_stopped_as_stalled(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Output all along, so that only the wall clock can fire.
    script = [step for _ in range(50) for step in (fake.sleep(0.2), steps.say("busy"))]
    fake_cli_on_path.claude.script(*script)

    with pytest.raises(SessionStalled, match=r"^claude was stopped: over its 1s limit$") as stalled:
        run(tmp_path, claude(), watchdogs=Watchdogs(idle=None, wall=1.0))

    assert stalled.value.why == "over its 1s limit"


def test_a_codex_resume_that_starts_another_thread_is_stopped_at_once_and_carried_on_from(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Codex resumes an id it does not know by starting a new thread and exiting 0: a Resume
    # whose stream names another session is stopped as soon as it does.
    fake_cli_on_path.codex.script(steps.background("sleep 300"), steps.say("started the tests"))
    fake_cli_on_path.codex.script(
        cli_steps.no_events(),
        cli_steps.emit({"type": "thread.started", "thread_id": "fake-thread-9"}),
        cli_steps.emit({"type": "turn.started"}),
        steps.hang(),
    )
    lines: list[str] = []

    assert run(tmp_path, codex(), lines) == "started the tests"

    first, resume = fake_cli_on_path.codex.calls
    assert resume.argv[-3:-1] == ["resume", first.session_id]
    assert resume.signals == ["SIGINT"]
    assert (
        "implement: the session ended with a background task still running (sleep 300), which "
        "was killed, and its Resume found no session to continue (codex was stopped: it started "
        "session fake-thread-9, not fake-thread-1); carrying on, as it may have been abandoned"
    ) in lines


def test_a_resume_that_starts_another_session_raises_resume_target_missing_alone(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(
        cli_steps.no_events(),
        cli_steps.emit({"type": "thread.started", "thread_id": "someone-else"}),
        steps.hang(),
    )
    outside = MachineOutside(tmp_path, codex(), progress=lambda _line: None)
    with pytest.raises(ResumeTargetMissing) as missing:
        outside.run_session("implement-resume", "fake-thread-1", "go on", tmp_path / "r.jsonl")

    assert str(missing.value) == (
        "codex was stopped: it started session someone-else, not fake-thread-1"
    )
    assert missing.value.session_id == "someone-else"


def test_thirdshift_run_takes_the_watchdog_limits_as_durations(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("thinking"), steps.hang())

    done = subprocess.run(
        [THIRDSHIFT, "run", "--logs", str(tmp_path / "logs"), "--idle-timeout", "1s", "go"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 1
    stalled = "thirdshift: SessionStalled, not retryable: claude was stopped: no output for 1s\n"
    assert stalled in done.stderr


def test_a_silent_foreground_command_is_said_to_be_still_running(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.run("sleep 2.5"), steps.say("done"))
    lines: list[str] = []

    assert run(tmp_path, claude(), lines, still_running_every=1.0) == "done"

    still = [line for line in lines if "still running" in line]
    assert still, lines
    assert all(
        re.fullmatch(r"implement: still running: \$ sleep 2\.5 \([12]s\)", line) for line in still
    ), still
    assert lines.index(still[0]) > lines.index("implement: $ sleep 2.5")
