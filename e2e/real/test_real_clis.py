"""The REAL claude and codex under the fake model, through Sessions.within and `thirdshift run`.

Only the model is scripted: the CLI runs its real tools, its real background tasks, its real
``--resume``, and thirdshift reads its real stream. Each scenario is a few seconds; a Claude
session that leaves work running takes ~5 s more, because Claude waits that long after its
``result`` before it kills the work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from thirdshift import Choice, Logs, Sessions, claude, codex
from thirdshift._prompts import resume_prompt
from thirdshift.testing.fakemodel import FakeModel, ScriptedModel
from thirdshift.testing.steps import background, run, say

KILLED_LINE = (
    "implement: the session ended with a background task still running (sleep 300), which was "
    "killed; resuming it once"
)

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))
CLI_NAMES = [
    pytest.param("claude", marks=pytest.mark.real_cli("claude")),
    pytest.param("codex", marks=pytest.mark.real_cli("codex")),
]
CHOICES = [
    pytest.param(claude(), id="claude", marks=pytest.mark.real_cli("claude")),
    pytest.param(codex(), id="codex", marks=pytest.mark.real_cli("codex")),
]


def scripted(fake_model: FakeModel, choice: Choice) -> ScriptedModel:
    side: ScriptedModel = getattr(fake_model, choice.harness.name)
    return side


def within(tmp_path: Path, choice: Choice, lines: list[str]) -> AbstractContextManager[Sessions]:
    worktree = tmp_path / "worktree"
    worktree.mkdir(exist_ok=True)
    return Sessions.within(Logs(tmp_path / "logs", "repo"), worktree, choice, progress=lines.append)


@pytest.mark.real_cli("claude")
def test_claude_makes_its_temporary_folder_in_the_tests_folder_not_in_tmp(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    # The real Claude makes $TMPDIR/claude-<uid> as it starts, whatever CLAUDE_CODE_TMPDIR says.
    fake_model.claude.script(say("hello"))
    lines: list[str] = []

    with within(tmp_path, claude(), lines) as sessions:
        assert sessions.run_to_final_message("hello", "Say hello.") == "hello"

    made = Path(os.environ.get("TMPDIR", "/tmp")) / f"claude-{os.getuid()}"  # as Node reads it
    assert made.is_dir()
    assert made.is_relative_to(tmp_path)


@pytest.mark.parametrize("choice", CHOICES)
def test_hello(fake_model: FakeModel, tmp_path: Path, choice: Choice) -> None:
    model = scripted(fake_model, choice)
    model.script(say("hello from the fake model"))
    lines: list[str] = []

    with within(tmp_path, choice, lines) as sessions:
        final = sessions.run_to_final_message("hello", "Say hello.")

    assert final == "hello from the fake model"
    (asked,) = model.scripted_requests()
    assert asked.user_text is not None
    assert "Say hello." in asked.user_text
    assert "hello: session started" in lines


@pytest.mark.parametrize("choice", CHOICES)
def test_a_foreground_command_runs_for_real(
    fake_model: FakeModel, tmp_path: Path, choice: Choice
) -> None:
    model = scripted(fake_model, choice)
    model.script(run("echo made > made.txt && echo wrote it"), say("made it"))
    lines: list[str] = []

    with within(tmp_path, choice, lines) as sessions:
        final = sessions.run_to_final_message("make", "Make the file.")

    assert final == "made it"
    assert (tmp_path / "worktree" / "made.txt").read_text() == "made\n"
    first, second = model.scripted_requests()
    assert first.tool_results == ()
    (result,) = second.tool_results
    assert "wrote it" in result
    assert any("echo made > made.txt" in line for line in lines), lines
    assert sessions.endings == ()


@pytest.mark.parametrize("choice", CHOICES)
def test_background_work_killed_at_the_end_is_resumed_once_in_the_same_session(
    fake_model: FakeModel, tmp_path: Path, choice: Choice
) -> None:
    model = scripted(fake_model, choice)
    model.script(background("sleep 300", description="sleep 300"), say("started the tests"))
    model.script(say("ran them in the foreground: green"))
    lines: list[str] = []

    with within(tmp_path, choice, lines) as sessions:
        final = sessions.run_to_final_message("implement", "Make the tests pass.")

    assert final == "ran them in the foreground: green"
    assert lines.count(KILLED_LINE) == 1
    assert lines.count("implement-resume: session started") == 1
    assert sessions.endings == ()
    requests = model.scripted_requests()
    assert len({request.session_id for request in requests}) == 1  # the Resume kept the id
    resumed = requests[-1]
    assert resumed.user_text is not None
    assert resume_prompt(["sleep 300"]) in resumed.user_text
    logs = sorted(path.name for path in (tmp_path / "logs").glob("*.jsonl"))
    assert len(logs) == 2
    assert logs[0].endswith("-implement-resume.jsonl")
    assert logs[1].endswith("-implement.jsonl")


@pytest.mark.parametrize(
    "choice",
    [
        pytest.param(
            claude(env_policy="minimal"), id="claude", marks=pytest.mark.real_cli("claude")
        ),
        pytest.param(codex(env_policy="minimal"), id="codex", marks=pytest.mark.real_cli("codex")),
    ],
)
def test_the_fake_model_is_reached_under_the_minimal_environment_policy(
    fake_model: FakeModel, tmp_path: Path, choice: Choice
) -> None:
    # `minimal` passes a CLI only PATH, HOME, the locale and its own keys: what points it at the
    # fake model (and keeps its telemetry off) must survive in HOME and in those keys.
    model = scripted(fake_model, choice)
    model.script(say("reached under minimal"))
    with within(tmp_path, choice, []) as sessions:
        assert sessions.run_to_final_message("hello", "Say hello.") == "reached under minimal"


@pytest.mark.parametrize("cli", CLI_NAMES)
def test_the_thirdshift_command_runs_the_real_cli_against_the_fake_model(
    fake_model: FakeModel, tmp_path: Path, cli: str
) -> None:
    getattr(fake_model, cli).script(say("hello from the command"))
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    done = subprocess.run(
        [THIRDSHIFT, "run", "--harness", cli, "--logs", str(tmp_path / "logs"), "Say hello."],
        cwd=worktree,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "hello from the command\n"), done.stderr
