"""Sessions as Temporal activities, end to end: a real dev server, ``thirdshift worker``
processes as hosts (each its own ``HOME``), workflows through the helpers, the fake CLIs."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import (
    Claimed,
    Factory,
    Fast,
    OnHost,
    request,
    start_worker,
    thirdshift_command,
    with_workflows,
    workers,
)
from sessionkit import fakes_running
from temporal_server import DevServer
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from pytest_thirdshift import FakeCLIs
from thirdshift.temporal import SessionResult
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    async def poll() -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate():
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(what)
            await asyncio.sleep(0.05)

    asyncio.run(poll())


async def heartbeat_naming(handle: WorkflowHandle[Any, Any], session_id: str | None) -> None:
    """Once the server holds a heartbeat of the workflow's session naming ``session_id``."""
    converter = DataConverter.default.payload_converter
    while True:
        described = await handle.describe()
        for pending in described.raw_description.pending_activities:
            payloads = pending.heartbeat_details.payloads
            if payloads and converter.from_payloads(payloads)[0]["session_id"] == session_id:
                return
        await asyncio.sleep(0.1)


@pytest.fixture
def fleet(tmp_path: Path) -> dict[str, Any]:
    """Names for one test's fleet: its shared queue, two hosts, their homes, a worktree."""
    tag = uuid.uuid4().hex[:8]
    (tmp_path / "repo").mkdir()
    return {
        "queue": f"fleet-{tag}",
        "hosts": (f"a-{tag}", f"b-{tag}"),
        "homes": (tmp_path / "home-a", tmp_path / "home-b"),
        "logs": tmp_path / "logs",
        "worktree": tmp_path / "repo",
    }


def _spans(records: list[dict[str, Any]]) -> list[tuple[datetime, datetime]]:
    spans = []
    for record in records:
        start = datetime.fromisoformat(record["started_at"])
        spans.append((start, start + timedelta(seconds=record["duration"])))
    return spans


