"""Background work seen by the supervisor: what a session leaves running is killed work.

opencode, Gemini CLI and Qwen Code never say in their streams that background work was killed
as they exited. So a process still running once the CLI has exited and the drain is over,
which the supervisor stops, counts in ``Ended.killed``, and the Resume rules apply: exactly one
Resume of the same session id, whose prompt names the work. Qwen kills its shells itself and
says so in its status files, which count too. Real processes, the fake CLIs on PATH.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from thirdshift import Choice, Interrupted, Logs, Sessions, Watchdogs, choice
from thirdshift._prompts import resume_prompt
from thirdshift.harness._builtin.opencode import OpencodeHarness
from thirdshift.testing import steps
from thirdshift.testing.fakecli import FakeCLIs
from thirdshift.testing.fakecli import _steps as cli_steps

LEFT_RUNNING = ("opencode", "gemini")
"""The fakes that leave background work running after they exit, as the real CLIs do."""


def wait_until(condition: object, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not callable(condition) or not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def run_sessions(
    tmp_path: Path, chosen: Choice, lines: list[str], prompt: str = "Start the work."
) -> Sessions:
    worktree = tmp_path / "work"
    worktree.mkdir(exist_ok=True)
    with Sessions.within(
        Logs(tmp_path / "logs", "r"), worktree, chosen, progress=lines.append
    ) as s:
        s.run("implement", prompt)
    return s


@pytest.mark.parametrize("cli", LEFT_RUNNING)
def test_work_left_running_is_killed_work_and_resumed_once_in_the_same_session(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, cli: str
) -> None:
    fakes = fake_cli_on_path.harness(cli)
    fakes.script(steps.background("sleep 300"), steps.say("Started it."))
    fakes.script(steps.run("true"), steps.say("Ran it in the foreground."))
    lines: list[str] = []

    s = run_sessions(tmp_path, choice(cli), lines)

    first, resume = fakes.calls
    assert not first.started[0].running  # the supervisor stopped it
    assert resume.resumed == first.session_id is not None
    assert resume.stdin == resume_prompt(("sleep 300",))
    assert [record.killed for record in s.records] == [("sleep 300",), ()]
    assert (
        "implement: the session ended with a background task still running (sleep 300), which "
        "was killed; resuming it once"
    ) in lines
    assert s.endings == ()


def test_work_that_exits_by_itself_within_the_drain_is_not_killed_work(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Outlives the CLI, but only until the CLI is gone: well within the drain after its exit.
    fake_cli_on_path.opencode.script(
        steps.background("while kill -0 $PPID 2>/dev/null; do sleep 0.01; done"), steps.say("ok")
    )

    s = run_sessions(tmp_path, choice("opencode"), [])

    (call,) = fake_cli_on_path.opencode.calls
    assert not call.started[0].running
    assert [record.killed for record in s.records] == [()]


def test_an_interrupted_session_reports_no_killed_work(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.opencode.script(steps.background("sleep 300"), steps.hang())
    worktree = tmp_path / "work"
    worktree.mkdir()

    def cancel_once_hanging(sessions: Sessions) -> None:
        wait_until(
            lambda: (
                bool(fake_cli_on_path.opencode.calls) and fake_cli_on_path.opencode.calls[0].hanging
            ),
            "the fake to hang",
        )
        sessions.cancel()

    with Sessions.within(Logs(tmp_path / "logs", "r"), worktree, choice("opencode")) as s:
        canceller = threading.Thread(target=cancel_once_hanging, args=(s,))
        canceller.start()
        with pytest.raises(Interrupted):
            s.run("implement", "Start the work.")
        canceller.join()

    (call,) = fake_cli_on_path.opencode.calls  # no Resume
    assert not call.started[0].running
    assert [record.killed for record in s.records] == [()]


def test_work_left_by_a_cli_a_watchdog_stopped_is_not_killed_work(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Gemini lingers after its result: the watchdog stops it, and the result stands. That was
    # no normal end: what it left running is stopped, not counted.
    result = {"type": "result", "status": "success", "stats": {"input_tokens": 1}}
    fake_cli_on_path.gemini.script(
        steps.background("sleep 300"), steps.say("all done"), cli_steps.emit(result), steps.hang()
    )
    worktree = tmp_path / "work"
    worktree.mkdir()
    lines: list[str] = []

    with Sessions.within(
        Logs(tmp_path / "logs", "r"),
        worktree,
        choice("gemini"),
        progress=lines.append,
        watchdogs=Watchdogs(after_result=0.5),
    ) as s:
        assert s.run_to_final_message("implement", "Start the work.") == "all done"

    assert any("stopped it, the result stands" in line for line in lines)
    (call,) = fake_cli_on_path.gemini.calls  # no Resume
    assert not call.started[0].running
    assert [record.killed for record in s.records] == [()]


@dataclass(frozen=True)
class OpencodeWithAHelper(OpencodeHarness):
    """opencode with a helper of its own: whatever runs ``sleep 301``."""

    helper_processes: ClassVar[tuple[str, ...]] = ("sleep 301",)


def test_a_helper_process_the_harness_declares_is_not_killed_work(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.opencode.script(
        steps.background("sleep 300"), steps.background("sleep 301"), steps.say("Started both.")
    )
    fake_cli_on_path.opencode.script(steps.say("Done."))

    s = run_sessions(tmp_path, Choice(OpencodeWithAHelper()), [])

    first, resume = fake_cli_on_path.opencode.calls
    assert not [process for process in first.started if process.running]  # both stopped
    assert resume.stdin == resume_prompt(("sleep 300",))
    assert [record.killed for record in s.records] == [("sleep 300",), ()]


def test_qwens_cancelled_shell_counts_and_its_resume_does_not_count_it_again(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    fake_cli_on_path.qwen.script(steps.background("sleep 300"), steps.say("Started it."))
    fake_cli_on_path.qwen.script(steps.run("true"), steps.say("Ran it in the foreground."))

    s = run_sessions(tmp_path, choice("qwen"), [])

    first, resume = fake_cli_on_path.qwen.calls
    assert not first.started[0].running  # Qwen killed it itself
    assert resume.resumed == first.session_id is not None
    assert resume.stdin == resume_prompt(("sleep 300",))
    # The Resume's folder still holds the first call's cancelled shell: not this call's.
    assert [record.killed for record in s.records] == [("sleep 300",), ()]


def test_qwen_without_background_work_has_none_killed(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    fake_cli_on_path.qwen.script(steps.background("exit 0", grace=60), steps.say("Done."))

    s = run_sessions(tmp_path, choice("qwen"), [])

    assert len(fake_cli_on_path.qwen.calls) == 1
    assert [record.killed for record in s.records] == [()]


HOSTILE = "sleep 300 #\ngone\nexit 0\nleft 41\n\x1b]0;owned\x07"
"""A script whose command line holds newlines, escapes and forged protocol lines."""


def test_a_hostile_command_line_is_shown_escaped_and_forges_nothing(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.opencode.script(steps.background(HOSTILE), steps.say("Started it."))
    fake_cli_on_path.opencode.script(steps.say("Done."))
    lines: list[str] = []

    s = run_sessions(tmp_path, choice("opencode"), lines)

    first, resume = fake_cli_on_path.opencode.calls
    escaped = "sleep 300 #\\x0agone\\x0aexit 0\\x0aleft 41\\x0a\\x1b]0;owned\\x07"
    assert [record.killed for record in s.records] == [(escaped,), ()]
    assert resume.stdin == resume_prompt((escaped,))
    assert not first.started[0].running
    assert not [line for line in lines if "\x1b" in line or "owned\x07" in line]
    # Nothing forged: the session ended as its CLI did, once, and nothing else was reported.
    assert [record.failure for record in s.records] == [None, None]


def test_many_leftovers_are_listed_up_to_the_cap_and_counted(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    starts = [steps.background(f"sleep {300 + n}") for n in range(25)]
    fake_cli_on_path.gemini.script(*starts, steps.say("Started them."))
    fake_cli_on_path.gemini.script(steps.say("Done."))

    s = run_sessions(tmp_path, choice("gemini"), [])

    killed = s.records[0].killed
    assert len(killed) == 20
    assert killed[-1] == "and 6 more"
    assert set(killed[:-1]) <= {f"sleep {300 + n}" for n in range(25)}
    assert not [p for p in fake_cli_on_path.gemini.calls[0].started if p.running]


def test_claudes_work_the_after_result_watchdog_cut_short_is_killed_work_as_the_real_cli_says(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # The real claude, stopped (SIGTERM) while it waits out its grace after the result, says
    # on its way out that the task was stopped and killed; so the result stands with the work
    # killed, and it is resumed once (observed on 2.1.197 under the fake model).
    fake_cli_on_path.claude.script(
        steps.background("sleep 300", grace=600.0), steps.say("Started the tests.")
    )
    fake_cli_on_path.claude.script(steps.run("true"), steps.say("All green."))
    worktree = tmp_path / "work"
    worktree.mkdir()
    lines: list[str] = []

    with Sessions.within(
        Logs(tmp_path / "logs", "r"),
        worktree,
        choice("claude"),
        progress=lines.append,
        watchdogs=Watchdogs(after_result=0.5),
    ) as s:
        assert s.run_to_final_message("implement", "Start the work.") == "All green."

    assert any("stopped it, the result stands" in line for line in lines)
    first, resume = fake_cli_on_path.claude.calls
    assert first.signals == ["SIGTERM"]
    assert not first.started[0].running
    assert resume.resumed == first.session_id
    assert resume.stdin == resume_prompt(("sleep 300",))
    assert [record.killed for record in s.records] == [("sleep 300",), ()]
    assert b"No completion record" in resume.stdout  # the Resume replays the killed task


def test_claudes_work_cut_short_counts_as_killed_when_claude_dies_without_saying_so(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # The real claude, stopped in its grace, sometimes dies before it reports the task it
    # kills (2 times in 25 on 2.1.197): its stream started the task and never said it ended,
    # so the stop killed it all the same; the result stands, and it is resumed once.
    started = {
        "type": "system",
        "subtype": "task_started",
        "task_id": "b1",
        "description": "pytest -x",
    }
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 1,
        "result": "Started the tests.",
        "session_id": "fake-session-1",
        "total_cost_usd": 0.0001,
    }
    fake_cli_on_path.claude.script(cli_steps.emit(started), cli_steps.emit(result), steps.hang())
    fake_cli_on_path.claude.script(steps.run("true"), steps.say("All green."))
    worktree = tmp_path / "work"
    worktree.mkdir()
    lines: list[str] = []

    with Sessions.within(
        Logs(tmp_path / "logs", "r"),
        worktree,
        choice("claude"),
        progress=lines.append,
        watchdogs=Watchdogs(after_result=0.5),
    ) as s:
        assert s.run_to_final_message("implement", "Start the work.") == "All green."

    first, resume = fake_cli_on_path.claude.calls
    assert first.signals == ["SIGTERM"]
    assert resume.resumed == first.session_id == "fake-session-1"
    assert resume.stdin == resume_prompt(("pytest -x",))
    assert [record.killed for record in s.records] == [("pytest -x",), ()]
