"""The parts of ``thirdshift.temporal`` that need no server: the values on the wire, failures
as ``ApplicationError``s, how a later attempt starts, the session id in a log's head, and the
helpers' defaults."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from thirdshift import Budget, Ended, Usage, Watchdogs, claude
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
from thirdshift.temporal import SessionRequest, SessionResult, _beats
from thirdshift.temporal._attempts import earlier_sessions, start_of
from thirdshift.temporal._beats import MAX_TEXT, Beats, bounded
from thirdshift.temporal._failures import application_error, limits_unsaid
from thirdshift.temporal._helpers import retry_policy, start_to_close
from thirdshift.temporal._session_ids import HEAD_BYTES, session_id_in_log

NOW = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
CONVERTER = DataConverter.default.payload_converter


@pytest.mark.parametrize("worktree", ["repo", "./repo", "", "~/repo"])
def test_a_relative_worktree_is_refused_saying_it_must_be_absolute(worktree: str) -> None:
    with pytest.raises(ValueError, match=r"^SessionRequest worktree must be an absolute path "):
        SessionRequest(worktree=worktree, kind="fix", prompt="fix it")


def test_a_request_and_a_result_go_through_the_default_converter_as_json_and_back() -> None:
    request = SessionRequest(
        worktree="/w/repo",
        kind="implement",
        prompt="go",
        extra_args=("--max-turns", "3"),
        budget=Budget(usd=2.5, turns=10),
        watchdogs=Watchdogs(idle=None, wall=600, stop_grace=2.5),
    )
    result = SessionResult("done", "s-1", ({"kind": "implement", "usage": None},), ("x",), "q@h")

    payloads = CONVERTER.to_payloads([request, result])
    back = CONVERTER.from_payloads(payloads, [SessionRequest, SessionResult])

    sent = json.loads(payloads[0].data)
    assert sent["budget"] == {"usd": 2.5, "tokens": None, "turns": 10}
    assert sent["watchdogs"] == {"idle": None, "after_result": 60.0, "wall": 600, "stop_grace": 2.5}
    assert back == [request, result]
    assert isinstance(back[0].watchdogs, Watchdogs)


def test_a_request_takes_watchdogs_only_as_one_value() -> None:
    assert REQUEST.watchdogs == Watchdogs()
    with pytest.raises(TypeError, match=r"^SessionRequest watchdogs must be a thirdshift.Watch"):
        SessionRequest(worktree="/w", kind="fix", prompt="go", watchdogs={"idle": 5})  # type: ignore[arg-type]


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
    # A limit whose end was not said waits a minute; what is not retried waits for nothing.
    assert error.next_retry_delay == (timedelta(seconds=60) if retryable else None)
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


class Running:
    """Stands where ``Sessions`` does for :class:`Beats`: one session under way, logging to
    ``last_log``."""

    def __init__(self, log: Path) -> None:
        self.last_log = log
        self.records: tuple[object, ...] = ()


def test_a_running_session_s_log_is_read_for_its_id_until_it_names_one_then_never_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "x.jsonl"
    harness = claude().harness
    reads: list[Path] = []

    def counted(log: Path, harness: Any, worktree: Path) -> str | None:
        reads.append(log)
        return session_id_in_log(log, harness, worktree)

    monkeypatch.setattr(_beats, "session_id_in_log", counted)
    beats = Beats(harness, tmp_path, session_id=None)
    beats.attach(Running(log))  # type: ignore[arg-type]
    log.write_text('{"type":"user"}\n')
    assert beats.session_id() is None
    log.write_text('{"type":"user"}\n' + INIT)
    assert beats.session_id() == "s-42"
    for step in range(20):  # a busy session: its log grows at every line
        with log.open("a") as stream:
            stream.write(f'{{"type":"assistant","step":{step}}}\n')
        assert beats.session_id() == "s-42"

    assert len(reads) == 2  # read once with no id yet, once to find it: never since


def test_the_default_retry_policy_retries_a_lost_worker_at_once_and_never_what_cannot_pass() -> (
    None
):
    policy = retry_policy()

    # A lost worker's session is continued once its heartbeat timeout passed, not a minute on.
    assert (policy.initial_interval, policy.backoff_coefficient) == (timedelta(seconds=1), 2.0)
    assert policy.maximum_interval == timedelta(hours=1)
    assert {"AuthFailed", "BudgetExhausted", "ConfigurationError"} <= set(
        policy.non_retryable_error_types or ()
    )
    assert not {"RateLimited", "UsageLimitReached", "Overloaded"} & set(
        policy.non_retryable_error_types or ()
    )


def test_the_start_to_close_timeout_covers_a_session_and_its_resume() -> None:
    watchdogs = Watchdogs(wall=600, stop_grace=10)
    timed = SessionRequest(worktree="/w", kind="k", prompt="p", watchdogs=watchdogs)

    assert start_to_close(timed) == timedelta(seconds=2 * (600 + 4 * 10 + 60))
    assert start_to_close(REQUEST) == timedelta(hours=24)


def test_a_limit_whose_end_was_not_said_waits_a_minute_doubling_for_each_before_it() -> None:
    def delay(before: int) -> timedelta | None:
        return application_error(
            RateLimited("429"), {}, now=NOW, unsaid_before=before
        ).next_retry_delay

    assert [delay(n) for n in range(3)] == [timedelta(seconds=s) for s in (60, 120, 240)]
    assert delay(40) == timedelta(hours=1)


def test_a_limit_waits_no_longer_than_the_retry_policy_s_maximum_interval() -> None:
    def delay(longest: timedelta) -> timedelta | None:
        return application_error(RateLimited("429"), {}, now=NOW, longest=longest).next_retry_delay

    assert delay(timedelta(seconds=3)) == timedelta(seconds=3)  # a demo's, a test's
    assert delay(timedelta(hours=5)) == timedelta(seconds=60)


def test_the_limits_counted_before_are_those_whose_end_was_not_said() -> None:
    said = {"type": "UsageLimitReached", "message": "m", "retry_at": NOW.isoformat()}
    records: list[dict[str, Any]] = [
        {"failure": {"type": "RateLimited", "message": "m", "retry_at": None}},
        {"failure": said},
        {"failure": {"type": "AuthFailed", "message": "m", "retry_at": None}},
        {"failure": None},
        {"failure": {"type": "Overloaded", "message": "m"}},
    ]

    assert limits_unsaid(records) == 2


def test_a_failure_s_message_is_cut_so_that_it_stays_under_the_size_limit() -> None:
    said = "slow down " * 200_000  # 2 MB: a stream's longest texts, error and final message
    failure = RateLimited(f"claude's turn failed: {said}", final_message=said)
    records = [{"kind": f"k{n}", "final_message": "x" * 20_000} for n in range(400)]
    details = {"session_id": "s-1", "records": bounded(records)}

    try:
        raise application_error(failure, details, now=NOW) from None
    except ApplicationError as error:
        raised = error
    encoded = Failure()
    DataConverter.default.failure_converter.to_failure(raised, CONVERTER, encoded)

    assert encoded.ByteSize() < 1 << 20  # a default server refuses 2 MB
    assert encoded.application_failure_info.type == "RateLimited"
    assert len(raised.message) < MAX_TEXT + 100


def test_records_over_the_limit_lose_their_texts_oldest_first_then_the_oldest_go() -> None:
    def record(n: int, text: str) -> dict[str, Any]:
        usage = {"turns": n}
        failure = {"type": "RateLimited", "message": text, "retry_at": None}
        return {
            "kind": f"k{n}",
            "final_message": text,
            "killed": [text],
            "usage": usage,
            "failure": failure,
        }

    records = [record(n, "x" * 1000) for n in range(10)]

    assert bounded(records, limit=100_000) == records  # under the limit: unchanged
    slimmed = bounded(records, limit=7000)
    assert [r["kind"] for r in slimmed] == [f"k{n}" for n in range(10)]
    assert slimmed[-1] == records[-1]  # the newest whole
    assert slimmed[0]["final_message"] is None
    assert slimmed[0]["killed"] == []
    assert slimmed[0]["usage"] == {"turns": 0}  # what a Budget counts stays
    assert len(slimmed[0]["failure"]["message"]) < 300
    dropped = bounded(records, limit=2500)
    assert dropped[-1]["kind"] == "k9"
    assert len(dropped) < 10
    assert len(json.dumps(dropped)) <= 2500


def test_the_first_attempt_continues_the_request_s_own_id_and_a_later_one_too() -> None:
    asked = SessionRequest(worktree="/w", kind="fix", prompt="the review says", resume="s-7")

    first = start_of(asked, 1, [])
    again = start_of(asked, 2, [{"session_id": None}])
    cut_off = start_of(asked, 2, [{"session_id": "s-7", "failure": "429"}])

    assert (first.kind, first.resume, first.prompt) == ("fix", "s-7", "the review says")
    assert (again.kind, again.resume) == ("fix-retry", "s-7")
    assert (cut_off.kind, cut_off.resume) == ("fix-continued", "s-7")
    # An id the request named is the request's to answer for: no running it again without it.
    assert cut_off.again is None


def test_a_continued_session_the_cli_does_not_know_falls_back_to_the_request_again() -> None:
    running = {"kind": "fix", "log": "/logs/x.jsonl", "started_at": NOW.isoformat()}

    start = start_of(REQUEST, 2, [{"session_id": "s-1", "running": running}])

    assert start.again is not None
    assert (start.again.kind, start.again.resume, start.again.prompt) == (
        "fix-retry",
        None,
        "fix it",
    )
    assert start.lost == running
