"""What a running session's heartbeats say, for the next attempt and for whoever watches:
``{session_id, records, progress, phase, elapsed, running}``.

- ``session_id``: the running (or last) session's id, as soon as its stream names it;
- ``records``: the sessions of every attempt so far, each as ``run --json`` writes it;
- ``progress``: the last progress line; ``phase``: one of :data:`PHASES`; ``elapsed``: seconds
  since this attempt started;
- ``running``: the session under way (``kind``, ``log``, ``started_at``, ``session_id``,
  ``temporal``), or ``null`` between sessions: if the worker is lost, the next attempt records
  it (:mod:`thirdshift.temporal._lost`).

Fed from the session's thread (progress lines) and read from the activity's (each heartbeat):
every field is replaced whole under one lock, never changed in place. The details are for the
next attempt and for whoever watches the workflow, never the product: each text in them is cut
and the records together are kept under :data:`MAX_RECORDS_BYTES` (the server refuses a
heartbeat, and replaces a failure, over its size limit: 2 MB on a default server); the whole is
in the Session log and the record beside it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thirdshift._json_form import absolute, record_json
from thirdshift._records import SessionRecord
from thirdshift._redaction import safe_cut
from thirdshift._sessions import Sessions
from thirdshift.harness import Harness
from thirdshift.harness._lines import MAX_KILLED, MAX_KILLED_LISTED
from thirdshift.temporal._session_ids import HEAD_BYTES, session_id_in_log

MAX_TEXT = 2000
"""Characters kept of each text in heartbeat and failure details (a final message, a failure's
message, a progress line)."""
MAX_RECORDS_BYTES = 256 * 1024
"""The most the records of a heartbeat or a failure take, as JSON: past it the oldest lose their
texts (their usage, which a Budget counts, stays), then the oldest are left out. A default
server warns at 512 KB and refuses 2 MB."""
SLIM_TEXT = 200
"""Characters kept of a slimmed record's failure message."""

STARTING, RUNNING, RESUMING, WAITING, STOPPING = (
    "starting",
    "running",
    "resuming",
    "waiting for a limit",
    "stopping",
)
PHASES = (STARTING, RUNNING, RESUMING, WAITING, STOPPING)
"""What an attempt is doing: starting a session (no id yet), running it, resuming one (a Resume
or a continuation by id), ended on a limit that its retry waits out, or stopping on a cancel."""


def cut(text: str | None, limit: int = MAX_TEXT) -> str | None:
    """``text`` kept to ``limit`` characters, never splitting a secret, saying so."""
    if text is None or len(text) <= limit:
        return text
    kept = text[: safe_cut(text, limit)]
    return f"{kept}… ({len(text) - len(kept)} more characters in the Session log)"


def record_details(record: SessionRecord) -> dict[str, Any]:
    """A record as ``run --json`` writes it, its texts cut for a heartbeat."""
    shown = record_json(record)
    shown["final_message"] = cut(shown["final_message"])
    if shown["failure"] is not None:
        shown["failure"] = {**shown["failure"], "message": cut(shown["failure"]["message"])}
    shown["killed"] = [cut(work, MAX_KILLED) for work in shown["killed"][:MAX_KILLED_LISTED]]
    if shown["usage"] is not None:  # a stream names its models: a hostile one, thousands
        models = shown["usage"]["models"][:MAX_KILLED_LISTED]
        shown["usage"] = {**shown["usage"], "models": [cut(m, SLIM_TEXT) for m in models]}
    return shown


