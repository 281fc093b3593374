"""``thirdshift inspect FOLDER`` (or ``LOG LOG…``): one line per run, from the record files.

A run is one command's sessions, or one Temporal activity's (over all its attempts), never
more: its records say which (``temporal``: the workflow, its run and the activity; else
``command``: the token of the process that ran it), beside the log's name and command stamp
(``<name>-<stamp>-<kind>.jsonl``, see :class:`~thirdshift._logs.Logs`), which alone is all an
older record or a log without one gives. A log without a record joins the one run its name and
stamp share, if there is exactly one. What each session was comes from its record file
(:mod:`thirdshift._record_files`), never from its stream, so a folder of any size is summed up
quickly. A fleet's folder holds a folder of logs per host (``logs/host-a/``): those are read
too, and each run's host is the one its records name, else its folder's. Runs come oldest
first, newest last, as ``ls`` of a logs folder shows them.

A run's line says: its host (for a fleet's logs), name, stamp and workflow, how many sessions
it ran, how it ended, the work killed in any of its sessions, and the turns, cost and time its
sessions' records add up to (what no record said is left out, and a figure no record gave at
all is ``null``). How it ended is the worst of how its sessions did (``failed``, then
``interrupted``, ``unrecorded``, ``killed`` when a session's work was killed, then ``ok``),
leaving out each session that a later one of the run carried on (its Resume, its continuation
after a limit or a lost worker, its retry): a failure is never hidden behind a later
session's success, and a limit waited out is not a failure.
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
from thirdshift._progress import duration
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
# How a run ended, from the best to the worst.
_WORST = ("ok", "killed", "unrecorded", "interrupted", "failed")
# A session's kind: its work, and what carrying a session of it on added (implement-continued).
_CARRIED_ON = re.compile(r"(?P<work>.+?)(?P<added>(?:-resume|-continued|-retry)*)")


class NoLogs(Exception):
    """Nothing to sum up; the message is the one line to print."""


@dataclass(frozen=True)
class _Session:
    log: Path
    record: dict[str, Any] | None
    at: datetime
    """When it started: its record's ``started_at``, else its log's last write."""
    folder_host: str | None
    """The folder it is in, where that is a host's folder in a fleet's logs folder."""

    @property
    def kind(self) -> str:
        if self.record is not None:
            return str(self.record["kind"])
        named = _LOG_NAME.fullmatch(self.log.name)
        return named["kind"] if named is not None else self.log.name


@dataclass(frozen=True)
class Filters:
    """Which runs to show: only the failed ones, those started since a time, of a name."""

    failed: bool = False
    since: datetime | None = None
    name: str | None = None

    def keep(self, run: dict[str, Any]) -> bool:
        if self.failed and run["ended"] != "failed":
            return False
        if self.since is not None and datetime.fromisoformat(run["started_at"]) < self.since:
            return False
        return self.name is None or run["name"] == self.name


def summed_up(
    paths: Sequence[Path], warn: Callable[[str], None], filters: Filters = Filters()
) -> list[dict[str, Any]]:
    """The runs whose logs are ``paths`` (a folder: the logs in it and in its hosts' folders),
    oldest first, those ``filters`` keeps.

    ``warn`` hears of each record file that is there but holds no record.
    """
    sessions = [_session(log, host, warn) for log, host in _logs(paths)]
    grouped: dict[tuple[Any, ...], list[_Session]] = {}
    for session in sessions:
        if session.record is not None:
            grouped.setdefault(_run_of(session), []).append(session)
    for session in sessions:
        if session.record is None:
            grouped.setdefault(_unrecorded_run_of(session, grouped), []).append(session)
    found = [_run(members) for members in grouped.values()]
    ordered = [run for _, run in sorted(found, key=lambda pair: pair[0])]
    return [run for run in ordered if filters.keep(run)]


def _logs(paths: Sequence[Path]) -> list[tuple[Path, str | None]]:
    """Every log named, in a named folder or in a folder of one, once each, with the host
    folder it is in (if in one); a record or a ``.stderr`` sidecar named (as a glob of a folder
    names them) stands for its log."""
    logs: dict[Path, str | None] = {}
    for path in paths:
        if _is_folder(path):
            inside = dict.fromkeys(sorted(_logs_in(path)), None)
            for folder in sorted(_folders_in(path)):
                inside.update(dict.fromkeys(sorted(_logs_in(folder)), folder.name))
            if not inside:
                raise NoLogs(f"{path} holds no Session log (no .jsonl file)")
            logs.update(inside)
            continue
        log = _log_of(path)
        try:
            if not stat.S_ISREG(os.stat(log).st_mode):
                raise NoLogs(f"{log} is not a Session log: not a regular file")
        except OSError as error:
            raise NoLogs(f"cannot read {log}: {error.strerror or error}") from error
        logs[log] = None
    return list(logs.items())


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


def _folders_in(folder: Path) -> Iterable[Path]:
    """The folders right inside ``folder`` (a fleet's, one per host), never through a link."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                    yield folder / entry.name
    except OSError as error:
        raise NoLogs(f"cannot read {folder}: {error.strerror or error}") from error


def _log_of(path: Path) -> Path:
    for suffix in _SIDECARS:
        if path.name.endswith(suffix) and path.name != suffix:
            return path.with_name(path.name.removesuffix(suffix) + ".jsonl")
    return path


def _session(log: Path, host: str | None, warn: Callable[[str], None]) -> _Session:
    try:
        record = read_record(log)
    except RecordUnreadable as error:
        warn(str(error))
        record = None
    if record is not None:
        return _Session(log, record, datetime.fromisoformat(record["started_at"]), host)
    try:
        written = datetime.fromtimestamp(os.stat(log).st_mtime, UTC)
    except (OSError, ValueError, OverflowError):
        written = datetime.fromtimestamp(0, UTC)
    return _Session(log, None, written, host)


def _named(log: Path) -> tuple[Path, str, str | None]:
    """A log's folder, name and command stamp (a log named otherwise is a run of its own,
    named by its file name)."""
    named = _LOG_NAME.fullmatch(log.name)
    if named is None:
        return log, log.name.removesuffix(".jsonl"), None
    return log.parent, named["name"], named["stamp"]


def _run_of(session: _Session) -> tuple[Any, ...]:
    """The run a recorded session belongs to: its activity's, else its command's, else its
    log name's."""
    record = session.record
    assert record is not None
    temporal = record.get("temporal")
    if temporal is not None:
        return (
            "activity",
            temporal["workflow_id"],
            temporal.get("run_id"),
            temporal["activity_id"],
        )
    named = _named(session.log)
    command = record.get("command")
    if command is not None:
        return ("command", *named, command)
    return ("log", *named)


def _unrecorded_run_of(
    session: _Session, runs: dict[tuple[Any, ...], list[_Session]]
) -> tuple[Any, ...]:
    """The run of a log without a record: the one run whose logs share its name and stamp,
    if there is exactly one; else a run of its own name and stamp."""
    named = _named(session.log)
    alike = [key for key, members in runs.items() if _named(members[0].log) == named]
    return alike[0] if len(alike) == 1 else ("log", *named)


def _run(
    sessions: list[_Session],
) -> tuple[tuple[datetime, str, str, datetime], dict[str, Any]]:
    """A run's summary, and where it sorts: by its stamp's time (else its first session's),
    then its first session's."""
    sessions.sort(key=lambda session: (session.at, session.log.name))
    _, name, stamp = _named(sessions[0].log)
    records = [session.record for session in sessions if session.record is not None]
    worst = _worst(sessions)
    usages = [record["usage"] for record in records if record["usage"] is not None]
    temporal = next((r["temporal"] for r in records if r.get("temporal") is not None), None)
    host = temporal.get("host") if temporal is not None else None
    run = {
        "name": name,
        "stamp": stamp,
        "host": host or next((s.folder_host for s in sessions if s.folder_host), None),
        "workflow_id": temporal["workflow_id"] if temporal is not None else None,
        "sessions": len(sessions),
        "unrecorded": len(sessions) - len(records),
        "ended": _ended(worst),
        "failure": worst.record["failure"] if worst.record is not None else None,
        "killed": [work for record in records for work in record["killed"]],
        "turns": _sum(usage["turns"] for usage in usages),
        "cost_usd": _sum(usage["cost_usd"] for usage in usages),
        "tokens": _sum(_tokens(usage) for usage in usages),
        "duration": _sum(record["duration"] for record in records),
        "started_at": sessions[0].at.isoformat(),
        "logs": [absolute(session.log) for session in sessions],
    }
    return (_when(stamp) or sessions[0].at, name, stamp or "", sessions[0].at), run


def _worst(sessions: list[_Session]) -> _Session:
    """The session whose ending is the run's: the worst of those no later one carried on (the
    last of them, of equal ones)."""
    standing = [
        session
        for at, session in enumerate(sessions)
        if not any(_carries_on(later.kind, session.kind) for later in sessions[at + 1 :])
    ]
    ranked = [(_WORST.index(_ended(session)), at) for at, session in enumerate(standing)]
    return standing[max(ranked)[1]]


def _carries_on(later: str, earlier: str) -> bool:
    """Whether a session of kind ``later`` carries one of kind ``earlier`` on: the same work
    (``implement``) resumed, continued or run again (``implement-continued``)."""
    after, before = _CARRIED_ON.fullmatch(later), _CARRIED_ON.fullmatch(earlier)
    if after is None or before is None:
        return False
    return after["work"] == before["work"] and bool(after["added"])


def _ended(session: _Session) -> str:
    record = session.record
    if record is None:
        return "unrecorded"
    failure = record["failure"]
    if failure is not None:
        return "interrupted" if failure["type"] == "Interrupted" else "failed"
    return "killed" if record["killed"] else "ok"


def _tokens(usage: dict[str, Any]) -> int | None:
    counts = [usage[name] for name in ("input_tokens", "output_tokens") if usage[name] is not None]
    return sum(counts) if counts else None


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


def lines(runs: Sequence[dict[str, Any]]) -> str:
    """The runs as a person reads them, a line each (with a host column where a run has a
    host), then a line of totals."""
    hosts = [shown(run["host"]) if run["host"] is not None else "-" for run in runs]
    width = max((len(host) for host in hosts), default=0)
    with_host = any(run["host"] is not None for run in runs)
    out = [
        f"{host.ljust(width)}  {line(run)}" if with_host else line(run)
        for host, run in zip(hosts, runs, strict=True)
    ]
    out.append(totals(runs))
    return "".join(f"{text}\n" for text in out)


def line(run: dict[str, Any]) -> str:
    """One run as a person reads it: every value from a file shown escaped and redacted."""
    stamp = f" {shown(run['stamp'])}" if run["stamp"] is not None else ""
    workflow = f" {shown(run['workflow_id'])}" if run.get("workflow_id") else ""
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
    took = duration(int(run["duration"])) if run["duration"] is not None else "duration not known"
    return (
        f"{shown(run['name'])}{stamp}{workflow}: {sessions}, {ended}, killed work: {killed}, "
        f"{turns}, {cost}, {took}"
    )


def totals(runs: Sequence[dict[str, Any]]) -> str:
    """``total: N runs, X ok, Y failed, $C, T tokens`` (what no record said left out)."""
    count = len(runs)
    ok = sum(run["ended"] == "ok" for run in runs)
    failed = sum(run["ended"] == "failed" for run in runs)
    cost = _sum(run["cost_usd"] for run in runs)
    tokens = _sum(run.get("tokens") for run in runs)
    said = f"total: {count} run{'' if count == 1 else 's'}, {ok} ok, {failed} failed"
    said += f", {cost_text(cost)}" if cost is not None else ", cost not said"
    said += f", {tokens} tokens" if tokens is not None else ", tokens not said"
    return said


_ENDED_TEXT = {"killed": "ended with work killed", "unrecorded": "ending not recorded"}


def _short(text: str) -> str:
    """The first line of ``text`` that says something, shortened, shown."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return shown(shorten(first, SHOWN_CHARS), "message")
