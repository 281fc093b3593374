"""What a running session's heartbeats say: ``{session_id, records, progress}``.

Fed from the session's thread (progress lines) and read from the activity's (each heartbeat):
every field is replaced whole under one lock, never changed in place.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from thirdshift.harness import Harness
from thirdshift.json_form import record_json
from thirdshift.sessions import Sessions
from thirdshift.temporal.session_ids import session_id_in_log


class Beats:
    """The details of one activity's heartbeats, for the session(s) ``Sessions`` runs."""

    def __init__(self, harness: Harness, worktree: Path, *, session_id: str | None) -> None:
        self._harness = harness
        self._worktree = worktree
        self._lock = threading.Lock()
        self._session_id = session_id
        self._read_log: Path | None = None  # the log whose head already named its id
        self._progress: str | None = None
        self._sessions: Sessions | None = None

    def attach(self, sessions: Sessions) -> None:
        with self._lock:
            self._sessions = sessions

    def progress(self, line: str) -> None:
        with self._lock:
            self._progress = line

    def session_id(self) -> str | None:
        """The running (or last) session's id: from its record once it ended, else from its
        log's head as soon as the stream named it, else the id it continues."""
        with self._lock:
            sessions = self._sessions
        if sessions is None:
            return self._session_id
        records = sessions.records
        log = sessions.last_log
        ended = next((r for r in reversed(records) if r.log == log), None)
        if ended is not None and ended.session_id is not None:
            found: str | None = ended.session_id
        elif log is not None and log != self._read_log and ended is None:
            found = session_id_in_log(log, self._harness, self._worktree)
            if found is not None:
                self._read_log = log
        else:
            found = None
        with self._lock:
            if found is not None:
                self._session_id = found
            return self._session_id

    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            sessions = self._sessions
        return [] if sessions is None else [record_json(r) for r in sessions.records]

    def details(self, **more: object) -> dict[str, Any]:
        """One heartbeat's details (``more`` added: the failure that ends the attempt)."""
        session_id = self.session_id()
        with self._lock:
            progress = self._progress
        return {"session_id": session_id, "records": self.records(), "progress": progress, **more}