def _slim(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` without its texts: what a Budget and a reader of the workflow need stays."""
    slim = {**record, "final_message": None, "killed": []}
    failure = record.get("failure")
    if isinstance(failure, Mapping):
        message = failure.get("message")
        shorter = cut(message, SLIM_TEXT) if isinstance(message, str) else message
        slim["failure"] = {**failure, "message": shorter}
    return slim


def bounded(
    records: Sequence[Mapping[str, Any]], limit: int = MAX_RECORDS_BYTES
) -> list[dict[str, Any]]:
    """``records`` kept under ``limit`` bytes of JSON: the oldest slimmed first, then left out;
    the newest stays whole as long as it fits at all."""
    kept = [dict(record) for record in records]
    sizes = [_size(record) for record in kept]
    total = sum(sizes)
    for index in range(len(kept) - 1):
        if total <= limit:
            return kept
        kept[index] = _slim(kept[index])
        size = _size(kept[index])
        total += size - sizes[index]
        sizes[index] = size
    while total > limit and len(kept) > 1:
        total -= sizes.pop(0)
        kept.pop(0)
    if total > limit and kept:
        kept[0] = _slim(kept[0])
    return kept


def _size(record: Mapping[str, Any]) -> int:
    return len(json.dumps(record, ensure_ascii=True, default=str))


class Beats:
    """The details of one activity's heartbeats, for the session(s) ``Sessions`` runs.

    ``temporal`` is where the activity runs (each record's ``temporal``); ``clock`` the
    monotonic time, for ``elapsed``.
    """

    def __init__(
        self,
        harness: Harness,
        worktree: Path,
        *,
        session_id: str | None,
        earlier: tuple[dict[str, Any], ...] = (),
        temporal: Mapping[str, Any] | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self._harness = harness
        self._worktree = worktree
        self._earlier = tuple(bounded(earlier))
        """The records of earlier attempts' sessions: carried on, for the next attempt."""
        self._temporal = dict(temporal) if temporal is not None else None
        self._clock = clock
        self._began = clock()
        self._lock = threading.Lock()
        self._session_id = session_id
        self._looked_at: tuple[Path, int] | None = None  # the log and size read last
        self._named: tuple[Path, str] | None = None  # a log and the id its head names
        self._progress: str | None = None
        self._sessions: Sessions | None = None
        self._stopping = False

    def attach(self, sessions: Sessions) -> None:
        with self._lock:
            self._sessions = sessions

    def progress(self, line: str) -> None:
        with self._lock:
            self._progress = line

    def stopping(self) -> None:
        """A stop was asked (a cancel, the worker shutting down): the phase says so."""
        with self._lock:
            self._stopping = True

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
        """The id in ``log``'s head, read again only once the head has grown, and never once it
        named one: its first lines name it, whatever the log holds later (read at every line,
        a long head cost a busy session more than the rest of its heartbeats)."""
        if self._named is not None and self._named[0] == log:
            return self._named[1]
        try:
            size = min(os.stat(log).st_size, HEAD_BYTES)
        except OSError:
            return None
        if self._looked_at == (log, size):
            return None  # nothing new in its head: it named no id there
        self._looked_at = (log, size)
        found = session_id_in_log(log, self._harness, self._worktree)
        if found is not None:
            self._named = (log, found)
        return found

    def records(self) -> list[dict[str, Any]]:
        """Every session's record, earlier attempts' first, under the size limit."""
        with self._lock:
            sessions = self._sessions
        own = [] if sessions is None else [record_details(r) for r in sessions.records]
        return bounded([*self._earlier, *own])

    def running(self) -> dict[str, Any] | None:
        """The session under way, for the next attempt to record should this worker be lost."""
        with self._lock:
            sessions = self._sessions
        running = sessions.running if sessions is not None else None
        if running is None:
            return None
        kind, log, started = running
        return {
            "kind": kind,
            "log": absolute(log),
            "started_at": started.isoformat(),
            "session_id": self.session_id(),
            "temporal": self._temporal,
        }

    def details(self, **more: object) -> dict[str, Any]:
        """One heartbeat's details; ``more`` is added (the failure that ends the attempt, the
        phase it ends in)."""
        session_id = self.session_id()
        running = self.running()
        with self._lock:
            progress = cut(self._progress)
            stopping = self._stopping
        if stopping:
            phase = STOPPING
        elif running is not None and running["kind"].endswith(("-resume", "-continued")):
            phase = RESUMING
        elif (running is not None and running["session_id"] is None) or self._sessions is None:
            phase = STARTING
        else:
            phase = RUNNING
        return {
            "session_id": session_id,
            "records": self.records(),
            "progress": progress,
            "phase": phase,
            "elapsed": round(self._clock() - self._began, 1),
            "running": running,
            **more,
        }
