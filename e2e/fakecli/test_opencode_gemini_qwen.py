"""The fake opencode, Gemini CLI and Qwen Code: real processes, shaped like the real CLIs.

Each test runs a fake through plain subprocesses and checks the quirks of each real CLI that
thirdshift's Resume rules meet: how each exits, what each leaves running, how each stops, how
each refuses an unknown session. What each stream holds, field by field and value by value,
the recordings check (e2e/conformance/test_conformance.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import psutil
import pytest

from thirdshift import AuthFailed, ResumeTargetMissing
from thirdshift.harness import gemini as gemini_choice
from thirdshift.harness import harness_named
from thirdshift.harness import opencode as opencode_choice
from thirdshift.harness import qwen as qwen_choice
from thirdshift.harness._base import finish_reading
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import FakeCall, FakeCLIs, StartedProcess
from thirdshift.testing.fakecli._opencode import SESSION_NOT_FOUND
from thirdshift.testing.fakecli._qwen import CANCELLED

ARGV = {  # what the real captures ran, less the prompt (which goes to stdin)
    "opencode": ["opencode", "run", "--format", "json", "--auto"],
    "gemini": ["gemini", "-o", "stream-json", "-y"],
    "qwen": ["qwen", "-o", "stream-json", "--auth-type", "openai", "-y"],
}
FIRST_ID = {
    "opencode": "ses_fake1",
    "gemini": "00000000-0000-4000-8000-000000000001",
    "qwen": "00000000-0000-4000-8000-000000000001",
}
TRANSCRIPTS = Path(__file__).parents[2] / "tests" / "transcripts"
YOLO = b"YOLO mode is enabled. All tool calls will be automatically approved.\n"


def capture(name: str) -> Path:
    return TRANSCRIPTS / name


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    folder = tmp_path / "worktree"
    folder.mkdir()
    return folder.resolve()


@pytest.fixture
def env(fake_cli_on_path: FakeCLIs, tmp_path: Path) -> dict[str, str]:
    """The fakes first on PATH, and a HOME of the test's own (Qwen writes status files there)."""
    home = tmp_path / "home"
    home.mkdir()
    return fake_cli_on_path.env({**os.environ, "HOME": str(home)})


