"""The Resume rules for agent sessions.

A session that ends its turn while background work it started is still running has that work
killed with it. These rules decide what happens next:

- killed work and a session id to continue: exactly one Resume, whose prompt names the work;
- a Resume that ends the same way, that finds no session to continue, or no id to resume at
  all: a progress line, and the caller carries on (under ``strict``, a Resume that ends the
  same way raises :class:`~thirdshift.errors.WorkKilledAgain` instead);
- a failed session: its error propagates unchanged, and it is not resumed — unless it failed
  on an API limit (``retryable``) and the ``wait_for_limits`` budget covers the wait: then the
  rules wait for the limit to pass and continue the session (a Resume of it, labelled
  ``<kind>-continued``; without an id, the same session again, ``<kind>-retry``), whose own
  ending follows these same rules;
- a later failing step of the caller names the killed work ahead of its own cause
  (see :meth:`Sessions.within`);
- one account, one limit: a limit with a reset time that a session reports is its account's
  (its Harness and credential, :mod:`thirdshift._accounts`), and no session or Resume of that
  account starts until then: each parks (waits, within the same ``wait_for_limits``), or, when
  the wait does not fit, fails as the limit's class without starting;
- each wait for a limit, and each failed session, is an event for ``notify``
  (:mod:`thirdshift._notices`), and so is the end of a ``within`` block;
- under a :class:`~thirdshift.Budget`, what every session of the block used is added up
  (:attr:`Sessions.spent`); once it reaches a limit, no Resume and no continuation starts: the
  rules carry on as for a session with no id to resume (a limit's failure propagates), with a
  progress line that says the budget is why, and a new session is refused with
  :class:`~thirdshift.errors.BudgetExhausted`. The running session is the adapter's to stop.

Each session run, whatever its ending (a ``SessionFailed`` or an ``Interrupted`` too), leaves a
:class:`~thirdshift._records.SessionRecord`, in :attr:`Sessions.records` and, once it has ended,
as a file beside its log (:mod:`thirdshift._record_files`): the rules write it, as they alone
know the whole record, and only where the Outside made the log, so that a stand-in's sessions
leave no files.

The rules reach the machine only through :class:`~thirdshift._outside.Outside` (waiting
included), so they run in-process in tests. This module imports nothing that spawns processes
or touches a terminal.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thirdshift._accounts import Account, Limit
from thirdshift._budget import Budget, Spending
from thirdshift._logs import MAX_ATTEMPTS, LogExists, Logs
from thirdshift._notices import Notices, Notify
from thirdshift._outside import Ended, Outside, Usage
from thirdshift._progress import duration
from thirdshift._prompts import continued_prompt, ended_with_killed, resume_prompt, session_named
from thirdshift._record_files import RecordNotWritten, write_record
from thirdshift._records import SessionRecord
from thirdshift._watchdogs import Watchdogs
from thirdshift.errors import (
    BudgetExhausted,
    Interrupted,
    LaterStepFailed,
    ResumeTargetMissing,
    SessionFailed,
    ThirdshiftError,
    UsageLimitReached,
    WorkKilledAgain,
)

if TYPE_CHECKING:
    from thirdshift.harness import Choice

# A limit whose end the CLI did not say is waited out this long, doubling each time.
FIRST_UNKNOWN_WAIT = 60.0


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _check_outside(outside: object) -> None:
    """Refuse, before any session, an Outside that lacks part of the seam: the rules call
    ``wait`` and ``cancel`` only when a limit or a cancel comes, far too late to say so."""
    missing = [
        name
        for name in ("run_session", "report", "wait", "cancel")
        if not callable(getattr(outside, name, None))
    ]
    if missing:
        raise TypeError(
            f"{type(outside).__qualname__} is not an Outside: it has no {', '.join(missing)} "
            "(see thirdshift.Outside)"
        )


def _check_limit_budget(seconds: float | None) -> None:
    if seconds is not None and not seconds >= 0:
        # NaN fails this too: it compares false to every wait, so no limit would be too long.
        raise ValueError(
            f"wait_for_limits must be None or seconds, not {seconds!r}: 0 or more "
            "(math.inf waits out every limit)"
        )


class Sessions:
    """Runs sessions through an :class:`Outside` under the Resume rules.

    Most callers use :meth:`within`, which builds the real adapter; tests build
    ``Sessions(logs, ScriptedOutside())`` directly. ``wait_for_limits`` is the budget, in
    seconds, of waiting for API limits across every session run here (``None``: never wait).
    ``strict`` makes a Resume that ends with its work killed too raise ``WorkKilledAgain``.
    ``clock`` tells the time (aware datetimes); tests pass a fixed one. ``spending`` holds the
    block's :class:`~thirdshift.Budget` and what its sessions spent (``Spending(Budget(...))``;
    ``within`` makes it from ``budget=``); without one nothing is limited. ``account`` is what
    the sessions of one Harness and credential share of its limit (``within`` finds it);
    without one no limit is shared. ``notify`` takes each event (:mod:`thirdshift._notices`).
    ``temporal`` is where a Temporal activity runs these sessions (``thirdshift.temporal`` sets
    it): each record carries it.
    """

    def __init__(
        self,
        logs: Logs,
        outside: Outside,
        *,
        wait_for_limits: float | None = None,
        strict: bool = False,
        clock: Callable[[], datetime] = _utc_now,
        spending: Spending | None = None,
        temporal: Mapping[str, Any] | None = None,
        account: Account | None = None,
        notify: Notify | None = None,
    ) -> None:
        _check_limit_budget(wait_for_limits)
        self._temporal = None if temporal is None else dict(temporal)
        self._spending = spending if spending is not None else Spending(Budget())
        self._logs = logs
        self._strict = strict
        _check_outside(outside)
        self._outside = outside
        self._clock = clock
        self._limit_budget = wait_for_limits
        self._last_log: Path | None = None
        self._endings: list[str] = []
        self._records: list[SessionRecord] = []
        self._running: tuple[str, Path, datetime] | None = None
        self._cancelled = threading.Event()
        self._account = account
        self._waited_until: datetime | None = None  # a limit ending by then has passed
        self._notices = Notices(notify, logs.name, self._outside.report)

    @property
    def last_log(self) -> Path | None:
        """The Session log of the session started last, a Resume included."""
        return self._last_log

    @property
    def running(self) -> tuple[str, Path, datetime] | None:
        """The session running now, as ``(kind, log, started_at)``; ``None`` before the first
        and once it has ended (its record is then in :attr:`records`)."""
        return self._running

    @property
    def spent(self) -> Usage:
        """What every session run here used, added up (each measure as far as streams said)."""
        return self._spending.spent

    @property
    def endings(self) -> tuple[str, ...]:
        """Each session that ended with killed work and was not resumed away, oldest first."""
        return tuple(self._endings)

    @property
    def records(self) -> tuple[SessionRecord, ...]:
        """One record per session run (Resumes and continuations too), whatever its ending,
        in order; an error that is no ending of a session (the CLI not found) leaves none."""
        return tuple(self._records)

    def cancel(self) -> None:
        """Stop the session running now and refuse later ones; callable from any thread.

        The running session is stopped with its Harness's stop signals and its ``run`` raises
        :class:`~thirdshift.errors.Interrupted`, as does every later ``run`` here, at once.
        Other ``Sessions`` in the process carry on.
        """
        self._cancelled.set()
        self._outside.cancel()

    def run(self, kind: str, prompt: str, *, resume: str | None = None) -> None:
        """Run one session (and at most one Resume of it); ``resume`` as
        :meth:`run_to_final_message` takes it."""
        self.run_to_final_message(kind, prompt, resume=resume)

    def run_to_final_message(
        self, kind: str, prompt: str, *, resume: str | None = None
    ) -> str | None:
        """Run one session (and at most one Resume of it); return its final message.

        ``resume`` is the id of a session to continue with ``prompt`` rather than start one:
        a review's findings sent back to the implementer's session, or a session cut off
        elsewhere (by a worker that stopped). The CLI must hold that session, so run it on the
        machine (and ``HOME``) that ran it; an id the CLI does not know fails as
        :class:`~thirdshift.errors.ResumeTargetMissing`. The rules apply to it as to any
        session: killed work gets one Resume, a limit is waited out under ``wait_for_limits``.
        """
        ended = self._run_waiting_out_limits(kind, resume, prompt)
        what = "session"
        spent = self._spending.crossed_with(None)
        if ended.killed and ended.session_id is not None and spent is not None:
            how = ended_with_killed(ended.killed)
            self._outside.report(
                f"{kind}: the session {how}; not resuming it, as the budget is spent ({spent}); "
                "carrying on"
            )
            self._endings.append(f"{session_named(kind)} {how}")
            return ended.final_message
        if ended.killed and ended.session_id is not None:
            self._outside.report(
                f"{kind}: the session {ended_with_killed(ended.killed)}; resuming it once"
            )
            prompt = resume_prompt(ended.killed)
            try:
                ended = self._run_waiting_out_limits(f"{kind}-resume", ended.session_id, prompt)
            except ResumeTargetMissing as missing:
                how = ended_with_killed(ended.killed)
                self._outside.report(
                    f"{kind}: the session {how}, and its Resume found no session to continue "
                    f"({missing}); carrying on, as it may have been abandoned"
                )
                self._endings.append(f"{session_named(kind)} {how}")
                return ended.final_message
            what = "Resume"
            if ended.killed and self._strict:
                raise WorkKilledAgain(
                    f"{kind}: the Resume also {ended_with_killed(ended.killed)}",
                    killed=ended.killed,
                    log=self._last_log,
                    session_id=ended.session_id,
                    containment=ended.containment,
                    usage=ended.usage,
                    final_message=ended.final_message,
                )
        if ended.killed:
            how = ended_with_killed(ended.killed)
            self._outside.report(
                f"{kind}: the {what} {how}; carrying on, as it may have been abandoned"
            )
            self._endings.append(f"{session_named(kind)} {how}")
        return ended.final_message

    def _run_waiting_out_limits(self, kind: str, resume: str | None, prompt: str) -> Ended:
        """Run a session; while it fails on an API limit the budget covers, wait, continue."""
        label = kind
        unknown_wait = FIRST_UNKNOWN_WAIT
        while True:
            self._park(label, resume)  # its failure is none the limit rule waits out again
            try:
                return self._start(label, resume, prompt)
            except SessionFailed as failure:
                if failure.retryable and self._account is not None:
                    self._account.reported(failure)  # the other sessions on it park till then
                if not failure.retryable or self._limit_budget is None:
                    raise
                spent = self._spending.crossed_with(None)
                if spent is not None:
                    self._outside.report(
                        f"{kind}: {failure}; not waiting to continue it, as the budget is spent "
                        f"({spent})"
                    )
                    raise
                now = self._clock()
                if failure.retry_at is None:
                    seconds, unknown_wait = unknown_wait, unknown_wait * 2
                else:
                    seconds = max(0.0, (failure.retry_at - now).total_seconds())
                until = (now + timedelta(seconds=seconds)).astimezone().strftime("%H:%M")
                if seconds > self._limit_budget:
                    # Rounded down, as the wait is rounded up: the line reads true either way.
                    wait = duration(math.ceil(seconds))
                    self._outside.report(
                        f"{kind}: {failure}; not waiting {wait} until {until}: "
                        f"more than the {duration(int(self._limit_budget))} left of "
                        "wait_for_limits"
                    )
                    raise
                self._limit_budget -= seconds
                self._wait(
                    kind,
                    (seconds, now + timedelta(seconds=seconds)),
                    failure,
                    failure.session_id,
                    f"{kind}: {failure}; waiting {duration(math.ceil(seconds))} until {until}, "
                    "then carrying on",
                )
                if failure.session_id is not None:
                    label = f"{kind}-continued"
                    resume, prompt = failure.session_id, continued_prompt(str(failure))
                else:
                    label = f"{kind}-retry"

    def _start(self, kind: str, resume: str | None, prompt: str) -> Ended:
        if self._cancelled.is_set():
            raise Interrupted()
        spent = self._spending.crossed_with(None)
        if spent is not None:
            # Nothing runs, so nothing is recorded: the sessions that spent it were.
            raise BudgetExhausted(
                f"{kind}: not started, as the budget is spent ({spent})",
                spent=self._spending.spent,
                limit=self._spending.budget,
            )
        for attempt in range(1, MAX_ATTEMPTS + 1):
            log = self._logs.path(kind, attempt)
            # Recorded before the run, so that a session that fails still leaves its log behind.
            self._last_log = log
            started = self._clock()
            self._running = (kind, log, started)
            try:
                ended = self._outside.run_session(kind, resume, prompt, log)
            except LogExists:
                # The Outside creates the log exclusively before it starts anything, so the
                # session has not begun: it can be run again under the next name.
                continue
            except (SessionFailed, Interrupted) as failure:
                # An ending, which the record keeps. Any other error (the CLI not found, a log
                # that could not be written) is none: it leaves no record, and propagates.
                ended_as = Ended(
                    session_id=failure.session_id,
                    final_message=failure.final_message,
                    usage=failure.usage,
                    containment=failure.containment,
                    sandbox=failure.sandbox,
                )
                self._record(kind, log, started, ended_as, failure)
                if isinstance(failure, SessionFailed):
                    self._notices.failed(kind, failure.session_id, failure)
                raise
            finally:
                self._running = None
            self._record(kind, log, started, ended, None)
            return ended
        self._last_log = None
        raise ThirdshiftError(
            f"could not find a free name for the {session_named(kind)}'s log in "
            f"{self._logs.dir}: "
            f"the first {MAX_ATTEMPTS} are taken"
        )

    def _park(self, kind: str, resume: str | None) -> None:
        """Before a session starts: while its account's limit holds (a session reported it),
        wait it out if ``wait_for_limits`` covers the wait, else fail as the limit did."""
        if self._account is None or self._cancelled.is_set():
            return  # a cancelled run starts nothing: _start says so
        if self._spending.crossed_with(None) is not None:
            return  # nor does a spent one: no wait for a session that cannot start
        now = self._clock()
        limit = self._account.limit_after(max(now, self._waited_until or now))
        if limit is None:
            return
        seconds = (limit.until - now).total_seconds()
        held = (
            f"its account is at its limit until {limit.until.astimezone():%H:%M} ({limit.failure})"
        )
        budget = self._limit_budget
        if budget is None or seconds > budget:
            left = (
                ""
                if budget is None
                else f": more than the {duration(int(budget))} left of wait_for_limits"
            )
            self._outside.report(f"{kind}: not starting, as {held}{left}")
            raise _held_back(limit, f"{kind}: not started, as {held}")
        self._limit_budget = budget - seconds
        self._wait(
            kind,
            (seconds, limit.until),
            limit.failure,
            resume,
            f"{kind}: parked, as {held}; waiting {duration(math.ceil(seconds))}, then carrying on",
        )

    def _wait(
        self,
        kind: str,
        wait: tuple[float, datetime],
        failure: SessionFailed,
        session_id: str | None,
        line: str,
    ) -> None:
        """Wait for a limit (``wait``: how many seconds, until when), saying so in ``line``,
        and telling ``notify`` the session parked, then resumed."""
        seconds, until = wait
        self._outside.report(line)
        self._notices.parked(kind, session_id, failure, until)
        self._outside.wait(seconds)
        self._waited_until = until
        self._notices.resumed(kind, session_id)

    def _record(
        self,
        kind: str,
        log: Path,
        started: datetime,
        ended: Ended,
        failure: SessionFailed | Interrupted | None,
    ) -> None:
        record = SessionRecord(
            kind=kind,
            log=log,
            session_id=ended.session_id,
            killed=ended.killed,
            final_message=ended.final_message,
            usage=ended.usage,
            started_at=started,
            duration=(self._clock() - started).total_seconds(),
            failure=failure,
            containment=ended.containment,
            sandbox=ended.sandbox,
            temporal=self._temporal,
        )
        self._records.append(record)
        self._spending.add(ended.usage)
        try:
            write_record(record)
        except RecordNotWritten as error:
            # Never raised over the session's own ending: the record is in `records` still.
            self._outside.report(f"{kind}: its record was not written: {error}")

    @staticmethod
    @contextlib.contextmanager
    def within(
        logs: Logs,
        worktree: Path,
        choice: Choice,
        *,
        skills: Path | None = None,
        outside: Outside | None = None,
        progress: Callable[[str], None] | None = None,
        watchdogs: Watchdogs | None = None,
        wait_for_limits: float | None = None,
        still_running_every: float | None = 300.0,
        strict: bool = False,
        budget: Budget | None = None,
        earlier: Sequence[Ended] = (),
        max_log_bytes: int | None = 1 << 30,
        temporal: Mapping[str, Any] | None = None,
        notify: Notify | None = None,
    ) -> Iterator[Sessions]:
        """Run sessions of ``choice`` in ``worktree``; the public entry point.

        ``choice`` is a :class:`~thirdshift.harness.Choice` (``thirdshift.choice(name)``,
        ``thirdshift.claude()``, ``thirdshift.codex()``); anything else is a ``TypeError``.
        ``skills`` is a folder of skill folders, copied into the worktree for the CLI to find.
        ``outside`` defaults to the real adapter (or to the ``scripted_outside`` fixture while
        it is active). ``progress`` takes each progress line; by default they go to stderr as
        ``thirdshift: HH:MM:SS [<logs.name>] <line>``. ``wait_for_limits`` is how many
        seconds in all the sessions may wait for API limits to pass (``None``: fail at once).
        ``strict`` makes a Resume that also ends with its background work killed raise
        :class:`~thirdshift.errors.WorkKilledAgain` (a ``SessionFailed``) rather than carry on.

        ``watchdogs`` (a :class:`~thirdshift.Watchdogs`, ``None`` for its defaults, anything
        else a ``TypeError``) stop a session that is stuck (the same whole-tree stop): ``idle``,
        no byte on the CLI's stdout for that long (:class:`~thirdshift.errors.SessionStalled`);
        ``after_result``, the CLI still running that long after its stream said the turn was
        over (the result stands); ``wall``, one session's whole run (``SessionStalled``). Its
        ``stop_grace`` is how long each of the Harness's stop signals may take to work before
        the next (then SIGKILL), however a session is stopped. After ``still_running_every``
        seconds with no progress line (``None``: never), one says what runs and for how long
        ("still running: $ pnpm test (5m)"), and again as the silence goes on.

        ``budget`` (a :class:`~thirdshift.Budget`) limits what every session of the block may
        spend together: a session whose stream crosses a limit is stopped the same way and
        raises :class:`~thirdshift.errors.BudgetExhausted`; once it is spent no Resume or
        continuation starts (see the module's rules). A measure the Harness's stream never
        reports (cost, on Codex) is refused here with a ``ConfigurationError``.

        ``earlier`` are the sessions an earlier run of the same work ended with, in another
        process (each an :class:`~thirdshift.Ended`, as its record says it): what they used
        counts against ``budget`` first, and a Resume of one of their ids counts only its own
        call's usage (Codex and Qwen report a continued session's usage from its start).
        ``temporal`` says where a Temporal activity runs the block (set by
        ``thirdshift.temporal``'s activity): each record carries it.

        ``max_log_bytes`` caps each Session log (``None``: no cap): a session whose stream
        reaches it is stopped the same way and raises :class:`~thirdshift.LogLimitReached`;
        its log keeps the first ``max_log_bytes`` bytes, to the end of the line that crossed
        them.

        Sessions of one Harness and credential in this process share a limit one of them
        reports with its reset time: the others park until then (see the module's rules).
        ``notify`` is called with an event (a dict, :mod:`thirdshift._notices`) when a session
        parks for a limit, resumes, fails, and when the block ends (``finished``); without it,
        the one a ``thirdshift worker --notify-command`` set for the process, if any.

        If the block raises an ``Exception`` after sessions ended with killed work, the error
        becomes :class:`~thirdshift.errors.LaterStepFailed` naming that work ahead of the cause.
        ``KeyboardInterrupt`` and other ``BaseException`` pass through unwrapped.
        """
        # Checked before anything is set up (skills copied in), not once it was.
        _check_limit_budget(wait_for_limits)
        # Imported here so that the rules module itself never imports process code.
        from thirdshift import _wiring as wiring

        # The machine's knobs are the adapter's: checked there, yet before anything is set up.
        watching = wiring.checked_watchdogs(watchdogs)
        wiring.check_machine_knobs(max_log_bytes, still_running_every)
        chosen = wiring.checked_choice(choice)
        spending = wiring.checked_spending(budget, chosen.harness, earlier)
        account = wiring.account_of(chosen, worktree)
        with wiring.prepared_outside(
            worktree,
            chosen,
            skills=skills,
            outside=outside,
            progress=progress,
            watchdogs=watching,
            max_log_bytes=max_log_bytes,
            still_running_every=still_running_every,
            log_name=logs.name,
            spending=spending,
        ) as (ready, log_exists):
            sessions = Sessions(
                logs,
                ready,
                wait_for_limits=wait_for_limits,
                strict=strict,
                spending=spending,
                temporal=temporal,
                account=account,
                notify=notify if notify is not None else wiring.process_notify(),
            )
            ended: BaseException | None = None
            try:
                yield sessions
            except Exception as error:
                ended = error
                if sessions._endings:
                    ended = LaterStepFailed(sessions.endings, error)
                    raise ended from error
                raise
            except KeyboardInterrupt as interrupt:
                ended = interrupt
                raise
            finally:
                last = sessions._records[-1] if sessions._records else None
                sessions._notices.finished(
                    None if last is None else last.kind,
                    None if last is None else last.session_id,
                    ended,
                    len(sessions._records),
                )
                if sessions._last_log is not None and not log_exists(sessions._last_log):
                    sessions._last_log = None


def _held_back(limit: Limit, message: str) -> SessionFailed:
    """The failure of a session not started for its account's limit: the limit's own class,
    retryable, with its reset time."""
    try:
        return type(limit.failure)(message, retry_at=limit.until)
    except TypeError:  # a subclass that is made otherwise
        return UsageLimitReached(message, resets_at=limit.until)
