"""The texts the Resume rules hand to agents and to people."""

from __future__ import annotations

from collections.abc import Sequence

_RESUME_PROMPT = """\
Your background work ({work}) was killed when your turn ended, because ending the turn ends the \
session.

Re-run whatever you were waiting on in the foreground, then finish your job. If the re-run hangs \
or is moved to the background again, stop it by its task id (with the `TaskStop` tool, if you have \
it), and say what could not be run, rather than leaving it running.

You run headless: nobody is watching, and ending your turn ends the session. Run tests and other \
long commands in the foreground, raising the command's timeout if needed. If a command is moved to \
the background, wait for that task by its own task id or output file, never by process names or \
patterns (`pgrep`, `ps | grep`, and the like): other sessions on this machine run the same \
commands. Never end your turn while a background task you depend on is still running: ending the \
turn kills it. Before ending your turn, stop every background task you no longer need, by its task \
id (with the `TaskStop` tool, if you have it): a task still running when your turn ends is taken \
as work you were waiting on.
"""


AS_ASKED = "as asked (an interrupt or a cancel)"
"""Why a stopped session's line says it stopped, unless its caller knows better (a fleet's
activity names the Temporal server that could not be reached)."""


_CONTINUED_PROMPT = """\
Your session was cut off by an API limit: {message}

The limit has passed. Carry on from where you stopped."""


def continued_prompt(message: str) -> str:
    """The prompt that continues a session cut off by an API limit, once the limit passed."""
    return _CONTINUED_PROMPT.format(message=message)


def resume_prompt(killed: Sequence[str]) -> str:
    """The prompt of a Resume: names the killed work and asks for it in the foreground."""
    return _RESUME_PROMPT.format(work="; ".join(killed))


def ended_with_killed(killed: Sequence[str]) -> str:
    """The words for a call that ended with killed work: ``ended with a background task …
    killed``."""
    if len(killed) == 1:
        return f"ended with a background task still running ({killed[0]}), which was killed"
    return f"ended with background tasks still running ({'; '.join(killed)}), which were killed"


def session_named(kind: str) -> str:
    """A session of ``kind`` in a sentence: ``implement session``, but ``session`` (the default
    kind) or ``review-session`` alone, never ``session session``."""
    last = kind.replace("-", " ").replace("_", " ").replace(".", " ").split()
    return kind if last and last[-1].lower() == "session" else f"{kind} session"


_WORKER_STOPPED_PROMPT = """\
Your session was cut off: the worker that ran it stopped before the session ended.

Carry on from where you stopped. Check what your last commands left behind before you rely on \
it: a command that was running when the worker stopped was stopped with it."""


def worker_stopped_prompt() -> str:
    """The prompt that continues a session cut off because the worker running it stopped."""
    return _WORKER_STOPPED_PROMPT
