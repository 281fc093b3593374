"""``thirdshift.run_session`` in-process (Temporal's ``ActivityEnvironment``, no server) on the
fake CLIs: its heartbeats, its cancel and shutdown, how a later attempt starts."""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sessionkit import fakes_running
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import ActivityEnvironment

from pytest_thirdshift import FakeCLIs
from thirdshift import Budget, Watchdogs
from thirdshift.temporal import SessionActivities, SessionRequest
from thirdshift.temporal._beats import MAX_TEXT
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps


class Heartbeats:
    """Every heartbeat's details; ``silent`` is set once ``count`` came with no new line."""

    def __init__(self, count: int) -> None:
        self.details: list[dict[str, Any]] = []
        self.silent = threading.Event()
        self._count = count

    def __call__(self, *details: Any) -> None:
        (beat,) = details
        self.details.append(beat)
        last = [d["progress"] for d in self.details[-self._count :]]
        if len(last) == self._count and len(set(last)) == 1 and beat["session_id"]:
            self.silent.set()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    return tmp_path / "repo"


def activities(tmp_path: Path) -> SessionActivities:
    return SessionActivities(
        tmp_path / "logs", host_queue="here", heartbeat_every=0.2, progress=lambda _: None
    )


def run_stopping(env: ActivityEnvironment, stop: Any, act: SessionActivities, req: Any) -> None:
    """Run the activity; ``stop`` (env.cancel, env.worker_shutdown) once it beat while silent."""
    beats = env.on_heartbeat
    assert isinstance(beats, Heartbeats)

    def stopper() -> None:
        if beats.silent.wait(60):
            stop()

    threading.Thread(target=stopper, daemon=True).start()
    env.run(act.run_session, req)


