"""``ScriptedOutside``: an Outside that plays sessions from a script and records every call.

It stands where the real adapter stands, so the Resume rules run in-process. It imports no
pytest, so it works in any test runner::

    outside = ScriptedOutside().ends(session_id="s1", killed=("cargo test",)).ends()
    sessions = Sessions(Logs(tmp, "demo"), outside)

Used that way its calls know no worktree or ``Choice``. As a stand-in for ``Sessions.within``
(passed as ``outside=``, or made the default with ``default_outside``) each ``within`` binds it
to its context: calls record the ``Choice`` and worktree, and progress lines also go to the
caller's ``progress=`` (stderr by default), as the real adapter's do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from thirdshift import interrupts
from thirdshift._outside import Ended, Outside, Usage, WithinContext
from thirdshift._shown import shown
from thirdshift.errors import Interrupted, ThirdshiftError
from thirdshift.harness._base import Choice


@dataclass(frozen=True)
class SessionCall:
    """One call of ``run_session``, as the rules made it."""

    kind: str
    resume: str | None
    prompt: str
    log: Path
    choice: Choice | None = None
    """The ``Choice`` the session ran with; None when no ``within`` bound the outside."""
    worktree: Path | None = None
    """The worktree the session ran in; None when no ``within`` bound the outside."""


@dataclass(frozen=True)
class ProgressLine:
    """One call of ``report``: a progress line the rules handed on."""

    line: str


Call = SessionCall | ProgressLine


class UnscriptedSession(AssertionError):
    """A session ran that the test had not scripted."""


class ScriptedOutside:
    """An :class:`~thirdshift.Outside` that ends its sessions as scripted, in turn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: list[Ended | BaseException] = []
        self._calls: list[Call] = []
        self._unscripted: list[str] = []
        self._waits: list[float] = []
        self._cancelled = False

    # Scripting

    def ends(
        self,
        session_id: str | None = None,
        killed: Iterable[str] = (),
        final_message: str | None = None,
        usage: Usage | None = None,
    ) -> ScriptedOutside:
        """Queue one session that ends cleanly with this id, killed work, message and usage."""
        ended = Ended(
            session_id=session_id,
            killed=tuple(killed),
            final_message=final_message,
            usage=usage,
        )
        with self._lock:
            self._script.append(ended)
        return self

    def fails(self, error: BaseException | str) -> ScriptedOutside:
        """Queue one session that fails with ``error``: any exception, e.g. a ``RateLimited``
        (a str becomes a ``ThirdshiftError``)."""
        with self._lock:
            self._script.append(ThirdshiftError(error) if isinstance(error, str) else error)
        return self

    # The Outside seam

    def bind(self, context: WithinContext) -> Outside:
        """The Outside for one ``within`` block: this script, with that block's context."""
        return _Bound(self, context)

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        return self._play(SessionCall(kind=kind, resume=resume, prompt=prompt, log=log), None)

    def report(self, line: str) -> None:
        self._record(line, None)

    def _play(self, call: SessionCall, progress: Callable[[str], None] | None) -> Ended:
        if interrupts.requested():  # as the real adapter: refused before it is even logged
            raise Interrupted()
        # No "logging the session to" line, which the real adapter says once the session can
        # start: a stand-in writes no log, and the line would name a file that never exists.
        kind = call.kind
        with self._lock:
            if self._cancelled:
                raise Interrupted()
            self._calls.append(call)
            if not self._script:
                self._unscripted.append(kind)
                raise UnscriptedSession(
                    f"session {kind!r} ran, but no ending was scripted for it: "
                    "queue one with scripted_outside.ends(...) or .fails(...)"
                )
            outcome = self._script.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _record(self, line: str, progress: Callable[[str], None] | None) -> None:
        with self._lock:
            self._calls.append(ProgressLine(line))
        if progress is not None:
            progress(shown(line))  # as the real adapter hands lines on: escaped and redacted

    def wait(self, seconds: float) -> None:
        """Record the wait in :attr:`waits` and return at once (``Interrupted`` if cancelled)."""
        with self._lock:
            self._waits.append(seconds)
            if self._cancelled:
                raise Interrupted()

    def cancel(self) -> None:
        """Record the cancel: later sessions and waits raise ``Interrupted``."""
        with self._lock:
            self._cancelled = True

    # Records

    @property
    def waits(self) -> list[float]:
        """Every wait the rules asked for, in seconds, in order."""
        with self._lock:
            return list(self._waits)

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        with self._lock:
            return self._cancelled

    @property
    def calls(self) -> list[Call]:
        """Every call, in order: session calls and progress lines."""
        with self._lock:
            return list(self._calls)

    @property
    def sessions(self) -> list[SessionCall]:
        """The session calls only."""
        return [call for call in self.calls if isinstance(call, SessionCall)]

    @property
    def progress(self) -> list[str]:
        """The progress lines only."""
        return [call.line for call in self.calls if isinstance(call, ProgressLine)]

    @property
    def unconsumed(self) -> list[Ended | BaseException]:
        """Scripted endings that no session has used yet."""
        with self._lock:
            return list(self._script)

    @property
    def unscripted(self) -> list[str]:
        """Kinds of sessions that ran with nothing scripted for them."""
        with self._lock:
            return list(self._unscripted)

    def problems(
        self, *, include_unconsumed: bool = True, include_unscripted: bool = True
    ) -> list[str]:
        """What a test's teardown should complain of: unscripted runs (which raised
        :class:`UnscriptedSession` already, where the test let it fail it), and unused script."""
        found = []
        if include_unscripted:
            found += [f"session {kind!r} ran without a scripted ending" for kind in self.unscripted]
        if include_unconsumed:
            found += [f"scripted ending never used: {outcome!r}" for outcome in self.unconsumed]
        return found


class _Bound:
    """A :class:`ScriptedOutside` bound to one ``within`` block's context."""

    def __init__(self, script: ScriptedOutside, context: WithinContext) -> None:
        self._script = script
        self._context = context

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        call = SessionCall(
            kind=kind,
            resume=resume,
            prompt=prompt,
            log=log,
            choice=self._context.choice,
            worktree=self._context.worktree,
        )
        return self._script._play(call, self._context.progress)

    def report(self, line: str) -> None:
        self._script._record(line, self._context.progress)

    def wait(self, seconds: float) -> None:
        self._script.wait(seconds)

    def cancel(self) -> None:
        self._script.cancel()
