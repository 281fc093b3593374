"""A real Temporal dev server for the fleet tests (:mod:`thirdshift.temporal._dev_server`),
one per pytest process (session-scoped in conftest.py), so ``-n 2`` runs two, each on its own
port, without the suite's process mark (the server is no session's process)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sessionkit import MARK

from thirdshift.temporal._dev_server import DevServer
from thirdshift.temporal._dev_server import running_dev_server as _running

__all__ = ["DevServer", "running_dev_server"]


@contextlib.contextmanager
def running_dev_server(folder: Path, port: int | None = None) -> Iterator[DevServer]:
    env = {name: value for name, value in os.environ.items() if name != MARK}
    with _running(folder, env=env, port=port) as server:
        yield server