class AtOnceClient:
    """Stands where the worker's client does, for the heartbeats sent past the SDK's throttle:
    each one's task token and details."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, dict[str, Any]]] = []

    def get_async_activity_handle(self, *, task_token: bytes) -> Any:
        sent = self.sent

        class Handle:
            async def heartbeat(self, details: dict[str, Any], **_: Any) -> None:
                sent.append((task_token, details))

        return Handle()


def test_the_heartbeat_that_first_names_the_session_goes_out_at_once_then_a_cancel_stops_its_tree(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(
        steps.background("sleep 300"), steps.say("working"), steps.hang()
    )
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=30))
    env.on_heartbeat = Heartbeats(count=3)
    client = AtOnceClient()
    act = SessionActivities(
        tmp_path / "logs", host_queue="here", heartbeat_every=0.2, progress=lambda _: None
    )
    act.at_once.client = client  # type: ignore[assignment]
    # A watchdog, so that a session the activity failed to stop fails the test, not hangs it.
    request = SessionRequest(
        worktree=str(repo), kind="implement", prompt="go", watchdogs=Watchdogs(idle=60)
    )

    with pytest.raises(CancelledError):
        run_stopping(env, env.cancel, act, request)

    (call,) = fake_cli_on_path.claude.calls
    beats = env.on_heartbeat.details
    named = next(beat for beat in beats if beat["session_id"] is not None)
    # Past the throttle, exactly once: the heartbeat that first names the session.
    assert client.sent == [(b"test", named)]
    assert named["session_id"] == call.session_id is not None
    assert named["running"]["kind"] == "implement"
    assert beats[0]["phase"] == "starting"
    assert named["phase"] == "running"
    assert all(beat["progress"] is not None for beat in beats)
    assert beats[-1]["progress"].startswith("implement: session stopped")  # the newest line
    assert beats[-1]["phase"] == "stopping"
    assert beats[-1]["elapsed"] >= beats[0]["elapsed"]
    assert fakes_running(fake_cli_on_path, settle=0) == []
    assert call.signals  # stopped with its Harness's signals
    assert [r["failure"]["type"] for r in beats[-1]["records"]] == ["Interrupted"]
    assert beats[-1]["running"] is None  # it ended: its record says how


def test_a_worker_shutting_down_stops_the_session_and_fails_the_attempt_for_a_retry(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.hang())
    env = ActivityEnvironment()
    env.on_heartbeat = Heartbeats(count=2)
    # A watchdog, so that a session the activity failed to stop fails the test, not hangs it.
    request = SessionRequest(
        worktree=str(repo), kind="implement", prompt="go", watchdogs=Watchdogs(idle=60)
    )

    with pytest.raises(CancelledError):
        run_stopping(env, env.worker_shutdown, activities(tmp_path), request)

    (call,) = fake_cli_on_path.claude.calls
    assert fakes_running(fake_cli_on_path, settle=0) == []
    assert env.on_heartbeat.details[-1]["session_id"] == call.session_id


@pytest.mark.parametrize(
    ("details", "expected"),
    [
        ({"session_id": "s", "failure": "429 slow down"}, ("fix-continued", True, "429 slow")),
        ({"session_id": "s", "records": []}, ("fix-continued", True, "worker that ran it")),
        ({"session_id": None, "failure": "429"}, ("fix-retry", False, "fix it")),
        ("not details at all", ("fix-retry", False, "fix it")),
    ],
)
def test_a_later_attempt_continues_the_last_heartbeats_session_by_id(
    tmp_path: Path,
    repo: Path,
    fake_cli_on_path: FakeCLIs,
    details: object,
    expected: tuple[str, bool, str],
) -> None:
    kind, resumed, prompt = expected
    fake_cli_on_path.claude.script(steps.say("cut off"))
    fake_cli_on_path.claude.script(steps.say("carried on"))
    request = SessionRequest(worktree=str(repo), kind="fix", prompt="fix it")
    ActivityEnvironment().run(activities(tmp_path).run_session, request)  # makes session 1
    first_id = fake_cli_on_path.claude.calls[0].session_id
    if isinstance(details, dict) and details["session_id"]:
        details = {**details, "session_id": first_id}
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=2, heartbeat_details=[details])

    result = env.run(activities(tmp_path).run_session, request)

    _, call = fake_cli_on_path.claude.calls
    assert [r["kind"] for r in result.records] == [kind]
    assert call.resumed == (first_id if resumed else None)
    assert prompt in (call.stdin or "")
    assert (result.final_message, result.host) == ("carried on", "here")


def test_a_request_that_cannot_be_run_as_asked_is_not_retried(tmp_path: Path, repo: Path) -> None:
    request = SessionRequest(worktree=str(repo), kind="fix", prompt="go", harness="no-such-cli")

    with pytest.raises(ApplicationError) as failed:
        ActivityEnvironment().run(activities(tmp_path).run_session, request)

    assert failed.value.non_retryable
    assert failed.value.type == "ConfigurationError"


@pytest.mark.parametrize(
    ("asked", "says"),
    [
        ({"prompt": "fix \ud800 it"}, "the prompt holds '\\ud800', which is no text"),
        # Found only as the session starts, in its thread: no retry cures it either.
        ({"kind": "../up"}, "session kind '../up' is not a plain name"),
    ],
)
def test_a_request_within_refuses_fails_once_and_is_not_retried(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs, asked: dict[str, Any], says: str
) -> None:
    request = SessionRequest(**{"worktree": str(repo), "kind": "fix", "prompt": "go", **asked})

    with pytest.raises(ApplicationError) as failed:
        ActivityEnvironment().run(activities(tmp_path).run_session, request)

    assert (failed.value.type, failed.value.non_retryable) == ("ValueError", True)
    assert says in failed.value.message
    assert fake_cli_on_path.claude.calls == []


def _spent(session_id: str, turns: int, kind: str = "fix") -> dict[str, Any]:
    """An earlier attempt's record of ``session_id``, as its heartbeats carried it."""
    usage = {"turns": turns, "input_tokens": 10 * turns, "output_tokens": 5 * turns}
    started = "2026-12-01T03:00:00+00:00"
    return {"kind": kind, "session_id": session_id, "usage": usage, "started_at": started}


def test_what_earlier_attempts_spent_counts_against_the_budget_and_stays_in_the_records(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.say("cut off"))
    fake_cli_on_path.claude.script(steps.say("carried on"))
    first = ActivityEnvironment().run(
        activities(tmp_path).run_session,
        SessionRequest(worktree=str(repo), kind="fix", prompt="fix it"),
    )
    earlier = _spent(first.session_id or "", turns=4)
    request = SessionRequest(
        worktree=str(repo), kind="fix", prompt="fix it", budget=Budget(turns=6)
    )
    env = ActivityEnvironment()
    beats = Heartbeats(count=2)
    env.on_heartbeat = beats
    env.info = dataclasses.replace(
        env.info,
        attempt=2,
        heartbeat_details=[{"session_id": first.session_id, "records": [earlier]}],
    )

    result = env.run(activities(tmp_path).run_session, request)

    assert result.final_message == "carried on"
    assert [r["kind"] for r in result.records] == ["fix", "fix-continued"]
    assert result.records[0] == earlier
    assert all(beat["records"][0] == earlier for beat in beats.details)


