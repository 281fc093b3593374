"""What each session of a :class:`~thirdshift.sessions.Sessions` was, as a value."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from thirdshift.outside import Usage


@dataclass(frozen=True)
class SessionRecord:
    """One session started by the rules: a first session, a Resume, or a continuation.

    ``failure`` is what it failed with (``None`` when it ended): a ``SessionFailed``, another
    ``ThirdshiftError`` (a CLI not found, a log that could not be written), or ``Interrupted``
    for a session stopped by an interrupt or :meth:`~thirdshift.Sessions.cancel`;
    ``session_id`` is the id its stream reported, from its ending or its failure.
    """

    kind: str
    log: Path
    session_id: str | None
    killed: tuple[str, ...]
    final_message: str | None
    usage: Usage | None
    started_at: datetime
    duration: float
    """Seconds from start to end."""
    failure: BaseException | None = None
    containment: str | None = None
    """Which containment held its processes (``cgroup``, ``namespace``, ``scan``); ``None``
    where none was set up (a stand-in, or a CLI that could not be found)."""
