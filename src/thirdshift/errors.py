"""The errors thirdshift raises, and how they relate.

::

    Exception
    └── ThirdshiftError              anything thirdshift refuses or reports as failed
        ├── ConfigurationError       asked for what cannot be done as asked: fix the call
        │   ├── CLINotFound          the Harness's CLI is not on PATH (or not executable)
        │   └── SandboxUnavailable   a sandboxed session, on a machine that cannot sandbox
        ├── SessionFailed            the CLI exited non-zero, by a signal, or its turn failed
        │   ├── AuthFailed           the API refused the credentials (401/403, invalid key)
        │   ├── RateLimited          429 after the CLI's own retries gave up     retryable
        │   ├── UsageLimitReached    a plan or quota limit, until ``resets_at``   retryable
        │   ├── Overloaded           529/5xx/"at capacity" after the retries      retryable
        │   ├── ResumeTargetMissing  a Resume whose session the CLI cannot find, or that
        │   │                        started a different session than the one asked for
        │   ├── TurnLimitReached     the CLI's turn limit (Claude's ``error_max_turns``)
        │   ├── SessionStalled       a watchdog stopped the session (``why``)
        │   ├── BudgetExhausted      the ``within`` block's Budget was spent (``spent``,
        │   │                        ``limit``)
        │   ├── LogLimitReached      the Session log reached its cap (``max_log_bytes``,
        │   │                        ``dropped_bytes``)
        │   └── WorkKilledAgain      under ``strict=True``: the Resume ended with its work
        │                            killed too (``killed``)
        └── LaterStepFailed          a step failed after sessions left killed background work
    KeyboardInterrupt
    └── Interrupted                  a session was stopped by an interrupt ("interrupted")

``Interrupted`` is deliberately not a ``ThirdshiftError``: an interrupt must pass through
``except Exception`` in caller code, and ``Sessions.within`` never wraps it.

Every ``SessionFailed`` can be made from a message alone (every other field is keyword-only
and defaults to ``None``), so tests can script any of them::

    UsageLimitReached("claude: You've hit your session limit", resets_at=when, session_id="s1")

A failure carries what the stream said before it failed, as an ending does: ``usage`` and
``final_message`` (``Interrupted`` too), so that a failed session's record counts its cost.
"""

from __future__ import annotations

import signal as _signal
from datetime import datetime
from pathlib import Path
from typing import TypedDict, Unpack

from thirdshift._budget import Budget
from thirdshift._shown import shown
from thirdshift._values import Usage


class ThirdshiftError(Exception):
    """Base of every error thirdshift raises for a refusal or a failed session."""


class ConfigurationError(ThirdshiftError):
    """What thirdshift was asked for cannot be done as asked, whenever that is found: a CLI not
    on PATH, a setting its Harness does not take, a skill or logs folder refused, a containment
    this machine does not allow. Retrying will not help; ``thirdshift run`` exits 2 on it."""


class CLINotFound(ConfigurationError):
    """The program a Harness runs could not be found on PATH; ``program`` names it."""

    def __init__(self, program: str, message: str) -> None:
        self.program = program
        super().__init__(message)


class SandboxUnavailable(ConfigurationError):
    """A sandboxed Choice on a machine that cannot sandbox (no user namespaces, a kernel or
    AppArmor that refuses them, no ``bwrap``); the message says why and what to do. Raised
    before anything starts: a session is never run unsandboxed in its place."""


class LaterStepFailed(ThirdshiftError):
    """A step of the caller failed after one or more sessions ended with killed work.

    The message names the killed work ahead of the cause, so that whoever reads the failure
    knows the session's tests (say) never finished before the step that failed.
    """

    def __init__(self, endings: tuple[str, ...], cause: BaseException) -> None:
        self.endings = endings
        self.cause = cause
        # The endings name work the stream described, and the cause may quote anything.
        message = f"{'; '.join(endings)}, and a later step failed: {cause}"
        super().__init__(shown(message, "message"))


class SessionFacts(TypedDict, total=False):
    """The facts every :class:`SessionFailed` carries, as keyword arguments."""

    exit_code: int | None
    signal: _signal.Signals | None
    diagnostic: str | None
    log: Path | None
    session_id: str | None
    retry_at: datetime | None
    containment: str | None
    sandbox: bool
    usage: Usage | None
    final_message: str | None


class SessionFailed(ThirdshiftError):
    """One session of a CLI failed: a non-zero exit, death by a signal, or a failed turn.

    ``session_id`` is the id the stream reported (``None`` if it reported none); ``retry_at``
    is when the CLI or its API said to try again, where it said so; ``usage`` and
    ``final_message`` are what the stream said before it failed (``None`` where it said
    nothing). ``retryable`` is true for the failures that passing time can cure (rate and
    usage limits, overloads).
    """

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        signal: _signal.Signals | None = None,
        diagnostic: str | None = None,
        log: Path | None = None,
        session_id: str | None = None,
        retry_at: datetime | None = None,
        containment: str | None = None,
        sandbox: bool = False,
        usage: Usage | None = None,
        final_message: str | None = None,
    ) -> None:
        self.containment = containment
        self.sandbox = sandbox
        self.usage = usage
        self.final_message = final_message
        self.exit_code = exit_code
        self.signal = signal
        self.diagnostic = diagnostic
        self.log = log
        self.session_id = session_id
        self.retry_at = retry_at
        super().__init__(message)


