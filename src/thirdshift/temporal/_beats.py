"""What a running session's heartbeats say: ``{session_id, records, progress}`` (``records``:
the sessions of every attempt so far).

Fed from the session's thread (progress lines) and read from the activity's (each heartbeat):
every field is replaced whole under one lock, never changed in place. The details are for the
next attempt and for whoever watches the workflow, never the product: each text in them is cut
(a stream may say megabytes, and a heartbeat over the server's size limit would fail the
activity); the whole is in the Session log and the record beside it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from thirdshift._json_form import record_json
from thirdshift._records import SessionRecord
from thirdshift._redaction import safe_cut
from thirdshift._sessions import Sessions
from thirdshift.harness import Harness
from thirdshift.temporal._session_ids import HEAD_BYTES, session_id_in_log

MAX_TEXT = 2000
"""Characters kept of each text in heartbeat and failure details (a final message, a failure's
message, a progress line)."""


def cut(text: str | None) -> str | None:
    """``text`` kept to :data:`MAX_TEXT` characters, never splitting a secret, saying so."""
    if text is None or len(text) <= MAX_TEXT:
        return text
    kept = text[: safe_cut(text, MAX_TEXT)]
    return f"{kept}… ({len(text) - len(kept)} more characters in the Session log)"


def record_details(record: SessionRecord) -> dict[str, Any]:
    """A record as ``run --json`` writes it, its texts cut for a heartbeat."""
    shown = record_json(record)
    shown["final_message"] = cut(shown["final_message"])
    if shown["failure"] is not None:
        shown["failure"] = {**shown["failure"], "message": cut(shown["failure"]["message"])}
    return shown


class Beats:
    """The details of one activity's heartbeats, for the session(s) ``Sessions`` runs."""

    def __init__(
        self,
        harness: Harness,
        worktree: Path,
        *,
        session_id: str | None,
        earlier: tuple[dict[str, Any], ...] = (),
    ) -> None:
        self._harness = harness
        self._worktree = worktree
        self._earlier = earlier
        """The records of earlier attempts' sessions: carried on, for the next attempt."""
        self._lock = threading.Lock()
        self._session_id = session_id
        self._looked_at: tuple[Path, int] | None = None  # the log and size read last
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
        log = sessions.last_log
        ended = next((r for r in reversed(sessions.records) if r.log == log), None)
        found = ended.session_id if ended is not None else None
        if ended is None and log is not None:
            found = self._from_log(log)
        with self._lock:
            if found is not None:
                self._session_id = found
            return self._session_id

    def _from_log(self, log: Path) -> str | None:
        """The id in ``log``'s head, read again only once the head has grown."""
        try:
            size = min(os.stat(log).st_size, HEAD_BYTES)
        except OSError:
            return None
        if self._looked_at == (log, size):
            return None  # nothing new in its head: it named no id there
        self._looked_at = (log, size)
        return session_id_in_log(log, self._harness, self._worktree)

    def records(self) -> list[dict[str, Any]]:
        """Every session's record, earlier attempts' first."""
        with self._lock:
            sessions = self._sessions
        own = [] if sessions is None else [record_details(r) for r in sessions.records]
        return [*self._earlier, *own]

    def details(self, **more: object) -> dict[str, Any]:
        """One heartbeat's details (``more`` added: the failure that ends the attempt)."""
        session_id = self.session_id()
        with self._lock:
            progress = cut(self._progress)
        return {"session_id": session_id, "records": self.records(), "progress": progress, **more}