def test_a_budget_earlier_attempts_spent_starts_no_session_and_is_not_retried(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    # A limit cut the first attempt off after 4 turns, and the second after 4 more: a Budget of
    # 6 turns for the request is spent, however many attempts Temporal would still make.
    request = SessionRequest(
        worktree=str(repo), kind="fix", prompt="fix it", budget=Budget(turns=6)
    )
    records = [_spent("s-1", turns=4), _spent("s-1", turns=4, kind="fix-continued")]
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        attempt=3,
        heartbeat_details=[{"session_id": "s-1", "records": records, "failure": "a 429"}],
    )

    with pytest.raises(ApplicationError) as failed:
        env.run(activities(tmp_path).run_session, request)

    assert (failed.value.type, failed.value.non_retryable) == ("BudgetExhausted", True)
    assert "fix-continued: not started, as the budget is spent (turns 8 of 6)" in (
        failed.value.message
    )
    (details,) = failed.value.details
    assert details["records"] == records
    assert fake_cli_on_path.claude.calls == []


def _assistant(number: int, tokens: int) -> dict[str, Any]:
    """A Claude assistant line whose message used ``tokens`` input tokens, as it starts."""
    message = {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "working"}],
        "usage": {"input_tokens": tokens, "output_tokens": 1},
    }
    return {"type": "assistant", "message": message, "parent_tool_use_id": None}


def test_a_session_over_its_budget_is_stopped_and_not_retried(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(
        steps.background("sleep 300"),
        *(cli_steps.emit(_assistant(n, 400)) for n in range(4)),
        steps.hang(),
    )
    request = SessionRequest(
        worktree=str(repo), kind="fix", prompt="go", budget=Budget(tokens=1000)
    )

    with pytest.raises(ApplicationError) as failed:
        ActivityEnvironment().run(activities(tmp_path).run_session, request)

    assert (failed.value.type, failed.value.non_retryable) == ("BudgetExhausted", True)
    assert "the budget is spent" in failed.value.message
    (details,) = failed.value.details
    assert details["session_id"] is not None
    assert [record["failure"]["type"] for record in details["records"]] == ["BudgetExhausted"]
    assert len(fake_cli_on_path.claude.calls) == 1
    assert fakes_running(fake_cli_on_path) == []


def test_heartbeats_cut_what_the_stream_said_and_the_result_keeps_it_whole(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    said = "a long answer " * 20_000
    fake_cli_on_path.claude.script(steps.say(said))
    fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.say(said))
    fake_cli_on_path.claude.script(steps.hang())  # its Resume, cancelled once it beat
    request = SessionRequest(
        worktree=str(repo), kind="fix", prompt="go", watchdogs=Watchdogs(idle=60)
    )
    env = ActivityEnvironment()
    beats = Heartbeats(count=3)
    env.on_heartbeat = beats

    result = ActivityEnvironment().run(activities(tmp_path).run_session, request)

    def once_resumed() -> None:  # cancelled once its Resume runs, and not before
        fake_cli_on_path.claude.wait_for_call(2, hanging=True, timeout=60)
        beats.silent.clear()
        if beats.silent.wait(60):
            env.cancel()

    threading.Thread(target=once_resumed, daemon=True).start()
    with pytest.raises(CancelledError):
        env.run(activities(tmp_path).run_session, request)

    assert result.final_message == said
    first, resume = beats.details[-1]["records"]
    assert len(first["final_message"]) < MAX_TEXT + 100
    assert first["final_message"].endswith("more characters in the Session log)")
    assert resume["kind"] == "fix-resume"


def test_a_burst_of_lines_heartbeats_once_an_interval_with_the_latest_line(
    tmp_path: Path, repo: Path, fake_cli_on_path: FakeCLIs
) -> None:
    burst = 150
    fake_cli_on_path.claude.script(
        *(steps.edit(f"step-{n}.txt", "x") for n in range(burst)), steps.say("ok")
    )
    shown: list[str] = []
    beats: list[dict[str, Any]] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details[0])
    every = 0.5
    act = SessionActivities(
        tmp_path / "logs", host_queue="here", heartbeat_every=every, progress=shown.append
    )
    request = SessionRequest(worktree=str(repo), kind="implement", prompt="go")

    started = time.monotonic()
    result = env.run(act.run_session, request)
    took = time.monotonic() - started

    assert result.final_message == "ok"
    assert sum("step-" in line for line in shown) == burst
    # One heartbeat a line cost a fleet of busy sessions most of its CPU (bench/RESULTS.md):
    # the first, the one that names the session, then at most one an interval.
    assert len(beats) <= 2 + took / every + 1, (len(beats), took)
    # Each carries the newest line then, never a stale one.
    progress = [beat["progress"] for beat in beats]
    assert progress[0] is not None
    assert all(p in [line.split("] ", 1)[1] for line in shown] for p in progress)
    assert beats[-1]["session_id"] == fake_cli_on_path.claude.calls[0].session_id
