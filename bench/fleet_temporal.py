"""The Temporal path of bench/fleet.py: N sessions as N workflows through one host's worker.

A dev server is started for the probe (not timed), keeping its state in memory unless
``--server-on-disk`` (:func:`_server` says why). The probe's process is the host: one
``FleetWorker`` (at most N sessions at once), as ``thirdshift worker`` runs it. The factory
is a process of its own (``python bench/fleet_temporal.py ADDRESS FLEET COUNT WORK``), as a
factory's workflows run apart from the hosts that run their sessions: it runs the workflow
worker (``DemoSession``) and starts the workflows, each sending its session to the host's queue
as a factory sends every session of a worktree once it has claimed its host. One session warms
both up first (not timed). Timed from the first workflow's start to the last result, as the
threads path is timed from the first thread's start to the last join; the host's CPU is taken
over the same stretch (the factory says when it starts and ends), and the factory's own CPU
over it is reported beside it: on this one machine both share the cores with the sessions and
the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from window import Window  # bench/: first on sys.path when run as a script

from thirdshift.temporal import FleetWorker, SessionRequest, SessionResult, WorkerPolicy
from thirdshift.temporal._demo_workflow import DEMO_WORKFLOW, DemoSession, demo_runner
from thirdshift.temporal._dev_server import running_dev_server, temporal_cli

STARTED = "started"
"""What the factory prints as its timed stretch begins; its figures follow, as JSON, at the end."""


async def _factory(address: str, fleet: str, count: int, work: Path) -> Window:
    """Warm up with one session, then run ``count`` at once; the timed stretch."""
    client = await Client.connect(address)
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
        print(STARTED, flush=True)
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


async def _host(address: str, count: int, work: Path) -> tuple[Window, dict[str, float]]:
    """Run the host's worker while the factory runs; the host's window, the factory's."""
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
    running = asyncio.create_task(host.run())
    window = Window()
    try:
        factory = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            address,
            fleet,
            str(count),
            str(work),
            stdout=asyncio.subprocess.PIPE,
        )
        assert factory.stdout is not None
        said = []
        async for line in factory.stdout:
            if line.strip() == STARTED.encode():
                window.start()
            else:
                said.append(line)
        window.stop()
        if await factory.wait() != 0:
            raise RuntimeError(f"the factory failed (exit {factory.returncode})")
        theirs: dict[str, float] = json.loads(said[-1])
        return window, theirs
    finally:
        await host.shutdown()
        await asyncio.gather(running, return_exceptions=True)


@contextlib.contextmanager
def _server(folder: Path, *, on_disk: bool) -> Iterator[str]:
    """A dev server's address: ``running_dev_server``'s (its database a file, as the demo and
    the tests keep it) or, by default, one that keeps its state in memory.

    On this VM the file's writes bound the Temporal path's wall time (a server dispatched the
    workflows' first tasks at about 7 a second while the host and the factory sat idle:
    bench/RESULTS.md, "The fleet's cost"); a fleet's server runs elsewhere, on its own
    database, and is neither the worker's cost nor thirdshift's.
    """
    if on_disk:
        with running_dev_server(folder) as server:
            yield server.address
        return
    log = folder / "temporal-server.log"
    shim = folder / "temporal-quiet"
    shim.write_text(f'#!/bin/sh\nexec "{temporal_cli()}" "$@" >>"{log}" 2>&1\n')
    shim.chmod(0o700)
    environment = asyncio.run(WorkflowEnvironment.start_local(dev_server_existing_path=str(shim)))
    try:
        yield environment.client.service_client.config.target_host
    finally:
        asyncio.run(environment.shutdown())
        del environment  # its client, collected here, not at the interpreter's exit
        gc.collect()


def probe_temporal(
    count: int,
    seconds: float,
    work: Path,
    claude_on_path: Callable[[Path, float], None],
    measured: Callable[[int, float, Callable[[], Window]], dict[str, Any]],
    *,
    on_disk: bool = False,
) -> dict[str, Any]:
    claude_on_path(work / "bin", seconds)
    (work / "server").mkdir()
    factory: dict[str, float] = {}

    def run() -> Window:
        window, theirs = asyncio.run(_host(address, count, work))
        factory.update(theirs)
        window.wall = theirs["wall"]  # the factory's stretch: first start to last result
        return window

    with _server(work / "server", on_disk=on_disk) as address:
        figures = measured(count, seconds, run)
    figures["factory_cpu_per_session_second_ms"] = 1000 * factory["cpu"] / (count * seconds)
    return figures


def main(argv: list[str]) -> int:
    """The factory: ``ADDRESS FLEET COUNT WORK``; prints its window's wall and CPU as JSON."""
    address, fleet, count, work = argv
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    window = asyncio.run(_factory(address, fleet, int(count), Path(work)))
    # Its client, in a reference cycle with the native connection, collected now: left to the
    # interpreter's exit, it can abort the process (see thirdshift.temporal._dev_server).
    gc.collect()
    print(json.dumps({"wall": window.wall, "cpu": window.cpu}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
