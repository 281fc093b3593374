"""A silent session shows it is alive: "still running: $ pnpm test (5m)".

A foreground command may run for many minutes, and the idle watchdog lets a healthy session be
silent for half an hour; a person (or a cron job's log) watching the progress lines would see
nothing between the command's start and the session's end. So once ``every`` seconds pass with
no progress line, one line says what runs (the session's latest progress line: its latest
command or tool) and for how long; then again every ``every`` seconds while the silence lasts.
It only says; the watch (:mod:`thirdshift._machine.watch`) asks it through the Watchdog, on
the watch's own thread, so the line is said between reads, never during one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from thirdshift._progress import duration

DEFAULT_EVERY = 300.0
# The reader's first line says only that the session began: what runs then is the CLI itself.
_NOT_WORK = ("session started",)


class StillRunning:
    """When to say that a silent session still runs, and what to say.

    ``every`` is the silence, in seconds, before a line (None: never); ``say`` takes the
    line's body; ``cli`` names what runs before the stream has named anything.
    """

    def __init__(
        self,
        every: float | None,
        say: Callable[[str], None],
        cli: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._every = every
        self._say = say
        self._clock = clock
        now = clock()
        self._last_line = now
        self._what, self._since = cli, now

    def said(self, body: str) -> None:
        """A progress line of the session was said: the silence starts again, and what it
        names is what runs now."""
        now = self._clock()
        self._last_line = now
        if body not in _NOT_WORK:
            self._what, self._since = body, now

    def check(self, now: float) -> None:
        """Say the line if the silence has lasted ``every`` seconds by ``now``."""
        if self._every is not None and now - self._last_line >= self._every:
            self._last_line = now
            self._say(f"still running: {self._what} ({duration(int(now - self._since))})")

    def next_deadline(self) -> float | None:
        """When :meth:`check` would say the next line; None: never."""
        return None if self._every is None else self._last_line + self._every
