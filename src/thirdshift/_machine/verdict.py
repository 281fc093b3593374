"""The verdict on one call (one run of the CLI): how it ended, decided from what the watch
saw (:class:`~thirdshift._machine.watch.Watched`) and what its reader read.

:func:`verdict` is a pure function: it starts, reads and writes nothing, so every way a call
can end (normally, a failed exit, a signal, a watchdog's stop, a stop after the result, a
Budget spent, an interrupt or cancel) is tested in-process (tests/test_verdict.py). What it
needs from files (the sidecar's last line, the work the CLI's own state files say it killed)
the adapter reads first and hands over in :class:`Ran`; the adapter then says its lines, and
returns its :class:`~thirdshift._outside.Ended` or raises its error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from thirdshift._budget import Spending, plus
from thirdshift._machine.leftovers import described, is_helper, merged
from thirdshift._machine.supervised import CliExit
from thirdshift._machine.watch import Watched
from thirdshift._machine.watchdogs import Fired
from thirdshift._outside import Ended, Usage
from thirdshift._progress import duration
from thirdshift._prompts import AS_ASKED
from thirdshift._redaction import safe_cut
from thirdshift._shown import shown
from thirdshift.errors import (
    AuthFailed,
    BudgetExhausted,
    ConfigurationError,
    Interrupted,
    LogLimitReached,
    ResumeTargetMissing,
    SessionFacts,
    SessionFailed,
    SessionStalled,
    ThirdshiftError,
)
from thirdshift.harness._base import Harness, StreamReader
from thirdshift.harness._failures import FailureInfo

# A terminal's colour and style codes (SGR; opencode colours "Error:" even into a pipe): dropped
# from the text a failure's message quotes, which would otherwise show them escaped. Any other
# control sequence is still shown escaped, so hostile text stays visible.
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
# A failed call's message shows at most this much of its diagnostic (which comes from the
# stream or stderr, and may be megabytes); the whole is in the log and in ``diagnostic``.
MESSAGE_LINES = 20
MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class Ran:
    """What the adapter knows of the call besides what the watch saw and its reader."""

    kind: str
    harness: Harness
    program: str
    """The CLI's program, as found on the PATH."""
    log: Path
    seconds: float
    """How long the call took."""
    stderr_line: str | None = None
    """The sidecar's last line, the Harness's ``stderr_noise`` left out."""
    spending: Spending | None = None
    killed_on_file: tuple[str, ...] = ()
    """Work the CLI's own state files say it killed in this call (``work_killed_at_exit``)."""
    max_log_bytes: int | None = None
    """The Session log's cap, if it had one."""
    sandbox: bool = False
    """Whether the call ran sandboxed."""


@dataclass(frozen=True)
class Verdict:
    """How a call ended: what to say, then what to return (``ended``) or raise (``error``), one
    of the two."""

    said: tuple[str, ...]
    ended: Ended | None = None
    error: ThirdshiftError | Interrupted | None = None


def verdict(watched: Watched, reader: StreamReader, ran: Ran) -> Verdict:
    """How the call ended. The reader has been told the exit code (``finish_reading``)
    unless the watch saw it cut short (``Watched.cut_short``)."""
    cli = ran.harness.name
    if watched.interrupted:
        so_far = reader.ended()
        # Else a worker's log, or any progress sink, ends at the last command, as if it ran on.
        stopped = (
            f"{ran.kind}: session stopped after {duration(int(ran.seconds))}, {AS_ASKED}; "
            "nothing of it is left running"
        )
        return Verdict(
            said=(stopped,),
            error=Interrupted(
                containment=watched.containment,
                sandbox=ran.sandbox,
                usage=shown_usage(reader),
                final_message=reader.final_message,
                session_id=so_far.session_id,
            ),
        )
    if watched.violation is not None:
        violated = SessionFailed(
            f"{cli}'s supervisor protocol violated ({watched.violation}); "
            "everything the session started was killed",
            log=ran.log,
            containment=watched.containment,
            sandbox=ran.sandbox,
        )
        return Verdict(said=(), error=violated)
    if watched.spawn_error is not None:
        return Verdict(
            said=(), error=ThirdshiftError(f"could not start {ran.program}: {watched.spawn_error}")
        )
    if watched.log_error is not None:
        reason = watched.log_error.strerror or watched.log_error
        unwritten = ThirdshiftError(f"could not write {ran.log}: {reason}")
        unwritten.__cause__ = watched.log_error
        return Verdict(said=(), error=unwritten)
    cli_exit = watched.cli_exit or CliExit(code=None, signal=None)
    if watched.fired is not None and watched.fired.what == "billing":
        # Asked for what cannot be done as asked: no call's failure, nothing to retry.
        refused = ConfigurationError(f"{cli} was stopped as it started: {watched.fired.why}")
        return Verdict(said=(f"{ran.kind}: {refused}",), error=refused)
    failed = _how_it_failed(watched, cli_exit, reader, ran)
    # A failed call's ended line says so, with its cause; the diagnostic is the error's.
    how = [f"failed ({failed[1]})"] if failed is not None else []
    how += [reader.summary] if reader.summary else []
    summary = f": {'; '.join(how)}" if how else ""
    said = [f"{ran.kind}: session ended after {duration(int(ran.seconds))}{summary}"]
    fired = watched.fired
    lingered = fired is not None and fired.what == "after_result"
    if fired is not None and lingered:
        # The call had ended: the CLI only lingered. Its result stands.
        said.append(f"{ran.kind}: {cli} was {fired.why}; stopped it, the result stands")
    if failed is not None:
        return Verdict(said=tuple(said), error=failed[0])
    ended = _after_lingering(reader) if lingered else _with_work_left(reader, watched, ran)
    finished = replace(ended, containment=watched.containment, sandbox=ran.sandbox)
    return Verdict(said=tuple(said), ended=finished)


