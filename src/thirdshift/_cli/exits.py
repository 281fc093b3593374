"""The exit codes of the ``thirdshift`` command: one table, for every subcommand.

A wrapper (a cron job, a CI step) branches on them, so each means one thing wherever it is
used. Below the subcommand modules, importing nothing: every one of them and
:mod:`thirdshift._cli` take their codes from here. The README's table is :func:`markdown`'s
(``tests/test_exit_codes.py`` holds it to it).
"""

from __future__ import annotations

import signal
from enum import IntEnum


class Exit(IntEnum):
    """Each exit code of the command, by what it means."""

    OK = 0
    FAILED = 1
    USAGE_ERROR = 2
    TEMPORARY_FAILURE = 75  # sysexits' EX_TEMPFAIL
    AUTH_FAILED = 77  # sysexits' EX_NOPERM
    HUNG_UP = 128 + signal.SIGHUP
    INTERRUPTED = 128 + signal.SIGINT
    STDOUT_GONE = 128 + signal.SIGPIPE
    TERMINATED = 128 + signal.SIGTERM


WHEN: dict[Exit, str] = {
    Exit.OK: "success: the session ended (`run`), every scenario passed (`check`), the demo "
    "went as planned; `worker` and `fake-model` stopped by SIGTERM or Ctrl-C",
    Exit.FAILED: "a session failed (`run`: not on a limit, not on its credentials), a scenario "
    "failed (`check`), the demo did not go as planned",
    Exit.USAGE_ERROR: "a usage error, one line and no traceback: an option or argument refused, "
    "a `ConfigurationError` (a CLI not on PATH, a containment this machine does not allow): "
    "fix the call, a retry will not help",
    Exit.TEMPORARY_FAILURE: "`run`: the session failed on an API limit (`retryable`, "
    "`EX_TEMPFAIL`): try again later",
    Exit.AUTH_FAILED: "`run`: the API refused the CLI's credentials (`AuthFailed`, "
    "`EX_NOPERM`): a retry will not help until they are fixed",
    Exit.HUNG_UP: "`run`: SIGHUP stopped the session (its terminal closed)",
    Exit.INTERRUPTED: "Ctrl-C (SIGINT) stopped it; for `run`, while the prompt is typed too",
    Exit.STDOUT_GONE: "stdout was closed before the output was written "
    "(`thirdshift inspect LOG | head -1`), as SIGPIPE would end a program",
    Exit.TERMINATED: "`run`: SIGTERM stopped the session",
}


def for_signal(signum: int | None) -> Exit:
    """The code of a run that ``signum`` stopped: 128 + the signal, as a shell shows a program
    that signal ended; an interrupt no signal brought (``interrupts.request()``) is SIGINT's."""
    stopped_by = {
        signal.SIGHUP: Exit.HUNG_UP,
        signal.SIGINT: Exit.INTERRUPTED,
        signal.SIGTERM: Exit.TERMINATED,
    }
    return stopped_by.get(signal.Signals(signum), Exit.INTERRUPTED) if signum else Exit.INTERRUPTED


def markdown() -> str:
    """The table as the README shows it."""
    rows = ["| exit | when |", "|--:|---|"]
    for code in Exit:
        when = WHEN[code].replace("|", "\\|")  # a | inside a cell would end it
        rows.append(f"| {code.value} | {when} |")
    return "\n".join(rows) + "\n"
