"""Instant limit waits for end-to-end tests, each one recorded.

A session cut off by an API limit the budget covers is waited out (``wait_for_limits=``): a 429
with no reset time waits 60 s, then twice as long. In a test that runs the real adapter (the
fake CLIs on PATH, or the real CLIs under the fake model) those are real minutes. Inside
:func:`instant_waits` the adapter's wait returns at once, still ending with ``Interrupted`` on
an interrupt or a cancel, and records how long it would have waited; the rules (what is waited
for, what is reported, the continued session) are the production ones.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from thirdshift._outside import Ended, Outside, WithinContext
from thirdshift._wiring import around_adapter


class RecordedWaits:
    """The waits asked of the adapter while :func:`instant_waits` was active, in seconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: list[float] = []

    def __repr__(self) -> str:
        return f"<RecordedWaits {self.seconds}>"

    @property
    def seconds(self) -> list[float]:
        """Each wait's length, in the order asked (a copy)."""
        with self._lock:
            return list(self._seconds)

    def add(self, seconds: float) -> None:
        with self._lock:
            self._seconds.append(seconds)


@contextlib.contextmanager
def instant_waits() -> Iterator[RecordedWaits]:
    """While active, the real adapter of every ``Sessions.within`` in this process (its
    threads' too) waits no time, and records each wait asked of it."""
    waits = RecordedWaits()
    with around_adapter(_Instant(waits)):
        yield waits


@dataclass(frozen=True)
class _Instant:
    """Hands each real adapter on with its waits made instant (an ``Around``)."""

    waits: RecordedWaits

    def around(self, outside: Outside, context: WithinContext) -> Outside:
        return _InstantWaits(outside, self.waits)


@dataclass(frozen=True)
class _InstantWaits:
    """The real adapter, but for ``wait``: recorded, then asked for no time, so that the
    interrupt and cancel checks are still its own."""

    real: Outside
    waits: RecordedWaits

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        return self.real.run_session(kind, resume, prompt, log)

    def report(self, line: str) -> None:
        self.real.report(line)

    def wait(self, seconds: float) -> None:
        self.waits.add(seconds)
        self.real.wait(0.0)

    def cancel(self) -> None:
        self.real.cancel()


__all__ = [
    "RecordedWaits",
    "instant_waits",
]
