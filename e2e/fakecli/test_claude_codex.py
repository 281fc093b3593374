"""The fake claude and codex: real processes, shaped like the real CLIs, scripted per call; and
what every fake does (exits, signals, hostile output, leftovers, scripts per worktree, its
process records, its templates made from real lines).

Each test runs the fakes as real subprocesses and reads them with thirdshift's real readers,
and checks that no process it started is left behind. What each stream holds, field by field
and value by value, the recordings check (e2e/conformance/test_conformance.py).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from thirdshift.harness import ClaudeReader, CodexReader
from thirdshift.harness import claude as claude_choice
from thirdshift.harness import codex as codex_choice
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing._placeholders import played
from thirdshift.testing.fakecli import FakeCall, FakeCLIs
from thirdshift.testing.fakecli import _steps as cli_steps
from thirdshift.testing.fakecli._state import NO_SCRIPT_EXIT, STATE_ENV
from thirdshift.testing.fakecli._templates import first_match, load, recorded_events

# The argv thirdshift passes (built by the real Harnesses, so that a change there shows here).
CLAUDE = claude_choice(model="claude-sonnet-4-5", effort="high", extra_args=("--max-turns", "9"))
CODEX = codex_choice(model="gpt-5.5", effort="high", extra_args=("--color", "never"))


# Running the fakes


def claude_argv(resume: str | None = None) -> list[str]:
    return list(CLAUDE.harness.invocation(CLAUDE, resume, "unused").argv)


def codex_argv(resume: str | None = None) -> list[str]:
    return list(CODEX.harness.invocation(CODEX, resume, "unused").argv)


def play(
    argv: Sequence[str],
    cwd: Path,
    prompt: str = "do the work",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run a fake to its end, the prompt on stdin, in its own session (as thirdshift does)."""
    return subprocess.run(
        list(argv),
        cwd=cwd,
        input=prompt.encode(),
        capture_output=True,
        env=env,
        start_new_session=True,
        timeout=30,
        check=False,
    )


def events(stdout: bytes) -> list[dict[str, Any]]:
    """Every stdout line as JSON: each must be one JSON object, ended by a newline."""
    assert stdout.endswith(b"\n")
    parsed = [json.loads(line) for line in stdout.decode().splitlines()]
    assert all(isinstance(event, dict) for event in parsed)
    return parsed


def kinds(stream: list[dict[str, Any]]) -> list[str]:
    """``type/subtype`` (Claude) or ``type/item.type`` (Codex) of each event."""
    return [
        f"{event['type']}/{event.get('subtype') or event.get('item', {}).get('type', '')}"
        for event in stream
    ]


def read_with(reader: ClaudeReader | CodexReader, stdout: bytes) -> list[str]:
    """Feed a stream to a real reader, a line at a time; return its progress lines."""
    lines: list[str] = []
    for line in stdout.decode("utf-8", "replace").splitlines():
        lines += reader.feed(line)
    return lines


def wait_gone(pids: Sequence[int], timeout: float = 3.0) -> list[int]:
    """Wait for ``pids`` to be gone (zombies count as gone); return those still running."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if _running(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def _running(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    folder = tmp_path / "worktree"
    folder.mkdir()
    return folder.resolve()


@pytest.fixture
def loose(tmp_path: Path) -> Iterator[FakeCLIs]:
    """Fakes without the fixture's teardown checks, for tests that break its rules on purpose."""
    fakes = FakeCLIs(tmp_path / "loose")
    yield fakes
    fakes.kill_survivors(settle=0)


# The shims


def test_the_fixture_puts_short_sh_shims_first_on_path(fake_cli_on_path: FakeCLIs) -> None:
    for name in ("claude", "codex"):
        shim = fake_cli_on_path.bin_dir / name
        assert os.environ["PATH"].split(os.pathsep)[0] == str(fake_cli_on_path.bin_dir)
        first_line = shim.read_text().splitlines()[0]
        assert first_line == "#!/bin/sh"  # a long shebang with the interpreter fails on Linux
        assert shim.stat().st_mode & 0o777 == 0o755
        assert str(fake_cli_on_path.state_dir) in shim.read_text()
    assert os.environ[STATE_ENV] == str(fake_cli_on_path.state_dir)


