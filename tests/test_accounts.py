"""One account, one limit: sessions of one Harness and credential park while a limit another
reported lasts; and the events ``notify`` hears. The rules, driven in-process through
ScriptedOutside."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_thirdshift import ScriptedOutside
from thirdshift import (
    Ended,
    Interrupted,
    Logs,
    RateLimited,
    Sessions,
    UsageLimitReached,
    claude,
    codex,
)
from thirdshift._accounts import Account, account_key, accounts, isolated
from thirdshift._logs import command_stamp
from thirdshift._prompts import resume_prompt
from thirdshift._wiring import account_of, notifying
from thirdshift.testing import ProgressLine, SessionCall

NOW = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)
IN_AN_HOUR = NOW + timedelta(hours=1)
HOUR = f"{IN_AN_HOUR.astimezone():%H:%M}"
LIMIT = UsageLimitReached(
    "claude exited 1: You've hit your session limit", resets_at=IN_AN_HOUR, session_id="a1"
)


def log_of(logs: Logs, kind: str) -> Path:
    return logs.dir / f"{logs.name}-{command_stamp()}-{kind}.jsonl"


def sessions_on(account: Account, logs: Logs, outside: ScriptedOutside, **more: Any) -> Sessions:
    return Sessions(logs, outside, account=account, clock=lambda: NOW, **more)


@pytest.fixture
def account() -> Account:
    return Account("claude:test")


@pytest.fixture
def other_run(tmp_path: Path, account: Account) -> Sessions:
    """A run on the same account that reports the limit: its session fails on it."""
    return sessions_on(account, Logs(tmp_path / "logs", "other"), ScriptedOutside().fails(LIMIT))


def test_a_session_parks_until_the_limit_another_reported_resets_then_starts(
    tmp_path: Path, account: Account, other_run: Sessions
) -> None:
    with pytest.raises(UsageLimitReached):
        other_run.run("implement", "go")  # no wait_for_limits: it fails at once
    logs = Logs(tmp_path / "logs", "repo")
    outside = ScriptedOutside().ends(session_id="b1", final_message="done")
    sessions = sessions_on(account, logs, outside, wait_for_limits=7200)

    assert sessions.run_to_final_message("review", "look") == "done"

    assert outside.waits == [3600.0]
    log = log_of(logs, "review")
    assert outside.calls == [
        ProgressLine(
            f"review: parked, as its account is at its limit until {HOUR} ({LIMIT}); "
            "waiting 1h, then carrying on"
        ),
        SessionCall(kind="review", resume=None, prompt="look", log=log),
    ]


@pytest.mark.parametrize(
    ("wait_for_limits", "why"),
    [(None, ""), (1800, ": more than the 30m left of wait_for_limits")],
    ids=["no wait asked for", "a wait that does not fit"],
)
def test_a_park_that_wait_for_limits_does_not_cover_fails_as_the_limit_without_starting(
    tmp_path: Path,
    account: Account,
    other_run: Sessions,
    wait_for_limits: float | None,
    why: str,
) -> None:
    with pytest.raises(UsageLimitReached):
        other_run.run("implement", "go")
    outside = ScriptedOutside()
    sessions = sessions_on(
        account, Logs(tmp_path / "logs", "repo"), outside, wait_for_limits=wait_for_limits
    )

    with pytest.raises(UsageLimitReached) as held:
        sessions.run("review", "look")

    held_back = f"its account is at its limit until {HOUR} ({LIMIT})"
    assert str(held.value) == f"review: not started, as {held_back}"
    assert (held.value.resets_at, held.value.retryable) == (IN_AN_HOUR, True)
    assert outside.calls == [ProgressLine(f"review: not starting, as {held_back}{why}")]
    assert (outside.waits, sessions.records) == ([], ())


def test_a_resume_parks_too(tmp_path: Path, account: Account) -> None:
    class ALimitMeanwhile(ScriptedOutside):
        """Another run on the account hits its limit while the first session runs."""

        def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
            ended = super().run_session(kind, resume, prompt, log)
            if resume is None:
                account.reported(LIMIT)
            return ended

    logs = Logs(tmp_path / "logs", "repo")
    outside = ALimitMeanwhile().ends(session_id="b1", killed=("pytest",)).ends(session_id="b1")
    sessions = Sessions(logs, outside, account=account, clock=lambda: NOW, wait_for_limits=3600)

    sessions.run("implement", "go")

    assert outside.waits == [3600.0]
    resume = outside.sessions[1]
    assert (resume.kind, resume.resume, resume.prompt) == (
        "implement-resume",
        "b1",
        resume_prompt(["pytest"]),
    )
    parked = [line for line in outside.progress if "parked" in line]
    assert parked == [
        f"implement-resume: parked, as its account is at its limit until {HOUR} ({LIMIT}); "
        "waiting 1h, then carrying on"
    ]


def test_a_session_that_waited_out_its_own_limit_is_not_parked_by_it_again(
    tmp_path: Path, account: Account
) -> None:
    outside = ScriptedOutside().fails(LIMIT).ends(session_id="a1", final_message="carried on")
    sessions = sessions_on(account, Logs(tmp_path / "logs", "repo"), outside, wait_for_limits=7200)

    assert sessions.run_to_final_message("implement", "go") == "carried on"

    assert outside.waits == [3600.0]
    assert [call.kind for call in outside.sessions] == ["implement", "implement-continued"]
    assert account.limit_after(NOW) is not None  # the others still park until it resets


def test_a_limit_without_a_reset_time_is_not_shared(tmp_path: Path, account: Account) -> None:
    plain_429 = RateLimited("claude exited 1: API Error (429)", session_id="a1")
    first = sessions_on(account, Logs(tmp_path / "logs", "a"), ScriptedOutside().fails(plain_429))
    with pytest.raises(RateLimited):
        first.run("implement", "go")
    outside = ScriptedOutside().ends(session_id="b1")
    sessions_on(account, Logs(tmp_path / "logs", "b"), outside).run("review", "look")
    assert (outside.waits, [call.kind for call in outside.sessions]) == ([], ["review"])


def test_the_later_of_two_reset_times_holds(account: Account) -> None:
    later = UsageLimitReached("later", resets_at=IN_AN_HOUR + timedelta(minutes=5))
    account.reported(later)
    account.reported(LIMIT)
    limit = account.limit_after(NOW)
    assert limit is not None
    assert limit.failure is later
    assert account.limit_after(IN_AN_HOUR + timedelta(minutes=5)) is None


def test_an_account_is_its_harness_and_its_credentials_and_names_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    one = account_of(claude(), tmp_path)
    assert account_of(claude(model="opus"), tmp_path / "elsewhere") is one
    assert account_of(claude(env={"ANTHROPIC_API_KEY": "sk-ant-other"}), tmp_path) is not one
    assert account_of(codex(), tmp_path) is not one
    assert one.key.startswith("claude:")
    assert "secret" not in one.key
    assert account_key("claude", {"HOME": "/a"}, ()) != account_key("claude", {"HOME": "/b"}, ())


def test_accounts_are_isolated_per_test_and_within_isolated() -> None:
    outer = accounts()
    with isolated() as inner:
        assert accounts() is inner
        assert inner.of("claude:x") is not outer.of("claude:x")
    assert accounts() is outer


def test_two_runs_of_one_claude_in_a_process_share_its_limit(
    scripted_outside: ScriptedOutside, tmp_path: Path
) -> None:
    soon = datetime.now(UTC) + timedelta(hours=1)
    scripted_outside.fails(UsageLimitReached("You've hit your session limit", resets_at=soon))
    logs = Logs(tmp_path / "logs", "repo")

    with pytest.raises(UsageLimitReached), Sessions.within(logs, tmp_path, claude()) as first:
        first.run("implement", "go")
    with (
        pytest.raises(UsageLimitReached, match=r"^review: not started, as its account"),
        Sessions.within(logs, tmp_path, claude()) as second,
    ):
        second.run("review", "look")

    assert [call.kind for call in scripted_outside.sessions] == ["implement"]


# What notify hears


def test_notify_hears_a_limit_waited_out_a_failure_and_the_end_of_the_run(
    scripted_outside: ScriptedOutside, tmp_path: Path
) -> None:
    soon = datetime.now(UTC) + timedelta(seconds=30)
    limit = RateLimited("claude exited 1: API Error (429)", retry_at=soon, session_id="s1")
    scripted_outside.fails(limit).fails(RateLimited("again, and no wait fits", session_id="s1"))
    events: list[Mapping[str, Any]] = []

    with (
        pytest.raises(RateLimited),
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            tmp_path,
            claude(),
            wait_for_limits=45,
            notify=events.append,
        ) as sessions,
    ):
        sessions.run("implement", "go")

    failed_429 = {"type": "RateLimited", "message": "claude exited 1: API Error (429)"}
    again = {"type": "RateLimited", "message": "again, and no wait fits"}
    until = events[1]["until"]
    assert datetime.fromisoformat(until) - soon < timedelta(seconds=1)
    run = {"run": "repo", "session_id": "s1"}
    assert events == [
        {"event": "failed", "kind": "implement", **run, "failure": failed_429},
        {"event": "parked", "kind": "implement", **run, "failure": failed_429, "until": until},
        {"event": "resumed", "kind": "implement", **run, "failure": None},
        {"event": "failed", "kind": "implement-continued", **run, "failure": again},
        {
            "event": "finished",
            "kind": "implement-continued",
            **run,
            "failure": again,
            "sessions": 2,
        },
    ]


def test_notify_hears_a_run_that_ended_well_or_was_interrupted(
    scripted_outside: ScriptedOutside, tmp_path: Path
) -> None:
    scripted_outside.ends(session_id="s1").fails(Interrupted(session_id="s2"))
    events: list[Mapping[str, Any]] = []
    logs = Logs(tmp_path / "logs", "repo")

    with Sessions.within(logs, tmp_path, claude(), notify=events.append) as sessions:
        sessions.run("implement", "go")
    with (
        pytest.raises(Interrupted),
        Sessions.within(logs, tmp_path, claude(), notify=events.append) as sessions,
    ):
        sessions.run("review", "look")

    assert events == [
        {
            "event": "finished",
            "run": "repo",
            "kind": "implement",
            "session_id": "s1",
            "failure": None,
            "sessions": 1,
        },
        {
            "event": "finished",
            "run": "repo",
            "kind": "review",
            "session_id": "s2",
            "failure": {"type": "Interrupted", "message": "interrupted"},
            "sessions": 1,
        },
    ]


def test_a_notify_that_fails_is_a_progress_line_and_the_run_goes_on(
    scripted_outside: ScriptedOutside, tmp_path: Path
) -> None:
    scripted_outside.ends(session_id="s1", final_message="done")

    def broken(event: Mapping[str, Any]) -> None:
        raise OSError("no route to the pager")

    with Sessions.within(
        Logs(tmp_path / "logs", "repo"), tmp_path, claude(), notify=broken
    ) as sessions:
        assert sessions.run_to_final_message("implement", "go") == "done"

    assert scripted_outside.progress[-1] == (
        "notify failed on the finished event: OSError: no route to the pager"
    )


def test_a_within_given_no_notify_hands_its_events_to_the_processs(
    scripted_outside: ScriptedOutside, tmp_path: Path
) -> None:
    # How `thirdshift worker --notify-command` reaches each activity's sessions.
    scripted_outside.ends(session_id="s1")
    events: list[Mapping[str, Any]] = []
    logs = Logs(tmp_path / "logs", "repo")

    with notifying(events.append), Sessions.within(logs, tmp_path, claude()) as sessions:
        sessions.run("implement", "go")
    with Sessions.within(logs, tmp_path, claude()) as sessions:  # no longer
        scripted_outside.ends(session_id="s2")
        sessions.run("implement", "go")

    assert [(event["event"], event["session_id"]) for event in events] == [("finished", "s1")]