class AuthFailed(SessionFailed):
    """The API refused the CLI's credentials: 401/403, an invalid key, ``authentication_failed``."""


class RateLimited(SessionFailed):
    """429 after the CLI's own retries gave up; ``retry_at`` when the API said when."""

    retryable = True


class UsageLimitReached(SessionFailed):
    """A plan or quota limit; ``resets_at`` (also ``retry_at``) is when it resets, if known."""

    retryable = True

    def __init__(
        self, message: str, *, resets_at: datetime | None = None, **facts: Unpack[SessionFacts]
    ) -> None:
        if resets_at is not None:
            facts["retry_at"] = resets_at
        super().__init__(message, **facts)

    @property
    def resets_at(self) -> datetime | None:
        return self.retry_at


class Overloaded(SessionFailed):
    """529, 5xx or "at capacity" after the CLI's own retries; ``retry_at`` if the API said."""

    retryable = True


class ResumeTargetMissing(SessionFailed):
    """A Resume whose session the CLI cannot find, or that reported another session's id.

    A CLI that reports another id is running a new session (Codex does so for an id it does
    not know): it is stopped at once rather than left to work without its history.
    """


class TurnLimitReached(SessionFailed):
    """The CLI stopped at its turn limit (Claude's ``error_max_turns``)."""


class SessionStalled(SessionFailed):
    """A watchdog stopped the session; ``why`` says which ("no output for 30m")."""

    def __init__(
        self, message: str, *, why: str | None = None, **facts: Unpack[SessionFacts]
    ) -> None:
        self.why = why
        super().__init__(message, **facts)


class BudgetExhausted(SessionFailed):
    """The sessions of a ``within`` block spent its :class:`~thirdshift.Budget`.

    ``spent`` is what they spent together (a ``Usage``), ``limit`` the Budget it crossed. Not
    retryable: passing time does not refill a budget.
    """

    def __init__(
        self,
        message: str,
        *,
        spent: Usage | None = None,
        limit: Budget | None = None,
        **facts: Unpack[SessionFacts],
    ) -> None:
        self.spent = spent if spent is not None else Usage()
        self.limit = limit if limit is not None else Budget()
        super().__init__(message, **facts)


class LogLimitReached(SessionFailed):
    """The Session log reached ``max_log_bytes``: the session was stopped.

    The log keeps its first ``max_log_bytes`` bytes (to the end of the line that crossed them);
    ``dropped_bytes`` is how much more the CLI wrote, which was neither logged nor read.
    """

    def __init__(
        self,
        message: str,
        *,
        max_log_bytes: int | None = None,
        dropped_bytes: int = 0,
        **facts: Unpack[SessionFacts],
    ) -> None:
        self.max_log_bytes = max_log_bytes
        self.dropped_bytes = dropped_bytes
        super().__init__(message, **facts)


class WorkKilledAgain(SessionFailed):
    """Under ``strict=True``, a Resume that ended with its background work killed as well.

    ``killed`` names the Resume's killed work; ``session_id`` and ``log`` are the Resume's.
    Without ``strict`` the rules report such an ending and carry on (see ``Sessions.endings``).
    """

    def __init__(
        self, message: str, *, killed: tuple[str, ...] = (), **facts: Unpack[SessionFacts]
    ) -> None:
        self.killed = killed
        super().__init__(message, **facts)


class Interrupted(KeyboardInterrupt):
    """A session was stopped because the process was interrupted (Ctrl-C, SIGTERM, SIGHUP)."""

    def __init__(
        self,
        *,
        containment: str | None = None,
        sandbox: bool = False,
        usage: Usage | None = None,
        final_message: str | None = None,
        session_id: str | None = None,
    ) -> None:
        self.containment = containment
        """Which containment held the stopped session's processes, if one had started."""
        self.sandbox = sandbox
        """Whether the stopped session ran sandboxed."""
        self.session_id = session_id
        """The id the stream gave the stopped session, if it gave one (to continue it by)."""
        self.usage = usage
        """What the stream said the session used before it was stopped, if it said."""
        self.final_message = final_message
        super().__init__("interrupted")


__all__ = [
    "AuthFailed",
    "BudgetExhausted",
    "CLINotFound",
    "ConfigurationError",
    "Interrupted",
    "LaterStepFailed",
    "LogLimitReached",
    "Overloaded",
    "RateLimited",
    "ResumeTargetMissing",
    "SandboxUnavailable",
    "SessionFacts",
    "SessionFailed",
    "SessionStalled",
    "ThirdshiftError",
    "TurnLimitReached",
    "UsageLimitReached",
    "WorkKilledAgain",
]
