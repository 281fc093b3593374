"""``thirdshift.run_session`` in-process (Temporal's ``ActivityEnvironment``, no server) on the
fake CLIs: what a request may ask (a session to continue, what the worker's policy allows),
what each record says of where it ran, a lost worker's session recorded by the next attempt,
and a failure kept under the server's size limits."""

from __future__ import annotations

import dataclasses
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.activity import ActivityCancellationDetails
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import ActivityEnvironment

from pytest_thirdshift import FakeCLIs
from thirdshift import Watchdogs
from thirdshift._logs import record_path
from thirdshift._record_files import read_record
from thirdshift.temporal import SessionActivities, SessionRequest, WorkerPolicy
from thirdshift.temporal._activities import SERVER_LOST, TAKEN_OVER
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps

SIZE_LIMIT = 2 * 1024 * 1024
"""What a default Temporal server refuses: a failure over it keeps only its first words."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    return tmp_path / "repo"


def activities(tmp_path: Path, lines: list[str] | None = None, **more: Any) -> SessionActivities:
    shown = lines.append if lines is not None else (lambda _: None)
    return SessionActivities(
        tmp_path / "logs", host_queue="here", heartbeat_every=0.2, progress=shown, **more
    )


def request(repo: Path, **more: Any) -> SessionRequest:
    return SessionRequest(**{"worktree": str(repo), "kind": "fix", "prompt": "fix it", **more})


def failure_of(env: ActivityEnvironment, act: SessionActivities, req: SessionRequest) -> Failure:
    """The attempt's failure as the worker hands it to the server."""
    with pytest.raises(ApplicationError) as failed:
        env.run(act.run_session, req)
    encoded = Failure()
    converter = DataConverter.default
    converter.failure_converter.to_failure(failed.value, converter.payload_converter, encoded)
    return encoded


def test_the_largest_ending_a_session_can_have_fails_whole_under_the_size_limit(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    # A 429 after Claude's ten api_retry lines, its texts as long as a reader keeps (1 MiB
    # each, the final message and the error), after earlier attempts that ended alike.
    said = "Rate limited: slow down. " * 90_000
    fake_cli_on_path.claude.script(fake.fail_turn(said, api_error_status=429))
    earlier = {"kind": "fix", "started_at": "2026-12-01T03:00:00+00:00", "final_message": said}
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, attempt=2, heartbeat_details=[{"session_id": None, "records": [earlier] * 50}]
    )

    failure = failure_of(env, activities(tmp_path), request(repo))

    assert failure.ByteSize() < SIZE_LIMIT / 4
    info = failure.application_failure_info
    assert (info.type, info.non_retryable) == ("RateLimited", False)
    assert info.next_retry_delay.seconds == 60  # the limit's own delay, not the policy's
    assert "Rate limited: slow down." in failure.message
    assert not failure.HasField("cause")  # the error is not sent twice, whole
    (details,) = DataConverter.default.payload_converter.from_payloads(info.details.payloads)
    assert [r["kind"] for r in details["records"]][-1] == "fix-retry"


def test_a_request_continues_the_session_it_names(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.say("implemented"))
    fake_cli_on_path.claude.script(steps.say("fixed what the review found"))
    first = ActivityEnvironment().run(activities(tmp_path).run_session, request(repo))

    fixed = ActivityEnvironment().run(
        activities(tmp_path).run_session,
        request(repo, prompt="the review found two bugs", resume=first.session_id),
    )

    _, call = fake_cli_on_path.claude.calls
    assert call.resumed == first.session_id is not None
    assert call.stdin == "the review found two bugs"
    assert fixed.final_message == "fixed what the review found"
    assert [r["kind"] for r in fixed.records] == ["fix"]


def test_an_id_the_cli_does_not_know_fails_once_as_resume_target_missing(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.say("never"))

    with pytest.raises(ApplicationError) as failed:
        ActivityEnvironment().run(
            activities(tmp_path).run_session, request(repo, resume="no-such-session")
        )

    assert (failed.value.type, failed.value.non_retryable) == ("ResumeTargetMissing", True)
    assert [call.resumed for call in fake_cli_on_path.claude.calls] == ["no-such-session"]


def test_a_continuation_the_cli_does_not_know_runs_the_request_again(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    # The worker was lost before the CLI kept its session: continuing it by id cannot work.
    fake_cli_on_path.claude.script(steps.say("never"))
    fake_cli_on_path.claude.script(steps.say("done afresh"))
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=2, heartbeat_details=[{"session_id": "gone"}])
    lines: list[str] = []

    result = env.run(activities(tmp_path, lines).run_session, request(repo))

    continued, again = fake_cli_on_path.claude.calls
    assert (continued.resumed, again.resumed) == ("gone", None)
    assert again.stdin == "fix it"
    assert [r["kind"] for r in result.records] == ["fix-continued", "fix-retry"]
    assert any("running the request again" in line for line in lines)
    assert result.final_message == "done afresh"


