"""``thirdshift inspect FOLDER`` (or ``LOG LOG…``): one line per run, from the record files.

A run is the sessions of one command: their logs share a name and a command stamp
(``<name>-<stamp>-<kind>.jsonl``, see :class:`~thirdshift._logs.Logs`). What each session was
comes from its record file (:mod:`thirdshift._record_files`), never from its stream, so a
folder of any size is summed up quickly; a log without a record counts as a session whose
ending is not known. Runs come oldest first, newest last, as ``ls`` of a logs folder shows them.

A run's line says: its name and stamp, how many sessions it ran, how it ended (how its last
session ended: ``ok``, ``failed``, ``interrupted``, ``killed`` when that session's work was
killed, or ``unrecorded``), the work killed in any of its sessions, and the turns, cost and
time its sessions' records add up to (what no record said is left out, and a figure no
record gave at all is ``null``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from thirdshift._json_form import absolute
from thirdshift._logs import RECORD_SUFFIX
from thirdshift._progress import elapsed
from thirdshift._record_files import RecordUnreadable, read_record
from thirdshift._shown import shown
from thirdshift.harness._lines import shorten
from thirdshift.harness._usage import cost_text, turns_text

# <name>-<stamp>-<kind>[-<n>].jsonl; the name is the longest that leaves a stamp after it.
_LOG_NAME = re.compile(r"(?P<name>.+)-(?P<stamp>\d{8}T\d{6}[+-]\d{4})-(?P<kind>.+)\.jsonl")
_STAMP_FORMAT = "%Y%m%dT%H%M%S%z"
_SIDECARS = (RECORD_SUFFIX, ".stderr")
# A line shows this much of each killed work's description and of a failure's message.
SHOWN_CHARS = 200


class NoLogs(Exception):
    """Nothing to sum up; the message is the one line to print."""


@dataclass(frozen=True)
class _Session:
    log: Path
    record: dict[str, Any] | None
    at: datetime
    """When it started: its record's ``started_at``, else its log's last write."""


def summed_up(paths: Sequence[Path], warn: Callable[[str], None]) -> list[dict[str, Any]]:
    """The runs whose logs are ``paths`` (a folder: the logs in it), oldest first.

    ``warn`` hears of each record file that is there but holds no record.
    """
    logs = _logs(paths)
    sessions = [_session(log, warn) for log in logs]
    grouped: dict[tuple[Path, str, str | None], list[_Session]] = {}
    for session in sessions:
        grouped.setdefault(_run_of(session.log), []).append(session)
    found = [_run(name, stamp, members) for (_, name, stamp), members in grouped.items()]
    return [run for _, run in sorted(found, key=lambda pair: pair[0])]


def _logs(paths: Sequence[Path]) -> list[Path]:
    """Every log named or in a named folder, once each; a record or a ``.stderr`` sidecar
    named (as a glob of a folder names them) stands for its log."""
    logs: dict[Path, None] = {}
    for path in paths:
        if _is_folder(path):
            inside = sorted(_logs_in(path))
            if not inside:
                raise NoLogs(f"{path} holds no Session log (no .jsonl file)")
            logs.update(dict.fromkeys(inside))
            continue
        log = _log_of(path)
        try:
            if not stat.S_ISREG(os.stat(log).st_mode):
                raise NoLogs(f"{log} is not a Session log: not a regular file")
        except OSError as error:
            raise NoLogs(f"cannot read {log}: {error.strerror or error}") from error
        logs[log] = None
    return list(logs)


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _logs_in(folder: Path) -> Iterable[Path]:
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                named = name.endswith(".jsonl") and not name.startswith(".")
                if named and entry.is_file(follow_symlinks=False):
                    yield folder / name
    except OSError as error:
        raise NoLogs(f"cannot read {folder}: {error.strerror or error}") from error


def _log_of(path: Path) -> Path:
    for suffix in _SIDECARS:
        if path.name.endswith(suffix) and path.name != suffix:
            return path.with_name(path.name.removesuffix(suffix) + ".jsonl")
    return path


def _session(log: Path, warn: Callable[[str], None]) -> _Session:
    try:
        record = read_record(log)
    except RecordUnreadable as error:
        warn(str(error))
        record = None
    if record is not None:
        return _Session(log, record, datetime.fromisoformat(record["started_at"]))
    try:
        written = datetime.fromtimestamp(os.stat(log).st_mtime, UTC)
    except (OSError, ValueError, OverflowError):
        written = datetime.fromtimestamp(0, UTC)
    return _Session(log, None, written)


def _run_of(log: Path) -> tuple[Path, str, str | None]:
    """The run a log belongs to: its folder, name and command stamp (a log named otherwise is
    a run of its own, named by its file name)."""
    named = _LOG_NAME.fullmatch(log.name)
    if named is None:
        return log, log.name.removesuffix(".jsonl"), None
    return log.parent, named["name"], named["stamp"]


def _run(
    name: str, stamp: str | None, sessions: list[_Session]
) -> tuple[tuple[datetime, str, str], dict[str, Any]]:
    """A run's summary, and where it sorts: by its stamp's time (else its first session's)."""
    sessions.sort(key=lambda session: (session.at, session.log.name))
    records = [session.record for session in sessions if session.record is not None]
    last = sessions[-1].record
    failure = last["failure"] if last is not None else None
    usages = [record["usage"] for record in records if record["usage"] is not None]
    run = {
        "name": name,
        "stamp": stamp,
        "sessions": len(sessions),
        "unrecorded": len(sessions) - len(records),
        "ended": _ended(last),
        "failure": failure,
        "killed": [work for record in records for work in record["killed"]],
        "turns": _sum(usage["turns"] for usage in usages),
        "cost_usd": _sum(usage["cost_usd"] for usage in usages),
        "duration": _sum(record["duration"] for record in records),
        "started_at": sessions[0].at.isoformat(),
        "logs": [absolute(session.log) for session in sessions],
    }
    return (_when(stamp) or sessions[0].at, name, stamp or ""), run


def _ended(record: dict[str, Any] | None) -> str:
    if record is None:
        return "unrecorded"
    failure = record["failure"]
    if failure is not None:
        return "interrupted" if failure["type"] == "Interrupted" else "failed"
    return "killed" if record["killed"] else "ok"


def _sum(values: Iterable[Any]) -> Any:
    """The sum of the figures given (the records' checked counts or seconds), ``None`` if no
    record gave one."""
    given = [value for value in values if value is not None]
    return sum(given) if given else None


def _when(stamp: str | None) -> datetime | None:
    if stamp is None:
        return None
    try:
        return datetime.strptime(stamp, _STAMP_FORMAT)
    except ValueError:  # twelve digits that are no date (month 13): ordered by its sessions
        return None


def line(run: dict[str, Any]) -> str:
    """One run as a person reads it: every value from a file shown escaped and redacted."""
    stamp = f" {shown(run['stamp'])}" if run["stamp"] is not None else ""
    count = run["sessions"]
    sessions = f"{count} session" if count == 1 else f"{count} sessions"
    if run["unrecorded"]:
        sessions += f" ({run['unrecorded']} without a record)"
    ended = _ENDED_TEXT.get(run["ended"], run["ended"])
    failure = run["failure"]
    if failure is not None and run["ended"] == "failed":
        ended += f" ({_short(failure['type'])}: {_short(failure['message'])})"
    killed = "; ".join(_short(work) for work in run["killed"]) or "none"
    turns = turns_text(run["turns"]) if run["turns"] is not None else "turns not said"
    cost = cost_text(run["cost_usd"]) if run["cost_usd"] is not None else "cost not said"
    took = elapsed(run["duration"]) if run["duration"] is not None else "duration not known"
    return (
        f"{shown(run['name'])}{stamp}: {sessions}, {ended}, killed work: {killed}, "
        f"{turns}, {cost}, {took}"
    )


_ENDED_TEXT = {"killed": "ended with work killed", "unrecorded": "ending not recorded"}


def _short(text: str) -> str:
    """The first line of ``text`` that says something, shortened, shown."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return shown(shorten(first, SHOWN_CHARS), "message")
