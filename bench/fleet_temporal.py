"""The Temporal path of bench/fleet.py: N sessions as N workflows through one worker.

A dev server is started for the probe (not timed); one in-process worker (``FleetWorker``,
at most N sessions at once) runs them, warmed up by one session first (not timed); each
workflow sends its session to the host's queue, as a factory sends every session of a worktree
once it has claimed its host. Timed from the first workflow's start to the last result, as the
threads path is timed from the first thread's start to the last join; the CPU is this process's
over the same stretch (:mod:`window`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from window import Window  # bench/: first on sys.path when run as a script

from thirdshift.temporal import FleetWorker, SessionRequest, SessionResult, WorkerPolicy
from thirdshift.temporal._demo_workflow import DEMO_WORKFLOW, DemoSession, demo_runner
from thirdshift.temporal._dev_server import running_dev_server


async def _all_sessions(address: str, count: int, work: Path) -> Window:
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    fleet = f"bench-{uuid.uuid4().hex[:8]}"
    host = FleetWorker(
        await Client.connect(address),
        task_queue=fleet,
        host_queue=f"{fleet}@host",
        logs=work / "logs",
        max_sessions=count,
        progress=lambda _line: None,
        # Unsandboxed, as the threads path runs them: the same sessions, one way to run them
        # against another (and the stand-in claude, in bench/, lies outside any worktree).
        policy=WorkerPolicy(sandbox=False),
    )
    client = await Client.connect(address)
    running = asyncio.create_task(host.run())
    try:
        async with Worker(
            client,
            task_queue=f"{fleet}-workflows",
            workflows=[DemoSession],
            workflow_runner=demo_runner(),
        ):
            warm = work / "warm-up"
            warm.mkdir()
            await client.execute_workflow(
                DEMO_WORKFLOW,
                args=[fleet, SessionRequest(worktree=str(warm), kind="warm", prompt="go"), None],
                id=f"{fleet}-warm-up",
                task_queue=f"{fleet}-workflows",
                result_type=SessionResult,
            )
            requests = []
            for index in range(count):
                worktree = work / f"worktree-{index}"
                worktree.mkdir()
                requests.append(SessionRequest(worktree=str(worktree), kind="bench", prompt="go"))
            # Started at once, as the threads path starts its threads.
            with Window() as window:
                handles = await asyncio.gather(
                    *(
                        client.start_workflow(
                            DEMO_WORKFLOW,
                            args=[fleet, request, f"{fleet}@host"],
                            id=f"{fleet}-{index}",
                            task_queue=f"{fleet}-workflows",
                            result_type=SessionResult,
                        )
                        for index, request in enumerate(requests)
                    )
                )
                await asyncio.gather(*(handle.result() for handle in handles))
            return window
    finally:
        await host.shutdown()
        await asyncio.gather(running, return_exceptions=True)


def probe_temporal(
    count: int,
    seconds: float,
    work: Path,
    claude_on_path: Callable[[Path, float], None],
    measured: Callable[[int, float, Callable[[], Window]], dict[str, Any]],
) -> dict[str, Any]:
    claude_on_path(work / "bin", seconds)
    (work / "server").mkdir()
    with running_dev_server(work / "server") as server:
        return measured(
            count, seconds, lambda: asyncio.run(_all_sessions(server.address, count, work))
        )