@pytest.mark.parametrize(
    "case",
    [
        (WorkerPolicy(), {"extra_args": ("--settings", "hook.json")}, "extra_args"),
        (WorkerPolicy(worktrees=("/nowhere",)), {}, "worktrees"),
        (WorkerPolicy(allow_extra_args=True), {"containment": "nothing"}, None),
    ],
)
def test_a_request_the_policy_refuses_fails_once_naming_the_rule_and_runs_nothing(
    tmp_path: Path,
    repo: Path,
    fake_cli_on_path: FakeCLIs,
    case: tuple[WorkerPolicy, dict[str, Any], str | None],
) -> None:
    policy, asked, rule = case
    with pytest.raises(ApplicationError) as failed:
        ActivityEnvironment().run(
            activities(tmp_path, policy=policy).run_session, request(repo, **asked)
        )

    assert failed.value.non_retryable
    if rule is None:  # no rule of the policy's: a containment that does not exist
        assert failed.value.type == "ValueError"
    else:
        assert failed.value.type == "RequestRefused"
        assert f"refused by the worker's policy ({rule})" in failed.value.message
    assert fake_cli_on_path.claude.calls == []


def test_each_record_says_where_temporal_ran_it_and_each_line_names_the_workflow(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.background("sleep 30"), steps.say("tests started"))
    fake_cli_on_path.claude.script(steps.say("all green"))
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, workflow_id="factory-issue-17", workflow_run_id="r-1", activity_id="7"
    )
    lines: list[str] = []

    result = env.run(activities(tmp_path, lines).run_session, request(repo))

    where = {
        "workflow_id": "factory-issue-17",
        "run_id": "r-1",
        "activity_id": "7",
        "attempt": 1,
        "host": "here",
    }
    assert [r["temporal"] for r in result.records] == [where, where]
    for record in result.records:
        on_disk = read_record(Path(record["log"]))
        assert on_disk is not None
        assert on_disk["temporal"] == where
    assert lines
    assert all(line.startswith("[repo factory-issue-17] ") for line in lines)


def test_a_lost_worker_s_session_is_recorded_by_the_attempt_that_takes_over(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.say("carried on"))
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    killed = logs / "repo-20261201T030000+0000-fix.jsonl"
    killed.write_text('{"type":"system","subtype":"init","session_id":"fake-session-9"}\n')
    where = {"workflow_id": "wf", "run_id": "r", "activity_id": "1", "attempt": 1, "host": "here"}
    running = {
        "kind": "fix",
        "log": str(killed),
        "started_at": datetime.now(UTC).isoformat(),
        "session_id": None,
        "temporal": where,
    }
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        workflow_id="wf",
        workflow_run_id="r",
        activity_id="1",
        attempt=2,
        heartbeat_details=[{"session_id": None, "records": [], "running": running}],
    )

    result = env.run(activities(tmp_path).run_session, request(repo))

    lost, again = result.records
    assert (lost["kind"], lost["temporal"]) == ("fix", where)
    assert "the worker running this session was lost" in lost["failure"]["message"]
    assert read_record(killed) == {**lost, "killed": []}
    assert (again["kind"], again["temporal"]["attempt"]) == ("fix-retry", 2)
    assert record_path(killed).exists()


def test_a_session_the_server_no_longer_knows_says_the_server_could_not_be_reached(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.hang())
    env = ActivityEnvironment()
    lines: list[str] = []
    act = activities(tmp_path, lines)

    def when_running() -> None:
        fake_cli_on_path.claude.wait_for_call(0, hanging=True, timeout=60)
        # What the SDK's core says when the server answers a heartbeat with NotFound: the
        # attempt timed out while no heartbeat reached it.
        env.cancel(ActivityCancellationDetails(not_found=True))

    threading.Thread(target=when_running, daemon=True).start()
    with pytest.raises(CancelledError):
        env.run(act.run_session, request(repo, watchdogs=Watchdogs(idle=60)))

    (stopped,) = [line for line in lines if "session stopped after" in line]
    assert SERVER_LOST in stopped
    assert "as asked" not in stopped


def test_a_later_attempt_stops_the_earlier_one_still_running_here_before_it_takes_over(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    # The server timed the first attempt out while no heartbeat reached it (it restarted), and
    # sent the next one to the same host: two CLIs must never run one session at once.
    fake_cli_on_path.claude.script(steps.hang())
    fake_cli_on_path.claude.script(steps.say("carried on"))
    lines: list[str] = []
    act = activities(tmp_path, lines)
    first_env = ActivityEnvironment()
    outcome: list[BaseException] = []

    def first() -> None:
        try:
            first_env.run(act.run_session, request(repo, watchdogs=Watchdogs(idle=60)))
        except BaseException as error:
            outcome.append(error)

    running = threading.Thread(target=first, daemon=True)
    running.start()
    hanging = fake_cli_on_path.claude.wait_for_call(0, hanging=True, timeout=60)
    second_env = ActivityEnvironment()
    second_env.info = dataclasses.replace(
        second_env.info, attempt=2, heartbeat_details=[{"session_id": hanging.session_id}]
    )

    result = second_env.run(act.run_session, request(repo))
    running.join(60)

    stopped, continued = fake_cli_on_path.claude.calls
    assert stopped.signals  # stopped first, with its Harness's signals
    assert continued.resumed == stopped.session_id
    assert [r["kind"] for r in result.records] == ["fix", "fix-continued"]
    assert result.records[0]["failure"]["type"] == "Interrupted"
    assert any(TAKEN_OVER in line for line in lines if "session stopped after" in line)
    assert len(outcome) == 1
    assert not running.is_alive()