def _most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def test_sessions_spread_over_two_hosts_each_within_its_limit(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    fake_cli_on_path.record_env("HOME")
    for _ in range(6):
        fake_cli_on_path.claude.script(fake.sleep(1.0), steps.say("done"))
    (host_a, host_b), (home_a, home_b) = fleet["hosts"], fleet["homes"]
    sent = [host_a, host_b] * 3

    async def body(client: Client, queue: str) -> list[SessionResult]:
        handles = [
            await client.start_workflow(
                OnHost.run,
                args=[host, request(fleet["worktree"], f"task{n}"), Fast()],
                id=f"spread-{n}-{uuid.uuid4().hex}",
                task_queue=queue,
            )
            for n, host in enumerate(sent)
        ]
        return [await handle.result() for handle in handles]

    with workers(
        temporal_server.address,
        (host_a, home_a, 2),
        (host_b, home_b, 2),
        fleet=fleet["queue"],
        logs=fleet["logs"],
    ):
        results = with_workflows(temporal_server.address, body)

    assert [r.final_message for r in results] == ["done"] * 6
    assert [r.host for r in results] == sent
    for host in (host_a, host_b):
        records = [rec for r in results if r.host == host for rec in r.records]
        assert len(records) == 3
        assert _most_at_once(_spans(records)) <= 2
    homes = sorted(call.env["HOME"] for call in fake_cli_on_path.claude.calls)
    assert homes == sorted([str(home_a)] * 3 + [str(home_b)] * 3)


def test_a_resume_runs_on_the_claimed_host(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    fake_cli_on_path.record_env("HOME")
    fake_cli_on_path.claude.script(steps.background("sleep 30"), steps.say("tests started"))
    fake_cli_on_path.claude.script(steps.run("true"), steps.say("all green"))
    fake_cli_on_path.claude.script(steps.say("second session"))
    (host_a, host_b), homes = fleet["hosts"], dict(zip(fleet["hosts"], fleet["homes"], strict=True))

    async def body(client: Client, queue: str) -> list[SessionResult]:
        return await client.execute_workflow(
            Claimed.run,
            args=[
                fleet["queue"],
                [request(fleet["worktree"], "implement"), request(fleet["worktree"], "review")],
                Fast(),
            ],
            id=f"claimed-{uuid.uuid4().hex}",
            task_queue=queue,
        )

    with workers(
        temporal_server.address,
        (host_a, homes[host_a], 1),
        (host_b, homes[host_b], 1),
        fleet=fleet["queue"],
        logs=fleet["logs"],
    ):
        implement, review = with_workflows(temporal_server.address, body)

    assert implement.host == review.host
    assert [r["kind"] for r in implement.records] == ["implement", "implement-resume"]
    assert implement.final_message == "all green"
    first, resume, second = fake_cli_on_path.claude.calls
    assert resume.resumed == first.session_id
    assert {call.env["HOME"] for call in (first, resume, second)} == {str(homes[implement.host])}


def test_a_cancelled_workflow_leaves_nothing_of_its_session_running(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.hang())
    host = fleet["hosts"][0]

    async def body(client: Client, queue: str) -> BaseException:
        handle = await client.start_workflow(
            OnHost.run,
            args=[host, request(fleet["worktree"]), Fast()],
            id=f"cancel-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        await asyncio.to_thread(fake_cli_on_path.claude.wait_for_call, 0, hanging=True, timeout=60)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        return failed.value.cause

    with workers(
        temporal_server.address,
        (host, fleet["homes"][0], 1),
        fleet=fleet["queue"],
        logs=fleet["logs"],
    ) as (worker,):
        cause = with_workflows(temporal_server.address, body)
        call = fake_cli_on_path.claude.calls[0]
        # Once the workflow has ended (it waits for the cancel to complete), nothing is left.
        assert fakes_running(fake_cli_on_path, settle=0, ignore=(worker.process.pid,)) == []
        assert worker.process.poll() is None  # the worker carries on
    assert isinstance(cause, CancelledError)
    assert call.signals  # stopped by its Harness's signals, not left to die with the worker


def test_a_session_whose_worker_was_killed_is_continued_by_id_on_its_host(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    fake_cli_on_path.record_env("HOME")
    fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.hang())
    fake_cli_on_path.claude.script(steps.say("carried on"))
    host, home = fleet["hosts"][0], fleet["homes"][0]
    address = temporal_server.address
    first = start_worker(address, fleet=fleet["queue"], host=host, logs=fleet["logs"], home=home)

    async def body(client: Client, queue: str) -> SessionResult:
        handle = await client.start_workflow(
            OnHost.run,
            args=[host, request(fleet["worktree"]), Fast()],
            id=f"killed-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        call = await asyncio.to_thread(
            fake_cli_on_path.claude.wait_for_call, 0, hanging=True, timeout=60
        )
        await heartbeat_naming(handle, call.session_id)
        first.stop(signal.SIGKILL)
        # The supervisor stops the tree once its adapter is gone: nothing waits for a worker.
        assert await asyncio.to_thread(fakes_running, fake_cli_on_path, 15.0) == []
        second = start_worker(
            address, fleet=fleet["queue"], host=host, logs=fleet["logs"], home=home
        )
        try:
            return await handle.result()
        finally:
            assert second.stop() == 0

    result = with_workflows(address, body)
    killed, continued = fake_cli_on_path.claude.calls
    # The killed attempt's session never ended: the attempt that took over recorded it.
    assert [r["kind"] for r in result.records] == ["implement", "implement-continued"]
    assert "the worker running this session was lost" in result.records[0]["failure"]["message"]
    assert continued.resumed == killed.session_id == result.session_id
    assert "the worker that ran it stopped" in (continued.stdin or "")
    assert continued.env["HOME"] == str(home)
    assert result.final_message == "carried on"


def test_a_rate_limit_is_waited_out_by_the_retry_while_another_session_has_the_slot(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    fake_cli_on_path.claude.script(fake.fail_turn("Rate limited: slow down", api_error_status=429))
    fake_cli_on_path.claude.script(steps.say("the other one"))
    fake_cli_on_path.claude.script(steps.say("carried on after the limit"))
    host = fleet["hosts"][0]

    async def body(client: Client, queue: str) -> tuple[SessionResult, SessionResult]:
        limited = await client.start_workflow(
            OnHost.run,
            args=[host, request(fleet["worktree"], "limited"), Fast(first_retry=8.0)],
            id=f"limited-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        await asyncio.to_thread(fake_cli_on_path.claude.wait_for_call, 0, ended=True, timeout=60)
        other = await client.execute_workflow(
            OnHost.run,
            args=[host, request(fleet["worktree"], "other"), Fast()],
            id=f"other-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        return await limited.result(), other

    with workers(
        temporal_server.address,
        (host, fleet["homes"][0], 1),
        fleet=fleet["queue"],
        logs=fleet["logs"],
    ):
        limited, other = with_workflows(temporal_server.address, body)

    first, between, continued = fake_cli_on_path.claude.calls
    assert between.argv[-2:] != ["--resume", first.session_id]
    assert other.final_message == "the other one"
    # Every attempt's sessions: the one the limit cut off, then its continuation.
    assert [r["kind"] for r in limited.records] == ["limited", "limited-continued"]
    assert continued.resumed == first.session_id
    assert "cut off by an API limit" in (continued.stdin or "")
    assert limited.final_message == "carried on after the limit"


def test_a_non_retryable_failure_is_tried_once(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    fake_cli_on_path.claude.script(fake.fail_turn("Invalid API key", api_error_status=401))
    host = fleet["hosts"][0]

    async def body(client: Client, queue: str) -> BaseException | None:
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                OnHost.run,
                args=[host, request(fleet["worktree"]), Fast()],
                id=f"auth-{uuid.uuid4().hex}",
                task_queue=queue,
            )
        return failed.value.cause

    with workers(
        temporal_server.address,
        (host, fleet["homes"][0], 1),
        fleet=fleet["queue"],
        logs=fleet["logs"],
    ):
        cause = with_workflows(temporal_server.address, body)

    assert isinstance(cause, ActivityError)
    error = cause.cause
    assert isinstance(error, ApplicationError)
    assert (error.type, error.non_retryable) == ("AuthFailed", True)
    (call,) = fake_cli_on_path.claude.calls
    (details,) = error.details
    assert isinstance(details, dict)
    assert details["session_id"] == call.session_id
    assert [r["failure"]["type"] for r in details["records"]] == ["AuthFailed"]


def test_sigterm_stops_the_worker_s_sessions_and_exits_0_and_the_next_worker_carries_on(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.hang())
    fake_cli_on_path.claude.script(steps.say("carried on"))
    host, home = fleet["hosts"][0], fleet["homes"][0]
    address = temporal_server.address
    first = start_worker(address, fleet=fleet["queue"], host=host, logs=fleet["logs"], home=home)

    async def body(client: Client, queue: str) -> tuple[int, SessionResult]:
        handle = await client.start_workflow(
            OnHost.run,
            args=[host, request(fleet["worktree"]), Fast()],
            id=f"sigterm-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        call = await asyncio.to_thread(
            fake_cli_on_path.claude.wait_for_call, 0, hanging=True, timeout=60
        )
        await heartbeat_naming(handle, call.session_id)
        code = await asyncio.to_thread(first.stop, signal.SIGTERM)
        # Stopped before the worker exited, with the Harness's signals.
        assert fakes_running(fake_cli_on_path, settle=0) == []
        second = start_worker(
            address, fleet=fleet["queue"], host=host, logs=fleet["logs"], home=home
        )
        try:
            return code, await handle.result()
        finally:
            assert second.stop() == 0

    code, result = with_workflows(address, body)
    stopped, continued = fake_cli_on_path.claude.calls
    assert code == 0
    assert stopped.signals
    assert "cancelling the running sessions" in first.output()
    assert [r["kind"] for r in result.records] == ["implement", "implement-continued"]
    assert continued.resumed == stopped.session_id
    assert "the worker that ran it stopped" in (continued.stdin or "")


def test_the_worker_runs_the_user_s_own_activities_beside_the_sessions(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any], tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.edit("done.txt", "yes"), steps.say("implemented"))
    host = fleet["hosts"][0]
    worker = start_worker(
        temporal_server.address,
        fleet=fleet["queue"],
        host=host,
        logs=fleet["logs"],
        home=fleet["homes"][0],
        more=("--activities", "fleet:USER_ACTIVITIES"),
    )

    async def body(client: Client, queue: str) -> str:
        return await client.execute_workflow(
            Factory.run,
            args=[fleet["queue"], str(tmp_path / "trees"), request(tmp_path), Fast()],
            id=f"factory-{uuid.uuid4().hex}",
            task_queue=queue,
        )

    try:
        said = with_workflows(temporal_server.address, body)
    finally:
        assert worker.stop() == 0
    made = tmp_path / "trees" / "feature"
    assert said == f"{host} {made} implemented"
    assert (made / "done.txt").read_text() == "yes"


@pytest.mark.parametrize(
    ("more", "says"),
    [
        (["--activities", "no_colon"], "MODULE:ATTR"),
        (["--activities", "no_such_module_here:x"], "no_such_module_here"),
        (["--activities", "fleet:nothing"], "nothing"),
        (["--max-sessions", "0"], "--max-sessions"),
        (["--task-queue", ""], "--task-queue must name a queue, not ''"),
        (["--host-queue", " "], "--host-queue must name a queue, not ' '"),
    ],
)
def test_a_worker_asked_for_what_cannot_be_is_a_one_line_usage_error(
    more: list[str], says: str
) -> None:
    argv = [thirdshift_command(), "worker", "--address", "127.0.0.1:1", "--task-queue", "q"]
    done = subprocess.run([*argv, *more], capture_output=True, text=True, timeout=60, check=False)

    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert says in done.stderr


class _FailedWorker:
    """A worker that failed on its own (a poll refused for good, as the SDK's was seen to with
    a queue that has no name, at some starts): ``run`` raises; a ``shutdown`` asked of it would
    never complete, so that asking one fails the test."""

    async def run(self) -> None:
        raise RuntimeError("Activity worker failed")

    async def shutdown(self) -> None:
        await asyncio.Event().wait()


def test_a_host_whose_one_worker_fails_shuts_the_other_down_and_raises(
    temporal_server: DevServer, tmp_path: Path
) -> None:
    # Waiting for both would never end: a `thirdshift worker` that hung, deaf to SIGTERM.
    async def scenario() -> tuple[BaseException, bool]:
        from thirdshift.temporal import FleetWorker

        client = await Client.connect(temporal_server.address)
        fleet = FleetWorker(client, task_queue=f"fleet-{uuid.uuid4().hex}", logs=tmp_path)
        fleet._shared = _FailedWorker()  # type: ignore[assignment]
        with pytest.raises(RuntimeError) as failed:
            await asyncio.wait_for(fleet.run(), timeout=60)
        await asyncio.wait_for(fleet.shutdown(), timeout=60)  # as `async with` calls it after
        return failed.value, fleet._host.is_shutdown

    failure, host_shut_down = asyncio.run(scenario())

    assert str(failure) == "Activity worker failed"
    assert host_shut_down


class _SlowToStop:
    """A worker whose stop takes a moment, as the SDK's does while its sessions are stopped."""

    def __init__(self) -> None:
        self.stopped = False
        self._asked = asyncio.Event()

    async def run(self) -> None:
        try:
            await self._asked.wait()
        finally:
            await asyncio.sleep(0.3)
            self.stopped = True

    async def shutdown(self) -> None:
        self._asked.set()


def test_a_host_cancelled_returns_only_once_its_workers_have_stopped(
    temporal_server: DevServer, tmp_path: Path
) -> None:
    # asyncio.run(host.run()) cancels it on Ctrl-C: sessions must not be left running unwatched.
    async def scenario() -> list[bool]:
        from thirdshift.temporal import FleetWorker

        client = await Client.connect(temporal_server.address)
        fleet = FleetWorker(client, task_queue=f"fleet-{uuid.uuid4().hex}", logs=tmp_path)
        workers = [_SlowToStop(), _SlowToStop()]
        fleet._shared, fleet._host = workers  # type: ignore[assignment]
        running = asyncio.create_task(fleet.run())
        await asyncio.sleep(0.1)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        return [worker.stopped for worker in workers]

    assert asyncio.run(scenario()) == [True, True]


def test_the_largest_failure_reaches_the_workflow_whole(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, fleet: dict[str, Any]
) -> None:
    # A 429 after Claude's ten api_retry lines, its error and final message as long as a reader
    # keeps them: over the server's size limit whole, it would arrive as "Failure exceeds size
    # limit.", its type, retryable flag and delay lost.
    said = "Rate limited: slow down. " * 90_000
    fake_cli_on_path.claude.script(fake.fail_turn(said, api_error_status=429))
    host = fleet["hosts"][0]

    async def body(client: Client, queue: str) -> BaseException | None:
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                OnHost.run,
                args=[host, request(fleet["worktree"]), Fast(attempts=1)],
                id=f"large-{uuid.uuid4().hex}",
                task_queue=queue,
            )
        return failed.value.cause

    with workers(
        temporal_server.address,
        (host, fleet["homes"][0], 1),
        fleet=fleet["queue"],
        logs=fleet["logs"],
    ):
        cause = with_workflows(temporal_server.address, body)

    assert isinstance(cause, ActivityError)
    error = cause.cause
    assert isinstance(error, ApplicationError)
    assert (error.type, error.non_retryable) == ("RateLimited", False)
    assert error.message.startswith("claude")
    assert "Rate limited: slow down." in error.message
    (details,) = error.details
    assert [r["failure"]["type"] for r in details["records"]] == ["RateLimited"]
