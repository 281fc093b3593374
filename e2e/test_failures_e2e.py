"""Real failure captures replayed by the fake CLIs through ``Sessions.within``: the class raised.

Each fake writes a capture's stdout (and stderr) byte for byte and exits with the capture's
exit code, so the real adapter and reader see what the real CLI wrote.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    AuthFailed,
    Choice,
    Logs,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFailed,
    Sessions,
    TurnLimitReached,
    UsageLimitReached,
    choice,
    claude,
)
from thirdshift._cli.as_json import usage_json
from thirdshift._cli.inspect import inspect_log
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps

TRANSCRIPTS = Path(__file__).parent.parent / "tests" / "transcripts"


def replay(fake_clis: FakeCLIs, name: str) -> Choice:
    """Script the capture ``name`` for its CLI; return the Choice that runs that CLI."""
    folder = TRANSCRIPTS / name
    harness = name.split("-", 1)[0]
    script: list[Any] = [
        cli_steps.no_events(),
        cli_steps.raw(folder.joinpath("stdout.jsonl").read_bytes()),
    ]
    stderr = folder.joinpath("stderr.txt").read_text()
    if stderr.strip():
        script.append(fake.stderr(stderr))
    code = json.loads(folder.joinpath("meta.json").read_text())["rc"]
    script.append(steps.exit(code, abrupt=True))
    fake_clis.harness(harness).script(*script)
    return choice(harness)


def failure_of(choice: Choice, worktree: Path, resume: str | None = None) -> SessionFailed:
    logs = Logs(worktree / "logs", "repo")
    with (
        pytest.raises(SessionFailed) as failed,
        Sessions.within(logs, worktree, choice, progress=lambda _: None) as sessions,
    ):
        sessions.run("implement", "Make the tests pass.")
    return failed.value


@pytest.mark.parametrize(
    ("name", "kind", "session_id"),
    [
        ("claude-429-retries2", RateLimited, "d04d2dbf-68e5-4664-b5d4-db5df8a24057"),
        ("claude-ratelimit-oauth", RateLimited, "3331ca5b-2156-4610-9aea-4b99aff6b446"),
        ("codex-429-retries1", RateLimited, "01a22fcb-e3ca-7142-9d71-ce70f35257f1"),
        ("claude-api-401", AuthFailed, "6411821f-0a79-42cf-8b5b-6da9ce19965d"),
        ("codex-api-401", AuthFailed, "01a22ac8-9670-73a1-8bea-222a56e63d60"),
        ("claude-529-retries1", Overloaded, "2363c4de-380b-4219-8b55-531ccf75ba77"),
        ("codex-503-overloaded", Overloaded, "01a22fcc-bb72-7611-bafc-16834a72f854"),
        ("claude-maxturns1", TurnLimitReached, "a19d1d70-0418-4cb4-9e93-46ac8d0d7186"),
        ("gemini-api-401", AuthFailed, "a6adcecf-06f4-41f0-a5ab-c6f55c3e4511"),
        ("opencode-api-401", AuthFailed, "ses_dd01ef29affeHzhvDs0RVWNI37"),
        ("qwen-api-401", AuthFailed, "939da518-89e0-4bd3-a264-81c46e76a802"),
    ],
)
def test_a_replayed_failure_raises_its_class_with_the_session_id(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, name: str, kind: type, session_id: str
) -> None:
    failure = failure_of(replay(fake_cli_on_path, name), tmp_path)

    assert type(failure) is kind
    assert failure.session_id == session_id
    meta = json.loads((TRANSCRIPTS / name / "meta.json").read_text())
    assert failure.exit_code == meta["rc"]  # 1, or Gemini's 145 (401 masked to 8 bits)
    assert failure.log is not None
    assert failure.log.read_bytes() == (TRANSCRIPTS / name / "stdout.jsonl").read_bytes()


def test_a_failed_sessions_ended_line_says_it_failed_ahead_of_its_usage(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    lines: list[str] = []
    with (
        pytest.raises(TurnLimitReached),
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            tmp_path,
            replay(fake_cli_on_path, "claude-maxturns1"),
            progress=lines.append,
        ) as sessions,
    ):
        sessions.run("implement", "Make the tests pass.")

    (ended,) = [line for line in lines if "session ended after" in line]
    # The elapsed time is the machine's; the rest is the capture's (it exited 1).
    assert re.fullmatch(
        r"implement: session ended after \d+s: failed \(claude exited 1\); 2 turns, \$0\.00024",
        ended,
    )


@pytest.mark.parametrize(
    "name", ["claude-429-retries2", "claude-maxturns1", "claude-api-401", "claude-529-retries1"]
)
def test_a_failed_sessions_record_holds_what_its_stream_said_as_inspect_reads_it(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, name: str
) -> None:
    logs = Logs(tmp_path / "logs", "repo")
    with (
        pytest.raises(SessionFailed),
        Sessions.within(
            logs, tmp_path, replay(fake_cli_on_path, name), progress=lambda _: None
        ) as sessions,
    ):
        sessions.run("implement", "Make the tests pass.")

    (record,) = sessions.records
    read = inspect_log(record.log, None)
    assert record.usage is not None
    assert usage_json(record.usage) == read["usage"]
    assert record.final_message == read["final_message"]


def test_a_claude_usage_limit_raises_usage_limit_reached_until_its_reset(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    failure = failure_of(replay(fake_cli_on_path, "claude-usagelimit-oauth"), tmp_path)

    assert isinstance(failure, UsageLimitReached)
    assert failure.resets_at == datetime(2026, 12, 1, 5, 12, 5, tzinfo=UTC)  # resetsAt 1796101925
    assert failure.session_id == "7f4eb002-09ec-48e4-8d44-165907705006"
    assert failure.retryable
    assert str(failure) == "claude exited 1: You've hit your session limit · resets 5:12am (UTC)"


def test_a_codex_usage_limit_raises_usage_limit_reached_at_the_next_5_12(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    before = datetime.now().astimezone()
    failure = failure_of(replay(fake_cli_on_path, "codex-usagelimit"), tmp_path)

    assert isinstance(failure, UsageLimitReached)
    assert failure.session_id == "01a22fcd-9ddd-7640-aedb-bce16b661a0f"
    assert failure.resets_at is not None
    local = failure.resets_at.astimezone(before.tzinfo)
    assert (local.hour, local.minute) == (5, 12)
    assert before < failure.resets_at <= before + timedelta(days=1)


def test_a_codex_resume_of_a_missing_thread_is_told_apart_by_its_stderr(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    choice = replay(fake_cli_on_path, "codex-resume-missing")
    failure = failure_of(choice, tmp_path)

    assert type(failure) is ResumeTargetMissing
    assert failure.session_id is None  # nothing on stdout
    assert str(failure) == (
        "codex exited 1: Error: thread/resume: thread/resume failed: no rollout found for thread "
        "id 0199a213-81c0-7800-8aa1-bbab2a035a53 (code -32600)"
    )


def test_a_usage_limit_that_has_passed_is_waited_out_and_the_session_continued(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    capture = (TRANSCRIPTS / "claude-usagelimit-oauth" / "stdout.jsonl").read_bytes()
    passed = int(time.time()) - 60  # the limit reset a minute ago: a wait of nothing
    cli = fake_cli_on_path.harness("claude")
    cli.script(
        fake.session_id("7f4eb002-09ec-48e4-8d44-165907705006"),  # so that the fake knows it
        cli_steps.no_events(),
        cli_steps.raw(capture.replace(b'"resetsAt":1796101925', f'"resetsAt":{passed}'.encode())),
        steps.exit(1, abrupt=True),
    )
    cli.script(steps.say("carried on"))
    lines: list[str] = []

    logs = Logs(tmp_path / "logs", "repo")
    with Sessions.within(
        logs, tmp_path, claude(), progress=lines.append, wait_for_limits=600
    ) as sessions:
        final = sessions.run_to_final_message("implement", "Make the tests pass.")

    first, continued = cli.calls
    limit = "claude exited 1: You've hit your session limit · resets 5:12am (UTC)"
    assert continued.argv == [*first.argv, "--resume", "7f4eb002-09ec-48e4-8d44-165907705006"]
    assert continued.stdin == (
        f"Your session was cut off by an API limit: {limit}\n\n"
        "The limit has passed. Carry on from where you stopped."
    )
    assert any(line.startswith(f"implement: {limit}; waiting ") for line in lines)
    assert final == "carried on"
    assert [record.kind for record in sessions.records] == ["implement", "implement-continued"]
    assert isinstance(sessions.records[0].failure, UsageLimitReached)


@pytest.mark.parametrize(
    ("name", "code", "kind"),
    [("codex-429-retries1", 75, "RateLimited"), ("claude-api-401", 77, "AuthFailed")],
)
def test_thirdshift_run_exits_75_on_a_failure_that_time_cures_and_77_on_refused_credentials(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, name: str, code: int, kind: str
) -> None:
    harness = replay(fake_cli_on_path, name).harness.name
    thirdshift = str(Path(sys.executable).with_name("thirdshift"))

    done = subprocess.run(
        [thirdshift, "run", "--harness", harness, "--logs", str(tmp_path / "logs"), "--json", "go"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == code, done.stderr
    assert json.loads(done.stdout)["failure"]["type"] == kind


def test_a_gemini_that_exits_0_without_a_result_was_interrupted(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Gemini CLI exits 0 on SIGTERM, printing no result: the adapter hands the reader the exit
    # code (finish_reading), and the session fails rather than passing for a finished one.
    choice_ = replay(fake_cli_on_path, "gemini-sigTERM-group")

    failure = failure_of(choice_, tmp_path)

    assert type(failure) is SessionFailed
    assert failure.exit_code == 0
    assert str(failure) == (
        "gemini's turn failed: gemini exited 0 without a result: its turn was interrupted"
    )
    assert failure.session_id == "d01708f5-7ecd-4703-add6-bba41f2fec7d"
