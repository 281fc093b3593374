"""Failures told apart from the stream: every failure capture, each rule, and reset times.

The expected classes and times of the captures were read off them by hand (see
their ``expected.json``); the rules are then tested one by one on made-up events.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from capture_helpers import captures, expected_of
from harness_helpers import (
    CAPTURED_AT,
    TRANSCRIPTS,
    WORKTREE,
    jsonl,
    read_all,
    reader_for,
    transcript_lines,
)

from thirdshift import (
    AuthFailed,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFailed,
    TurnLimitReached,
    UsageLimitReached,
)
from thirdshift.harness import ClaudeReader, CodexReader, FailureInfo, harness_named
from thirdshift.harness._failures import reset_time

# Every transcript


@pytest.mark.parametrize("name", captures("claude", "codex"))
def test_a_transcript_is_classified_as_read_by_hand(name: str) -> None:
    expected = expected_of(name)
    reader = reader_for(expected.harness)
    read_all(reader, transcript_lines(name))

    info = reader.failure_at(CAPTURED_AT)

    assert (info and info.kind, info and info.retry_at) == (expected.failure, expected.retry_at)


@pytest.mark.parametrize("name", captures("claude", "codex"))
def test_only_a_failed_session_has_a_failure(name: str) -> None:
    reader = reader_for(expected_of(name).harness)
    read_all(reader, transcript_lines(name))
    assert reader.failure is None or reader.failed


def test_codex_reports_a_missing_resume_on_stderr_alone() -> None:
    folder = TRANSCRIPTS / "codex-resume-missing"
    reader = CodexReader(WORKTREE)
    read_all(reader, transcript_lines("codex-resume-missing"))
    last = folder.joinpath("stderr.txt").read_text().strip().splitlines()[-1]

    assert (reader.failure, reader.session_id) == (None, None)  # stdout is empty
    assert last.startswith("Error: thread/resume: thread/resume failed: no rollout found")
    assert harness_named("codex").stderr_failure(last) == FailureInfo(ResumeTargetMissing)


def test_claude_says_a_missing_resume_on_stderr_too() -> None:
    stderr = (TRANSCRIPTS / "claude-resume-missing" / "stderr.txt").read_text().strip()
    assert harness_named("claude").stderr_failure(stderr) == FailureInfo(ResumeTargetMissing)


@pytest.mark.parametrize(
    "text", [None, "", "WARNING: proceeding", "Error: unexpected status 401 Unauthorized"]
)
@pytest.mark.parametrize("cli", ["claude", "codex", "opencode", "gemini", "qwen"])
def test_other_stderr_tells_no_failure_apart(cli: str, text: str | None) -> None:
    assert harness_named(cli).stderr_failure(text) is None


def test_the_property_resolves_a_reset_time_after_now() -> None:
    reader = reader_for("codex")
    read_all(reader, transcript_lines("codex-usagelimit"))
    before = datetime.now().astimezone()

    info = reader.failure

    assert info is not None
    assert info.retry_at is not None
    assert (info.retry_at.hour, info.retry_at.minute) == (5, 12)
    assert before < info.retry_at <= before + timedelta(days=1)


# The error each failure becomes


def test_a_usage_limit_becomes_usage_limit_reached_with_resets_at() -> None:
    when = datetime(2026, 12, 1, 5, 12, tzinfo=UTC)
    error = FailureInfo(UsageLimitReached, when).exception(
        "claude exited 1: limit", exit_code=1, session_id="s1", diagnostic="limit"
    )
    assert type(error) is UsageLimitReached
    assert (error.resets_at, error.retry_at, error.session_id) == (when, when, "s1")
    assert (str(error), error.exit_code, error.diagnostic, error.retryable) == (
        "claude exited 1: limit",
        1,
        "limit",
        True,
    )


@pytest.mark.parametrize(
    "kind", [AuthFailed, RateLimited, Overloaded, ResumeTargetMissing, TurnLimitReached]
)
def test_every_other_failure_becomes_its_class(kind: type[SessionFailed]) -> None:
    log = Path("/logs/x.jsonl")
    error = FailureInfo(kind).exception("codex exited 1", exit_code=1, log=log, session_id="t")
    assert type(error) is kind
    assert (error.session_id, error.log, error.retry_at) == ("t", log, None)


# Claude's rules, one by one


def claude(*lines: str) -> ClaudeReader:
    reader = ClaudeReader(WORKTREE)
    read_all(reader, [jsonl(type="system", subtype="init", session_id="s", model="m"), *lines])
    return reader


def failed_result(**more: Any) -> str:
    fields: dict[str, Any] = {"subtype": "success", "is_error": True, "result": "API Error"}
    return jsonl(type="result", **(fields | more))


def kind_of(reader: ClaudeReader | CodexReader) -> type[SessionFailed] | None:
    info = reader.failure_at(CAPTURED_AT)
    return None if info is None else info.kind


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, AuthFailed),
        (403, AuthFailed),
        (429, RateLimited),
        (500, Overloaded),
        (503, Overloaded),
        (529, Overloaded),
        (400, None),
        ("429", None),
        (True, None),
    ],
)
def test_claude_the_results_api_error_status_decides(status: Any, kind: type | None) -> None:
    assert kind_of(claude(failed_result(api_error_status=status))) is kind


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("authentication_failed", AuthFailed),
        ("rate_limit", RateLimited),
        ("server_error", Overloaded),
        ("overloaded", Overloaded),
        ("invalid_request", None),
    ],
)
def test_claude_without_a_status_the_synthetic_lines_error_decides(
    code: str, kind: type | None
) -> None:
    synthetic = jsonl(type="assistant", message={"content": []}, error=code)
    assert kind_of(claude(synthetic, failed_result(api_error_status=None))) is kind


def test_claude_without_either_the_last_retry_decides() -> None:
    retry = jsonl(type="system", subtype="api_retry", error_status=529, error="overloaded")
    assert kind_of(claude(retry, failed_result(api_error_status=None))) is Overloaded


def test_claude_a_retry_of_an_earlier_turn_does_not_count() -> None:
    retry = jsonl(type="system", subtype="api_retry", error_status=429, error="rate_limit")
    ok = jsonl(type="result", subtype="success", is_error=False, result="fine")
    assert kind_of(claude(retry, ok, failed_result(result="boom"))) is None


def test_claude_a_subagents_error_does_not_count() -> None:
    synthetic = jsonl(
        type="assistant", message={"content": []}, error="rate_limit", parent_tool_use_id="t1"
    )
    assert kind_of(claude(synthetic, failed_result(result="boom"))) is None


def test_claude_a_successful_session_has_no_failure_whatever_it_retried() -> None:
    retry = jsonl(type="system", subtype="api_retry", error_status=429, error="rate_limit")
    reader = claude(retry, jsonl(type="result", subtype="success", is_error=False, result="ok"))
    assert (reader.failed, reader.failure) == (False, None)


def test_claude_the_text_decides_when_nothing_else_does() -> None:
    reader = claude(failed_result(result="API Error: Request rejected (429) · slow down"))
    assert kind_of(reader) is RateLimited


def test_claude_an_unknown_failure_is_plain() -> None:
    reader = claude(jsonl(type="result", subtype="error_during_execution", errors=["it broke"]))
    assert (reader.failed, reader.failure) == (True, None)


def test_claude_max_turns_by_terminal_reason_too() -> None:
    reader = claude(failed_result(subtype="error_during_execution", terminal_reason="max_turns"))
    assert kind_of(reader) is TurnLimitReached


def rate_limit_event(status: str, **more: Any) -> str:
    return jsonl(type="rate_limit_event", rate_limit_info={"status": status, **more})


def test_claude_a_rejected_limit_beats_the_429_it_comes_with() -> None:
    reader = claude(
        rate_limit_event("rejected", resetsAt=1796101925), failed_result(api_error_status=429)
    )
    assert reader.failure_at(CAPTURED_AT) == FailureInfo(
        UsageLimitReached, datetime(2026, 12, 1, 5, 12, 5, tzinfo=UTC)
    )


@pytest.mark.parametrize("resets", [None, "soon", True, float("inf"), 10**30])
def test_claude_a_rejected_limit_without_a_usable_reset_time(resets: Any) -> None:
    text = "You've hit your session limit"
    reader = claude(rate_limit_event("rejected", resetsAt=resets), failed_result(result=text))
    assert reader.failure_at(CAPTURED_AT) == FailureInfo(UsageLimitReached, None)


@pytest.mark.parametrize("resets", [None, "soon", True, float("inf"), 10**30])
def test_claude_a_rejected_event_alone_is_a_429(resets: Any) -> None:
    # Claude marks every 429 of a login rejected; without a reset time or a limit's wording
    # it is no usage limit.
    reader = claude(rate_limit_event("rejected", resetsAt=resets), failed_result(result="x"))
    assert reader.failure_at(CAPTURED_AT) == FailureInfo(RateLimited)


def test_claude_not_your_usage_limit_outweighs_a_reset_time() -> None:
    text = "API Error: Server is temporarily limiting requests (not your usage limit) · slow down"
    reader = claude(
        rate_limit_event("rejected", resetsAt=1796101925),
        failed_result(result=text, api_error_status=429),
    )
    assert reader.failure_at(CAPTURED_AT) == FailureInfo(RateLimited)


@pytest.mark.parametrize(
    "text",
    [
        "You've hit your monthly spend limit. /model to switch models.",
        "You've hit your org's monthly spend limit · ask your admin",
        "You've reached your Fable 5 limit.",
        "You're out of usage credits · resets 5:12am (UTC)",
        "Your org is out of usage · contact your admin",
        "You're out of extra usage",
    ],
)
def test_claude_a_plans_limit_by_its_wording(text: str) -> None:
    reader = claude(rate_limit_event("rejected"), failed_result(result=text, api_error_status=429))
    assert kind_of(reader) is UsageLimitReached


def test_claude_a_rejected_limit_without_resets_at_takes_the_texts_time() -> None:
    text = "You've hit your session limit · resets 5:12am (UTC)"
    reader = claude(rate_limit_event("rejected"), failed_result(result=text))
    assert reader.failure_at(CAPTURED_AT) == FailureInfo(
        UsageLimitReached, datetime(2026, 12, 1, 5, 12, tzinfo=UTC)
    )


def test_claude_a_limit_allowed_again_is_no_longer_the_failure() -> None:
    reader = claude(
        rate_limit_event("rejected", resetsAt=1796101925),
        rate_limit_event("allowed"),
        failed_result(api_error_status=500),
    )
    assert kind_of(reader) is Overloaded


# Quota warnings


def test_claude_a_quota_warning_is_one_progress_line() -> None:
    warning = rate_limit_event(
        "allowed_warning", utilization=0.92, rateLimitType="seven_day", resetsAt=1796101930
    )
    reader = ClaudeReader(WORKTREE)
    progress = read_all(reader, [warning, warning, failed_result(api_error_status=None)])
    assert progress == ["usage warning: 92% of the seven-day limit used, resets at 05:12 UTC"]
    assert kind_of(reader) is None  # a warning is no failure


@pytest.mark.parametrize(
    ("info", "line"),
    [
        ({}, "usage warning: nearing the limit"),
        ({"utilization": "high", "rateLimitType": 7}, "usage warning: nearing the limit"),
        ({"utilization": 0.5, "resetsAt": "later"}, "usage warning: 50% of the limit used"),
    ],
)
def test_claude_a_quota_warning_says_what_it_is_told(info: dict[str, Any], line: str) -> None:
    reader = ClaudeReader(WORKTREE)
    assert read_all(reader, [rate_limit_event("allowed_warning", **info)]) == [line]


# Codex's rules


def codex_failed(message: str) -> CodexReader:
    reader = CodexReader(WORKTREE)
    read_all(
        reader,
        [
            jsonl(type="thread.started", thread_id="t"),
            jsonl(type="error", message=f"Reconnecting... 1/5 ({message})"),
            jsonl(type="turn.failed", error={"message": message}),
        ],
    )
    return reader


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("unexpected status 403 Forbidden: no access", AuthFailed),
        ("Incorrect API key provided", AuthFailed),
        ("exceeded retry limit, last status: 429 Too Many Requests", RateLimited),
        ("unexpected status 529 <unknown status code>: overloaded", Overloaded),
        ("exceeded retry limit, last status: 502 Bad Gateway", Overloaded),
        ("You've hit your usage limit. Try again later.", UsageLimitReached),
        ("stream disconnected before completion: idle timeout waiting for SSE", None),
        ("exceeded retry limit", None),
    ],
)
def test_codex_the_failure_message_decides(message: str, kind: type | None) -> None:
    assert kind_of(codex_failed(message)) is kind


def test_codex_errors_without_a_failed_turn_are_no_failure() -> None:
    reader = CodexReader(WORKTREE)
    read_all(reader, [jsonl(type="error", message="exceeded retry limit, last status: 429")])
    assert reader.failure is None


# Reset times


LIMIT = "You\u2019ve hit your usage limit. Upgrade to Pro or try again at {}."


@pytest.mark.parametrize(
    ("now", "said", "resets"),
    [
        (CAPTURED_AT, "5:12 AM", datetime(2026, 12, 1, 5, 12, tzinfo=UTC)),
        (
            datetime(2026, 12, 1, 5, 12, tzinfo=UTC),
            "5:12 AM",
            datetime(2026, 12, 2, 5, 12, tzinfo=UTC),
        ),
        (
            datetime(2026, 12, 1, 23, 0, tzinfo=UTC),
            "12:30 AM",
            datetime(2026, 12, 2, 0, 30, tzinfo=UTC),
        ),
        (
            datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
            "12:05 PM",
            datetime(2026, 12, 1, 12, 5, tzinfo=UTC),
        ),
        (
            datetime(2026, 12, 31, 20, 0, tzinfo=UTC),
            "1:00 AM",
            datetime(2027, 1, 1, 1, 0, tzinfo=UTC),
        ),
        (CAPTURED_AT, "Dec 3rd, 2026 5:12 AM", datetime(2026, 12, 3, 5, 12, tzinfo=UTC)),
        (CAPTURED_AT, "Jan 11th, 2027 11:59 PM", datetime(2027, 1, 11, 23, 59, tzinfo=UTC)),
    ],
)
def test_codex_a_time_without_a_date_is_the_next_one(
    now: datetime, said: str, resets: datetime
) -> None:
    info = codex_failed(LIMIT.format(said)).failure_at(now)
    assert info == FailureInfo(UsageLimitReached, resets)


def test_codex_the_time_is_local_to_now() -> None:
    berlin = timezone(timedelta(hours=1))
    now = datetime(2026, 12, 1, 4, 15, tzinfo=UTC)  # 05:15 in Berlin: 5:12 AM has passed there
    resets = reset_time(LIMIT.format("5:12 AM"), now.astimezone(berlin))
    assert resets == datetime(2026, 12, 2, 5, 12, tzinfo=berlin)


@pytest.mark.parametrize(
    "said", ["13:10 PM", "0:10 AM", "5:75 AM", "Feb 30th, 2027 5:12 AM", "Foo 3rd, 2026 5:12 AM"]
)
def test_codex_an_impossible_time_is_no_time(said: str) -> None:
    assert codex_failed(LIMIT.format(said)).failure_at(CAPTURED_AT) == FailureInfo(
        UsageLimitReached, None
    )


def test_claude_a_limit_text_with_a_429_is_a_usage_limit() -> None:
    text = "You've hit your weekly limit · resets 5am (Europe/Berlin)"
    reader = claude(failed_result(api_error_status=429, result=text))
    berlin = ZoneInfo("Europe/Berlin")  # 05:15 there at CAPTURED_AT: tomorrow's 5am
    assert reader.failure_at(CAPTURED_AT) == FailureInfo(
        UsageLimitReached, datetime(2026, 12, 2, 5, 0, tzinfo=berlin)
    )


@pytest.mark.parametrize(
    ("text", "resets"),
    [
        ("resets 5:12am (UTC)", datetime(2026, 12, 1, 5, 12, tzinfo=UTC)),
        ("resets 11pm", datetime(2026, 12, 1, 23, 0, tzinfo=UTC)),  # in now's zone
        ("resets 5:12am (Nowhere/Land)", datetime(2026, 12, 1, 5, 12, tzinfo=UTC)),
        ("resets 3:00am (UTC)", datetime(2026, 12, 2, 3, 0, tzinfo=UTC)),
        ("resets soon", None),
    ],
)
def test_claude_a_reset_time_in_its_own_words(text: str, resets: datetime | None) -> None:
    assert reset_time(f"You've hit your session limit · {text}", CAPTURED_AT) == resets
