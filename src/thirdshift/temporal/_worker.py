"""One host of a fleet: a worker on the fleet's shared queue, and one on this host's own.

The shared queue's worker answers ``thirdshift.host_queue`` (a workflow claims a host through
it); the host queue's runs the sessions sent there, up to ``max_sessions`` at once, with any
activities of the user's (making the worktree, opening the PR) beside them. A demo or a test
runs several in one process (each with its own ``env``, e.g. ``HOME``), or one per process
with ``thirdshift worker``.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from thirdshift._containment import checked_containment
from thirdshift.temporal._activities import HEARTBEAT_EVERY, SessionActivities
from thirdshift.temporal._policy import WorkerPolicy

DEFAULT_LOGS = Path("~/.thirdshift/logs")
DEFAULT_MAX_SESSIONS = 4


def default_host_queue(task_queue: str) -> str:
    """``<task_queue>@<hostname>``: one queue per machine, as a Resume needs."""
    return f"{task_queue}@{socket.gethostname()}"


class FleetWorker:
    """Runs :class:`SessionActivities` for one host until :meth:`shutdown`; as an ``async
    with`` block, in the background while the block runs.

    ``run`` polls both queues; ``shutdown`` stops polling and cancels the running sessions
    (their trees stopped; each attempt is continued by id on this host's queue once a worker
    polls it again), then returns once they have ended. ``policy`` is what a request may ask
    for (:class:`~thirdshift.temporal.WorkerPolicy`); a containment it names that this machine
    does not allow, or a sandbox it cannot make (``SandboxUnavailable``), is a
    ``ConfigurationError`` here, before anything polls.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        host_queue: str | None = None,
        logs: Path | str = DEFAULT_LOGS,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        activities: Sequence[Callable[..., Any]] = (),
        env: Mapping[str, str | None] | None = None,
        progress: Callable[[str], None] | None = None,
        heartbeat_every: float = HEARTBEAT_EVERY,
        policy: WorkerPolicy | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be 1 or more, not {max_sessions!r}")
        for queue in (task_queue, host_queue):
            if queue is not None and not queue.strip():
                raise ValueError(f"a task queue must have a name, not {queue!r}")
        self.task_queue = task_queue
        self.host_queue = host_queue or default_host_queue(task_queue)
        self.policy = policy if policy is not None else WorkerPolicy()
        if self.policy.containment != "auto":
            from thirdshift._machine.allowed import resolved

            resolved(checked_containment(self.policy.containment))
        if self.policy.sandbox:
            # A machine that cannot sandbox is said here, once, not by every session it runs.
            from thirdshift._machine.sandbox import checked_machine

            checked_machine()
        self.sessions = SessionActivities(
            logs,
            host_queue=self.host_queue,
            env=env,
            progress=progress,
            heartbeat_every=heartbeat_every,
            policy=self.policy,
            client=client,
        )
        # One thread per session, plus one per user activity that may run beside them.
        self._executor = ThreadPoolExecutor(
            max_workers=max_sessions + max(1, len(activities)), thread_name_prefix="thirdshift"
        )
        self._host = Worker(
            client,
            task_queue=self.host_queue,
            activities=[*self.sessions.on_host_queue, *activities],
            activity_executor=self._executor,
            max_concurrent_activities=max_sessions,
            graceful_shutdown_timeout=timedelta(0),
        )
        self._shared = Worker(
            client, task_queue=task_queue, activities=[*self.sessions.on_shared_queue]
        )
        self._running: asyncio.Task[None] | None = None
        self._polling: dict[Worker, asyncio.Task[None]] = {}

    async def __aenter__(self) -> FleetWorker:
        """Run in the background until the block ends, then :meth:`shutdown`."""
        self._running = asyncio.create_task(self.run())
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.shutdown()
        running, self._running = self._running, None
        if running is not None:
            await running

    async def run(self) -> None:
        """Poll both queues until :meth:`shutdown`. Should either worker fail (a queue the
        server refuses, the server gone for good), the other is shut down (its sessions
        cancelled) and the failure raised: a host that polls only one of its queues is of no
        use, and waiting on it would never end."""
        self._polling = {worker: asyncio.create_task(worker.run()) for worker in self._workers}
        polling = list(self._polling.values())
        try:
            await asyncio.wait(polling, return_when=asyncio.FIRST_EXCEPTION)
            await self.shutdown()
            await asyncio.gather(*polling)  # the first failure, if any
        except asyncio.CancelledError:
            # Cancelled (asyncio.run on Ctrl-C): a cancel is how the SDK's workers shut down,
            # and this returns only once they have, their sessions stopped.
            for task in polling:
                task.cancel()
            await asyncio.gather(*polling, return_exceptions=True)
            raise
        finally:
            self._executor.shutdown(wait=False)

    async def shutdown(self) -> None:
        """Stop polling, cancel the running sessions, and wait for them to end."""
        # Only the workers still polling are asked: one that ended has nothing left to stop.
        await asyncio.gather(
            *(
                worker.shutdown()
                for worker in self._workers
                if worker not in self._polling or not self._polling[worker].done()
            )
        )

    @property
    def _workers(self) -> tuple[Worker, Worker]:
        return (self._shared, self._host)
