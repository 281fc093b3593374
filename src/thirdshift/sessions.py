"""The Resume rules for agent sessions.

A session that ends its turn while background work it started is still running has that work
killed with it. These rules decide what happens next:

- killed work and a session id to continue: exactly one Resume, whose prompt names the work;
- a Resume that ends the same way, or no id to resume: a progress line, and the caller carries on;
- a failed session: its error propagates unchanged, and it is not resumed;
- a later failing step of the caller names the killed work ahead of its own cause
  (see :meth:`Sessions.within`).

The rules reach the machine only through :class:`~thirdshift.outside.Outside`, so they run
in-process in tests. This module imports nothing that spawns processes or touches a terminal.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from thirdshift.errors import LaterStepFailed, ThirdshiftError
from thirdshift.logs import MAX_ATTEMPTS, LogExists, Logs
from thirdshift.outside import Ended, Outside
from thirdshift.prompts import ending, resume_prompt

if TYPE_CHECKING:
    from thirdshift.harness import Choice


class Sessions:
    """Runs sessions through an :class:`Outside` under the Resume rules.

    Most callers use :meth:`within`, which builds the real adapter; tests build
    ``Sessions(logs, ScriptedOutside())`` directly.
    """

    def __init__(self, logs: Logs, outside: Outside) -> None:
        self._logs = logs
        self._outside = _with_report(outside)
        self._last_log: Path | None = None
        self._endings: list[str] = []

    @property
    def last_log(self) -> Path | None:
        """The Session log of the session started last, a Resume included."""
        return self._last_log

    @property
    def endings(self) -> tuple[str, ...]:
        """Each session that ended with killed work and was not resumed away, oldest first."""
        return tuple(self._endings)

    def run(self, kind: str, prompt: str) -> None:
        """Run one session (and at most one Resume of it)."""
        self.run_to_final_message(kind, prompt)

    def run_to_final_message(self, kind: str, prompt: str) -> str | None:
        """Run one session (and at most one Resume of it); return its final message."""
        ended = self._start(kind, None, prompt)
        resumed = False
        if ended.killed and ended.session_id is not None:
            self._outside.report(
                f"{kind}: background work was killed as the session ended; resuming it once"
            )
            ended = self._start(f"{kind}-resume", ended.session_id, resume_prompt(ended.killed))
            resumed = True
        if ended.killed:
            what = "Resume" if resumed else "session"
            how = ending(ended.killed)
            self._outside.report(
                f"{kind}: the {what} {how}; carrying on, as it may have been abandoned"
            )
            self._endings.append(f"{kind} session {how}")
        return ended.final_message

    def _start(self, kind: str, resume: str | None, prompt: str) -> Ended:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            log = self._logs.path(kind, attempt)
            # Recorded before the run, so that a session that fails still leaves its log behind.
            self._last_log = log
            try:
                return self._outside.run_session(kind, resume, prompt, log)
            except LogExists:
                # The Outside creates the log exclusively before it starts anything, so the
                # session has not begun: it can be run again under the next name.
                continue
        self._last_log = None
        raise ThirdshiftError(
            f"could not find a free name for the {kind} session's log in {self._logs.dir}: "
            f"the first {MAX_ATTEMPTS} are taken"
        )

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
        stop_grace: float = 10.0,
    ) -> Iterator[Sessions]:
        """Run sessions of ``choice`` in ``worktree``; the public entry point.

        ``choice`` is a :class:`~thirdshift.harness.Choice` (``thirdshift.choice(name)``,
        ``thirdshift.claude()``, ``thirdshift.codex()``); anything else is a ``TypeError``.
        ``skills`` is a folder of skill folders, linked into the worktree for the CLI to find.
        ``outside`` defaults to the real adapter (or to the ``scripted_outside`` fixture while
        it is active). ``progress`` takes each progress line; by default they go to stderr.
        ``stop_grace`` is how long each of the Harness's stop signals may take to work before
        the next (then SIGKILL), when a session is stopped.

        If the block raises an ``Exception`` after sessions ended with killed work, the error
        becomes :class:`~thirdshift.errors.LaterStepFailed` naming that work ahead of the cause.
        ``KeyboardInterrupt`` and other ``BaseException`` pass through unwrapped.
        """
        # Imported here so that the rules module itself never imports process code.
        from thirdshift.wiring import checked_choice, prepared_outside

        with prepared_outside(
            worktree,
            checked_choice(choice),
            skills=skills,
            outside=outside,
            progress=progress,
            stop_grace=stop_grace,
        ) as (ready, log_exists):
            sessions = Sessions(logs, ready)
            try:
                yield sessions
            except Exception as error:
                if sessions._endings:
                    raise LaterStepFailed(sessions.endings, error) from error
                raise
            finally:
                if sessions._last_log is not None and not log_exists(sessions._last_log):
                    sessions._last_log = None


class _SteppingOutside(Protocol):
    """An Outside as written before ``step`` was renamed ``report``."""

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended: ...

    def step(self, line: str) -> None: ...


class _StepAsReport:
    """Keeps a :class:`_SteppingOutside` working while its author renames ``step``."""

    def __init__(self, outside: _SteppingOutside) -> None:
        self._outside = outside

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        return self._outside.run_session(kind, resume, prompt, log)

    def report(self, line: str) -> None:
        self._outside.step(line)


def _with_report(outside: Outside) -> Outside:
    if hasattr(outside, "report") or not hasattr(outside, "step"):
        return outside
    warnings.warn(
        f"{type(outside).__qualname__}.step is deprecated: Outside hands on progress lines "
        "through report(line) now; rename step to report",
        DeprecationWarning,
        stacklevel=3,
    )
    return _StepAsReport(cast(_SteppingOutside, outside))
