"""Each session's record as a file beside its Session log: ``<log stem>.record.json``.

The log holds what the CLI wrote; what only thirdshift knew (the exit status, a watchdog's stop,
the failure it raised, the containment, how long it took) would be lost with the process.
So once a session has ended, the rules write its :class:`~thirdshift._records.SessionRecord`
there, as ``run --json`` shows it (:func:`~thirdshift._json_form.record_json`): one line of
ASCII JSON, in a file made 0600 and put in place atomically (written under a temporary name,
then renamed to its own). ``thirdshift inspect`` reads it back.

The name is the session's from its start: the log files are made with an empty file there
(:func:`~thirdshift._logs.create_log_files`), so a record planted before the session, by an
earlier session's agent that guessed the name, moves the session to the next name instead of
being read as its record. Whatever is at the name when the session has ended (that empty file,
or what its own agent wrote there while it ran) is replaced: a record is never left that
thirdshift did not write, and an empty one reads as none (the session runs, or its
orchestrator was killed). What an agent running as the same user can still do to these files
while it runs is in ``docs/security.md``.

Only beside a log that exists: a stand-in Outside (``ScriptedOutside``) creates no log, so
in-process tests leave no record files behind; an Outside of one's own that writes the logs
gets them. A record that cannot be written is reported by the caller, never raised over the
session's own ending or failure.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import stat
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from thirdshift._json_form import MAX_COUNT, record_json
from thirdshift._logs import record_path, trusted_folder
from thirdshift._records import SessionRecord
from thirdshift._values import BILLINGS
from thirdshift.errors import ThirdshiftError

MAX_RECORD_BYTES = 64 << 20
"""A record file larger than this is not read back: a real one is a few kilobytes, and a
final message of megabytes still fits many times over."""


class RecordNotWritten(ThirdshiftError):
    """The record file could not be written (the folder gone or full, a folder at its name)."""


class RecordUnreadable(ThirdshiftError):
    """A record file exists but does not hold a record; the message says why."""


def write_record(record: SessionRecord) -> Path | None:
    """Write ``record`` beside its log, in place of whatever is at its name; its path, or
    ``None`` when there is no log to sit by.

    Raises :class:`RecordNotWritten` when it cannot, having removed what was at the name: a
    file there that is not this record is never left to be read as it.
    """
    log = record.log
    if not os.path.lexists(log):
        return None
    target = record_path(log)
    data = (json.dumps(record_json(record), ensure_ascii=True) + "\n").encode("ascii")
    try:
        folder_fd = trusted_folder(target)
    except ThirdshiftError as error:
        raise RecordNotWritten(f"could not write {target}: {error}") from error
    temporary = f".{target.name}.{secrets.token_hex(8)}.tmp"
    try:
        _write_new(folder_fd, temporary, data)
        os.rename(temporary, target.name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder_fd)
        with contextlib.suppress(OSError):
            os.unlink(target.name, dir_fd=folder_fd)  # a folder stays: no file, never read
        raise RecordNotWritten(f"could not write {target}: {error.strerror or error}") from error
    finally:
        os.close(folder_fd)
    return target


def _write_new(folder_fd: int, name: str, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(name, flags, 0o600, dir_fd=folder_fd)
    with os.fdopen(fd, "wb") as file:
        os.fchmod(fd, 0o600)  # the umask may have taken bits away; never more than these
        file.write(data)
        file.flush()
        os.fsync(fd)  # whole on disk before it has its name, so a reader never sees a part


def record_written(log: Path) -> bool:
    """Whether a record may be at ``log``'s record's name: anything but nothing, or the empty
    file that holds the name while the session runs (whose record is not written yet)."""
    try:
        found = os.lstat(record_path(log))
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return not (stat.S_ISREG(found.st_mode) and found.st_size == 0)


def read_record(log: Path) -> dict[str, Any] | None:
    """The record beside ``log``, its fields checked; ``None`` if there is none (no file, or
    the empty one that holds its name while the session runs).

    Raises :class:`RecordUnreadable` for a file that cannot be read, or that does not hold a
    record: not a regular file, over :data:`MAX_RECORD_BYTES`, not JSON, or a field of the
    wrong type. A field missing (a record from another version) reads as ``null`` (``[]`` for
    ``killed``); fields this version does not know are left out.
    """
    path = record_path(log)
    try:
        # Non-blocking, so that a FIFO in its place cannot hang the reader.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise RecordUnreadable(f"cannot read {path}: {error.strerror or error}") from error
    try:
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise RecordUnreadable(f"{path} is not a regular file")
            data = file.read(MAX_RECORD_BYTES + 1)
    except OSError as error:
        raise RecordUnreadable(f"cannot read {path}: {error.strerror or error}") from error
    if not data:
        return None
    if len(data) > MAX_RECORD_BYTES:
        raise RecordUnreadable(f"{path} is over {MAX_RECORD_BYTES >> 20} MiB: not a record")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise RecordUnreadable(f"{path} does not hold a record: it is not JSON") from error
    problem = record_problem(value)
    if problem is not None:
        raise RecordUnreadable(f"{path} does not hold a record: {problem}")
    record = {name: value.get(name) for name in _RECORD}
    record["killed"] = record["killed"] or []
    return record


_Check = Callable[[object], bool]


def _text(value: object) -> bool:
    return isinstance(value, str)


def _count(value: object) -> bool:
    # No larger count is ever written (json_form prints it as null), so sums stay printable.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _number(value: object) -> bool:
    # NaN and the infinities, which Python's JSON reads, are no JSON to print again.
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_COUNT  # and a huge one would not even convert to a float
    return isinstance(value, float) and math.isfinite(value)


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _when(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False


_USAGE: dict[str, _Check] = {
    "turns": _count,
    "input_tokens": _count,
    "output_tokens": _count,
    "cached_input_tokens": _count,
    "cost_usd": _number,
    "models": _texts,
    "billing": lambda value: value in BILLINGS,
    "subagents": lambda value: value in ("counted", "unknown"),
}
_FAILURE: dict[str, _Check] = {
    "type": _text,
    "message": _text,
    "retry_at": _when,
    "exit_code": _count,
    "signal": _text,
    "session_id": _text,
    "max_log_bytes": _count,
    "dropped_bytes": _count,
}


def _fields(checks: dict[str, _Check], required: tuple[str, ...]) -> _Check:
    def check(value: object) -> bool:
        return isinstance(value, dict) and _problem_in(value, checks, required) is None

    return check


_TEMPORAL: dict[str, _Check] = {
    "workflow_id": _text,
    "run_id": _text,
    "activity_id": _text,
    "attempt": _count,
    "host": _text,
}


_RECORD: dict[str, _Check] = {
    "kind": _text,
    "log": _text,
    "session_id": _text,
    "killed": _texts,
    "final_message": _text,
    "usage": _fields(_USAGE, ()),
    "started_at": _when,
    "duration": _number,
    "failure": _fields(_FAILURE, ("type", "message")),
    "containment": _text,
    "sandbox": lambda value: isinstance(value, bool),
    "temporal": _fields(_TEMPORAL, ("workflow_id", "activity_id")),
    "command": _text,
}


def record_problem(value: object) -> str | None:
    """What keeps ``value`` (a record's JSON, as read) from being a record; ``None`` if it is
    one."""
    if not isinstance(value, dict):
        return "it is not a JSON object"
    return _problem_in(value, _RECORD, ("kind", "started_at"))


def _problem_in(
    value: dict[str, Any], checks: dict[str, _Check], required: tuple[str, ...]
) -> str | None:
    """What is wrong with ``value``'s fields, if anything: a required one missing, or one of
    the wrong type (``null`` is every optional field's own value)."""
    for name, check in checks.items():
        if value.get(name) is None:
            if name in required:
                return f"no {name}"
        elif not check(value[name]):
            return f"its {name} is not what a record holds"
    return None
