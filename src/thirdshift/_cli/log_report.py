"""One Session log read back into a report, as the session's reader saw it (``thirdshift
inspect LOG``; the command itself, and the report's text, are :mod:`thirdshift._cli.inspect`).

A Session log is the CLI's raw stdout, so it is read the way the live stream is: in binary,
through the follow's own line splitter (:class:`~thirdshift._machine.follow.LineSplitter`), so
that a log may hold any bytes and lines of any length, and the reader gets what it got live:
lines decoded leniently, blank ones and those over ``MAX_PARSED_LINE`` left out. Memory does not
grow with the log: progress lines go to the caller as they come, or the first
:data:`MAX_PROGRESS_KEPT` of them are kept, with a count of the rest. The reader is the named
Harness's, or the one whose dialect the log's first event shows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from thirdshift._cli.as_json import failure_json, usage_json
from thirdshift._logs import last_line, record_path, sidecar_path
from thirdshift._machine.follow import READ_SIZE, LineSplitter
from thirdshift._record_files import RecordUnreadable, read_record
from thirdshift.errors import SessionFailed
from thirdshift.harness._base import Harness, StreamReader
from thirdshift.harness._events import reads_objects_only
from thirdshift.harness._failures import FailureInfo
from thirdshift.harness._lines import shorten
from thirdshift.harness._registry import harness_named

# The event types that mark a line as one of a built-in dialect. The first such line picks the
# reader when --harness is not given; a Claude log starts with `system`, a Codex one with
# `thread.started`, a Gemini one with `init`, and the rest are here for logs that lost their
# head. opencode and Qwen are told by a field instead (see _dialect).
_DIALECTS = {
    "system": "claude",
    "assistant": "claude",
    "user": "claude",
    "result": "claude",
    "thread.started": "codex",
    "turn.started": "codex",
    "turn.completed": "codex",
    "turn.failed": "codex",
    "item.started": "codex",
    "item.updated": "codex",
    "item.completed": "codex",
    "init": "gemini",
    "message": "gemini",
    "tool_use": "gemini",
    "tool_result": "gemini",
}
_BUILT_INS = frozenset({*_DIALECTS.values(), "opencode", "qwen"})

MAX_PROGRESS_KEPT = 1000
"""``--json`` keeps this many progress lines, the first ones; ``progress_not_kept`` counts the
rest (a real session has some hundreds; a hostile log may hold millions)."""

MAX_PROGRESS_KEPT_CHARS = 1000
"""A progress line kept for ``--json`` keeps this many characters (the built-in readers' are
a few hundred at most; a plugin's reader might give a line of megabytes)."""


class Unreadable(Exception):
    """The log cannot be inspected; the message is the one line to print."""


class _KeptProgress:
    """The progress lines ``--json`` shows: the first ones, each shortened; the rest counted."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.not_kept = 0

    def __call__(self, line: str) -> None:
        if len(self.lines) == MAX_PROGRESS_KEPT:
            self.not_kept += 1
        elif len(line) > MAX_PROGRESS_KEPT_CHARS:
            self.lines.append(shorten(line, MAX_PROGRESS_KEPT_CHARS))
        else:
            self.lines.append(line)


class _Reading:
    """One pass over a log's lines: picks the reader, warns once of a mismatch, feeds it."""

    def __init__(
        self,
        log: Path,
        harness_name: str | None,
        warn: Callable[[str], None],
        progress: Callable[[str], None],
    ) -> None:
        self._log = log
        self._harness_name = harness_name
        self.forced = harness_named(harness_name) if harness_name is not None else None
        self._warn = warn
        self._progress = progress
        # A named Harness's reader reads from the first line; a detected one, from the line
        # that shows its dialect.
        self.reader: StreamReader | None = None
        self.harness: Harness | None = None
        if self.forced is not None:
            self.reader, self.harness = self.forced.reader(_here()), self.forced
        self.dialect_seen = False
        self.fed = False
        """Whether any line reached the reader."""
        self.spoke = False
        """Whether the reader gave a progress line: its Harness's stream, whatever the type."""

    def line(self, line: str) -> None:
        if not self.dialect_seen:
            dialect = _dialect(line)
            self.dialect_seen = dialect is not None
            if _mismatched(self.forced, dialect):
                self._warn(
                    f"{self._log} does not look like a {self._harness_name} stream (it reads "
                    f"as {dialect}'s); try --harness {dialect}, or leave --harness out to "
                    "detect it"
                )
            if self.reader is None:
                harness = _detected(dialect)
                if harness is None:
                    return  # lines before the first of a dialect mean nothing to it
                self.reader, self.harness = harness.reader(_here()), harness
        if self.reader is None:
            return
        self.fed = True
        for body in self.reader.feed(line):
            self.spoke = True
            self._progress(body)


def inspect_log(
    log: Path,
    harness_name: str | None,
    warn: Callable[[str], None] = lambda _message: None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Read ``log`` with the named Harness's reader (or the detected one) into a report.

    Each progress line goes to ``progress`` as it is read; without one, the report keeps them
    (``progress``: the first :data:`MAX_PROGRESS_KEPT`; ``progress_not_kept``: how many more).
    ``warn`` hears, once, that a log read with a built-in Harness named by the caller holds
    another built-in Harness's stream (whose fields that reader would all miss).
    """
    kept = _KeptProgress()
    reading = _Reading(log, harness_name, warn, kept if progress is None else progress)
    try:
        with open(log, "rb", buffering=0) as stream:
            # A reset time without a date is resolved after the stream's last write, not now.
            written = datetime.fromtimestamp(os.fstat(stream.fileno()).st_mtime).astimezone()
            # A dialect is told by a JSON object's `type`, and a built-in reader (the only kind
            # detected) reads nothing else: only a named Harness's reader may read other lines.
            objects_only = reading.reader is None or reads_objects_only(reading.reader)
            lines = LineSplitter(reading.line, objects_only=objects_only)
            while chunk := stream.read(READ_SIZE):
                lines.feed(chunk)
            lines.finish()
    except BrokenPipeError:
        raise  # ``progress`` printing to a stdout closed by its reader: no fault of the log
    except OSError as error:
        raise Unreadable(f"cannot read {log}: {error.strerror or error}") from error
    reader, harness, forced = reading.reader, reading.harness, reading.forced
    # A plugin's Harness may have a dialect of its own, which only its reader can judge.
    judged = forced is None or forced.name in _BUILT_INS
    if (
        not reading.fed
        or reader is None
        or harness is None
        or (judged and not (reading.dialect_seen or reading.spoke))
    ):
        raise Unreadable(
            f"{log} holds no line of a Claude Code, Codex, opencode, Gemini CLI or Qwen Code stream"
        )
    report: dict[str, Any] = {"harness": harness.name}
    if progress is None:
        report |= {"progress": kept.lines, "progress_not_kept": kept.not_kept}
    # The record says how the session ended (what it failed with, what work it killed: none
    # for a session that was stopped); the stream alone says it only for a failed turn.
    record = _record_beside(log, warn)
    failure = _failure(reader, written) if record is None else record["failure"]
    killed = list(reader.killed) if record is None else list(record["killed"])
    failed = failure is not None
    stderr = None
    if failed:
        stderr = last_line(sidecar_path(log), harness.stderr_noise)
    return report | {
        "session_id": reader.session_id,
        "summary": reader.summary,
        "final_message": reader.final_message,
        "killed": killed,
        "failed": failed,
        "error": reader.error,
        "failure": failure,
        "usage": usage_json(reader.ended().usage),
        "stderr": stderr,
        "record": record,
        "record_file": None if record is None else str(record_path(log)),
    }


def _record_beside(log: Path, warn: Callable[[str], None]) -> dict[str, Any] | None:
    """The session's record file beside ``log``, if there is one that holds a record."""
    try:
        return read_record(log)
    except RecordUnreadable as error:
        warn(f"{error}; reading the stream alone")
        return None


def _failure(reader: StreamReader, written: datetime) -> dict[str, Any] | None:
    """How the session failed, as ``run --json`` shows a failure: the class it raised (plain
    ``SessionFailed`` if the stream does not tell), the reader's error, ``retry_at`` and the
    session id (no exit status: the stream does not hold it)."""
    if not reader.failed:
        return None
    info = reader.failure_at(written)  # deterministic: a reset time counts from the log's time
    error = (info or FailureInfo(SessionFailed)).exception(
        reader.error or "the turn failed", session_id=reader.session_id
    )
    return failure_json(error)


def _dialect(line: str) -> str | None:
    """The built-in dialect a line belongs to, judged by its ``type``; None for any other."""
    if not line.lstrip().startswith("{"):
        return None
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    kind = event.get("type") if isinstance(event, dict) else None
    if not isinstance(kind, str):
        return None
    if "sessionID" in event:
        return "opencode"  # the one stream with its session id, so spelled, on every line
    if kind == "system" and "qwen_code_version" in event:
        return "qwen"  # Claude's shape: only its init names Qwen
    return _DIALECTS.get(kind)


def _mismatched(forced: Harness | None, dialect: str | None) -> bool:
    """Whether a built-in Harness was named for a line of another built-in's dialect."""
    return (
        forced is not None
        and dialect is not None
        and forced.name in _BUILT_INS
        and dialect != forced.name
        # Qwen's lines are Claude's but for its init, so a Qwen log may read as Claude's
        and (forced.name, dialect) != ("qwen", "claude")
    )


def _detected(dialect: str | None) -> Harness | None:
    return harness_named(dialect) if dialect is not None else None


def _here() -> Path:
    """Where paths in the log are made relative to, when the log does not say: the cwd."""
    try:
        return Path.cwd()
    except OSError:
        return Path("/")
