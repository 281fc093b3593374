"""The wall and CPU time of this process over one stretch of a benchmark, taken together.

``with Window() as window: ...`` (or ``start()`` and ``stop()``, where the stretch is told by
another process) then ``window.wall`` and ``window.cpu`` (user and system time of every thread
of this process, in seconds); ``started`` and ``stopped`` are its ends on ``time.perf_counter``.
A figure per session-second must divide what the sessions' own stretch cost, not what set them
up: a worker's start (the SDK hashes every loaded module for its build id) or a warm-up session
outside the timed stretch is not the sessions'.
"""

from __future__ import annotations

import resource
import time


def cpu_seconds() -> float:
    """The CPU this process (the orchestrator) used so far: not its children's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Window:
    """Wall and CPU seconds from :meth:`start` to :meth:`stop` (or over a ``with`` block)."""

    started = stopped = 0.0
    wall = cpu = 0.0

    def start(self) -> None:
        self._cpu = cpu_seconds()
        self.started = time.perf_counter()

    def stop(self) -> None:
        self.stopped = time.perf_counter()
        self.cpu = cpu_seconds() - self._cpu
        self.wall = self.stopped - self.started

    def __enter__(self) -> Window:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
