"""The errors thirdshift raises, and how they relate.

::

    Exception
    └── ThirdshiftError              anything thirdshift refuses or reports as failed
        ├── CLINotFound              the Harness's CLI is not on PATH (or not executable)
    ├── SessionFailed            the CLI exited non-zero, by a signal, or its turn failed
        └── LaterStepFailed          a step failed after sessions left killed background work
    KeyboardInterrupt
    └── Interrupted                  a session was stopped by an interrupt ("interrupted")

``Interrupted`` is deliberately not a ``ThirdshiftError``: an interrupt must pass through
``except Exception`` in caller code, and ``Sessions.within`` never wraps it.
"""

from __future__ import annotations

import signal as _signal
from pathlib import Path


class ThirdshiftError(Exception):
    """Base of every error thirdshift raises for a refusal or a failed session."""


class CLINotFound(ThirdshiftError):
    """The program a Harness runs could not be found on PATH; ``program`` names it."""

    def __init__(self, program: str, message: str) -> None:
        self.program = program
        super().__init__(message)


class LaterStepFailed(ThirdshiftError):
    """A step of the caller failed after one or more sessions ended with killed work.

    The message names the killed work ahead of the cause, so that whoever reads the failure
    knows the session's tests (say) never finished before the step that failed.
    """

    def __init__(self, endings: tuple[str, ...], cause: BaseException) -> None:
        self.endings = endings
        self.cause = cause
        super().__init__(f"{'; '.join(endings)}, and a later step failed: {cause}")


class SessionFailed(ThirdshiftError):
    """One session of a CLI failed: a non-zero exit, death by a signal, or a failed turn."""

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None,
        signal: _signal.Signals | None,
        diagnostic: str | None,
        log: Path | None,
    ) -> None:
        self.exit_code = exit_code
        self.signal = signal
        self.diagnostic = diagnostic
        self.log = log
        super().__init__(message)


class Interrupted(KeyboardInterrupt):
    """A session was stopped because the process was interrupted (Ctrl-C, SIGTERM, SIGHUP)."""

    def __init__(self) -> None:
        super().__init__("interrupted")
