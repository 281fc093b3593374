"""The real :class:`~thirdshift.outside.Outside`: runs one session of a CLI on this machine."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO

from thirdshift import interrupts
from thirdshift.budget import Spending, plus
from thirdshift.containment import checked_containment
from thirdshift.environment import session_environment
from thirdshift.errors import (
    BudgetExhausted,
    ConfigurationError,
    Interrupted,
    ResumeTargetMissing,
    SessionFacts,
    SessionFailed,
    SessionStalled,
    ThirdshiftError,
)
from thirdshift.harness.base import Choice, StreamReader
from thirdshift.harness.failures import FailureInfo, from_stderr
from thirdshift.harness.finish import finish_reading
from thirdshift.logs import create_log_files, last_line, sidecar_path
from thirdshift.machine.allowed import resolved
from thirdshift.machine.follow import READ_SIZE, HeldInterrupt, StderrCopy, StdoutCopy
from thirdshift.machine.leftovers import described, is_helper, merged
from thirdshift.machine.supervised import CliExit, Supervised
from thirdshift.machine.watch import Outcome, Watch
from thirdshift.machine.watchdogs import DEFAULT_LIMITS, Fired, Limits, Watchdog
from thirdshift.outside import Ended, Usage
from thirdshift.programs import find_program
from thirdshift.progress import elapsed
from thirdshift.redaction import safe_cut
from thirdshift.shown import shown

# A terminal's colour and style codes (SGR; opencode colours "Error:" even into a pipe): dropped
# from the text a failure's message quotes, which would otherwise show them escaped. Any other
# control sequence is still shown escaped, so hostile text stays visible.
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
# A failed session's message shows at most this much of its diagnostic (which comes from the
# stream or stderr, and may be megabytes); the whole is in the log and in ``diagnostic``.
MESSAGE_LINES = 20
MESSAGE_CHARS = 2000


class MachineOutside:
    """Runs sessions of ``choice``'s CLI in ``worktree``, each under its own supervisor.

    Each session's CLI runs in a new session and process group with the prompt on stdin; its
    stdout is copied byte for byte into the Session log and read into progress lines; its
    stderr goes to a sidecar file. When the CLI exits, whatever it started is stopped with the
    Harness's stop signals (each followed by up to ``stop_grace`` seconds), then SIGKILL: what
    is still running once the ``drain`` after the CLI's exit is over counts as background work
    killed as the session ended (see :mod:`thirdshift.machine.leftovers`). An interrupt does
    the same at once, counting nothing, and raises :class:`~thirdshift.errors.Interrupted`.

    With ``spending``, a session whose stream says, as it goes, that it has spent what is left
    of the Budget is stopped the same way and raises :class:`~thirdshift.errors.BudgetExhausted`
    (so does one that said so only as the CLI was exiting, too late to stop).
    """

    def __init__(
        self,
        worktree: Path,
        choice: Choice,
        *,
        progress: Callable[[str], None],
        skills: Sequence[str] = (),
        stop_grace: float = 10.0,
        drain: float = 2.0,
        limits: Limits = DEFAULT_LIMITS,
        spending: Spending | None = None,
    ) -> None:
        self.worktree = Path(worktree)
        self.limits = limits
        self.spending = spending
        self.choice = choice
        # Resolved now, so that a containment this machine does not allow is an error before
        # anything starts; "auto" becomes the most isolated one it does.
        self.containment = resolved(choice.containment)
        self.skills = tuple(skills)
        self.stop_grace = stop_grace
        self.drain = drain
        self._progress = progress
        self._cancelled = threading.Event()
        self._running_lock = threading.Lock()
        self._stop_running: Callable[[], None] | None = None

    def report(self, line: str) -> None:
        self._progress(shown(line))

    def wait(self, seconds: float) -> None:
        """Wait ``seconds``, ending at once with ``Interrupted`` on an interrupt or cancel."""
        with interrupts.stopping(self._cancelled.set):
            self._cancelled.wait(seconds)
        if self._cancelled.is_set() or interrupts.requested():
            raise Interrupted()

    def cancel(self) -> None:
        self._cancelled.set()
        with self._running_lock:
            stop = self._stop_running
        if stop is not None:
            stop()

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        if interrupts.requested() or self._cancelled.is_set():
            raise Interrupted()
        harness = self.choice.harness
        invocation = harness.invocation(self.choice, resume, prompt, self.skills)
        program = find_program(invocation.argv[0])
        if not self.worktree.is_dir():
            raise ConfigurationError(f"worktree {self.worktree} is not a folder")
        if not os.access(
            self.worktree, os.X_OK, effective_ids=os.access in os.supports_effective_ids
        ):
            # Else the CLI's start fails on it, and says only "could not start PROGRAM".
            denied = os.strerror(errno.EACCES)
            raise ConfigurationError(f"worktree {self.worktree} cannot be entered: {denied}")
        reader = harness.reader(self.worktree)
        env = session_environment(self.choice, os.environ, self.worktree)
        # A Resume continues a session whose earlier calls left records: only new ones count.
        records_before = self._records_of_killed_work(env, resume)

        log_fd, stderr_fd = create_log_files(log)
        # Only once made: a refused folder or a name taken (the rules move on to -2) says no
        # file that was never written.
        self.report(f"logging the session to {log}")
        try:
            started = time.monotonic()
            outcome = self._run(
                kind,
                [program, *invocation.argv[1:]],
                invocation.stdin,
                reader,
                env=env,
                resume=resume,
                log_fd=log_fd,
                stderr_fd=stderr_fd,
            )
        finally:
            os.close(log_fd)
            os.close(stderr_fd)

        if outcome.interrupted:
            so_far = reader.ended()
            raise Interrupted(
                containment=outcome.containment,
                usage=so_far.usage,
                final_message=reader.final_message,
                session_id=so_far.session_id,
            )
        if outcome.violation is not None:
            raise SessionFailed(
                f"{harness.name}'s supervisor protocol violated ({outcome.violation}); "
                "everything the session started was killed",
                log=log,
                containment=outcome.containment,
            )
        if outcome.spawn_error is not None:
            raise ThirdshiftError(f"could not start {program}: {outcome.spawn_error}")
        if outcome.log_error is not None:
            reason = outcome.log_error.strerror or outcome.log_error
            raise ThirdshiftError(f"could not write {log}: {reason}") from outcome.log_error
        cli_exit = outcome.cli_exit or CliExit(code=None, signal=None)
        finish_reading(reader, cli_exit.code)
        failed = self._how_it_failed(outcome, cli_exit, reader, log)
        # A failed session's ended line says so, with its cause; the diagnostic is the error's.
        how = [f"failed ({failed[1]})"] if failed is not None else []
        how += [reader.summary] if reader.summary else []
        summary = f": {'; '.join(how)}" if how else ""
        self.report(f"{kind}: session ended after {elapsed(time.monotonic() - started)}{summary}")
        fired = outcome.fired
        lingered = fired is not None and fired.what == "after_result"
        if fired is not None and lingered:
            # The session had ended: the CLI only lingered. Its result stands.
            self.report(f"{kind}: {harness.name} was {fired.why}; stopped it, the result stands")
        if failed is not None:
            raise failed[0]
        if lingered:
            return replace(_lingered_ending(reader), containment=outcome.containment)
        ended = self._with_work_left(reader, outcome, env, records_before)
        return replace(ended, containment=outcome.containment)

    def _run(
        self,
        kind: str,
        argv: list[str],
        prompt: str,
        reader: StreamReader,
        *,
        env: Mapping[str, str],
        resume: str | None,
        log_fd: int,
        stderr_fd: int,
    ) -> Outcome:
        def on_line(line: str) -> None:
            for body in reader.feed(line):
                self.report(f"{kind}: {body}")

        try:
            supervised = Supervised(
                argv,
                cwd=self.worktree,
                env=env,
                stop_signals=self.choice.harness.stop_signals,
                grace=self.stop_grace,
                containment=checked_containment(self.containment),
            )
        except OSError as error:  # e.g. an argv too long (a session id from the stream)
            raise ThirdshiftError(
                f"could not start {argv[0]}: {error.strerror or error}"
            ) from error
        interrupted = False
        try:
            writer = threading.Thread(
                target=_write_prompt, args=(supervised.stdin, prompt), daemon=True
            )
            writer.start()
            with HeldInterrupt() as interrupt:
                copy = StdoutCopy(
                    supervised.stdout_fd,
                    log_fd,
                    on_line,
                    # Never more than the pipe holds: a read allocates all it asks for first.
                    read_size=min(READ_SIZE, supervised.pipe_size),
                    interrupt=interrupt,
                )
                stderr = StderrCopy(
                    supervised.stderr_fd, stderr_fd, read_size=READ_SIZE, interrupt=interrupt
                )
                watchdog = Watchdog(
                    self.limits,
                    last_output=lambda: copy.last_read_at,
                    turns_ended=lambda: int(getattr(reader, "turns_ended", 0)),
                    session_id=lambda: reader.session_id,
                    resume=resume,
                    # Checked after every read only where there is a limit to cross.
                    budget=(
                        (lambda: self._budget_crossed(reader))
                        if self.spending is not None and self.spending.budget.limits_anything
                        else lambda: None
                    ),
                )
                watch = Watch(
                    supervised,
                    copy,
                    stderr,
                    drain_seconds=self.drain,
                    interrupt=interrupt,
                    watchdog=watchdog,
                )
                try:
                    with interrupts.stopping(watch.stop), self._stopped_by_cancel(watch.stop):
                        while True:
                            try:
                                watch.run()
                                break
                            except KeyboardInterrupt:
                                if interrupted:
                                    watch.kill()  # a second interrupt: no more grace
                                interrupted = True
                                watch.stop()
                finally:
                    watch.close()
        finally:
            supervised.close()
        return watch.outcome(
            interrupted=interrupted or interrupts.requested() or self._cancelled.is_set()
        )

    def _budget_crossed(self, reader: StreamReader) -> str | None:
        """The Budget limit that what was spent before plus this stream so far reaches."""
        if self.spending is None:
            return None
        return self.spending.crossed_with(_so_far(reader))

    def _records_of_killed_work(
        self, env: Mapping[str, str], session_id: str | None
    ) -> Mapping[str, str]:
        """The CLI's own records of work it killed, for ``session_id``, if its Harness reads
        them (``work_killed_at_exit``); none without an id."""
        read = getattr(self.choice.harness, "work_killed_at_exit", None)
        if read is None or session_id is None:
            return {}
        records: Mapping[str, str] = read(self.worktree, env, session_id)
        return records

    def _with_work_left(
        self,
        reader: StreamReader,
        outcome: Outcome,
        env: Mapping[str, str],
        records_before: Mapping[str, str],
    ) -> Ended:
        """The reader's ending, its ``killed`` joined by the work the session left behind.

        That is each process the supervisor found still running at the end (but the
        Harness's own helpers), and each record of killed work the CLI made in this call.
        """
        ended = reader.ended()
        harness = self.choice.harness
        helpers = tuple(getattr(harness, "helper_processes", ()))
        unwrap = getattr(harness, "unwrap_command", None)
        found = [described(argv, unwrap) for argv in outcome.left if not is_helper(argv, helpers)]
        if ended.session_id is not None:
            records = self._records_of_killed_work(env, ended.session_id)
            found += [work for name, work in records.items() if name not in records_before]
        if not found and not outcome.left_unlisted:
            return ended
        return replace(ended, killed=merged(ended.killed, found, unlisted=outcome.left_unlisted))

    @contextlib.contextmanager
    def _stopped_by_cancel(self, stop: Callable[[], None]) -> Iterator[None]:
        """While active, :meth:`cancel` calls ``stop`` (at once, if it was called already)."""
        with self._running_lock:
            self._stop_running = stop
        try:
            if self._cancelled.is_set():
                stop()
            yield
        finally:
            with self._running_lock:
                self._stop_running = None

    def _stopped(
        self,
        cli: str,
        fired: Fired,
        cli_exit: CliExit,
        reader: StreamReader,
        log: Path,
        *,
        containment: str,
    ) -> SessionFailed:
        """The failure of a session a watchdog stopped: stalled, or another session resumed."""
        facts: SessionFacts = {
            "exit_code": cli_exit.code,
            "signal": cli_exit.signal,
            "log": log,
            "session_id": reader.session_id,
            "containment": containment,
            "usage": reader.ended().usage,
            "final_message": reader.final_message,
        }
        message = f"{cli} was stopped: {fired.why}"
        if fired.what == "other_session":
            return ResumeTargetMissing(message, **facts)
        if fired.what == "budget":
            return self._exhausted(message, reader, facts)
        return SessionStalled(message, why=fired.why, **facts)

    def _how_it_failed(
        self, outcome: Outcome, cli_exit: CliExit, reader: StreamReader, log: Path
    ) -> tuple[SessionFailed, str] | None:
        """How the session failed, and why in a few words (no diagnostic); None if it did not.

        A CLI that only lingered after its result (``after_result``) did not fail for that.
        """
        cli, fired = self.choice.harness.name, outcome.fired
        if fired is not None and fired.what != "after_result":
            stopped = self._stopped(
                cli, fired, cli_exit, reader, log, containment=outcome.containment
            )
            return stopped, str(stopped)
        if outcome.all_gone and not reader.failed and (fired is not None or cli_exit.code == 0):
            crossed = self._budget_crossed(reader)
            if crossed is None:
                return None
            # Said as the stream went, but read only as the CLI exited: too late to stop it,
            # yet the same crossing, so the same failure whichever came first.
            facts: SessionFacts = {
                "exit_code": cli_exit.code,
                "log": log,
                "session_id": reader.session_id,
                "containment": outcome.containment,
                "final_message": reader.final_message,
            }
            spent = self._exhausted(f"{cli} spent the budget ({crossed})", reader, facts)
            return spent, str(spent)
        cause = self._cause(cli, cli_exit, outcome)
        return self._failure(cause, cli_exit, outcome, reader, log), cause

    def _exhausted(
        self, message: str, reader: StreamReader, facts: SessionFacts
    ) -> BudgetExhausted:
        """The failure of a session that spent the Budget; its usage is the best the stream
        gave (its end's, else what it said so far), so that the record counts it."""
        assert self.spending is not None  # only a session with a Budget crosses one
        usage = reader.ended().usage or _so_far(reader)
        facts["usage"] = usage
        return BudgetExhausted(
            message,
            spent=plus(self.spending.spent, usage),
            limit=self.spending.budget,
            **facts,
        )

    @staticmethod
    def _cause(cli: str, cli_exit: CliExit, outcome: Outcome) -> str:
        """Why a session that no watchdog stopped failed, without its diagnostic."""
        if cli_exit.signal is None and cli_exit.code is None:
            # The supervisor was killed before it could say.
            message = f"{cli} ended with no exit status (its supervisor was lost)"
        elif outcome.supervisor_lost:
            message = (
                f"{cli}'s supervisor was lost before it stopped everything the session started"
            )
        elif not outcome.all_gone:
            message = (
                f"the stop of {cli}'s session did not finish: processes were still found when "
                "it gave up; everything found was killed"
            )
        elif cli_exit.signal is not None:
            message = f"{cli} exited by signal {cli_exit.signal.name}"
        elif cli_exit.code != 0:
            message = f"{cli} exited {cli_exit.code}"
        else:
            message = f"{cli}'s turn failed"
        return message

    def _failure(
        self, message: str, cli_exit: CliExit, outcome: Outcome, reader: StreamReader, log: Path
    ) -> SessionFailed:
        noise = tuple(getattr(self.choice.harness, "stderr_noise", ()))
        stderr_line = last_line(sidecar_path(log), noise)
        diagnostic = reader.error or stderr_line
        if diagnostic:
            message = f"{message}: {shown(_bounded(_COLOURS.sub('', diagnostic)), 'message')}"
        # The stream tells the failure apart; stderr only a Resume the CLI could not find
        # (Codex says so there alone). A plugin's reader may predate `failure`.
        info = getattr(reader, "failure", None) or from_stderr(stderr_line)
        return (info or FailureInfo(SessionFailed)).exception(
            message,
            exit_code=cli_exit.code,
            signal=cli_exit.signal,
            diagnostic=diagnostic,
            log=log,
            session_id=reader.session_id,
            containment=outcome.containment,
            usage=reader.ended().usage,
            final_message=reader.final_message,
        )


def _lingered_ending(reader: StreamReader) -> Ended:
    """The ending of a session whose CLI was stopped as it lingered after its result.

    The stop killed what the CLI's background tasks still ran. A Claude that dies in its grace
    may not say so (2 times in 25 on the real 2.1.197), so what its stream started and never
    said ended (the reader's ``still_running``, where it has one) counts as killed too.
    """
    ended = reader.ended()
    running: tuple[str, ...] = tuple(getattr(reader, "still_running", ()))
    if not running:
        return ended
    return replace(ended, killed=merged(ended.killed, list(running)))


def _so_far(reader: StreamReader) -> Usage | None:
    """What ``reader`` has said so far; nothing from a plugin's reader that predates it."""
    so_far: Usage | None = getattr(reader, "usage_so_far", None)
    return so_far


def _bounded(text: str) -> str:
    """``text`` cut to ``MESSAGE_LINES`` lines and ``MESSAGE_CHARS`` characters, saying so."""
    head = text.split("\n", MESSAGE_LINES)
    more = head.pop().count("\n") + 1 if len(head) > MESSAGE_LINES else 0
    kept = "\n".join(head)
    if len(kept) > MESSAGE_CHARS:
        # Never through a secret: the cut falls before it (shown() redacts what is kept).
        kept = kept[: safe_cut(kept, MESSAGE_CHARS)] + "…" + ("" if more else " (cut short)")
    return f"{kept}\n… and {more} more lines" if more else kept


def _write_prompt(stdin: IO[bytes], prompt: str) -> None:
    """Write the prompt and close stdin: both CLIs wait for it to close before they start."""
    try:
        stdin.write(prompt.encode())
        stdin.close()
    except OSError:
        pass  # the CLI exited without reading it; its exit status tells the story
