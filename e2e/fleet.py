"""What the fleet tests share: workflows that run sessions through the helpers, and workers
started as ``thirdshift worker`` processes (one per "host", each with its own ``HOME``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

# Imported as workflow code imports it, in the sandbox too, not passed through: the helpers
# are safe there as they stand.
from thirdshift.temporal import SessionRequest, SessionResult, claim_host, run_session

WORKER_READY_WITHIN = 60.0


@dataclass(frozen=True)
class Fast:
    """Test-sized options for ``run_session``: heartbeats and retries in seconds, not minutes."""

    heartbeat_timeout: float = 3.0
    first_retry: float = 1.0
    attempts: int = 0
    """0: no limit (Temporal's own default)."""


def _options(fast: Fast) -> dict[str, object]:
    return {
        "heartbeat_timeout": timedelta(seconds=fast.heartbeat_timeout),
        "retry_policy": RetryPolicy(
            initial_interval=timedelta(seconds=fast.first_retry),
            backoff_coefficient=1.0,
            maximum_interval=timedelta(seconds=fast.first_retry),  # a limit's wait too
            maximum_attempts=fast.attempts,
        ),
    }


@workflow.defn(name="test.OnHost")
class OnHost:
    """One session, sent to the given host queue."""

    @workflow.run
    async def run(self, host: str, request: SessionRequest, fast: Fast) -> SessionResult:
        return await run_session(request, task_queue=host, **_options(fast))


@workflow.defn(name="test.Defaults")
class Defaults:
    """One session, sent to the given host queue, under ``run_session``'s own options."""

    @workflow.run
    async def run(self, host: str, request: SessionRequest) -> SessionResult:
        return await run_session(request, task_queue=host)


@workflow.defn(name="test.Claimed")
class Claimed:
    """Claim a host on the fleet queue, then run each request there in turn."""

    @workflow.run
    async def run(
        self, fleet: str, requests: list[SessionRequest], fast: Fast
    ) -> list[SessionResult]:
        host = await claim_host(fleet)
        return [await run_session(r, task_queue=host, **_options(fast)) for r in requests]


T = TypeVar("T")
SCENARIO_WITHIN = 240.0


def with_workflows(
    address: str, body: Callable[[Client, str], Awaitable[T]], queue: str | None = None
) -> T:
    """Run ``body(client, workflow_queue)`` while this process hosts the test workflows (on
    ``queue``, default a new one)."""

    async def scenario() -> T:
        client = await Client.connect(address)
        workflows = queue or f"workflows-{uuid.uuid4().hex}"
        async with Worker(client, task_queue=workflows, workflows=list(WORKFLOWS)):
            # A workflow task that fails is retried for ever: the test fails instead.
            return await asyncio.wait_for(body(client, workflows), timeout=SCENARIO_WITHIN)

    return asyncio.run(scenario())


def request(worktree: Path, kind: str = "implement", **more: Any) -> SessionRequest:
    return SessionRequest(worktree=str(worktree), kind=kind, prompt=f"do the {kind}", **more)


def thirdshift_command() -> str:
    return str(Path(sys.executable).parent / "thirdshift")


@dataclass
class WorkerProcess:
    process: subprocess.Popen[bytes]
    stderr: Path

    def output(self) -> str:
        return self.stderr.read_text(errors="replace")

    def stop(self, signum: signal.Signals = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Send ``signum``; wait for the exit; its code."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout=timeout)


def start_worker(
    address: str,
    *,
    fleet: str,
    host: str,
    logs: Path,
    home: Path | None,
    max_sessions: int = 1,
    more: tuple[str, ...] = (),
) -> WorkerProcess:
    """``thirdshift worker`` polling ``fleet`` and ``host``, with ``HOME`` at ``home`` (``None``:
    this process's), once it polls."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}  # for fleet:USER_ACTIVITIES
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        env["HOME"] = str(home)
    stderr = logs.parent / f"worker-{host}-{time.monotonic_ns()}.stderr"
    stderr.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        thirdshift_command(),
        "worker",
        "--address",
        address,
        "--task-queue",
        fleet,
        "--host-queue",
        host,
        "--logs",
        str(logs),
        "--max-sessions",
        str(max_sessions),
        *more,
    ]
    with open(stderr, "wb") as output:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            env=env,
        )
    worker = WorkerProcess(process, stderr)
    deadline = time.monotonic() + WORKER_READY_WITHIN
    while "thirdshift: worker for" not in worker.output():
        if process.poll() is not None or time.monotonic() > deadline:
            worker.stop(signal.SIGKILL)
            raise RuntimeError(f"the worker did not start: {worker.output()}")
        time.sleep(0.05)
    return worker


@contextlib.contextmanager
def workers(
    address: str, *specs: tuple[str, Path, int], fleet: str, logs: Path
) -> Iterator[list[WorkerProcess]]:
    """A worker per ``(host, home, max_sessions)``, each stopped (SIGTERM) at the end."""
    started: list[WorkerProcess] = []
    try:
        for host, home, max_sessions in specs:
            started.append(
                start_worker(
                    address, fleet=fleet, host=host, logs=logs, home=home, max_sessions=max_sessions
                )
            )
        yield started
    finally:
        for worker in started:
            worker.stop()


@activity.defn(name="test.make_worktree")
def make_worktree(parent: str, name: str) -> str:
    """A user's own activity, run beside the sessions on a host's queue (``--activities``)."""
    path = Path(parent) / name
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


USER_ACTIVITIES = [make_worktree]


@workflow.defn(name="test.Factory")
class Factory:
    """Claim a host, make a worktree there with the user's activity, run a session in it."""

    @workflow.run
    async def run(self, fleet: str, parent: str, request: SessionRequest, fast: Fast) -> str:
        host = await claim_host(fleet)
        worktree: str = await workflow.execute_activity(
            "test.make_worktree",
            args=[parent, "feature"],
            task_queue=host,
            start_to_close_timeout=timedelta(seconds=60),
            result_type=str,
        )
        made = dataclasses.replace(request, worktree=worktree)
        result = await run_session(made, task_queue=host, **_options(fast))
        return f"{result.host} {worktree} {result.final_message}"


WORKFLOWS = (OnHost, Defaults, Claimed, Factory)
