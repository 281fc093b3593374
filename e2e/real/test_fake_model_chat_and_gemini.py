"""The REAL opencode, Gemini CLI and Qwen Code under the fake model, driven with plain subprocess.

These check the fake model, not the Harnesses (their conformance is another suite's), so each
test runs the CLI with the argv ``OTHER-CLIS.md`` gives, prompt on stdin, and picks what it
asserts on out of the JSON lines itself: the final message, the session id, the tool output
that reached the model. Background work is recorded as each CLI leaves it: opencode's and
Gemini's survive the CLI (the test kills them), Qwen's is killed as Qwen exits. One test runs
each through ``Sessions.within`` and its Harness, under both environment policies.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from thirdshift import Logs, Sessions, choice
from thirdshift.testing.fakemodel import FakeModel, ScriptedModel
from thirdshift.testing.steps import background, http_error, run, say

TIMEOUT = 120.0  # seconds for one CLI run; opencode starts in 3-6 s on a busy machine


@dataclass(frozen=True)
class Ran:
    """One CLI run: its exit code and the JSON objects it printed, in order."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str


@dataclass(frozen=True)
class Cli:
    """How a test drives one CLI headless, and reads what it needs from the stream."""

    name: str
    argv: tuple[str, ...]
    resume_flag: str
    session_of: Callable[[list[dict[str, Any]]], str | None]
    final_of: Callable[[list[dict[str, Any]]], str | None]


def _opencode_final(events: list[dict[str, Any]]) -> str | None:
    texts = [e["part"]["text"] for e in events if e.get("type") == "text"]
    return texts[-1] if texts else None


def _gemini_final(events: list[dict[str, Any]]) -> str | None:
    """The assistant text after the last tool event (Gemini streams it as deltas)."""
    text: list[str] = []
    for event in events:
        if event.get("type") in ("tool_use", "tool_result"):
            text = []
        elif event.get("type") == "message" and event.get("role") == "assistant":
            text.append(event["content"])
    return "".join(text) or None


def _qwen_final(events: list[dict[str, Any]]) -> str | None:
    results = [e for e in events if e.get("type") == "result"]
    return results[-1].get("result") if results else None


def _first(key: str, *, event_type: str | None = None) -> Callable[[list[dict[str, Any]]], Any]:
    def session(events: list[dict[str, Any]]) -> Any:
        for event in events:
            if (event_type is None or event.get("type") == event_type) and event.get(key):
                return event[key]
        return None

    return session


CLIS = {
    "opencode": Cli(
        "opencode",
        ("opencode", "run", "--format", "json", "--auto"),
        "-s",
        _first("sessionID"),
        _opencode_final,
    ),
    "gemini": Cli(
        "gemini",
        ("gemini", "-o", "stream-json", "-y"),
        "-r",
        _first("session_id", event_type="init"),
        _gemini_final,
    ),
    "qwen": Cli(
        "qwen",
        ("qwen", "-o", "stream-json", "--auth-type", "openai", "-y"),
        "-r",
        _first("session_id"),
        _qwen_final,
    ),
}
PARAMS = [pytest.param(CLIS[name], id=name, marks=pytest.mark.real_cli(name)) for name in CLIS]


def scripted(fake_model: FakeModel, cli: Cli) -> ScriptedModel:
    side: ScriptedModel = getattr(fake_model, cli.name)
    return side


