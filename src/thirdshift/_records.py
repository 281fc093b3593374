"""What each session of a :class:`~thirdshift._sessions.Sessions` was, as a value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from thirdshift._logs import command_token
from thirdshift._outside import Usage
from thirdshift.errors import Interrupted, SessionFailed


@dataclass(frozen=True)
class SessionRecord:
    """One session run by the rules: a first session, a Resume, or a continuation.

    ``failure`` is what it failed with (``None`` when it ended): a ``SessionFailed``, or
    ``Interrupted`` for a session stopped by an interrupt or :meth:`~thirdshift.Sessions.cancel`.
    An error that is no ending of a session (its CLI not found, a worktree that is no folder,
    a log that could not be written: any error that is neither) leaves no record.
    ``session_id``, ``final_message`` and ``usage`` are what its stream said, from its ending
    or its failure, whichever it was.
    The rules also write it beside its log, as ``<log stem>.record.json``
    (:mod:`thirdshift._record_files`).
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
    failure: SessionFailed | Interrupted | None = None
    containment: str | None = None
    """Which containment held its processes (``cgroup``, ``namespace``, ``scan``); ``None``
    where none was set up (a stand-in, or a CLI that could not be found)."""
    sandbox: bool = False
    """Whether it ran inside a :class:`~thirdshift.Sandbox` (a stand-in's never did)."""
    temporal: Mapping[str, Any] | None = None
    """Where a Temporal activity ran it (``thirdshift.temporal``): ``workflow_id``, ``run_id``,
    ``activity_id``, ``attempt`` and ``host`` (the host's task queue); ``None`` elsewhere."""
    command: str = field(default_factory=command_token)
    """The token of the process that ran it (:func:`~thirdshift._logs.command_token`): one
    command's sessions share it."""
