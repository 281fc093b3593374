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
    """While active, every ``MachineOutside`` of this process waits no time and records it."""
    from thirdshift._machine.adapter import MachineOutside

    waits = RecordedWaits()
    original = MachineOutside.wait

    def instant(outside: MachineOutside, seconds: float) -> None:
        waits.add(seconds)
        original(outside, 0.0)  # the same interrupt and cancel checks, without the time

    setattr(MachineOutside, "wait", instant)  # noqa: B010 - mypy refuses assigning a method
    try:
        yield waits
    finally:
        setattr(MachineOutside, "wait", original)  # noqa: B010


__all__ = [
    "RecordedWaits",
    "instant_waits",
]