def play(
    argv: Sequence[str], cwd: Path, env: dict[str, str], prompt: str = "do the work"
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
    return [json.loads(line) for line in stdout.decode().splitlines()]


def wait_until(condition: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} in {timeout}s"
        time.sleep(0.01)


def running(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def steps_started(call: FakeCall) -> list[StartedProcess]:
    """The processes ``call``'s steps started (not Qwen's worker, which plays them)."""
    return [process for process in call.started if process.what != "worker"]


def kill_left_running(fakes: FakeCLIs, expected: int) -> list[str]:
    """Kill what the fakes left running on purpose (``expected`` of them), once it is gone."""
    left = fakes.kill_survivors(settle=0)
    assert len(left) == expected, left
    pids = [process.pid for call in fakes.calls for process in call.started]
    wait_until(lambda: not any(running(pid) for pid in pids), "gone")
    return left


# Each exits as the real one did (what each stream holds, the recordings check: e2e/conformance)


API_401 = fake.fail_turn("mock: Incorrect API key provided", api_error_status=401)


@pytest.mark.parametrize(
    ("name", "script"),
    [
        ("opencode-hello", [steps.say("Hello from the fake.")]),
        ("opencode-fg", [steps.run("echo hi-from-tool"), steps.say("done")]),
        ("opencode-api-401", [API_401]),
        ("gemini-hello", [steps.say("Hello from the fake.")]),
        ("gemini-fg", [steps.run("echo hi-from-tool", description="Shell"), steps.say("done")]),
        ("gemini-api-401", [API_401]),
        ("qwen-hello", [steps.say("Hello from the fake.")]),
        ("qwen-fg", [steps.run("echo hi-from-tool", description="Shell"), steps.say("done")]),
        ("qwen-api-401", [API_401]),
    ],
)
def test_each_fake_exits_as_its_real_capture(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path, name: str, script: list[Any]
) -> None:
    cli = name.split("-", maxsplit=1)[0]
    fake_cli_on_path.harness(cli).script(*script)
    done = play(ARGV[cli], worktree, env)
    assert done.returncode == json.loads((capture(name) / "meta.json").read_text())["rc"]


def test_the_fixture_puts_all_five_fakes_first_on_path(fake_cli_on_path: FakeCLIs) -> None:
    for name in ("opencode", "gemini", "qwen"):
        assert fake_cli_on_path.harness(name) is getattr(fake_cli_on_path, name)
        shim = fake_cli_on_path.bin_dir / name
        assert shim.read_text().startswith("#!/bin/sh\n")
        assert os.access(shim, os.X_OK)
        found = subprocess.run(
            ["sh", "-c", f"command -v {name}"], capture_output=True, text=True, check=True
        )
        assert found.stdout.strip() == str(shim)


# thirdshift's own Harnesses run the fakes, and their readers read them as the real CLIs

CHOICES = {  # a model (and opencode's effort) given, so that their flags are in the argv
    "opencode": opencode_choice("mock/mock-model", "high", ["--title", "t"]),
    "gemini": gemini_choice("gemini-3.8-flash", extra_args=["--approval-mode", "yolo"]),
    "qwen": qwen_choice("mock-model", extra_args=["--auth-type", "openai"]),
}


def harness_argv(cli: str, resume: str | None = None) -> list[str]:
    choice = CHOICES[cli]
    return list(choice.harness.invocation(choice, resume, "unused").argv)


def read(cli: str, stdout: bytes, exit_code: int, worktree: Path) -> Any:
    """A real reader of ``cli`` fed ``stdout`` line by line, then told the exit code."""
    reader = CHOICES[cli].harness.reader(worktree)
    for line in stdout.decode().splitlines():
        reader.feed(line)
    finish_reading(reader, exit_code)
    return reader


@pytest.mark.parametrize("cli", ["opencode", "gemini", "qwen"])
def test_the_real_readers_read_the_fakes_sessions_failures_and_resumes(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path, cli: str
) -> None:
    fakes = fake_cli_on_path.harness(cli)
    fakes.script(steps.run("echo hi"), steps.say("all done"))
    fakes.script(steps.say("continued"))
    fakes.script(API_401)
    fakes.script(steps.say("never played"))

    first = play(harness_argv(cli), worktree, env)
    reader = read(cli, first.stdout, first.returncode, worktree)
    assert (first.returncode, reader.failed) == (0, False)
    assert (reader.session_id, reader.final_message) == (FIRST_ID[cli], "all done")
    again = play(harness_argv(cli, FIRST_ID[cli]), worktree, env)
    resumed = read(cli, again.stdout, again.returncode, worktree)
    assert (resumed.session_id, resumed.final_message) == (FIRST_ID[cli], "continued")

    done = play(harness_argv(cli), worktree, env)
    failed = read(cli, done.stdout, done.returncode, worktree)
    assert failed.failed
    assert failed.failure.kind is AuthFailed

    unknown_id = "ses_unknown1" if cli == "opencode" else str(uuid4())
    unknown = play(harness_argv(cli, unknown_id), worktree, env)
    assert read(cli, unknown.stdout, unknown.returncode, worktree).failed
    told = harness_named(cli).stderr_failure(unknown.stderr.decode().splitlines()[0])
    assert told is not None
    assert told.kind is ResumeTargetMissing


def test_gemini_read_after_a_stop_is_an_interruption_though_it_exited_0(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path
) -> None:
    fake_cli_on_path.gemini.script(steps.hang())
    process = subprocess.Popen(
        harness_argv("gemini"),
        cwd=worktree,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    fake_cli_on_path.gemini.wait_for_call(0, hanging=True)
    os.killpg(process.pid, signal.SIGTERM)
    out, _ = process.communicate(timeout=30)
    reader = read("gemini", out, process.returncode, worktree)
    assert (process.returncode, reader.failed, reader.final_message) == (0, True, None)
    assert reader.session_id == FIRST_ID["gemini"]


# Sessions: ids, Resume, unknown ids


def test_opencode_has_its_session_id_on_every_line_and_ends_with_a_stopped_step(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path, tmp_path: Path
) -> None:
    fake_cli_on_path.opencode.script(steps.run("echo hi"), steps.say("first"))
    fake_cli_on_path.opencode.script(steps.say("again")).script(steps.say("never played"))
    stream = events(play(ARGV["opencode"], worktree, env).stdout)
    assert [event["type"] for event in stream] == [
        "step_start", "tool_use", "step_finish", "step_start", "text", "step_finish",
    ]  # fmt: skip
    assert [event["part"].get("reason") for event in stream if event["type"] == "step_finish"] == [
        "tool-calls",
        "stop",
    ]
    ids = {event["sessionID"] for event in stream} | {
        event["part"]["sessionID"] for event in stream
    }
    assert ids == {"ses_fake1"}
    assert stream[1]["part"]["state"]["output"] == "hi\n"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = play([*ARGV["opencode"], "-s", "ses_fake1"], elsewhere, env)  # from any cwd
    assert {event["sessionID"] for event in events(again.stdout)} == {"ses_fake1"}

    unknown = play([*ARGV["opencode"], "-s", "ses_unknown"], worktree, env)
    assert (unknown.returncode, unknown.stdout) == (1, b"")
    assert unknown.stderr == SESSION_NOT_FOUND.encode() + b"\n"
    assert b"Error: \x1b[0mSession not found" in unknown.stderr  # as the real one colours it
    _first, resumed, refused = fake_cli_on_path.opencode.calls
    assert (resumed.resumed, resumed.session_id, refused.steps) == (
        "ses_fake1",
        "ses_fake1",
        ["say"],
    )


# Each refusal as the real CLI words it (found by the conformance suite on the pinned CLIs):
# elsewhere (a folder with no session of its own) and here (one where the CLI made a session).
@pytest.mark.parametrize(
    ("cli", "refusals", "exit_code"),
    [
        (
            "gemini",
            (
                "Error resuming session: No previous sessions found for this project.\n",
                'Error resuming session: Invalid session identifier "{id}".\n'
                "  Searched for sessions in {home}/.gemini/tmp/{project}/chats.\n"
                "  Use --list-sessions to see available sessions, then use --resume {{number}}, "
                "--resume {{uuid}}, or --resume latest.\n",
            ),
            42,
        ),
        (
            "qwen",
            (
                # A UUID is looked up as an id; anything else as a title.
                "No saved session found with ID {id}. Run `qwen --resume` without an ID to "
                "choose from existing sessions.\n",
                'No saved session found with title "{id}".\n',
            ),
            1,
        ),
    ],
)
def test_gemini_and_qwen_resume_only_the_sessions_of_their_cwd(
    *,
    fake_cli_on_path: FakeCLIs,
    env: dict[str, str],
    worktree: Path,
    tmp_path: Path,
    cli: str,
    refusals: tuple[str, str],
    exit_code: int,
) -> None:
    fakes = fake_cli_on_path.harness(cli)
    for text in ("first", "again", "not played", "not played either"):
        fakes.script(steps.say(text))
    first = events(play(ARGV[cli], worktree, env).stdout)
    session_id = FIRST_ID[cli]
    assert first[0]["session_id"] == session_id
    again = events(play([*ARGV[cli], "-r", session_id], worktree, env).stdout)
    assert again[0]["session_id"] == session_id

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd, wanted, refusal in [
        (elsewhere, session_id, refusals[0]),
        (worktree, "fake-session-1", refusals[1]),
    ]:
        refused = play([*ARGV[cli], "-r", wanted], cwd, env)
        assert (refused.returncode, refused.stdout) == (exit_code, b"")
        text = refusal.format(id=wanted, home=env["HOME"], project=cwd.name)
        assert refused.stderr.decode() == text
    assert [call.steps for call in fakes.calls] == [["say"]] * 4  # refused calls use their script


def test_gemini_takes_its_prompt_from_stdin_with_any_p_text_after_it(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path
) -> None:
    fake_cli_on_path.gemini.script(steps.say("one")).script(steps.say("two"))
    plain = events(play(ARGV["gemini"], worktree, env, prompt="fix it\n").stdout)
    assert plain[1] == {**plain[1], "role": "user", "content": "fix it\n"}
    appended = events(play([*ARGV["gemini"], "-p", "now"], worktree, env, prompt="fix it").stdout)
    assert appended[1]["content"] == "fix it\n\nnow"
    assert fake_cli_on_path.gemini.calls[0].stdin == "fix it\n"


def test_the_yolo_chatter_goes_to_stderr_as_the_real_clis_print_it(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path
) -> None:
    fake_cli_on_path.gemini.script(steps.say("hi")).script(steps.say("hi"))
    fake_cli_on_path.qwen.script(steps.say("hi")).script(steps.say("hi"))
    assert play(ARGV["gemini"], worktree, env).stderr == YOLO * 2
    assert play(["gemini", "-o", "stream-json"], worktree, env).stderr == b""
    warning = (capture("qwen-hello") / "stderr.txt").read_text().splitlines()[1]
    assert play(ARGV["qwen"], worktree, env).stderr.decode() == warning + "\n"
    quiet = {**env, "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
    assert play(ARGV["qwen"], worktree, quiet).stderr == b""


# Background work: left running by opencode and Gemini, killed by Qwen (said only in a file)


@pytest.mark.parametrize("cli", ["opencode", "gemini"])
def test_opencode_and_gemini_leave_background_work_running_in_its_own_session(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path, cli: str
) -> None:
    fake_cli_on_path.harness(cli).script(steps.background("sleep 300"), steps.say("started"))
    done = play(ARGV[cli], worktree, env)
    assert done.returncode == 0
    (call,) = fake_cli_on_path.harness(cli).calls
    (task,) = call.started
    assert (task.what, task.command, task.running) == ("background", "sleep 300", True)
    assert os.getsid(task.pid) == task.pid != call.sid  # its own session: it outlived the CLI
    stream = events(done.stdout)
    if cli == "gemini":
        tool_use, result = (e for e in stream if e["type"] in ("tool_use", "tool_result"))
        assert tool_use["parameters"] == {
            "command": "sleep 300",
            "is_background": True,
            "description": "sleep 300",
        }
        assert result["output"] == (
            f"Command moved to background (PID: {task.pid}). Output hidden. Press Ctrl+B to view."
        )
        assert stream[-1]["status"] == "success"
    else:
        (tool_use,) = (event for event in stream if event["type"] == "tool_use")
        assert tool_use["part"]["state"]["input"] == {"command": "sleep 300 &"}
        assert stream[-1]["part"]["reason"] == "stop"
    assert b"killed" not in done.stdout
    assert b"cancelled" not in done.stdout
    (left,) = kill_left_running(fake_cli_on_path, 1)
    assert left == f"background `sleep 300` of fake {cli} call 1 (pid {task.pid})"


def test_qwen_kills_background_work_at_exit_and_says_so_only_in_its_status_file(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path
) -> None:
    fake_cli_on_path.qwen.script(steps.background("sleep 300"), steps.say("started"))
    fake_cli_on_path.qwen.script(steps.background("exit 3", grace=60))
    done = play(ARGV["qwen"], worktree, env)
    assert done.returncode == 0
    first = fake_cli_on_path.qwen.calls[0]
    (task,) = steps_started(first)
    wait_until(lambda: not running(task.pid), "killed")
    stream = events(done.stdout)
    results = [e["message"]["content"][0]["content"] for e in stream if e["type"] == "user"]
    assert results == [f"Background shell bg_00010000 started (pid {task.pid})."]
    assert stream[-1]["type"] == "result"
    assert b"cancelled" not in done.stdout
    home = Path(env["HOME"])
    (status_file,) = home.glob(f".qwen/tmp/*/background-shells/{first.session_id}/*.status.json")
    status = json.loads(status_file.read_text())
    assert status["status"] == "cancelled"
    assert status["endTime"] >= status["startTime"]
    assert (status["id"], status["pid"], status["command"]) == (
        "bg_00010000",
        task.pid,
        "sleep 300",
    )
    assert status_file.stat().st_mode & 0o777 == 0o600

    again = play(ARGV["qwen"], worktree, env)  # background work that ends in its grace
    assert again.returncode == 0
    second = fake_cli_on_path.qwen.calls[1]
    (done_file,) = home.glob(f".qwen/tmp/*/background-shells/{second.session_id}/*.status.json")
    ended = json.loads(done_file.read_text())
    assert (ended["status"], ended["exitCode"]) == ("completed", 3)


# Stops: what each CLI does on SIGINT and SIGTERM to its group, and what it leaves running


@pytest.mark.parametrize(
    ("cli", "signo", "returncode", "command_survives"),
    [
        ("opencode", signal.SIGINT, -signal.SIGINT, True),
        ("opencode", signal.SIGTERM, -signal.SIGTERM, True),
        ("gemini", signal.SIGINT, 0, True),
        ("gemini", signal.SIGTERM, 0, True),
        ("qwen", signal.SIGINT, -signal.SIGINT, False),
        ("qwen", signal.SIGTERM, -signal.SIGTERM, False),
    ],
)
def test_a_stop_during_a_command(
    *,
    fake_cli_on_path: FakeCLIs,
    env: dict[str, str],
    worktree: Path,
    cli: str,
    signo: signal.Signals,
    returncode: int,
    command_survives: bool,
) -> None:
    fakes = fake_cli_on_path.harness(cli)
    fakes.script(steps.run("sleep 300"), steps.say("never said"))
    process = subprocess.Popen(
        ARGV[cli],
        cwd=worktree,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    wait_until(lambda: bool(fakes.calls and steps_started(fakes.calls[0])), "running its command")
    os.killpg(process.pid, signo)
    out, err = process.communicate(timeout=30)
    assert process.returncode == returncode
    (call,) = fakes.calls
    (command,) = steps_started(call)
    assert call.signals == [signo.name]
    stream = events(out)
    assert all(event["type"] != "result" for event in stream)
    if cli == "opencode":
        assert ([event["type"] for event in stream], err) == (["step_start"], b"")
    elif cli == "gemini":
        assert [event["type"] for event in stream] == ["init", "message", "tool_use"]
        assert (err, call.exit_code) == (YOLO * 2, 0)
    else:
        cancelled = stream[-1]["message"]["content"][0]
        assert (cancelled["is_error"], cancelled["content"]) == (True, CANCELLED)
        assert err.endswith(b"Operation cancelled.\n")
    assert call.died_by == (None if cli == "gemini" else signo.name)
    if command_survives:
        assert command.running
        assert os.getsid(command.pid) == command.pid
        kill_left_running(fake_cli_on_path, 1)
    else:
        wait_until(lambda: not running(command.pid), "killed")


@pytest.mark.parametrize(
    ("cli", "returncode"),
    [("opencode", -signal.SIGTERM), ("gemini", 0), ("qwen", -signal.SIGTERM)],
)
def test_a_stop_while_the_prompt_is_read_is_the_clis_stop_too(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path, cli: str, returncode: int
) -> None:
    fake_cli_on_path.harness(cli).script(steps.say("never said"))
    process = subprocess.Popen(
        ARGV[cli],
        cwd=worktree,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        fake_cli_on_path.harness(cli).wait_for_call(0)  # its prompt is never sent: it waits
        os.killpg(process.pid, signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert (process.returncode, out) == (returncode, b"")


def test_a_hostile_session_id_names_no_folder_outside_qwens_own(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path
) -> None:
    fake_cli_on_path.qwen.script(fake.session_id("../../../escaped"), steps.background("true"))
    assert play(ARGV["qwen"], worktree, env).returncode == 0
    home = Path(env["HOME"])
    (status_file,) = home.rglob("*.status.json")
    assert status_file.parent.parent.name == "background-shells"
    assert status_file.parent.name.startswith("unsafe-")
    assert sorted(path.name for path in home.iterdir()) == [".qwen"]


def test_qwen_runs_as_an_entry_and_a_worker_that_only_a_signal_to_the_group_stops(
    fake_cli_on_path: FakeCLIs, env: dict[str, str], worktree: Path
) -> None:
    fake_cli_on_path.qwen.script(steps.run("sleep 300"), steps.say("never said"))
    process = subprocess.Popen(
        ARGV["qwen"],
        cwd=worktree,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None
    wait_until(
        lambda: bool(fake_cli_on_path.qwen.calls and steps_started(fake_cli_on_path.qwen.calls[0])),
        "running its command",
    )
    (call,) = fake_cli_on_path.qwen.calls
    worker, command = call.started
    assert call.pid == process.pid
    assert worker.what == "worker"
    assert psutil.Process(worker.pid).ppid() == process.pid  # the entry is the worker's parent
    os.kill(process.pid, signal.SIGINT)  # the entry alone: it dies, the worker plays on
    assert process.wait(timeout=30) == -signal.SIGINT
    assert worker.running
    assert command.running
    stdout = process.stdout.fileno()
    os.set_blocking(stdout, False)
    so_far = os.read(stdout, 1 << 20)  # the lines up to the command's tool use
    with pytest.raises(BlockingIOError):  # and no end of the stream: the worker holds it open
        os.read(stdout, 1 << 20)
    os.killpg(process.pid, signal.SIGINT)  # now the group: the worker cancels and dies
    wait_until(lambda: not running(worker.pid) and not running(command.pid), "stopped")
    os.set_blocking(stdout, True)
    cancelled = events(so_far + process.stdout.read())[-1]["message"]["content"][0]
    assert (cancelled["is_error"], cancelled["content"]) == (True, CANCELLED)
    process.stdout.close()


# The fixture's teardown checks hold for the new fakes too
