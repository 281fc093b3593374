"""The parts of ``thirdshift.temporal`` that need no server: the values on the wire, failures
as ``ApplicationError``s, how a later attempt starts, the session id in a log's head, and the
helpers' defaults."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from thirdshift import Budget, Ended, Usage, claude
from thirdshift.errors import (
    AuthFailed,
    BudgetExhausted,
    ConfigurationError,
    Overloaded,
    RateLimited,
    SessionFailed,
    ThirdshiftError,
    UsageLimitReached,
)
from thirdshift.temporal import SessionRequest, SessionResult
from thirdshift.temporal._attempts import earlier_sessions, start_of
from thirdshift.temporal._failures import application_error
from thirdshift.temporal._helpers import retry_policy, start_to_close
from thirdshift.temporal._session_ids import HEAD_BYTES, session_id_in_log

NOW = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
CONVERTER = DataConverter.default.payload_converter


def test_a_request_and_a_result_go_through_the_default_converter_as_json_and_back() -> None:
    request = SessionRequest(
        worktree="/w/repo",
        kind="implement",
        prompt="go",
        extra_args=("--max-turns", "3"),
        budget=Budget(usd=2.5, turns=10),
        timeout=None,
    )
    result = SessionResult("done", "s-1", ({"kind": "implement", "usage": None},), ("x",), "q@h")

    payloads = CONVERTER.to_payloads([request, result])
    back = CONVERTER.from_payloads(payloads, [SessionRequest, SessionResult])

    assert json.loads(payloads[0].data)["budget"] == {"usd": 2.5, "tokens": None, "turns": 10}
    assert back == [request, result]


@pytest.mark.parametrize(
    ("failure", "kind", "retryable"),
    [
        (RateLimited("429"), "RateLimited", True),
        (UsageLimitReached("plan limit"), "UsageLimitReached", True),
        (Overloaded("529"), "Overloaded", True),
        (AuthFailed("401"), "AuthFailed", False),
        (BudgetExhausted("spent"), "BudgetExhausted", False),
        (ConfigurationError("no such skill"), "ConfigurationError", False),
    ],
)
def test_a_failure_is_an_application_error_of_its_class_retried_only_if_time_cures_it(
    failure: ThirdshiftError, kind: str, retryable: bool
) -> None:
    details = {"session_id": "s-1", "records": []}

    error = application_error(failure, details, now=NOW)

    assert (error.type, error.non_retryable, error.details) == (kind, not retryable, (details,))
    assert error.next_retry_delay is None
    # A session's ending is no fault of the worker's: the SDK logs it at DEBUG, no traceback;
    # but a 401 is the host's credentials, for whoever runs the worker to see.
    benign = isinstance(failure, SessionFailed) and not isinstance(failure, AuthFailed)
    assert (error.category == ApplicationErrorCategory.BENIGN) is benign


def test_a_limit_with_its_end_said_is_retried_no_sooner_than_then() -> None:
    limit = UsageLimitReached("5-hour limit", resets_at=NOW + timedelta(hours=2))
    passed = RateLimited("429", retry_at=NOW - timedelta(minutes=1))

    assert application_error(limit, {}, now=NOW).next_retry_delay == timedelta(hours=2)
    assert application_error(passed, {}, now=NOW).next_retry_delay == timedelta(seconds=1)


def test_a_failure_s_message_is_shown_safely() -> None:
    error = application_error(AuthFailed("bad key \x1b[2J sk-ant-api03-" + "a" * 40), {}, now=NOW)

    assert "\x1b" not in error.message
    assert "a" * 40 not in error.message


REQUEST = SessionRequest(worktree="/w", kind="fix", prompt="fix it")


@pytest.mark.parametrize(
    ("attempt", "details", "kind", "resume", "says"),
    [
        (1, [{"session_id": "s-1"}], "fix", None, "fix it"),
        (2, [{"session_id": "s-1", "failure": "429 slow down"}], "fix-continued", "s-1", "429"),
        (3, [{"session_id": "s-1"}], "fix-continued", "s-1", "the worker that ran it stopped"),
        (2, [{"session_id": None}], "fix-retry", None, "fix it"),
        (2, [{"session_id": ""}], "fix-retry", None, "fix it"),
        (2, [{"session_id": 7}], "fix-retry", None, "fix it"),
        (2, ["s-1"], "fix-retry", None, "fix it"),
        (2, [], "fix-retry", None, "fix it"),
    ],
)
def test_a_later_attempt_continues_by_id_or_starts_again(
    attempt: int, details: list[object], kind: str, resume: str | None, says: str
) -> None:
    start = start_of(REQUEST, attempt, details)

    assert (start.kind, start.resume) == (kind, resume)
    assert says in start.prompt


def _record(kind: str, session_id: str | None, usage: object) -> dict[str, object]:
    return {"kind": kind, "session_id": session_id, "usage": usage, "started_at": NOW.isoformat()}


def test_a_later_attempt_carries_the_records_of_every_earlier_attempt_on() -> None:
    first = _record("fix", "s-1", {"turns": 4})
    second = _record("fix-continued", "s-1", None)
    forged = _record("fix", "s-1", {"turns": -40})  # no count a record holds
    records = [first, "no record", {"kind": "x"}, forged, second]
    details = [{"session_id": "s-1", "records": records}]

    assert start_of(REQUEST, 1, details).earlier == ()
    assert start_of(REQUEST, 3, details).earlier == (first, second)
    assert start_of(REQUEST, 2, [{"session_id": None, "records": [first]}]).earlier == (first,)
    assert start_of(REQUEST, 2, [{"session_id": "s-1", "records": "not a list"}]).earlier == ()


def test_what_an_earlier_attempt_spent_is_read_from_its_records() -> None:
    said = {
        "turns": 4,
        "input_tokens": 300,
        "output_tokens": 20,
        "cached_input_tokens": None,
        "cost_usd": 0.5,
        "models": ["m"],
    }

    found = earlier_sessions([_record("fix", "s-1", said), _record("fix-retry", None, None)])

    assert found == (
        Ended(
            "s-1",
            usage=Usage(turns=4, input_tokens=300, output_tokens=20, cost_usd=0.5, models=("m",)),
        ),
        Ended(None),
    )


INIT = '{"type":"system","subtype":"init","session_id":"s-42","cwd":"/w","model":"m"}\n'


def test_the_session_id_is_read_from_the_log_s_first_complete_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    harness = claude().harness

    assert session_id_in_log(log, harness, tmp_path) is None  # not made yet
    log.write_text(INIT[:-1])
    assert session_id_in_log(log, harness, tmp_path) is None  # the line not ended yet
    log.write_bytes(b"\xff\xfe not json\n\n" + INIT.encode())
    assert session_id_in_log(log, harness, tmp_path) == "s-42"


def test_a_log_that_names_no_session_in_its_head_gives_none(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    log.write_bytes(b"x" * (HEAD_BYTES + 10) + b"\n" + INIT.encode())

    assert session_id_in_log(log, claude().harness, tmp_path) is None


def test_the_default_retry_policy_backs_off_from_a_minute_and_never_retries_what_cannot_pass() -> (
    None
):
    policy = retry_policy()

    assert (policy.initial_interval, policy.backoff_coefficient) == (timedelta(seconds=60), 2.0)
    assert {"AuthFailed", "BudgetExhausted", "ConfigurationError"} <= set(
        policy.non_retryable_error_types or ()
    )
    assert not {"RateLimited", "UsageLimitReached", "Overloaded"} & set(
        policy.non_retryable_error_types or ()
    )


def test_the_start_to_close_timeout_covers_a_session_and_its_resume() -> None:
    timed = SessionRequest(worktree="/w", kind="k", prompt="p", timeout=600, stop_grace=10)

    assert start_to_close(timed) >= timedelta(seconds=2 * 600)
    assert start_to_close(REQUEST) == timedelta(hours=24)


@pytest.mark.parametrize(
    "asked", [{"timeout": float("nan")}, {"timeout": -100.0}, {"stop_grace": float("inf")}]
)
def test_a_request_no_session_could_run_by_fails_the_workflow_not_its_task(
    asked: dict[str, Any],
) -> None:
    request = SessionRequest(worktree="/w", kind="fix", prompt="fix it", **asked)

    with pytest.raises(ApplicationError) as refused:
        start_to_close(request)

    assert (refused.value.type, refused.value.non_retryable) == ("ValueError", True)
    assert refused.value.message.startswith("thirdshift.run_session: ")
