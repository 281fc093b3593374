"""Events for a person: sessions park, resume and fail, and a run ends (``within(notify=...)``).

A factory's runs go on with nobody watching; a run parked for hours on a limit should not go
unnoticed. Each event is one JSON-ready object (``dict`` of strings, numbers and ``None``)
handed to the ``notify`` callable: ``event`` (``parked``, ``resumed``, ``failed``,
``finished``), ``run`` (the ``Logs`` name), ``kind`` and ``session_id`` of the session it is
about, and ``failure`` (``{"type", "message"}``, or ``None``). ``parked`` adds ``until`` (ISO
8601), ``finished`` the count of ``sessions`` run. Messages are shown as progress lines are
(escaped, secrets redacted). A ``notify`` that raises never stops a run: a progress line says
so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from thirdshift._shown import shown

Notify = Callable[[Mapping[str, Any]], None]
"""What ``within(notify=...)`` takes: a callable given each event."""


def failure_of(error: BaseException | None) -> dict[str, str] | None:
    """An error as an event names it: its class and its message."""
    if error is None:
        return None
    return {"type": type(error).__name__, "message": shown(str(error), "message")}


class Notices:
    """The events of one run, handed to ``notify`` (none without one)."""

    def __init__(self, notify: Notify | None, run: str, report: Callable[[str], None]) -> None:
        self._notify = notify
        self._run = run
        self._report = report

    def parked(
        self, kind: str, session_id: str | None, failure: BaseException, until: datetime
    ) -> None:
        self._send("parked", kind, session_id, failure, until=until.isoformat())

    def resumed(self, kind: str, session_id: str | None) -> None:
        self._send("resumed", kind, session_id, None)

    def failed(self, kind: str, session_id: str | None, failure: BaseException) -> None:
        self._send("failed", kind, session_id, failure)

    def finished(
        self, kind: str | None, session_id: str | None, failure: BaseException | None, sessions: int
    ) -> None:
        self._send("finished", kind, session_id, failure, sessions=sessions)

    def _send(
        self,
        event: str,
        kind: str | None,
        session_id: str | None,
        failure: BaseException | None,
        **more: Any,
    ) -> None:
        if self._notify is None:
            return
        notice = {
            "event": event,
            "run": self._run,
            "kind": kind,
            "session_id": session_id,
            "failure": failure_of(failure),
            **more,
        }
        try:
            self._notify(notice)
        except Exception as error:  # a notice is never worth the run
            self._report(f"notify failed on the {event} event: {type(error).__name__}: {error}")
