"""When a session is stopped for taking too long, and for what.

Neither CLI bounds every wait: a model server that never answers leaves Codex waiting forever,
and a CLI can keep running long after its stream said the turn was over. Three limits, each
``None`` to turn it off (the fields of :class:`~thirdshift.Watchdogs`, the one value the
caller made and checked), and checks that need no limit:

- ``idle``: no byte on stdout for that long (a foreground tool may be silent for minutes, so
  the default is half an hour);
- ``after_result``: the CLI still running that long after the stream's latest turn end (a new
  result restarts the count, so Claude's extra task-notification turn is still read);
- ``wall``: one session's whole run;
- a Resume whose stream names another session than the one asked for is running a new
  session: it is stopped at once;
- a session whose stream, as it goes, says it has spent what is left of the ``within`` block's
  Budget (``budget``, which says which limit it crossed) is stopped at once, while the CLI runs;
- so is one whose stream asks for a stop otherwise (``stops``: its key refused for good, a
  billing its Choice does not allow; :mod:`thirdshift._machine.stream_stops`).

The :class:`Watchdog` only decides; the watch (:mod:`thirdshift._machine.watch`) stops, with the
same whole-tree stop as any other, and the adapter turns what fired into the session's end. It
also keeps the time of the line that says a silent session still runs
(:mod:`thirdshift._machine.still_running`), which stops nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from thirdshift._machine.still_running import StillRunning
from thirdshift._progress import duration
from thirdshift._watchdogs import Watchdogs


@dataclass(frozen=True)
class Fired:
    """Why a watchdog stopped the session, in words for a person (``why``)."""

    what: Literal[
        "idle", "after_result", "wall", "other_session", "budget", "log_limit", "refused", "billing"
    ]
    why: str


class Watchdog:
    """Watches one session's clock and stream; says when one of ``limits`` has passed.

    ``last_output`` tells when stdout last gave bytes (``time.monotonic()``); ``turns_ended``
    and ``session_id`` read the reader as it goes; ``resume`` is the id a Resume asked for.
    ``budget`` says which limit of the Budget the session has crossed so far, if one;
    ``stops`` whether the stream asks for a stop otherwise, and why.
    """

    def __init__(
        self,
        limits: Watchdogs,
        *,
        last_output: Callable[[], float],
        turns_ended: Callable[[], int],
        session_id: Callable[[], str | None],
        resume: str | None,
        budget: Callable[[], str | None] = lambda: None,
        stops: Callable[[], Fired | None] = lambda: None,
        still_running: StillRunning | None = None,
    ) -> None:
        self._limits = limits
        self._still_running = still_running
        self._budget = budget
        self._stops = stops
        self._last_output = last_output
        self._turns_ended = turns_ended
        self._session_id = session_id
        self._resume = resume
        self._started = time.monotonic()
        self._turns_seen = 0
        self._turn_ended_at: float | None = None

    def check(self, now: float, *, cli_running: bool) -> Fired | None:
        """What has fired by ``now``, if anything; call after every read of the stream."""
        seen = self._session_id()
        if self._resume is not None and seen is not None and seen != self._resume:
            return Fired("other_session", f"it started session {seen}, not {self._resume}")
        turns = self._turns_ended()
        if turns != self._turns_seen:
            self._turns_seen, self._turn_ended_at = turns, now
        limits = self._limits
        if limits.wall is not None and now - self._started >= limits.wall:
            return Fired("wall", f"over its {duration(limits.wall)} limit")
        if not cli_running:
            return None  # what is left after the CLI's exit is the drain's to bound
        if self._still_running is not None:
            self._still_running.check(now)
        crossed = self._budget()
        if crossed is not None:
            return Fired("budget", f"the budget is spent ({crossed})")
        asked = self._stops()
        if asked is not None:
            return asked
        if limits.idle is not None and now - self._last_output() >= limits.idle:
            return Fired("idle", f"no output for {duration(limits.idle)}")
        if (
            limits.after_result is not None
            and self._turn_ended_at is not None
            and now - self._turn_ended_at >= limits.after_result
        ):
            return Fired(
                "after_result", f"still running {duration(limits.after_result)} after its result"
            )
        return None

    def next_deadline(self, *, cli_running: bool) -> float | None:
        """The soonest time at which :meth:`check` could fire without new input; None: never."""
        limits = self._limits
        deadlines = [self._started + limits.wall] if limits.wall is not None else []
        if cli_running:
            said = self._still_running.next_deadline() if self._still_running else None
            if said is not None:
                deadlines.append(said)
            if limits.idle is not None:
                deadlines.append(self._last_output() + limits.idle)
            if limits.after_result is not None and self._turn_ended_at is not None:
                deadlines.append(self._turn_ended_at + limits.after_result)
        return min(deadlines, default=None)