def run_cli(argv: Sequence[str], prompt: str, cwd: Path) -> Ran:
    """Run one CLI session in its own process group; the whole group is killed on a timeout."""
    # opencode takes its directory from PWD, not from its cwd: a stale PWD sends it elsewhere.
    env = {**os.environ, "PWD": str(cwd)}
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(prompt, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return Ran(process.returncode, events, stderr)


def running_with(needle: str) -> list[int]:
    """Live processes whose command line holds ``needle``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if needle.encode() not in cmdline.read():
                    continue
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
        except OSError:
            continue
        found.append(int(entry))
    return found


def gone_within(needle: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running_with(needle):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kill_all_with(needle: str) -> None:
    for pid in running_with(needle):
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert gone_within(needle, 10), f"still running after SIGKILL: {running_with(needle)}"


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    path = tmp_path / "worktree"
    path.mkdir()
    return path


@pytest.mark.parametrize("cli", PARAMS)
def test_hello(fake_model: FakeModel, worktree: Path, cli: Cli) -> None:
    model = scripted(fake_model, cli)
    model.script(say("hello from the fake model"))

    ran = run_cli(cli.argv, "Say hello.\n", worktree)

    assert ran.returncode == 0, ran.stderr
    assert cli.final_of(ran.events) == "hello from the fake model"
    assert cli.session_of(ran.events)
    (asked,) = model.scripted_requests()
    assert asked.user_text is not None
    assert "Say hello." in asked.user_text


@pytest.mark.parametrize("cli", PARAMS)
def test_a_foreground_command_runs_and_its_output_reaches_the_model(
    fake_model: FakeModel, worktree: Path, cli: Cli
) -> None:
    model = scripted(fake_model, cli)
    model.script(run("echo hi-from-tool > ran.txt; echo hi-from-tool"), say("it ran"))

    ran = run_cli(cli.argv, "Run it.\n", worktree)

    assert ran.returncode == 0, ran.stderr
    assert (worktree / "ran.txt").read_text() == "hi-from-tool\n"
    assert cli.final_of(ran.events) == "it ran"
    tool_call, answered = model.scripted_requests()
    assert tool_call.reply.startswith("run(")
    (result,) = answered.tool_results
    assert "hi-from-tool" in result


LEFT_RUNNING = {"opencode": True, "gemini": True, "qwen": False}
"""Whether background work outlives the CLI: opencode and Gemini leave it, Qwen kills it."""


@pytest.mark.parametrize("cli", PARAMS)
def test_background_work_left_running_as_each_cli_leaves_it(
    fake_model: FakeModel, worktree: Path, cli: Cli
) -> None:
    work = worktree / "long-work.sh"
    work.write_text("sleep 300\n")
    model = scripted(fake_model, cli)
    model.script(background(f"sh {work}", description="long work"), say("started it"))

    try:
        ran = run_cli(cli.argv, "Start the long work.\n", worktree)

        assert ran.returncode == 0, ran.stderr
        assert cli.final_of(ran.events) == "started it"
        assert "started it" in json.dumps(ran.events)
        if LEFT_RUNNING[cli.name]:
            assert running_with(str(work)), "the background work should outlive the CLI"
        else:
            assert gone_within(str(work), 10), "the CLI should kill its background work"
            # Qwen says so only in its own state files: a status file per background shell.
            (status,) = Path(os.environ["HOME"]).glob(".qwen/tmp/*/background-shells/*/*.status")
            record = json.loads(status.read_text())
            assert (record["status"], record["command"]) == ("cancelled", f"sh {work}")
    finally:
        kill_all_with(str(work))


@pytest.mark.parametrize("cli", PARAMS)
def test_a_resume_by_id_continues_the_same_session(
    fake_model: FakeModel, worktree: Path, cli: Cli
) -> None:
    model = scripted(fake_model, cli)
    model.script(say("first answer"))
    model.script(say("second answer"))

    first = run_cli(cli.argv, "First prompt.\n", worktree)
    session = cli.session_of(first.events)
    assert first.returncode == 0, first.stderr
    assert session is not None
    second = run_cli((*cli.argv, cli.resume_flag, session), "Second prompt.\n", worktree)

    assert second.returncode == 0, second.stderr
    assert cli.session_of(second.events) == session
    assert cli.final_of(second.events) == "second answer"
    resumed = model.scripted_requests()[-1]
    assert resumed.user_text is not None
    assert "Second prompt." in resumed.user_text
    assert "first answer" in json.dumps(dict(resumed.body)), "the history was not resent"


AUTH_FAILED_EXIT = {"opencode": 1, "gemini": 145, "qwen": 1}
"""How each CLI exits on a 401: Gemini exits with the HTTP status masked to 8 bits."""


@pytest.mark.parametrize("cli", PARAMS)
def test_a_401_is_reported_in_the_stream_and_the_exit_code(
    fake_model: FakeModel, worktree: Path, cli: Cli
) -> None:
    model = scripted(fake_model, cli)
    model.script(http_error(401, message="fake: Incorrect API key provided"))

    ran = run_cli(cli.argv, "Say hello.\n", worktree)

    assert ran.returncode == AUTH_FAILED_EXIT[cli.name], ran.stderr
    assert "fake: Incorrect API key provided" in json.dumps(ran.events)
    assert [request.reply for request in model.scripted_requests()] == ["http_error(401)"]


@pytest.mark.parametrize("policy", ["inherit", "minimal"])
@pytest.mark.parametrize("cli", PARAMS)
def test_a_session_through_sessions_within_works_in_its_worktree(
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: Cli,
    policy: Literal["inherit", "minimal"],
) -> None:
    # The orchestrator runs elsewhere: opencode, which works in $PWD, must be told the worktree.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", str(tmp_path))
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    scripted(fake_model, cli).script(run("pwd > where.txt"), say("done"))

    logs = Logs(tmp_path / "logs", "repo")
    chosen = dataclasses.replace(choice(cli.name), env_policy=policy)
    with Sessions.within(logs, worktree, chosen, progress=list[str]().append) as s:
        assert s.run_to_final_message("implement", "Where are you?") == "done"

    assert (worktree / "where.txt").read_text() == f"{worktree}\n"
    assert not (tmp_path / "where.txt").exists()
