"""The record of a session whose worker was lost, written by the attempt that takes over.

A worker killed outright (SIGKILL, the machine lost) writes nothing more: its session's tree
is stopped by the supervisor, and its record, which the rules write as a session ends, is never
written. Its last heartbeat said which session was running (``running``: kind, log, start, id,
where it ran); the next attempt, on the same host (the host's own queue), writes that session's
record beside its log, so that the session is counted among the attempts' records and
``thirdshift inspect`` shows the lost attempt and its continuation as one run.

The details come from the server, so nothing in them is trusted: the log must be a Session log
in this worker's own logs folder, without a record yet (no file, or the empty one that held
its name while it ran); the record is written as any other is, in place of that.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from thirdshift._json_form import record_json
from thirdshift._logs import PLAIN_NAME
from thirdshift._record_files import RecordNotWritten, record_problem, record_written, write_record
from thirdshift._records import SessionRecord
from thirdshift.errors import SessionFailed

LOST = (
    "the worker running this session was lost: no heartbeat of it reached the Temporal server "
    "within the heartbeat timeout, and the next attempt took it over"
)


def lost_session(running: object, logs: Path) -> SessionRecord | None:
    """The record of the session ``running`` (a heartbeat's ``running``) names, if it is one of
    this worker's Session logs in ``logs`` that has no record yet; else ``None``."""
    if not isinstance(running, Mapping):
        return None
    kind, log, started = running.get("kind"), running.get("log"), running.get("started_at")
    session_id, temporal = running.get("session_id"), running.get("temporal")
    if not (isinstance(kind, str) and PLAIN_NAME.fullmatch(kind)):
        return None
    if not isinstance(log, str) or not isinstance(started, str):
        return None
    if session_id is not None and not isinstance(session_id, str):
        return None
    path = Path(log)
    if not _ours(path, logs):
        return None
    try:
        started_at = datetime.fromisoformat(started)
    except ValueError:
        return None
    if started_at.tzinfo is None:
        return None
    if temporal is not None and record_problem(_probe(kind, started, temporal)) is not None:
        return None
    try:
        last_written = datetime.fromtimestamp(os.stat(path).st_mtime, started_at.tzinfo)
    except (OSError, ValueError, OverflowError):
        return None
    return SessionRecord(
        kind=kind,
        log=path,
        session_id=session_id,
        killed=(),
        final_message=None,
        usage=None,
        started_at=started_at,
        # Until its log was last written: the stream stopped with the worker.
        duration=max(0.0, (last_written - started_at).total_seconds()),
        failure=SessionFailed(LOST, session_id=session_id, log=path),
        temporal=temporal if isinstance(temporal, Mapping) else None,
    )


def _probe(kind: str, started: str, temporal: object) -> dict[str, Any]:
    """A record holding only ``temporal``, for the record checks to judge it."""
    return {"kind": kind, "started_at": started, "temporal": temporal}


def _ours(log: Path, logs: Path) -> bool:
    """Whether ``log`` is a Session log right inside ``logs``, with no record beside it."""
    if not log.is_absolute() or not log.name.endswith(".jsonl") or log.name.startswith("."):
        return False
    try:
        if os.path.realpath(log.parent) != os.path.realpath(logs):
            return False
        if not stat.S_ISREG(os.lstat(log).st_mode):
            return False
    except OSError:
        return False
    return not record_written(log)


def recorded(record: SessionRecord, report: Any) -> dict[str, Any]:
    """``record`` written beside its log (``report`` hears why not, if it cannot be); its JSON
    form, as the records of a result hold it."""
    try:
        write_record(record)
    except RecordNotWritten as error:
        report(f"{record.kind}: its record was not written: {error}")
    return record_json(record)
