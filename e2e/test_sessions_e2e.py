"""Sessions end to end: within, the real adapter and readers, the fake CLIs as real processes.

These cover wiring, not rules: the rule variations stay in-process (tests/test_sessions.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_thirdshift import FakeCLIs
from thirdshift import Choice, Logs, SessionFailed, Sessions, Watchdogs, claude, codex
from thirdshift._logs import command_stamp
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps

KILLED_LINE = (
    "implement: the session ended with a background task still running (sleep 300), which was "
    "killed; resuming it once"
)


def run_implement(choice: Choice, worktree: Path, logs_dir: Path) -> tuple[Sessions, list[str]]:
    lines: list[str] = []
    with Sessions.within(Logs(logs_dir, "repo"), worktree, choice, progress=lines.append) as s:
        s.run("implement", "Make the tests pass.")
    return s, lines


@pytest.mark.parametrize(
    ("choice", "resume_part"),
    [
        (claude(model="opus", effort="high"), ["--resume", "fake-session-1"]),
        (codex(model="gpt-5.5", effort="high"), ["resume", "fake-thread-1"]),
    ],
    ids=["claude", "codex"],
)
def test_a_session_that_leaves_its_tests_running_is_resumed_once(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice, resume_part: list[str]
) -> None:
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(steps.background("sleep 300", description="sleep 300"), steps.say("started"))
    cli.script(steps.run("true"), steps.say("all green"))

    sessions, lines = run_implement(choice, tmp_path, tmp_path / "logs")

    first, resume = cli.calls
    if choice.harness.name == "claude":
        assert resume.argv == [*first.argv, *resume_part]
    else:  # Codex: every flag repeated, the resume part just before the final "-"
        assert first.argv[-1] == "-"
        assert resume.argv == [*first.argv[:-1], *resume_part, "-"]
    assert resume.cwd == first.cwd == tmp_path
    assert resume.stdin is not None
    assert resume.stdin.startswith("Your background work (sleep 300) was killed")
    assert "in the foreground" in resume.stdin
    assert first.stdin == "Make the tests pass."
    for line in (
        "implement: session started",
        KILLED_LINE,
        "implement-resume: session started",
    ):
        assert line in lines
    assert any(line.startswith("implement-resume: session ended after ") for line in lines)
    assert not first.started[0].running

    logs = sorted((tmp_path / "logs").glob("*.jsonl"))
    stamp = command_stamp()
    assert [log.name for log in logs] == [
        f"repo-{stamp}-implement-resume.jsonl",
        f"repo-{stamp}-implement.jsonl",
    ]
    assert logs[1].read_bytes() == first.stdout
    assert logs[0].read_bytes() == resume.stdout
    assert sessions.last_log == logs[0]


def test_a_session_that_leaves_its_tests_running_and_exits_3_is_not_resumed(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.say("bye"), steps.exit(3))

    with pytest.raises(SessionFailed) as failed:
        run_implement(claude(), tmp_path, tmp_path / "logs")

    assert str(failed.value) == "claude exited 3"
    assert len(fake_cli_on_path.claude.calls) == 1


def test_progress_after_a_failed_session_never_mentions_background_work(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.exit(3))
    lines: list[str] = []

    with (
        pytest.raises(SessionFailed),
        Sessions.within(Logs(tmp_path, "r"), tmp_path, claude(), progress=lines.append) as s,
    ):
        s.run("implement", "go")

    assert not [line for line in lines if "background" in line]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            (fake.codex_error("unexpected status 401 Unauthorized: bad key"), steps.exit(1)),
            "codex exited 1: unexpected status 401 Unauthorized: bad key",
        ),
        (
            (fake.fail_turn("stream disconnected", exit_code=0),),
            "codex's turn failed: stream disconnected",
        ),
        ((cli_steps.die("SIGKILL"),), "codex exited by signal SIGKILL"),
    ],
    ids=["exit-1-with-error-event", "turn-failed-exit-0", "sigkill"],
)
def test_codex_failures_give_exact_texts(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, script: tuple[steps.Step, ...], message: str
) -> None:
    fake_cli_on_path.codex.script(*script)

    with pytest.raises(SessionFailed) as failed:
        run_implement(codex(), tmp_path, tmp_path / "logs")

    assert str(failed.value) == message


def test_a_claude_resume_from_the_wrong_folder_fails_with_claudes_words(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fake_cli_on_path.claude.script(steps.say("hi"))
    fake_cli_on_path.claude.script(steps.say("never"))
    harness = claude().harness
    from thirdshift._machine import MachineOutside

    MachineOutside(tmp_path / "a", claude(), progress=list[str]().append).run_session(
        "one", None, "p", tmp_path / "1.jsonl"
    )
    with pytest.raises(SessionFailed) as failed:
        MachineOutside(tmp_path / "b", claude(), progress=list[str]().append).run_session(
            "two", "fake-session-1", "p", tmp_path / "2.jsonl"
        )

    assert harness.name == "claude"
    assert str(failed.value) == (
        "claude exited 1: No conversation found with session ID: fake-session-1"
    )


def test_a_grandchild_holding_stdout_does_not_hang_the_session(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(cli_steps.grandchild_holds_stdout(120), steps.say("done"))
    fake_cli_on_path.claude.script(steps.say("done in the foreground"))

    with Sessions.within(Logs(tmp_path, "r"), tmp_path, claude(), progress=list[str]().append) as s:
        assert s.run_to_final_message("implement", "go") == "done in the foreground"

    # Still running once the drain was over, so stopped: work killed as the session ended.
    call, resume = fake_cli_on_path.claude.calls
    assert not call.started[0].running
    assert resume.resumed == call.session_id
    assert resume.stdin is not None
    assert "sleep 120) was killed" in resume.stdin
    assert s.records[0].log.read_bytes() == call.stdout


def test_an_escapee_and_a_daemon_are_gone_after_the_session(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(
        cli_steps.escape_setsid(120), cli_steps.daemon(120), steps.say("done")
    )
    fake_cli_on_path.codex.script(steps.say("done in the foreground"))

    with Sessions.within(
        Logs(tmp_path, "r"),
        tmp_path,
        codex(),
        progress=list[str]().append,
        watchdogs=Watchdogs(stop_grace=0.5),
    ) as s:
        assert s.run_to_final_message("implement", "go") == "done in the foreground"

    call, resume = fake_cli_on_path.codex.calls
    assert len(call.started) == 2
    assert not [process for process in call.started if process.running]
    # Both outlived the CLI and were stopped: work killed as the session ended, resumed once.
    assert resume.resumed == call.session_id
    assert resume.stdin is not None
    assert "sleep 120; " in resume.stdin
    assert s.records[0].log.read_bytes() == call.stdout


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.parametrize("choice", [claude(), codex()], ids=["claude", "codex"])
def test_skills_are_copied_for_the_harness_while_within_lasts_and_git_stays_clean(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice
) -> None:
    skills = tmp_path / "skills"
    (skills / "ship").mkdir(parents=True)
    (skills / "ship" / "SKILL.md").write_text("# ship\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(steps.load_skill("ship"), steps.say("shipped"))
    cli.script(steps.load_skill("ship"), steps.say("shipped again"))

    skills_dir = choice.harness.skills_dir
    for _ in range(2):
        with Sessions.within(
            Logs(tmp_path / "logs", "r"), repo, choice, skills=skills, progress=list[str]().append
        ) as s:
            s.run("implement", "/ship the thing")
            assert (repo / skills_dir / "ship" / "SKILL.md").read_text() == "# ship\n"
            assert git("status", "--porcelain", cwd=repo) == ""
        assert not (repo / skills_dir.split("/")[0]).exists()

    assert git("status", "--porcelain", cwd=repo) == ""
    expected_prompt = "/ship the thing" if choice.harness.name == "claude" else "$ship the thing"
    assert [call.stdin for call in cli.calls] == [expected_prompt, expected_prompt]
