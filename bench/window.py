"""The wall and CPU time of this process over one stretch of a benchmark, taken together.

``with Window() as window: ...`` then ``window.wall`` and ``window.cpu`` (user and system time of
every thread of this process, in seconds). A figure per session-second must divide what the
sessions' own stretch cost, not what set them up: a worker's start (the SDK hashes every loaded
module for its build id) or a warm-up session outside the timed stretch is not the sessions'.
"""

from __future__ import annotations

import resource
import time


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Window:
    """Wall and CPU seconds from entering the block to leaving it."""

    wall = 0.0
    cpu = 0.0

    def __enter__(self) -> Window:
        self._wall, self._cpu = time.perf_counter(), cpu_seconds()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = cpu_seconds() - self._cpu
