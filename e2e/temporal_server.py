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
    # The server takes this process's environment as it starts (the SDK starts it): the mark
    # is left out for that moment, in a session-scoped fixture, before any test's threads.
    with contextlib.ExitStack() as stack:
        mark = os.environ.pop(MARK, None)
        try:
            server = stack.enter_context(_running(folder, port=port))
        finally:
            if mark is not None:
                os.environ[MARK] = mark
        yield server