def test_the_fake_runs_as_a_module_too(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    fake_cli_on_path.claude.script(steps.say("from -m"))
    argv = [sys.executable, "-m", "thirdshift.testing.fakecli", *claude_argv()]
    done = play(argv, worktree)
    assert done.returncode == 0, done.stderr
    assert events(done.stdout)[-1]["result"] == "from -m"


def test_fakes_opened_on_a_relative_root_work_from_anywhere(
    tmp_path: Path, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    FakeCLIs.create(Path("relative"))
    reopened = FakeCLIs(Path("relative"))  # a second process opening the same fakes
    monkeypatch.chdir(worktree)
    reopened.claude.script(steps.say("from elsewhere"))

    shim = tmp_path / "relative" / "bin" / "claude"
    done = play([str(shim), *claude_argv()], worktree, env=reopened.env())

    assert done.returncode == 0, done.stderr
    assert events(done.stdout)[-1]["result"] == "from elsewhere"
    assert reopened.root == tmp_path / "relative"
    assert [call.number for call in reopened.claude.calls] == [1]


# Claude


def test_claude_plays_tools_for_real_in_the_shape_of_the_real_cli(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    (worktree / ".claude/skills/tdd").mkdir(parents=True)
    (worktree / ".claude/skills/tdd/SKILL.md").write_text("# tdd\n")
    (worktree / "old.txt").write_text("before\n")
    fake_cli_on_path.record_env("MY_SETTING")
    fake_cli_on_path.claude.script(
        steps.load_skill("tdd"),
        steps.run("echo hi-from-tool; echo oops >&2"),
        steps.run("exit 3", description="Fail"),
        steps.edit("new.txt", "created\n"),
        steps.edit("old.txt", "after\n"),
        fake.stderr("a warning"),
        steps.say("All done."),
    )
    env = {**os.environ, "CLAUDECODE": "1", "MY_SETTING": "on", "ANTHROPIC_API_KEY": "sk-x"}
    done = play(claude_argv(), worktree, prompt="implement it\nplease ✓", env=env)

    assert done.returncode == 0, done.stderr
    assert done.stderr == b"a warning\n"
    stream = events(done.stdout)
    assert kinds(stream) == [
        "system/init",
        *["assistant/", "user/"] * 5,
        "assistant/",
        "result/success",
    ]
    init, result = stream[0], stream[-1]
    assert init["cwd"] == str(worktree)
    assert init["session_id"] == "fake-session-1"
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert init["model"] == "claude-sonnet-4-5"
    assert init["permissionMode"] == "auto"
    assert init["skills"][0] == "tdd"  # the project's, then those Claude bundles
    assert "tdd" not in init["skills"][1:]
    assert {event["session_id"] for event in stream} == {"fake-session-1"}
    assert len({event["uuid"] for event in stream}) == len(stream)
    uses = [event["message"]["content"][0] for event in stream[1:11:2]]
    assert [(use["name"], use["input"]) for use in uses] == [
        ("Skill", {"skill": "tdd"}),
        (
            "Bash",  # described by its command, as the fake model describes it to the real one
            {
                "command": "echo hi-from-tool; echo oops >&2",
                "description": "echo hi-from-tool; echo oops >&2",
            },
        ),
        ("Bash", {"command": "exit 3", "description": "Fail"}),
        ("Write", {"file_path": str(worktree / "new.txt"), "content": "created\n"}),
        (
            "Edit",
            {
                "file_path": str(worktree / "old.txt"),
                "old_string": "before\n",
                "new_string": "after\n",
                "replace_all": False,
            },
        ),
    ]
    results = [event["message"]["content"][0] for event in stream[2:11:2]]
    assert [use["id"] for use in uses] == [result["tool_use_id"] for result in results]
    assert results[0]["content"] == "Launching skill: tdd"
    assert results[1]["content"] == "hi-from-tool\noops"
    assert (results[2]["is_error"], results[2]["content"]) == (True, "Exit code 3")
    assert (worktree / "new.txt").read_text() == "created\n"
    assert (worktree / "old.txt").read_text() == "after\n"
    assert result["result"] == "All done."
    # Six model requests, and a turn more for the skill loaded, as the real claude counts them.
    assert (result["is_error"], result["num_turns"]) == (False, 7)

    reader = ClaudeReader(worktree)
    lines = read_with(reader, done.stdout)
    assert lines[0] == "session started"
    assert (reader.session_id, reader.final_message, reader.killed) == (
        "fake-session-1",
        "All done.",
        (),
    )
    assert not reader.failed
    assert reader.summary is not None

    (call,) = fake_cli_on_path.claude.calls
    assert call.argv == claude_argv()
    assert call.argv[0] == "claude"
    assert (call.number, call.cwd, call.stdin) == (1, worktree, "implement it\nplease ✓")
    assert call.env["CLAUDECODE"] == "1"
    assert call.env["MY_SETTING"] == "on"
    assert call.env["PATH"].startswith(str(fake_cli_on_path.bin_dir))
    assert call.pid == call.pgid == call.sid  # run in its own session, the shim exec'd
    assert (call.session_id, call.resumed, call.exit_code, call.ended) == (
        "fake-session-1",
        None,
        0,
        True,
    )
    assert call.stdout == done.stdout
    assert call.stderr == "a warning\n"
    assert call.events == stream
    assert [p.what for p in call.started] == ["run", "run"]
    assert wait_gone([*call.started_pids, call.pid]) == []


def test_claude_kills_background_work_after_its_result_and_a_resume_replays_it(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    fake_cli_on_path.claude.script(
        steps.background("sleep 300", description="Run the tests"), steps.say("Started the tests.")
    )
    fake_cli_on_path.claude.script(steps.run("true"), steps.say("Ran them in the foreground."))

    first = play(claude_argv(), worktree)
    assert first.returncode == 0, first.stderr
    stream = events(first.stdout)
    assert kinds(stream) == [
        "system/init",
        "assistant/",
        "system/task_started",
        "user/",
        "assistant/",
        "result/success",
        "system/task_updated",
        "system/task_notification",
    ]
    use = stream[1]["message"]["content"][0]
    assert use["input"] == {
        "command": "sleep 300",
        "description": "Run the tests",
        "run_in_background": True,
    }
    started, tool_result = stream[2], stream[3]["message"]["content"][0]
    assert (started["tool_use_id"], started["task_type"]) == (use["id"], "local_bash")
    assert tool_result["content"].startswith(
        f"Command running in background with ID: {started['task_id']}."
    )
    updated, notified = stream[-2:]
    assert updated["patch"]["status"] == "killed"
    assert (notified["status"], notified["task_id"]) == ("stopped", started["task_id"])
    (call,) = fake_cli_on_path.claude.calls
    (task,) = call.started
    assert (task.what, task.command) == ("background", "sleep 300")
    assert wait_gone([task.pid]) == []  # really started, really killed

    reader = ClaudeReader(worktree)
    read_with(reader, first.stdout)
    assert reader.killed == ("Run the tests",)
    assert reader.session_id == "fake-session-1"

    resumed = play(claude_argv(resume="fake-session-1"), worktree, prompt="Your background work")
    assert resumed.returncode == 0, resumed.stderr
    stream = events(resumed.stdout)
    assert kinds(stream) == [
        "system/task_notification",
        "system/task_notification",
        "system/init",
        "result/success",
        "system/init",
        "assistant/",
        "user/",
        "assistant/",
        "result/success",
    ]
    assert all(event["session_id"] == "fake-session-1" for event in stream)
    assert stream[0]["summary"].startswith("No completion record was found")
    assert stream[0]["task_id"] == started["task_id"]
    assert (stream[3]["num_turns"], stream[3]["result"]) == (0, "")
    reader = ClaudeReader(worktree)
    read_with(reader, resumed.stdout)
    assert reader.ended().killed == ()
    assert reader.ended().final_message == "Ran them in the foreground."
    assert reader.ended().session_id == "fake-session-1"
    second = fake_cli_on_path.claude.calls[1]
    assert second.argv == [*claude_argv(), "--resume", "fake-session-1"]
    assert (second.resumed, second.session_id, second.cwd) == (
        "fake-session-1",
        "fake-session-1",
        worktree,
    )
    assert second.stdin == "Your background work"


def test_claude_reports_background_work_that_finished_in_the_grace_as_completed(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    fake_cli_on_path.claude.script(steps.background("true", grace=5.0), steps.say("Started."))
    done = play(claude_argv(), worktree)
    stream = events(done.stdout)
    assert kinds(stream)[5:] == [
        "result/success",
        "system/task_updated",
        "system/task_notification",
        "system/init",
        "assistant/",
        "result/success",
    ]
    assert stream[6]["patch"]["status"] == "completed"
    assert stream[7]["status"] == "completed"
    assert stream[-1]["origin"] == {"kind": "task-notification"}
    reader = ClaudeReader(worktree)
    read_with(reader, done.stdout)
    assert reader.killed == ()


def test_claude_refuses_to_resume_from_another_cwd_or_an_unknown_id(
    fake_cli_on_path: FakeCLIs, worktree: Path, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("one"))
    fake_cli_on_path.claude.script(steps.say("never said"))
    fake_cli_on_path.claude.script(steps.say("never said"))
    assert play(claude_argv(), worktree).returncode == 0
    for resume, cwd in (("fake-session-1", tmp_path), ("fake-session-9", worktree)):
        done = play(claude_argv(resume=resume), cwd)
        message = f"No conversation found with session ID: {resume}"
        assert (done.returncode, done.stderr.decode()) == (1, message + "\n")
        (result,) = events(done.stdout)
        assert (result["subtype"], result["is_error"], result["errors"]) == (
            "error_during_execution",
            True,
            [message],
        )
        reader = ClaudeReader(cwd)
        read_with(reader, done.stdout)
        assert (reader.failed, reader.error) == (True, message)


def test_claude_failed_turns_and_api_errors(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    fake_cli_on_path.claude.script(fake.fail_turn("tool crashed"))
    fake_cli_on_path.claude.script(fake.fail_turn("Invalid API key", api_error_status=401))
    fake_cli_on_path.claude.script(fake.fail_turn("soft", exit_code=0))

    failed = play(claude_argv(), worktree)
    assert failed.returncode == 1
    result = events(failed.stdout)[-1]
    assert (result["subtype"], result["is_error"], result["errors"]) == (
        "error_during_execution",
        True,
        ["tool crashed"],
    )
    api = play(claude_argv(), worktree)
    assert api.returncode == 1
    stream = events(api.stdout)
    assert (stream[-1]["subtype"], stream[-1]["is_error"], stream[-1]["result"]) == (
        "success",
        True,
        "Invalid API key",
    )
    assert stream[-1]["api_error_status"] == 401
    retries = [event for event in stream if event.get("subtype") == "api_retry"]
    assert [(r["attempt"], r["max_retries"], r["error_status"]) for r in retries] == [
        (attempt, 10, 401)
        for attempt in range(1, 11)  # claude's retries, unless told fewer
    ]
    for done, error in ((failed, "tool crashed"), (api, "Invalid API key")):
        reader = ClaudeReader(worktree)
        read_with(reader, done.stdout)
        assert (reader.failed, reader.error) == (True, error)
    assert play(claude_argv(), worktree).returncode == 0
    assert [call.exit_code for call in fake_cli_on_path.claude.calls] == [1, 1, 0]


def test_claude_without_a_session_id_or_with_a_hostile_one(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    fake_cli_on_path.claude.script(steps.run("true"), fake.no_session_id(), steps.say("anon"))
    fake_cli_on_path.claude.script(fake.session_id("--dangerously-skip-permissions"))
    fake_cli_on_path.claude.script(steps.say("counted"))
    anonymous = events(play(claude_argv(), worktree).stdout)
    assert all("session_id" not in event for event in anonymous)
    reader = ClaudeReader(worktree)
    read_with(reader, play(claude_argv(), worktree).stdout)
    assert reader.session_id == "--dangerously-skip-permissions"
    counted = events(play(claude_argv(), worktree).stdout)
    assert counted[0]["session_id"] == "fake-session-1"  # the first session that had an id
    calls = fake_cli_on_path.claude.calls
    assert [call.session_id for call in calls] == [
        None,
        "--dangerously-skip-permissions",
        "fake-session-1",
    ]


# Codex


def test_codex_plays_tools_for_real_in_the_shape_of_the_real_cli(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    (worktree / ".agents/skills/tdd").mkdir(parents=True)
    (worktree / ".agents/skills/tdd/SKILL.md").write_text("# tdd skill\n")
    fake_cli_on_path.codex.script(
        steps.load_skill("tdd"),
        steps.run("echo hi-from-tool"),
        steps.run("echo bad >&2; exit 2"),
        steps.edit("src/new.py", "x = 1\n"),
        fake.codex_error("Reconnecting... 1/5"),
        steps.say("Done."),
    )
    done = play(codex_argv(), worktree, prompt="$tdd implement it")

    assert done.returncode == 0
    assert done.stderr == b"Reading additional input from stdin...\n"
    stream = events(done.stdout)
    assert kinds(stream) == [
        "thread.started/",
        "turn.started/",
        "item.started/command_execution",
        "item.completed/command_execution",
        "item.started/command_execution",
        "item.completed/command_execution",
        "item.started/command_execution",
        "item.completed/command_execution",
        "item.started/file_change",
        "item.completed/file_change",
        "error/",
        "item.completed/agent_message",
        "turn.completed/",
    ]
    assert stream[0]["thread_id"] == "fake-thread-1"
    skill, echo, bad = stream[3]["item"], stream[5]["item"], stream[7]["item"]
    assert skill["command"] == "/bin/bash -lc 'cat .agents/skills/tdd/SKILL.md'"
    assert (skill["aggregated_output"], skill["exit_code"]) == ("# tdd skill\n", 0)
    assert echo["command"] == "/bin/bash -lc 'echo hi-from-tool'"
    assert (echo["aggregated_output"], echo["status"]) == ("hi-from-tool\n", "completed")
    assert (bad["aggregated_output"], bad["exit_code"], bad["status"]) == ("bad\n", 2, "failed")
    assert [item["id"] for item in (skill, echo, bad)] == ["item_0", "item_1", "item_2"]
    started, changed = stream[8]["item"], stream[9]["item"]
    assert (started["id"], started["status"]) == (changed["id"], "in_progress")
    assert changed["changes"] == [{"path": str(worktree / "src/new.py"), "kind": "add"}]
    assert changed["status"] == "completed"
    assert (worktree / "src/new.py").read_text() == "x = 1\n"

    reader = CodexReader(worktree)
    read_with(reader, done.stdout)
    assert (reader.session_id, reader.final_message, reader.killed, reader.failed) == (
        "fake-thread-1",
        "Done.",
        (),
        False,
    )
    (call,) = fake_cli_on_path.codex.calls
    assert call.argv == codex_argv()
    assert (call.stdin, call.cwd, call.session_id) == (
        "$tdd implement it",
        worktree,
        "fake-thread-1",
    )


def test_codex_leaves_background_work_unfinished_kills_it_and_resumes_its_thread(
    fake_cli_on_path: FakeCLIs, worktree: Path, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(steps.background("sleep 300"), steps.say("Tests are running."))
    fake_cli_on_path.codex.script(steps.say("Resumed."))

    first = play(codex_argv(), worktree)
    assert first.returncode == 0
    stream = events(first.stdout)
    assert kinds(stream) == [
        "thread.started/",
        "turn.started/",
        "item.started/command_execution",
        "item.completed/agent_message",
        "turn.completed/",
    ]
    assert stream[2]["item"]["command"] == "/bin/bash -lc 'sleep 300'"
    (task,) = fake_cli_on_path.codex.calls[0].started
    assert wait_gone([task.pid]) == []
    reader = CodexReader(worktree)
    read_with(reader, first.stdout)
    assert reader.ended().killed == ("sleep 300",)

    resumed = play(codex_argv(resume="fake-thread-1"), tmp_path)  # any cwd will do for Codex
    assert resumed.returncode == 0
    stream = events(resumed.stdout)
    assert stream[0] == {"type": "thread.started", "thread_id": "fake-thread-1"}
    second = fake_cli_on_path.codex.calls[1]
    assert second.argv == [*codex_argv()[:-1], "resume", "fake-thread-1", "-"]
    assert second.resumed == "fake-thread-1"


def test_codex_failures(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    fake_cli_on_path.codex.script(fake.fail_turn("unexpected status 401 Unauthorized"))
    fake_cli_on_path.codex.script(fake.fail_turn("stream disconnected", exit_code=0))
    fake_cli_on_path.codex.script(fake.no_session_id(), steps.say("anonymous"))
    for code, message in ((1, "unexpected status 401 Unauthorized"), (0, "stream disconnected")):
        done = play(codex_argv(), worktree)
        assert done.returncode == code
        stream = events(done.stdout)
        assert stream[-2:] == [
            {"type": "error", "message": message},
            {"type": "turn.failed", "error": {"message": message}},
        ]
        reader = CodexReader(worktree)
        read_with(reader, done.stdout)
        assert (reader.failed, reader.error) == (True, message)
    anonymous = events(play(codex_argv(), worktree).stdout)
    assert kinds(anonymous)[0] == "turn.started/"


# Every fake: exits, signals, hostile output, leftovers


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_exit_codes(fake_cli_on_path: FakeCLIs, worktree: Path, harness: str) -> None:
    argv = claude_argv() if harness == "claude" else codex_argv()
    fakecli = fake_cli_on_path.harness(harness)
    fakecli.script(steps.background("sleep 300"), steps.say("bye"), steps.exit(3))
    fakecli.script(steps.say("half"), steps.exit(4, abrupt=True))
    ended = play(argv, worktree)
    assert ended.returncode == 3
    last = events(ended.stdout)[-1]
    assert last["type"] == ("system" if harness == "claude" else "turn.completed")
    abrupt = play(argv, worktree)
    assert abrupt.returncode == 4
    assert events(abrupt.stdout)[-1]["type"] in ("assistant", "item.completed")
    assert [call.exit_code for call in fakecli.calls] == [3, 4]
    assert wait_gone([pid for call in fakecli.calls for pid in call.started_pids]) == []


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_die_by_a_signal_mid_line(fake_cli_on_path: FakeCLIs, worktree: Path, harness: str) -> None:
    argv = claude_argv() if harness == "claude" else codex_argv()
    fake_cli_on_path.harness(harness).script(
        steps.say("working"), cli_steps.die("SIGKILL", partial_line='{"type":"assis')
    )
    done = play(argv, worktree)
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.endswith(b'\n{"type":"assis')
    (call,) = fake_cli_on_path.harness(harness).calls
    assert (call.died_by, call.exit_code, call.ended) == ("SIGKILL", None, False)
    assert call.stdout == done.stdout


@pytest.mark.parametrize(
    "case",
    [
        ("claude", (), [signal.SIGTERM], 143),
        ("codex", (signal.SIGINT,), [signal.SIGINT, signal.SIGTERM], 143),
        ("codex", (), [signal.SIGINT], 130),
    ],
    ids=["claude-term", "codex-int-ignored-then-term", "codex-int"],
)
def test_hang_records_signals_and_ignores_those_listed(
    fake_cli_on_path: FakeCLIs,
    worktree: Path,
    case: tuple[str, tuple[signal.Signals, ...], list[signal.Signals], int],
) -> None:
    harness, ignore, sent, code = case
    argv = claude_argv() if harness == "claude" else codex_argv()
    fakecli = fake_cli_on_path.harness(harness)
    fakecli.script(steps.background("sleep 300"), steps.hang(ignore=ignore))
    process = subprocess.Popen(
        argv,
        cwd=worktree,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        call = fakecli.wait_for_call(0, hanging=True)
        for signo in sent:
            os.killpg(process.pid, signo)  # the whole group, as thirdshift stops a session
            if signo in ignore:
                deadline = time.monotonic() + 5
                while fakecli.calls[0].signals != [s.name for s in sent[:1]]:
                    assert time.monotonic() < deadline
                    time.sleep(0.01)
                assert process.poll() is None
        assert process.wait(timeout=10) == code
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    call = fakecli.calls[0]
    assert call.signals == [signo.name for signo in sent]
    assert (call.exit_code, call.hanging) == (code, False)
    assert wait_gone(call.started_pids) == []


def test_hang_with_a_timeout_plays_on(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    fake_cli_on_path.claude.script(steps.hang(timeout=0.2), steps.say("after the hang"))
    done = play(claude_argv(), worktree)
    assert done.returncode == 0
    assert events(done.stdout)[-1]["result"] == "after the hang"
    call = fake_cli_on_path.claude.calls[0]
    assert (call.signals, call.hanging, call.exit_code) == ([], False, 0)


def test_leftovers_outlive_the_fake_as_scripted(loose: FakeCLIs, worktree: Path) -> None:
    loose.codex.script(
        cli_steps.grandchild_holds_stdout(300),
        cli_steps.escape_setsid(300),
        cli_steps.daemon(300),
        steps.say("bye"),
    )
    process = subprocess.Popen(
        codex_argv(),
        cwd=worktree,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=loose.env(),
        start_new_session=True,
    )
    assert process.stdout is not None
    try:
        assert process.wait(timeout=10) == 0
        # The fake has exited, but its stream stays open: the grandchild holds it.
        written = os.read(process.stdout.fileno(), 1 << 20)
        assert b'"type":"turn.completed"' in written  # all it wrote, and yet no EOF:
        assert select.select([process.stdout], [], [], 0.3)[0] == []
        (call,) = loose.codex.calls
        holder, escapee, daemon = call.started
        assert [p.what for p in call.started] == [
            "grandchild_holds_stdout",
            "escape_setsid",
            "daemon",
        ]
        assert all(p.running for p in call.started)
        assert os.getpgid(holder.pid) == call.pgid
        assert os.getsid(escapee.pid) == escapee.pid != call.sid
        ignored = int(_sig_ignored(escapee.pid), 16)
        assert ignored & (1 << (signal.SIGTERM - 1))
        os.kill(escapee.pid, signal.SIGTERM)
        time.sleep(0.05)
        assert escapee.running  # it ignores SIGTERM
        assert psutil.Process(daemon.pid).ppid() != call.pid  # orphaned at once
        assert os.getsid(daemon.pid) != call.sid
        survivors = loose.kill_survivors(settle=0)
        assert len(survivors) == 3
        assert wait_gone(call.started_pids) == []
    finally:
        loose.kill_survivors(settle=0)
        process.stdout.close()


def _sig_ignored(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return line.split()[1]
    raise AssertionError("no SigIgn")


def test_raw_bytes_go_out_as_they_are(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    huge = 3 << 20
    fake_cli_on_path.codex.script(
        cli_steps.raw(b"not json \xff\xfe\x00 nul\n"),
        cli_steps.raw('{"type":"x","s":"'),
        cli_steps.raw("a", repeat=huge),
        cli_steps.raw('"}\n'),
        cli_steps.emit({"type": "item.completed", "item": {"deep": [[[[[]]]]]}}),
        cli_steps.raw("no final newline"),
        steps.exit(0, abrupt=True),
    )
    done = play(codex_argv(), worktree)
    assert done.returncode == 0
    body = done.stdout.split(b"\n", 2)[2]  # after thread.started and turn.started
    assert body == (
        b"not json \xff\xfe\x00 nul\n"
        + b'{"type":"x","s":"'
        + b"a" * huge
        + b'"}\n{"type":"item.completed","item":{"deep":[[[[[]]]]]}}\nno final newline'
    )
    assert fake_cli_on_path.codex.calls[0].stdout == done.stdout


def test_no_events_leaves_stdout_to_raw_steps(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    fake_cli_on_path.claude.script(cli_steps.no_events(), fake.stderr("boom"), steps.exit(3))
    fake_cli_on_path.codex.script(
        steps.run("touch ran"), cli_steps.raw(b"\x00only this"), cli_steps.no_events()
    )
    claude = play(claude_argv(), worktree)
    assert (claude.returncode, claude.stdout, claude.stderr) == (3, b"", b"boom\n")
    codex = play(codex_argv(), worktree)
    assert (codex.returncode, codex.stdout) == (0, b"\x00only this")
    assert (worktree / "ran").exists()  # the steps' effects still happen


def test_closing_stdout_ends_the_stream_not_the_process(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("early"), cli_steps.close_stdout(), steps.hang())
    process = subprocess.Popen(
        claude_argv(),
        cwd=worktree,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        out = process.stdout.read()  # returns at EOF
        assert process.poll() is None  # while the fake still runs
        fake_cli_on_path.claude.wait_for_call(0, hanging=True)
        process.terminate()
        assert process.wait(timeout=10) == 143
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
    assert kinds(events(out)) == ["system/init", "assistant/"]
    assert fake_cli_on_path.claude.calls[0].signals == ["SIGTERM"]


def test_a_fake_can_leave_stdin_unread(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    fake_cli_on_path.codex.script(cli_steps.ignore_stdin(), steps.say("never read it"))
    process = subprocess.Popen(
        codex_argv(),
        cwd=worktree,
        stdin=subprocess.PIPE,  # left open and silent
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert process.wait(timeout=10) == 0
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            assert stream is not None
            stream.close()
    assert fake_cli_on_path.codex.calls[0].stdin is None


def test_an_argv_the_real_cli_refuses_is_refused_and_takes_no_script(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("kept"))
    fake_cli_on_path.codex.script(steps.say("kept"))
    no_verbose = [arg for arg in claude_argv() if arg != "--verbose"]
    done = play(no_verbose, worktree)
    assert (done.returncode, done.stdout) == (1, b"")
    assert b"requires --verbose" in done.stderr
    cd_after_resume = [*codex_argv()[:-1], "resume", "fake-thread-1", "--cd", "/tmp", "-"]
    done = play(cd_after_resume, worktree)
    assert (done.returncode, done.stderr) == (2, b"error: unexpected argument '--cd' found\n")
    assert [call.refused is not None for call in fake_cli_on_path.calls] == [True, True]
    # Both scripts are still there for the calls thirdshift would really make.
    assert play(claude_argv(), worktree).returncode == 0
    assert play(codex_argv(), worktree).returncode == 0


def test_a_call_with_no_script_left_exits_97_and_is_reported(
    loose: FakeCLIs, worktree: Path
) -> None:
    loose.claude.script(steps.say("one"))
    loose.codex.script(steps.say("unused"))
    env = loose.env()
    assert play(claude_argv(), worktree, env=env).returncode == 0
    done = play(claude_argv(), worktree, env=env, prompt="the second")
    assert done.returncode == NO_SCRIPT_EXIT == 97
    assert done.stderr.decode().startswith(
        "fake claude: no scripted call left for call 2; scripts wait for fake codex "
    )
    assert done.stdout == b""
    (unscripted,) = loose.claude.unscripted
    assert (unscripted.number, unscripted.stdin) == (2, "the second")
    assert loose.codex.unconsumed == [(steps.say("unused"),)]
    problems = loose.problems()
    assert len(problems) == 2
    assert problems[0].startswith(
        "fake claude call 2 ran with no script left (it exited 97); scripts wait for fake codex;"
    )
    assert "a script of fake codex was never used: Say(text='unused')" in problems[1]
    assert loose.problems(include_unconsumed=False) == problems[:1]


def test_a_script_for_a_worktree_is_played_only_by_a_call_in_it(
    loose: FakeCLIs, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    loose.claude.script(steps.say("anywhere"))
    loose.claude.script(steps.say("in the second"), worktree=second)
    loose.claude.script(steps.say("in the first"), worktree=tmp_path / "." / "first")
    env = loose.env()
    said = [play(claude_argv(), folder, env=env).stdout for folder in (second, first, second)]
    assert b"in the second" in said[0]
    assert b"in the first" in said[1]
    assert b"anywhere" in said[2]
    assert loose.claude.unconsumed == []


def test_no_script_left_says_a_script_waits_for_another_worktree(
    loose: FakeCLIs, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    loose.claude.script(steps.say("in the second"), worktree=second)

    done = play(claude_argv(), first, env=loose.env())

    assert done.returncode == 97
    assert f"; scripts wait for fake claude in {second.resolve()} " in done.stderr.decode()
    (problem, _unused) = loose.problems()
    assert f"; scripts wait for fake claude in {second.resolve()};" in problem


def test_a_worktree_script_never_taken_is_reported_unconsumed(
    loose: FakeCLIs, tmp_path: Path
) -> None:
    loose.claude.script(steps.say("kept for a folder"), worktree=tmp_path)
    assert loose.claude.unconsumed == [(steps.say("kept for a folder"),)]
    assert "a script of fake claude was never used" in loose.problems()[0]


def test_calls_at_once_get_their_own_numbers_and_ids(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    count = 8
    for _ in range(count):
        fake_cli_on_path.claude.script(steps.run("sleep 0.1"), steps.say("done"))
    results: list[subprocess.CompletedProcess[bytes]] = []
    lock = threading.Lock()

    def one() -> None:
        done = play(claude_argv(), worktree)
        with lock:
            results.append(done)

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [done.returncode for done in results] == [0] * count
    ids = sorted(events(done.stdout)[0]["session_id"] for done in results)
    assert ids == sorted(f"fake-session-{n}" for n in range(1, count + 1))
    calls = fake_cli_on_path.claude.calls
    assert [call.number for call in calls] == list(range(1, count + 1))
    assert len({call.pid for call in calls}) == count


def test_scripts_are_checked_when_queued(fake_cli_on_path: FakeCLIs) -> None:
    with pytest.raises(ValueError, match="codex_error"):
        fake_cli_on_path.claude.script(fake.codex_error("no"))
    with pytest.raises(ValueError, match="last step"):
        fake_cli_on_path.codex.script(steps.exit(1), steps.say("never"))
    with pytest.raises(TypeError, match="not a step"):
        fake_cli_on_path.codex.script("say hello")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no such signal"):
        cli_steps.die("SIGNOPE")
    assert steps.hang(ignore=[signal.SIGINT, "TERM", 1]).ignore == ("SIGINT", "SIGTERM", "SIGHUP")
    step = cli_steps.die(signal.SIGKILL, partial_line=b"\xff")
    assert steps.Step.from_json(json.loads(json.dumps(step.to_json()))) == step
    assert fake_cli_on_path.claude.unconsumed == []


# The fixture, as downstream test suites use it


def test_fake_call_records_are_snapshots(fake_cli_on_path: FakeCLIs, worktree: Path) -> None:
    fake_cli_on_path.claude.script(steps.say("x"))
    play(claude_argv(), worktree)
    (call,) = fake_cli_on_path.claude.calls
    assert isinstance(call, FakeCall)
    assert not call.running
    assert "fake claude call 1" in call.describe()
    assert fake_cli_on_path.survivors() == []


# Process records: start times, so that a reused pid is never taken for ours


def _wait_until(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} in {timeout}s"
        time.sleep(0.01)


def test_a_run_step_is_recorded_with_its_start_time_as_it_starts(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    fake_cli_on_path.claude.script(steps.run("sleep 300"), steps.say("never said"))
    process = subprocess.Popen(
        claude_argv(),
        cwd=worktree,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        fakecli = fake_cli_on_path.claude
        _wait_until(lambda: fakecli.calls and fakecli.calls[0].started, "recorded")
        (command,) = fakecli.calls[0].started
        assert (command.what, command.command, command.running) == ("run", "sleep 300", True)
        assert command.start == psutil_start_ticks(command.pid)
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=10) == 143
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert wait_gone([command.pid]) == []  # the fake killed its command as it stopped


def psutil_start_ticks(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat, read independently of the fakes' own code."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def _rewrite_record(fakes: FakeCLIs, edit: Any) -> None:
    (path,) = (fakes.state_dir / "calls").glob("claude-0001.json")
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))


def test_a_stale_record_never_kills_the_process_that_reused_its_pid(
    fake_cli_on_path: FakeCLIs, worktree: Path
) -> None:
    fake_cli_on_path.claude.script(steps.run("true"), steps.run("true"), steps.say("done"))
    assert play(claude_argv(), worktree).returncode == 0
    # Another process now holds the pids the record names, as on a busy machine, where pids
    # wrap around (pid_max is often 32768): one with another start time, one with none known.
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        start = psutil_start_ticks(victim.pid)

        def reused(record: dict[str, Any]) -> None:
            first, second = record["started"]
            first.update(pid=victim.pid, start=start + 1)
            second.update(pid=victim.pid, start=None)

        _rewrite_record(fake_cli_on_path, reused)
        assert [p.running for p in fake_cli_on_path.claude.calls[0].started] == [False, False]
        assert fake_cli_on_path.survivors() == []
        assert fake_cli_on_path.kill_survivors(settle=0) == []
        victim.terminate()  # a SIGKILL from kill_survivors would show as -9 instead
        assert victim.wait(timeout=10) == -signal.SIGTERM
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()


def test_the_state_is_private_wherever_it_is(tmp_path: Path, worktree: Path) -> None:
    root = tmp_path / "shared"
    (root / "state" / "calls").mkdir(parents=True, mode=0o755)  # there before, open to all
    (root / "state" / "calls").chmod(0o755)
    (root / "state").chmod(0o755)
    fakes = FakeCLIs(root)
    fakes.claude.script(steps.run("echo hi"), steps.background("sleep 300"), steps.say("secret"))
    done = play(claude_argv(), worktree, prompt="a secret prompt", env=fakes.env())
    assert done.returncode == 0, done.stderr
    made = [fakes.state_dir, *fakes.state_dir.rglob("*"), fakes.tmp_dir, *fakes.tmp_dir.rglob("*")]
    modes = {path.relative_to(root): path.stat().st_mode & 0o777 for path in made}
    # The background command's output is in the fake Claude's temporary folder, as the real one's.
    assert {path.suffix for path in modes} >= {"", ".json", ".stdout", ".stderr", ".output"}
    wrong = {
        str(path): oct(mode)
        for path, mode in modes.items()
        if mode != (0o700 if (root / path).is_dir() else 0o600)
    }
    assert wrong == {}


def test_opening_fakes_again_keeps_their_state_and_create_starts_afresh(
    tmp_path: Path, worktree: Path
) -> None:
    root = tmp_path / "fakes"
    fakes = FakeCLIs.create(root)
    fakes.record_env("MY_SETTING")
    fakes.claude.script(steps.say("one")).script(steps.say("two")).script(steps.say("three"))
    env = {**fakes.env(), "MY_SETTING": "on"}
    assert play(claude_argv(), worktree, env=env).returncode == 0

    reader = "import sys; from thirdshift.testing.fakecli import FakeCLIs as F; " + (
        "print([c.stdin for c in F(sys.argv[1]).claude.calls])"
    )
    read = subprocess.run(
        [sys.executable, "-c", reader, str(root)], capture_output=True, check=True
    )
    assert read.stdout == b"['do the work']\n"  # another process read the records, and kept them
    again = FakeCLIs(root)
    assert [(call.number, call.stdin) for call in again.claude.calls] == [(1, "do the work")]
    assert again.claude.unconsumed == [(steps.say("two"),), (steps.say("three"),)]
    done = play(claude_argv(), worktree, env=env)
    assert events(done.stdout)[0]["session_id"] == "fake-session-2"  # the counters went on
    assert again.claude.calls[1].env["MY_SETTING"] == "on"

    again.reset()
    assert (again.claude.calls, again.claude.unconsumed) == ([], [])
    fakes.claude.script(steps.say("after the reset"))
    done = play(claude_argv(), worktree, env=env)
    assert events(done.stdout)[0]["session_id"] == "fake-session-1"
    assert "MY_SETTING" not in fakes.claude.calls[0].env

    FakeCLIs.create(root)
    assert (fakes.claude.calls, fakes.claude.unconsumed) == ([], [])


# The fakes' events are made from real ones


TRANSCRIPTS = Path(__file__).parents[2] / "tests" / "transcripts"
# Captures the readers' tests do not use (each of theirs must have its expectations).
MORE_CAPTURES = Path(__file__).parents[1] / "captures"
CAPTURES = (TRANSCRIPTS, MORE_CAPTURES)
TEMPLATES = Path(fake.__file__).parent / "templates"


@pytest.mark.parametrize("cli", ["claude", "codex", "opencode", "gemini", "qwen"])
def test_each_template_is_a_real_line(cli: str) -> None:
    entries = [json.loads(line) for line in (TEMPLATES / f"{cli}.jsonl").read_text().splitlines()]
    loaded = load(cli)
    for entry in entries:
        if "recorded" in entry:  # the first line of a committed recording holding the match
            real = first_match(entry["match"], recorded_events(cli, entry["recorded"]))
            assert real is not None, entry["name"]
        else:  # what no recording shows: the captured line itself, as it is
            capture, line = entry["source"].rsplit(":", 1)
            folder = next(folder for folder in CAPTURES if (folder / capture).exists())
            real = json.loads((folder / capture).read_text().splitlines()[int(line) - 1])
            assert entry["event"] == real, entry["name"]
        assert json.loads(loaded[entry["name"]]) == played(real), entry["name"]
        assert list(json.loads(loaded[entry["name"]])) == list(real), entry["name"]  # in order
    assert sorted(loaded) == sorted(entry["name"] for entry in entries)
    recorded = sum("recorded" in entry for entry in entries)
    assert recorded >= len(entries) - 1  # Claude's refused Resume is the one not recorded
