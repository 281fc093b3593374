"""A worker killed outright (SIGKILL) in the first seconds of its sessions: each session is
continued by id on its host, whatever the heartbeat timeout, soon after that timeout, and the
lost attempt is recorded with its continuation. A real dev server, ``thirdshift worker``
processes, the fake claude."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from fleet import (
    Defaults,
    Fast,
    OnHost,
    request,
    start_worker,
    thirdshift_command,
    with_workflows,
)
from sessionkit import fakes_running
from temporal_server import DevServer, running_dev_server
from temporalio.client import Client

from pytest_thirdshift import FakeCLIs
from thirdshift.temporal import SessionResult
from thirdshift.temporal._dev_server import free_port
from thirdshift.temporal._helpers import HEARTBEAT_TIMEOUT
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps

KILLED_AFTER = (3.0, 2.0, 1.0)
"""Seconds, at least, from when each session has named itself to the kill: the first started
first, the last is killed a second after it named itself."""


def test_sessions_of_a_worker_killed_in_their_first_seconds_are_each_continued_by_id(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    host, fleet = f"host-{uuid.uuid4().hex[:8]}", f"fleet-{uuid.uuid4().hex[:8]}"
    home, logs = tmp_path / "home", tmp_path / "logs"
    trees = [tmp_path / name for name in ("a", "b", "c")]
    for tree in trees:
        tree.mkdir()
        fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.hang(), worktree=tree)
        fake_cli_on_path.claude.script(steps.say(f"carried on in {tree.name}"), worktree=tree)
    address = temporal_server.address
    first = start_worker(
        address, fleet=fleet, host=host, logs=logs, home=home, max_sessions=len(trees)
    )
    killed_after: list[float] = []

    async def body(client: Client, queue: str) -> list[SessionResult]:
        handles, named_at = [], []
        for index, tree in enumerate(trees):
            handles.append(
                await client.start_workflow(
                    OnHost.run,
                    # The heartbeat timeout the fleet demo uses: the SDK holds all heartbeats
                    # but the first back for 8 s.
                    args=[host, request(tree), Fast(heartbeat_timeout=10.0)],
                    id=f"lost-{tree.name}-{uuid.uuid4().hex}",
                    task_queue=queue,
                )
            )
            await asyncio.to_thread(
                fake_cli_on_path.claude.wait_for_call, index, hanging=True, timeout=60
            )
            named_at.append(time.monotonic())
            wait = KILLED_AFTER[index] - KILLED_AFTER[index + 1] if index + 1 < len(trees) else 0
            await asyncio.sleep(wait)
        await asyncio.sleep(KILLED_AFTER[-1])
        first.stop(signal.SIGKILL)
        killed = time.monotonic()
        killed_after.extend(killed - at for at in named_at)
        assert await asyncio.to_thread(fakes_running, fake_cli_on_path, 15.0) == []
        second = start_worker(
            address, fleet=fleet, host=host, logs=logs, home=home, max_sessions=len(trees)
        )
        try:
            return [await handle.result() for handle in handles]
        finally:
            assert second.stop() == 0

    results = with_workflows(address, body)

    assert all(after >= least for after, least in zip(killed_after, KILLED_AFTER, strict=True))
    for tree, result in zip(trees, results, strict=True):
        lost, continued = (call for call in fake_cli_on_path.claude.calls if call.cwd == tree)
        assert continued.resumed == lost.session_id is not None, (tree.name, killed_after)
        assert result.final_message == f"carried on in {tree.name}"
        kinds = [(r["kind"], r["temporal"]["attempt"]) for r in result.records]
        assert kinds == [("implement", 1), ("implement-continued", 2)]
        assert "the worker running this session was lost" in result.records[0]["failure"]["message"]
    # Each lost attempt and its continuation, stamped by two worker processes, are one run.
    summed = subprocess.run(
        [thirdshift_command(), "inspect", str(logs)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert summed.returncode == 0, summed.stderr
    *runs, total = summed.stdout.splitlines()
    assert len(runs) == len(trees)
    assert all(line.startswith(f"{host}  ") and ": 2 sessions, ok," in line for line in runs)
    assert total.startswith(f"total: {len(trees)} runs, {len(trees)} ok, 0 failed")


def test_a_lost_worker_s_session_is_continued_soon_after_the_default_heartbeat_timeout(
    temporal_server: DevServer, fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Under run_session's own options: a 30 s heartbeat timeout (a throttle of 24 s), and a
    # retry policy whose first interval is not the minute meant for limits.
    fake_cli_on_path.claude.script(steps.hang())
    fake_cli_on_path.claude.script(steps.say("carried on"))
    host, fleet = f"host-{uuid.uuid4().hex[:8]}", f"fleet-{uuid.uuid4().hex[:8]}"
    home, logs = tmp_path / "home", tmp_path / "logs"
    (tmp_path / "repo").mkdir()
    address = temporal_server.address
    first = start_worker(address, fleet=fleet, host=host, logs=logs, home=home)
    took: list[float] = []

    async def body(client: Client, queue: str) -> Any:
        handle = await client.start_workflow(
            Defaults.run,
            args=[host, request(tmp_path / "repo")],
            id=f"defaults-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        await asyncio.to_thread(fake_cli_on_path.claude.wait_for_call, 0, hanging=True, timeout=60)
        await asyncio.sleep(1.0)
        first.stop(signal.SIGKILL)
        killed = time.monotonic()
        second = start_worker(address, fleet=fleet, host=host, logs=logs, home=home)
        try:
            await asyncio.to_thread(fake_cli_on_path.claude.wait_for_call, 1, timeout=180)
            took.append(time.monotonic() - killed)
            return await handle.result()
        finally:
            assert second.stop() == 0

    result = with_workflows(address, body)

    lost, continued = fake_cli_on_path.claude.calls
    assert continued.resumed == lost.session_id is not None
    assert result.final_message == "carried on"
    # The heartbeat timeout, then a retry a second or so later, not a minute (a bound on a
    # behaviour, 60 s apart from the old one, not a measure of speed).
    (seconds,) = took
    assert seconds < HEARTBEAT_TIMEOUT.total_seconds() + 20, seconds


def test_a_server_that_goes_away_mid_session_loses_no_work(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # The server stops 2 s into the session and is back after more than the heartbeat timeout:
    # either the attempt lives on (a heartbeat reached the server again first) and its session
    # ends as it would have, or the server timed it out and the next attempt, on the same
    # host, stops it and continues the session by id. Never is it started again from its first
    # prompt, and never do two CLIs run it at once.
    fake_cli_on_path.claude.script(fake.sleep(25.0), steps.say("finished after all"))
    fake_cli_on_path.claude.script(steps.say("carried on"))
    host, fleet = f"host-{uuid.uuid4().hex[:8]}", f"fleet-{uuid.uuid4().hex[:8]}"
    home, logs, data = tmp_path / "home", tmp_path / "logs", tmp_path / "server"
    data.mkdir()
    (tmp_path / "repo").mkdir()
    port = free_port()
    with running_dev_server(data, port=port) as server:
        worker = start_worker(server.address, fleet=fleet, host=host, logs=logs, home=home)

        async def start(client: Client, queue: str) -> str:
            handle = await client.start_workflow(
                OnHost.run,
                args=[host, request(tmp_path / "repo"), Fast(heartbeat_timeout=10.0)],
                id=f"restart-{uuid.uuid4().hex}",
                task_queue=queue,
            )
            await asyncio.to_thread(fake_cli_on_path.claude.wait_for_call, 0, timeout=60)
            await asyncio.sleep(2.0)
            return handle.id

        queue = f"workflows-{uuid.uuid4().hex}"
        workflow_id = with_workflows(server.address, start, queue)
    time.sleep(12.0)  # away for longer than the heartbeat timeout
    try:
        with running_dev_server(data, port=port) as server:

            async def finish(client: Client, _queue: str) -> SessionResult:
                # This test's workflows run again here: the workflow goes on where it was.
                handle = client.get_workflow_handle(workflow_id, result_type=SessionResult)
                done: SessionResult = await handle.result()
                return done

            result = with_workflows(server.address, finish, queue)
    finally:
        assert worker.stop() == 0
    first, *later = fake_cli_on_path.claude.calls
    assert [call.resumed for call in later] == [first.session_id] * len(later)
    assert len(later) <= 1
    assert "implement-retry" not in [r["kind"] for r in result.records]
    if later:  # taken over: the first stopped before its continuation started
        assert first.ended
        assert "the Temporal server could not be reached" in worker.output()
        assert result.final_message == "carried on"
    else:
        assert result.final_message == "finished after all"
