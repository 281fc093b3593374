"""The limit rule, cancel() and the session records, driven in-process through ScriptedOutside.

The clock is fixed at 04:00 UTC, and local time is UTC, so that the waiting lines' "until HH:MM"
is the same on every machine.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from thirdshift import (
    AuthFailed,
    CLINotFound,
    Ended,
    Interrupted,
    LaterStepFailed,
    Logs,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFailed,
    SessionRecord,
    Sessions,
    SessionStalled,
    ThirdshiftError,
    TurnLimitReached,
    Usage,
    UsageLimitReached,
    claude,
)
from thirdshift._logs import command_stamp
from thirdshift._prompts import continued_prompt, resume_prompt
from thirdshift.testing import ScriptedOutside

NOW = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _utc_local_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def logs(tmp_path: Path) -> Logs:
    return Logs(tmp_path / "logs", "repo")


def log_of(logs: Logs, kind: str) -> Path:
    return logs.dir / f"repo-{command_stamp()}-{kind}.jsonl"


def sessions_of(logs: Logs, outside: ScriptedOutside, budget: float | None = 3600.0) -> Sessions:
    return Sessions(logs, outside, wait_for_limits=budget, clock=lambda: NOW)


def test_a_limit_the_budget_covers_is_waited_out_and_the_session_continued(logs: Logs) -> None:
    limit = RateLimited(
        "claude exited 1: API Error: Request rejected (429)",
        retry_at=NOW + timedelta(minutes=5),
        session_id="s1",
    )
    outside = ScriptedOutside().fails(limit).ends(session_id="s1", final_message="done")

    assert sessions_of(logs, outside).run_to_final_message("implement", "build it") == "done"

    assert outside.waits == [300.0]
    first, continued = outside.sessions
    assert (first.kind, first.resume, first.prompt) == ("implement", None, "build it")
    assert (continued.kind, continued.resume) == ("implement-continued", "s1")
    assert continued.prompt == (
        "Your session was cut off by an API limit: claude exited 1: API Error: Request rejected "
        "(429)\n\nThe limit has passed. Carry on from where you stopped."
    )
    assert continued.log == log_of(logs, "implement-continued")
    assert (
        "implement: claude exited 1: API Error: Request rejected (429); waiting 5m until "
        "04:05, then carrying on"
    ) in outside.progress


def test_a_usage_limit_waits_until_it_resets(logs: Logs) -> None:
    resets = NOW + timedelta(hours=1, minutes=12)
    limit = UsageLimitReached("codex: You've hit your usage limit", resets_at=resets)
    outside = ScriptedOutside().fails(limit).ends(session_id="t1")

    sessions_of(logs, outside, budget=5 * 3600).run("review", "look")

    assert outside.waits == [4320.0]
    assert (
        "review: codex: You've hit your usage limit; waiting 1h 12m until 05:12, then carrying on"
    ) in outside.progress


def test_without_an_id_the_same_session_is_run_again_from_its_prompt(logs: Logs) -> None:
    outside = ScriptedOutside().fails(Overloaded("claude exited 1: overloaded")).ends()

    sessions_of(logs, outside).run("implement", "build it")

    first, retry = outside.sessions
    assert (retry.kind, retry.resume, retry.prompt) == ("implement-retry", None, "build it")
    assert first.prompt == retry.prompt


def test_an_unknown_retry_time_waits_a_minute_then_doubles(logs: Logs) -> None:
    outside = (
        ScriptedOutside()
        .fails(Overloaded("busy", session_id="s1"))
        .fails(Overloaded("busy", session_id="s1"))
        .fails(Overloaded("busy", session_id="s1"))
        .ends(session_id="s1")
    )

    sessions_of(logs, outside).run("implement", "build it")

    assert outside.waits == [60.0, 120.0, 240.0]
    assert [call.kind for call in outside.sessions] == [
        "implement",
        "implement-continued",
        "implement-continued",
        "implement-continued",
    ]


def test_a_wait_the_budget_cannot_cover_propagates_the_failure_unchanged(logs: Logs) -> None:
    overloaded = Overloaded("busy")
    outside = ScriptedOutside().fails(Overloaded("busy")).fails(overloaded)

    with pytest.raises(Overloaded) as raised:
        sessions_of(logs, outside, budget=100).run("implement", "build it")

    assert raised.value is overloaded
    assert outside.waits == [60.0]  # the next, 120 s, is over the 40 s left
    assert outside.progress[-1] == (
        "implement: busy; not waiting 2m until 04:02: more than the 40s left of wait_for_limits"
    )


def test_a_limit_longer_than_the_whole_budget_says_why_it_was_not_waited_for(
    logs: Logs,
) -> None:
    limit = UsageLimitReached(
        "codex: You've hit your usage limit", resets_at=NOW + timedelta(hours=1, minutes=12)
    )
    outside = ScriptedOutside().fails(limit)

    with pytest.raises(UsageLimitReached):
        sessions_of(logs, outside, budget=1800.5).run("review", "look")

    assert outside.waits == []
    assert outside.progress[-1] == (
        "review: codex: You've hit your usage limit; not waiting 1h 12m until 05:12: more than "
        "the 30m left of wait_for_limits"
    )


def test_the_budget_is_shared_by_every_session_of_one_sessions(logs: Logs) -> None:
    later = RateLimited("429", retry_at=NOW + timedelta(seconds=90))
    outside = (
        ScriptedOutside()
        .fails(RateLimited("429", retry_at=NOW + timedelta(seconds=90)))
        .ends()
        .fails(later)
    )
    sessions = sessions_of(logs, outside, budget=120)
    sessions.run("implement", "one")

    with pytest.raises(RateLimited) as raised:
        sessions.run("review", "two")

    assert raised.value is later
    assert outside.waits == [90.0]


def test_no_budget_fails_at_once(logs: Logs) -> None:
    outside = ScriptedOutside().fails(RateLimited("429", retry_at=NOW))
    with pytest.raises(RateLimited):
        sessions_of(logs, outside, budget=None).run("implement", "build it")
    assert outside.waits == []
    assert outside.progress == []


@pytest.mark.parametrize(
    "failure",
    [
        AuthFailed("401"),
        TurnLimitReached("max turns"),
        SessionStalled("no output", why="no output for 30m"),
        SessionFailed("claude exited 3"),
    ],
)
def test_failures_that_time_cannot_cure_are_never_waited_for(
    logs: Logs, failure: SessionFailed
) -> None:
    outside = ScriptedOutside().fails(failure)
    with pytest.raises(type(failure)) as raised:
        sessions_of(logs, outside).run("implement", "build it")
    assert raised.value is failure
    assert outside.waits == []


def test_a_continuation_that_ends_with_killed_work_gets_its_one_resume(logs: Logs) -> None:
    outside = (
        ScriptedOutside()
        .fails(RateLimited("429", retry_at=NOW, session_id="s1"))
        .ends(session_id="s1", killed=("pytest -x",))
        .ends(session_id="s1", final_message="green")
    )

    assert sessions_of(logs, outside).run_to_final_message("implement", "go") == "green"

    resume = outside.sessions[-1]
    assert (resume.kind, resume.resume) == ("implement-resume", "s1")
    assert resume.prompt == resume_prompt(("pytest -x",))
    assert outside.waits == [0.0]


def test_a_resume_that_hits_a_limit_is_waited_out_too(logs: Logs) -> None:
    outside = (
        ScriptedOutside()
        .ends(session_id="s1", killed=("pytest -x",))
        .fails(RateLimited("429", retry_at=NOW + timedelta(seconds=30), session_id="s1"))
        .ends(session_id="s1")
    )

    sessions_of(logs, outside).run("implement", "go")

    assert [(call.kind, call.resume) for call in outside.sessions] == [
        ("implement", None),
        ("implement-resume", "s1"),
        ("implement-resume-continued", "s1"),
    ]
    assert outside.sessions[-1].prompt == continued_prompt("429")


def test_a_resume_whose_session_is_gone_is_carried_on_from(tmp_path: Path, logs: Logs) -> None:
    missing = ResumeTargetMissing("codex exited 1: no rollout found for thread id s1")
    outside = ScriptedOutside().ends(session_id="s1", killed=("cargo test",)).fails(missing)

    with (
        pytest.raises(LaterStepFailed) as raised,
        Sessions.within(logs, tmp_path, claude(), outside=outside) as sessions,
    ):
        assert sessions.run_to_final_message("implement", "go") is None
        raise RuntimeError("no PR found")

    assert str(raised.value) == (
        "implement session ended with a background task still running (cargo test), which was "
        "killed, and a later step failed: no PR found"
    )
    assert (
        "implement: the session ended with a background task still running (cargo test), which "
        "was killed, and its Resume found no session to continue (codex exited 1: no rollout "
        "found for thread id s1); carrying on, as it may have been abandoned"
    ) in outside.progress


def test_cancel_refuses_later_sessions_and_ends_a_wait(logs: Logs) -> None:
    outside = ScriptedOutside().fails(RateLimited("429", retry_at=NOW, session_id="s1"))
    sessions = sessions_of(logs, outside)
    outside_wait = outside.wait

    def wait_then_cancelled(seconds: float) -> None:
        sessions.cancel()  # as another thread would, while the rules wait
        outside_wait(seconds)

    outside.wait = wait_then_cancelled  # type: ignore[method-assign]
    with pytest.raises(Interrupted):
        sessions.run("implement", "go")
    assert outside.cancelled
    with pytest.raises(Interrupted):
        sessions.run("review", "again")
    assert [call.kind for call in outside.sessions] == ["implement"]


def test_cancel_before_any_session_spawns_nothing(logs: Logs) -> None:
    outside = ScriptedOutside()
    sessions = sessions_of(logs, outside)
    sessions.cancel()
    with pytest.raises(Interrupted):
        sessions.run("implement", "go")
    assert outside.sessions == []


def test_records_hold_every_session_started_in_order(logs: Logs) -> None:
    ticks = iter(NOW + timedelta(seconds=s) for s in range(0, 100, 7))
    usage = Usage(turns=3, input_tokens=10, output_tokens=5, cost_usd=0.0007, models=("m",))
    failure = RateLimited("429", retry_at=NOW, session_id="s1")
    outside = (
        ScriptedOutside()
        .fails(failure)
        .ends(session_id="s1", killed=("pytest",), final_message="waiting", usage=usage)
        .ends(session_id="s1", final_message="done")
    )
    sessions = Sessions(logs, outside, wait_for_limits=60, clock=lambda: next(ticks))

    sessions.run("implement", "go")

    assert sessions.records == (
        SessionRecord(
            kind="implement",
            log=log_of(logs, "implement"),
            session_id="s1",
            killed=(),
            final_message=None,
            usage=None,
            started_at=NOW,
            duration=7.0,
            failure=failure,
        ),
        SessionRecord(
            kind="implement-continued",
            log=log_of(logs, "implement-continued"),
            session_id="s1",
            killed=("pytest",),
            final_message="waiting",
            usage=usage,
            started_at=NOW + timedelta(seconds=21),
            duration=7.0,
        ),
        SessionRecord(
            kind="implement-resume",
            log=log_of(logs, "implement-resume"),
            session_id="s1",
            killed=(),
            final_message="done",
            usage=None,
            started_at=NOW + timedelta(seconds=35),
            duration=7.0,
        ),
    )


@pytest.mark.parametrize("kind", [SessionFailed, RateLimited, TurnLimitReached, SessionStalled])
def test_a_failed_sessions_record_carries_what_its_stream_said(
    logs: Logs, kind: type[SessionFailed]
) -> None:
    used = Usage(turns=3, input_tokens=40, output_tokens=9, cost_usd=0.0007, models=("m",))
    failure = kind("claude exited 3", session_id="s1", usage=used, final_message="tried")
    sessions = Sessions(logs, ScriptedOutside().fails(failure))  # no budget: a limit fails

    with pytest.raises(kind):
        sessions.run("implement", "go")

    (record,) = sessions.records
    assert (record.usage, record.final_message, record.session_id) == (used, "tried", "s1")
    assert record.failure is failure


def test_every_failure_is_constructible_from_a_message_alone() -> None:
    for kind in (
        SessionFailed,
        AuthFailed,
        RateLimited,
        UsageLimitReached,
        Overloaded,
        ResumeTargetMissing,
        TurnLimitReached,
        SessionStalled,
    ):
        failure = kind("it failed")
        assert str(failure) == "it failed"
        assert (failure.session_id, failure.exit_code, failure.log, failure.retry_at) == (
            None,
            None,
            None,
            None,
        )
        assert failure.retryable is (kind in (RateLimited, UsageLimitReached, Overloaded))
    when = NOW + timedelta(hours=1)
    assert UsageLimitReached("x", resets_at=when).resets_at == when
    assert UsageLimitReached("x", resets_at=when).retry_at == when
    assert UsageLimitReached("x", retry_at=when).resets_at == when  # one name for code that
    # builds any failure class from the same facts (FailureInfo.exception does)
    assert SessionStalled("x", why="over its 2h limit").why == "over its 2h limit"


def test_an_ended_session_carries_its_usage() -> None:
    usage = Usage(turns=1)
    assert Ended(session_id="s1", usage=usage).usage is usage


def test_a_session_stopped_by_an_interrupt_is_recorded_with_why(logs: Logs) -> None:
    error = Interrupted(usage=Usage(turns=2, cost_usd=0.0003), final_message="half way")
    outside = ScriptedOutside().fails(error)
    sessions = sessions_of(logs, outside)

    with pytest.raises(Interrupted):
        sessions.run("implement", "go")

    (record,) = sessions.records
    assert (record.kind, record.failure, record.session_id) == ("implement", error, None)
    assert (record.usage, record.final_message) == (Usage(turns=2, cost_usd=0.0003), "half way")
    assert record.log == log_of(logs, "implement")


@pytest.mark.parametrize(
    "error",
    [CLINotFound("claude", "claude is not on PATH"), ThirdshiftError("could not write the log")],
)
def test_an_error_that_is_no_ending_of_a_session_leaves_no_record(
    logs: Logs, error: ThirdshiftError
) -> None:
    sessions = sessions_of(logs, ScriptedOutside().fails(error))

    with pytest.raises(type(error)):
        sessions.run("implement", "go")

    assert sessions.records == ()
    assert sessions.last_log == log_of(logs, "implement")


def test_a_record_can_fail_only_with_a_session_failed_or_an_interrupt() -> None:
    hints = typing.get_type_hints(SessionRecord)
    assert hints["failure"] == SessionFailed | Interrupted | None


def test_a_session_refused_before_it_starts_leaves_no_record(logs: Logs) -> None:
    sessions = sessions_of(logs, ScriptedOutside())
    sessions.cancel()
    with pytest.raises(Interrupted):
        sessions.run("implement", "go")
    assert sessions.records == ()
