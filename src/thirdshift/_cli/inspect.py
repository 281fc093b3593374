"""``thirdshift inspect LOG``: read a Session log back, as the session's reader saw it.

With the session's record file beside it (:mod:`thirdshift._record_files`), the report says
what only thirdshift knew (how the session ended: exit status, a watchdog's stop, the failure
it raised) and, for a failure, the last line of the CLI's stderr from the ``.stderr`` sidecar;
without one it says so, and whether it failed is what the stream alone says. Several logs or a
logs folder are summed up a run a line instead (:mod:`thirdshift._cli.runs`).

How a log is read into a report is :mod:`thirdshift._cli.log_report`; here are the command, the
report as text, and the writing to stdout. Progress lines are printed as they come, and
``--json`` keeps the first :data:`~thirdshift._cli.log_report.MAX_PROGRESS_KEPT` of them, with
a count of the rest.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thirdshift._cli import durations, runs
from thirdshift._cli.as_json import pieces
from thirdshift._cli.exits import Exit
from thirdshift._cli.log_report import MAX_PROGRESS_KEPT, Unreadable, inspect_log
from thirdshift._shown import shown
from thirdshift.errors import ThirdshiftError

if TYPE_CHECKING:
    from thirdshift._cli.subparsers import Subparsers

__all__ = [
    "MAX_PROGRESS_KEPT",
    "as_text",
    "inspect_log",
    "register",
    "run",
    "summary_text",
]


def register(subparsers: Subparsers) -> None:
    command = subparsers.add_parser(
        "inspect",
        help="read a Session log back (progress lines, session id, outcome), or sum up a "
        "logs folder a run a line",
        description=(
            "Read a Session log (a CLI's raw stream) with its Harness's reader and print the "
            "progress lines, then the session id, summary, final message, killed background "
            "work, whether it failed and how (from the session's record file, when it is "
            "beside the log). Given several logs, or a logs folder (a fleet's too, a folder "
            "per host), print one line per run instead, from the record files, newest last: "
            "host, name, stamp, workflow, sessions, how it ended (the worst of its sessions), "
            "killed work, turns, cost, duration; then a line of totals. Exits 0 once it could "
            "read the logs, whatever they hold."
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
    command.add_argument(
        "--failed", action="store_true", help="summing up runs: only those that failed"
    )
    command.add_argument(
        "--since",
        metavar="WHEN",
        type=durations.moment,
        help="summing up runs: only those started since WHEN, an ISO 8601 date or time "
        "(2026-12-01, 2026-12-01T03:00, 03:00) or a duration back from now (2h, 30m)",
    )
    command.add_argument(
        "--name", metavar="NAME", help="summing up runs: only those of that log name"
    )
    command.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:

    paths: list[Path] = args.log
    filters = runs.Filters(failed=args.failed, since=args.since, name=args.name)
    try:
        if len(paths) > 1 or _is_folder(paths[0]):
            if args.harness is not None:
                raise Unreadable("--harness reads one log; leave it out to sum up several")
            found = runs.summed_up(paths, warn=_warn, filters=filters)
            if args.json:
                _write_json(found)
            else:
                _write(runs.lines(found))
        elif filters != runs.Filters():
            raise Unreadable("--failed, --since and --name sum up runs: give a folder or logs")
        elif args.json:
            _write_json(inspect_log(paths[0], args.harness, warn=_warn))
        else:
            printed = _PrintedProgress()
            report = inspect_log(paths[0], args.harness, warn=_warn, progress=printed)
            printed.flush()
            _write("\n" + summary_text(report))
    except (Unreadable, runs.NoLogs, ThirdshiftError) as error:
        sys.stderr.write(f"thirdshift: {error}\n")
        return Exit.USAGE_ERROR
    return Exit.OK


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
