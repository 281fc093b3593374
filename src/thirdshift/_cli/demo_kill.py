"""The fleet demo's third host, whose worker is killed outright mid-session.

The other two hosts run in the demo's own process; this one is a ``thirdshift worker`` process
of its own, as a real host's is, so that it can be killed as a machine is lost: ``kill -9``,
two seconds into its session. Its session's supervisor stops the session's tree; once the
heartbeat timeout has passed, Temporal retries the activity on the host's own queue, where the
worker started again picks it up and continues the session by the id its heartbeats gave the
server at once.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

HOST = "host-c"
KILL_AFTER = 2.0
"""Seconds into its session (once it named itself) the host's worker is killed."""
READY_WITHIN = 60.0


class KilledHost:
    """``host-c``: a ``thirdshift worker`` process on a queue of its own (``queue``), polling
    a shared queue no other host polls, so that it runs only what is sent to it."""

    def __init__(
        self,
        address: str,
        folder: Path,
        env: Mapping[str, str],
        fleet: str,
        say: Callable[[str], None],
    ) -> None:
        self.queue = f"{fleet}@{HOST}"
        self._argv = [
            str(Path(sys.executable).with_name("thirdshift")),
            "worker",
            "--address",
            address,
            "--task-queue",
            f"{fleet}-{HOST}",
            "--host-queue",
            self.queue,
            "--logs",
            str(folder / "logs" / HOST),
            "--max-sessions",
            "1",
        ]
        self._env = dict(env)
        self._output = folder / f"worker-{HOST}.log"
        self._say = say
        self._process: subprocess.Popen[bytes] | None = None
        self._starts = 0

    def start(self) -> None:
        """Start a worker and wait until it polls."""
        self._starts += 1
        with open(self._output, "ab") as output:
            self._process = subprocess.Popen(  # noqa: S603 - our own command, no shell
                self._argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                env=self._env,
            )
        deadline = time.monotonic() + READY_WITHIN
        while self._ready() < self._starts:
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{HOST}'s worker did not start: see {self._output}")
            time.sleep(0.05)

    def _ready(self) -> int:
        """How many of its workers have said they poll."""
        return self._output.read_text(errors="replace").count("thirdshift: worker for")

    def kill(self) -> None:
        """``kill -9`` of the worker, as a machine lost."""
        if self._process is not None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait()

    def stop(self) -> None:
        """SIGTERM: the worker stops its sessions and exits."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    async def kill_once_started(self, worktree: Path, fakes: Any) -> None:
        """Kill the worker :data:`KILL_AFTER` seconds into the session in ``worktree``, then
        start another for the same host."""
        real = worktree.resolve()
        while not any(call.cwd == real and call.hanging for call in fakes.claude.calls):
            await asyncio.sleep(0.1)
        await asyncio.sleep(KILL_AFTER)
        self._say(
            f"{HOST}: kill -9 of its worker, {KILL_AFTER:g}s into the session (the machine lost)"
        )
        await asyncio.to_thread(self.kill)
        self._say(
            f"{HOST}: a new worker polls its queue; once the heartbeat timeout has passed, "
            "Temporal retries the session there"
        )
        await asyncio.to_thread(self.start)
