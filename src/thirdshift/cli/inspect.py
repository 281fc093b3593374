"""``thirdshift inspect LOG``: read a Session log back, as the session's reader saw it.

With the session's record file beside it (:mod:`thirdshift.record_files`), the report says
what only thirdshift knew (how the session ended: exit status, a watchdog's stop, the failure
it raised) and, for a failure, the last line of the CLI's stderr from the ``.stderr`` sidecar;
without one it says so, and whether it failed is what the stream alone says. Several logs or a
logs folder are summed up a run a line instead (:mod:`thirdshift.cli.runs`).

A Session log is the CLI's raw stdout, so it is read the way the live stream is: in binary,
through the follow's own line splitter (:class:`~thirdshift.machine.follow.LineSplitter`), so
that a log may hold any bytes and lines of any length, and the reader gets what it got live:
lines decoded leniently, blank ones and those over ``MAX_PARSED_LINE`` left out. Memory does not
grow with the log: progress lines are printed as they come, and ``--json`` keeps the first
:data:`MAX_PROGRESS_KEPT` of them, with a count of the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thirdshift.cli import runs
from thirdshift.cli.as_json import failure_json, pieces, usage_json
from thirdshift.errors import SessionFailed, ThirdshiftError
from thirdshift.harness.base import Harness, StreamReader
from thirdshift.harness.failures import FailureInfo
from thirdshift.harness.lines import shorten
from thirdshift.harness.registry import harness_named
from thirdshift.logs import last_line, record_path, sidecar_path
from thirdshift.machine.follow import READ_SIZE, LineSplitter
from thirdshift.record_files import RecordUnreadable, read_record
from thirdshift.shown import shown

if TYPE_CHECKING:
    from thirdshift.cli.subparsers import Subparsers

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


class _Unreadable(Exception):
    """The log cannot be inspected; the message is the one line to print."""


def register(subparsers: Subparsers) -> None:
    command = subparsers.add_parser(
        "inspect",
        help="read a Session log back (progress lines, session id, outcome), or sum up a "
        "logs folder a run a line",
        description=(
            "Read a Session log (a CLI's raw stream) with its Harness's reader and print the "
            "progress lines, then the session id, summary, final message, killed background "
            "work, whether it failed and how (from the session's record file, when it is "
            "beside the log). Given several logs, or a logs folder, print one line per run "
            "instead, from the record files, newest last: name, stamp, sessions, how it "
            "ended, killed work, turns, cost, duration."
        ),
    )
    command.add_argument(
        "log",
        metavar="LOG",
        type=Path,
        nargs="+",
        help="the Session log to read; or several, or a logs folder, to sum up",
    )
    command.add_argument(
        "--harness",
        metavar="NAME",
        help="the Harness whose stream the log holds (a built-in one, or one a plugin adds); "
        "by default detected from the log; for one log only",
    )
    command.add_argument("--json", action="store_true", help="print one JSON object instead")
    command.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from thirdshift.cli import USAGE_ERROR  # here: thirdshift.cli imports this module

    paths: list[Path] = args.log
    try:
        if len(paths) > 1 or _is_folder(paths[0]):
            if args.harness is not None:
                raise _Unreadable("--harness reads one log; leave it out to sum up several")
            found = runs.summed_up(paths, warn=_warn)
            if args.json:
                _write_json(found)
            else:
                _write("".join(f"{runs.line(run)}\n" for run in found))
        elif args.json:
            _write_json(inspect_log(paths[0], args.harness, warn=_warn))
        else:
            printed = _PrintedProgress()
            report = inspect_log(paths[0], args.harness, warn=_warn, progress=printed)
            printed.flush()
            _write("\n" + summary_text(report))
    except (_Unreadable, runs.NoLogs, ThirdshiftError) as error:
        sys.stderr.write(f"thirdshift: {error}\n")
        return USAGE_ERROR
    return 0


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False  # then reading it as a log says why it cannot be


def _warn(message: str) -> None:
    sys.stderr.write(f"thirdshift: warning: {message}\n")
    sys.stderr.flush()


class _PrintedProgress:
    """Prints progress lines, shown, as they come: a batch of them per write to stdout (a
    plugin's reader may give long lines, so a batch is also cut at a size)."""

    BATCH_LINES = 1000
    BATCH_CHARACTERS = 1 << 20

    def __init__(self) -> None:
        self._batch: list[str] = []
        self._characters = 0

    def __call__(self, line: str) -> None:
        text = shown(line)
        self._batch.append(text)
        self._characters += len(text)
        if len(self._batch) == self.BATCH_LINES or self._characters >= self.BATCH_CHARACTERS:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            _write("".join(f"{line}\n" for line in self._batch), flush=False)
            self._batch.clear()
            self._characters = 0


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
        self.reader: StreamReader | None = None
        self.harness: Harness | None = None
        self.dialect_seen = False
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
                harness = self.forced if self.forced is not None else _detected(dialect)
                if harness is None:
                    return  # lines before the first of a dialect mean nothing to it
                self.reader, self.harness = harness.reader(_here()), harness
        if self.reader is None:
            return
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
            lines = LineSplitter(reading.line)
            while chunk := stream.read(READ_SIZE):
                lines.feed(chunk)
            lines.finish()
    except OSError as error:
        raise _Unreadable(f"cannot read {log}: {error.strerror or error}") from error
    reader, harness, forced = reading.reader, reading.harness, reading.forced
    # A plugin's Harness may have a dialect of its own, which only its reader can judge.
    judged = forced is None or forced.name in _BUILT_INS
    if (
        reader is None
        or harness is None
        or (judged and not (reading.dialect_seen or reading.spoke))
    ):
        raise _Unreadable(
            f"{log} holds no line of a Claude Code, Codex, opencode, Gemini CLI or Qwen Code stream"
        )
    report: dict[str, Any] = {"harness": harness.name}
    if progress is None:
        report |= {"progress": kept.lines, "progress_not_kept": kept.not_kept}
    # The record says how the session ended; the stream alone says it only for a failed turn.
    record = _record_beside(log, warn)
    failure = _failure(reader, written) if record is None else record["failure"]
    failed = failure is not None
    stderr = None
    if failed:
        stderr = last_line(sidecar_path(log), harness.stderr_noise)
    return report | {
        "session_id": reader.session_id,
        "summary": reader.summary,
        "final_message": reader.final_message,
        "killed": list(reader.killed),
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


def as_text(report: dict[str, Any]) -> str:
    """The report for a person: every stream-derived value shown escaped and redacted."""
    progress = "".join(f"{shown(line)}\n" for line in report["progress"])
    return f"{progress}\n{summary_text(report)}"


def summary_text(report: dict[str, Any]) -> str:
    """What follows the progress lines: the session id, summary, final message, outcome."""
    out = [f"harness: {report['harness']}"]
    out.append(f"session id: {shown(report['session_id'] or 'none')}")
    out.append(f"summary: {shown(report['summary'] or 'none')}")
    final = report["final_message"]
    if final is None:
        out.append("final message: none")
    else:
        out.append("final message:")
        out += [f"  {shown(line)}" for line in final.splitlines() or [""]]
    killed = report["killed"]
    if killed:
        out.append("killed background work:")
        out += [f"  {shown(work)}" for work in killed]
    else:
        out.append("killed background work: none")
    out.append(f"failed: {'yes' if report['failed'] else 'no'}")
    if report["error"] is not None:
        label = "error" if report["failed"] else "last error"
        out.append(f"{label}: {shown(report['error'], 'message')}")
    failure, record = report["failure"], report.get("record")
    when = f", retry at {failure['retry_at']}" if failure and failure["retry_at"] else ""
    if failure is not None and record is not None:
        out.append(f"failure: {shown(failure['type'])}: {shown(failure['message'], 'message')}")
        out[-1] += when
        status = _exit_status(failure)
        if status is not None:
            out.append(f"exit status: {status}")
    elif failure is not None and failure["type"] != "SessionFailed":
        out.append(f"failure: {failure['type']}{when}")
    if report.get("stderr") is not None:
        out.append(f"stderr: {shown(report['stderr'], 'message')}")
    if "record" in report:
        out.append(_record_line(report))
    return "\n".join(out) + "\n"


def _exit_status(failure: dict[str, Any]) -> str | None:
    if failure.get("signal") is not None:
        return f"killed by {shown(failure['signal'])}"
    if failure.get("exit_code") is not None:
        return str(failure["exit_code"])
    return None


def _record_line(report: dict[str, Any]) -> str:
    """Where the record came from, or that there was none (so the stream alone was read)."""
    if report["record"] is not None:
        return f"record: {shown(report['record_file'])}"
    return (
        "record: none beside the log (the session is still running, thirdshift was stopped "
        "before it wrote one, or an older thirdshift ran it), so this is the stream alone"
    )


def _write(text: str, *, flush: bool = True) -> None:
    """Write ``text`` to stdout in whatever encoding it has, escaping what it cannot hold.

    Stream data may decode to lone surrogates (``"\\ud800"`` in JSON), which no encoding holds.
    """
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))
    if flush:
        sys.stdout.flush()


def _write_json(report: dict[str, Any] | list[dict[str, Any]]) -> None:
    """The report as one line of ASCII JSON (which any encoding holds), a piece at a time.

    A piece at a time because the whole could be tens of megabytes (a final message and an
    error of a million characters each, escaped), and each copy of it would count.
    """
    for piece in pieces(report):
        sys.stdout.write(piece)
    sys.stdout.write("\n")
    sys.stdout.flush()