def shown_usage(reader: StreamReader) -> Usage | None:
    """What the stream showed the call used, for a call stopped before its end: every
    turn, the one cut short too (``usage_so_far``, where the reader says one as it goes),
    rather than only what its results added up."""
    so_far = reader.usage_so_far
    return so_far if so_far is not None else reader.ended().usage


def budget_crossed(spending: Spending | None, reader: StreamReader) -> str | None:
    """The Budget limit that what was spent before plus this stream so far reaches."""
    if spending is None:
        return None
    return spending.crossed_with(reader.usage_so_far)


def _with_work_left(reader: StreamReader, watched: Watched, ran: Ran) -> Ended:
    """The reader's ``Ended``, its ``killed`` joined by the work the call left behind.

    That is each process the supervisor found still running at the end (but the
    Harness's own helpers), and the work the CLI's own state files say it killed in this call.
    """
    ended = reader.ended()
    harness = ran.harness
    found = [
        described(argv, harness.unwrap_command)
        for argv in watched.left
        if not is_helper(argv, harness.helper_processes)
    ]
    if ended.session_id is not None:
        found += ran.killed_on_file
    if not found and not watched.left_unlisted:
        return ended
    return replace(ended, killed=merged(ended.killed, found, unlisted=watched.left_unlisted))


def _after_lingering(reader: StreamReader) -> Ended:
    """The ``Ended`` of a call whose CLI was stopped as it lingered after its result.

    The stop killed what the CLI's background tasks still ran. A Claude that dies in its grace
    may not say so (2 times in 25 on the real 2.1.197), so what its stream started and never
    said ended (the reader's ``still_running``) counts as killed too.
    """
    ended = reader.ended()
    running = reader.still_running
    if not running:
        return ended
    return replace(ended, killed=merged(ended.killed, list(running)))


def _how_it_failed(
    watched: Watched, cli_exit: CliExit, reader: StreamReader, ran: Ran
) -> tuple[SessionFailed, str] | None:
    """How the call failed, and why in a few words (no diagnostic); None if it did not.

    A CLI that only lingered after its result (``after_result``) did not fail for that.
    """
    cli, fired = ran.harness.name, watched.fired
    if fired is not None and fired.what != "after_result":
        stopped = _stopped(fired, cli_exit, reader, ran, watched)
        return stopped, str(stopped)
    if watched.all_gone and not reader.failed and (fired is not None or cli_exit.code == 0):
        crossed = budget_crossed(ran.spending, reader)
        if crossed is None:
            return None
        # Said as the stream went, but read only as the CLI exited: too late to stop it,
        # yet the same crossing, so the same failure whichever came first.
        facts: SessionFacts = {
            "exit_code": cli_exit.code,
            "log": ran.log,
            "session_id": reader.session_id,
            "containment": watched.containment,
            "sandbox": ran.sandbox,
            "final_message": reader.final_message,
        }
        spent = _exhausted(f"{cli} spent the budget ({crossed})", reader, ran, facts)
        return spent, str(spent)
    cause = _cause(cli, cli_exit, watched)
    return _failure(cause, cli_exit, watched, reader, ran), cause


