"""What thirdshift knows about an agent CLI (a Harness), as types.

A Harness knows its CLI (argv, stop signals, skills folder) and its stream dialect (a reader).
It spawns nothing: the machine adapter runs what :meth:`Harness.invocation` describes and feeds
the CLI's stdout to :meth:`Harness.reader`.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from thirdshift.containment import Containment, checked_containment
from thirdshift.environment import EnvPolicy, checked_env, checked_policy
from thirdshift.errors import ThirdshiftError
from thirdshift.harness.failures import FailureInfo
from thirdshift.harness.lines import shorten
from thirdshift.outside import Ended

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
# Real ids are UUIDs (36 characters); anything far longer is not an id, whatever its letters.
MAX_SESSION_ID = 256


def checked_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is safe to put in argv; stream data never becomes a flag."""
    if len(session_id) > MAX_SESSION_ID or not SESSION_ID.fullmatch(session_id):
        kept = shorten(session_id)  # never splitting a secret, which the message then redacts
        raise ThirdshiftError(f"refusing to resume session id {kept!r}: not a plain id")
    return session_id


@dataclass(frozen=True)
class Invocation:
    """How to start one session: ``argv`` (program first), and the prompt for its stdin."""

    argv: tuple[str, ...]
    stdin: str


class StreamReader(Protocol):
    """Reads one session's stdout, a line at a time, into progress lines and an ending.

    A reader may also have ``usage_so_far``, a property: what the stream has said the session
    used so far (a ``Usage``), in the measures it says while the session runs, or None. The
    adapter checks it against the ``within`` block's Budget after each read; a reader without
    it is taken to say nothing as it goes (the built-in ones have it).
    """

    def feed(self, line: str) -> list[str]:
        """Read one line; return progress-line bodies. Never raises."""
        ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def killed(self) -> tuple[str, ...]:
        """Background work killed as the session ended; empty if its last turn failed."""
        ...

    @property
    def final_message(self) -> str | None: ...

    @property
    def summary(self) -> str | None:
        """A short account of the session's cost or usage, for the "session ended" line."""
        ...

    @property
    def failed(self) -> bool: ...

    @property
    def error(self) -> str | None: ...

    @property
    def failure(self) -> FailureInfo | None:
        """Which ``SessionFailed`` subclass the stream shows, if it failed; None if it cannot tell.

        Only the stream: a failure that shows only on stderr is classified by the machine
        adapter (:func:`thirdshift.harness.failures.from_stderr`). A reader without this
        property is taken to tell no failure apart.
        """
        ...

    def ended(self) -> Ended: ...


class Harness(Protocol):
    """One agent CLI: how to invoke it, how to stop it, how to read it.

    A Harness may also have ``stderr_noise``, a tuple of line prefixes its CLI prints on
    stderr in every run; such lines are never taken as a failed session's diagnostic. And
    ``env_passthrough``, a tuple of the environment variables its CLI needs (authentication,
    configuration), kept under the ``minimal`` environment policy.

    Work the session left running is seen by the machine adapter: each process still running
    once the CLI has exited and the drain is over counts as background work killed as the
    session ended. ``helper_processes``, a tuple of ``fnmatch`` patterns, names the CLI's own
    helpers (MCP servers, say) that are not work: a process whose command line (argv joined
    by spaces) matches one is stopped but not counted. A CLI that runs each command inside a
    shell script of its own may have ``unwrap_command(script) -> str``, which gives back the
    command, so that a left-over ``bash -c SCRIPT`` is named by it. And a CLI that kills its
    background work itself but says so only in its own records may have
    ``work_killed_at_exit(worktree, env, session_id) -> Mapping[str, str]``: read once the CLI
    has exited (``env`` is the CLI's environment), each record of work it killed, record name
    → description. Records that were there before a Resume started are not counted again.
    """

    @property
    def name(self) -> str:
        """The Harness's name, which is also its CLI program's name."""
        ...

    @property
    def stop_signals(self) -> tuple[signal.Signals, ...]:
        """Sent in turn to stop a session, each followed by a grace period, before SIGKILL."""
        ...

    @property
    def skills_dir(self) -> str:
        """Where in a worktree the CLI finds project skills (a relative path)."""
        ...

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation: ...

    def reader(self, worktree: Path) -> StreamReader: ...


@dataclass(frozen=True)
class Choice:
    """A Harness with the model, effort, extra CLI arguments and environment to run it with.

    ``env`` sets variables for this Choice's CLI only (a value of None removes one); it may be
    given as a mapping and is kept as sorted pairs. ``env_policy`` says what the CLI gets of
    the orchestrator's environment first: ``inherit`` (the default) or ``minimal`` (see
    :mod:`thirdshift.environment`). ``containment`` says how its processes are held together
    for the stop: ``auto`` (the default: the most isolated this machine allows), ``cgroup``,
    ``namespace`` or ``scan`` (see :mod:`thirdshift.containment`).
    """

    harness: Harness
    model: str | None = None
    effort: str | None = None
    extra_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str | None], ...] = ()
    env_policy: EnvPolicy = "inherit"
    containment: Containment = "auto"

    def __post_init__(self) -> None:
        given: object = self.env
        pairs = given if isinstance(given, Mapping) else dict(self.env)
        object.__setattr__(self, "env", checked_env(pairs))
        object.__setattr__(self, "env_policy", checked_policy(self.env_policy))
        object.__setattr__(self, "containment", checked_containment(self.containment))

    def __str__(self) -> str:
        return (
            f"{self.harness.name} · {self.model or 'default model'} · "
            f"{self.effort or 'default effort'}"
        )