def _stopped(
    fired: Fired, cli_exit: CliExit, reader: StreamReader, ran: Ran, watched: Watched
) -> SessionFailed:
    """The failure of a call a watchdog stopped: stalled, or another session resumed."""
    facts: SessionFacts = {
        "exit_code": cli_exit.code,
        "signal": cli_exit.signal,
        "log": ran.log,
        "session_id": reader.session_id,
        "containment": watched.containment,
        "sandbox": ran.sandbox,
        "usage": shown_usage(reader),
        "final_message": reader.final_message,
    }
    message = f"{ran.harness.name} was stopped: {fired.why}"
    if fired.what == "other_session":
        return ResumeTargetMissing(message, **facts)
    if fired.what == "budget":
        return _exhausted(message, reader, ran, facts)
    if fired.what == "log_limit":
        dropped = watched.log_dropped
        return LogLimitReached(
            f"{message} (its cap; {dropped} more bytes were dropped)",
            max_log_bytes=ran.max_log_bytes,
            dropped_bytes=dropped,
            **facts,
        )
    if fired.what == "refused":
        # What the CLI said of the refusal, where it said it (Codex's retry lines do).
        said = reader.error
        if said:
            message = f"{message}: {shown(_bounded(said), 'message')}"
        facts["diagnostic"] = said
        return AuthFailed(message, **facts)
    return SessionStalled(message, why=fired.why, **facts)


def _exhausted(
    message: str, reader: StreamReader, ran: Ran, facts: SessionFacts
) -> BudgetExhausted:
    """The failure of a call that spent the Budget; its usage is all the stream showed,
    so that the record counts every turn of it."""
    assert ran.spending is not None  # only a call with a Budget crosses one
    usage = shown_usage(reader)
    facts["usage"] = usage
    return BudgetExhausted(
        message,
        spent=plus(ran.spending.spent, usage),
        limit=ran.spending.budget,
        **facts,
    )


def _cause(cli: str, cli_exit: CliExit, watched: Watched) -> str:
    """Why a call that no watchdog stopped failed, without its diagnostic."""
    if cli_exit.signal is None and cli_exit.code is None:
        # The supervisor was killed before it could say.
        return f"{cli} ended with no exit status (its supervisor was lost)"
    if watched.supervisor_lost:
        return f"{cli}'s supervisor was lost before it stopped everything the session started"
    if not watched.all_gone:
        return (
            f"the stop of {cli}'s session did not finish: processes were still found when "
            "it gave up; everything found was killed"
        )
    if cli_exit.signal is not None:
        return f"{cli} exited by signal {cli_exit.signal.name}"
    if cli_exit.code != 0:
        return f"{cli} exited {cli_exit.code}"
    return f"{cli}'s turn failed"


def _failure(
    message: str, cli_exit: CliExit, watched: Watched, reader: StreamReader, ran: Ran
) -> SessionFailed:
    diagnostic = reader.error or ran.stderr_line
    if diagnostic:
        message = f"{message}: {shown(_bounded(_COLOURS.sub('', diagnostic)), 'message')}"
    # The stream tells the failure apart; stderr only a Resume the CLI could not find
    # (Codex says so there alone), in the wording of this call's own Harness.
    info = reader.failure or ran.harness.stderr_failure(ran.stderr_line)
    return (info or FailureInfo(SessionFailed)).exception(
        message,
        exit_code=cli_exit.code,
        signal=cli_exit.signal,
        diagnostic=diagnostic,
        log=ran.log,
        session_id=reader.session_id,
        containment=watched.containment,
        sandbox=ran.sandbox,
        usage=reader.ended().usage,
        final_message=reader.final_message,
    )


def _bounded(text: str) -> str:
    """``text`` cut to ``MESSAGE_LINES`` lines and ``MESSAGE_CHARS`` characters, saying so."""
    head = text.split("\n", MESSAGE_LINES)
    more = head.pop().count("\n") + 1 if len(head) > MESSAGE_LINES else 0
    kept = "\n".join(head)
    if len(kept) > MESSAGE_CHARS:
        # Never through a secret: the cut falls before it (shown() redacts what is kept).
        kept = kept[: safe_cut(kept, MESSAGE_CHARS)] + "…" + ("" if more else " (cut short)")
    return f"{kept}\n… and {more} more lines" if more else kept
