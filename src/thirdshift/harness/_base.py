"""What thirdshift knows about an agent CLI (a Harness), as types.

A Harness knows its CLI (argv, stop signals, skills folder) and its stream dialect (a reader).
It spawns nothing: the machine adapter runs what :meth:`Harness.invocation` describes and feeds
the CLI's stdout to :meth:`Harness.reader`.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Protocol, TypeAlias

from thirdshift._budget import BudgetChecks
from thirdshift._containment import Containment, checked_containment
from thirdshift._sandbox import Sandbox, SandboxNeeds, checked_sandbox
from thirdshift._values import (
    BILLINGS,
    Billing,
    Ended,
    EnvPolicy,
    Invocation,
    Usage,
    checked_env,
    checked_policy,
)
from thirdshift.errors import ConfigurationError, ThirdshiftError
from thirdshift.harness._failures import FailureInfo, resume_missing_in
from thirdshift.harness._lines import shorten

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
# Real ids are UUIDs (36 characters); anything far longer is not an id, whatever its letters.
MAX_SESSION_ID = 256


def checked_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is safe to put in argv; stream data never becomes a flag."""
    if len(session_id) > MAX_SESSION_ID or not SESSION_ID.fullmatch(session_id):
        kept = shorten(session_id)  # never splitting a secret, which the message then redacts
        raise ThirdshiftError(f"refusing to resume session id {kept!r}: not a plain id")
    return session_id


__all__ = [
    "HARNESS_MEMBERS",
    "NO_ENV",
    "STREAM_READER_MEMBERS",
    "Choice",
    "Harness",
    "Invocation",
    "StreamReader",
    "ToolCalls",
    "ToolState",
    "checked_session_id",
    "made_choice",
    "missing_members",
]


ToolState: TypeAlias = Literal["started", "ended", "failed"]
"""Where a tool call stands, as the stream shows it."""


class ToolCalls(Protocol):
    """Hears of each tool call a session's stream shows, as the reader reads it: the adapter's
    telemetry makes each one a span (``execute_tool {name}``), timed by when its lines came."""

    def saw(self, call_id: str, name: str, state: ToolState) -> None:
        """The stream showed the call ``call_id`` of the tool ``name`` start, end or fail. A
        call said to end that was never said to start started then; a call said to start
        again, or to end twice, is the same call (streams repeat themselves)."""
        ...


class StreamReader(Protocol):
    """Reads one session's stdout, a line at a time, into progress lines and an ending.

    Every member is declared here; those with a body have a default, which a reader gets by
    subclassing this class (the built-in readers do, through ``JsonEventReader``). A reader
    that does not subclass it must have every member itself.
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

    def ended(self) -> Ended: ...

    @property
    def failure(self) -> FailureInfo | None:
        """Which ``SessionFailed`` subclass the stream shows, if it failed; None if it cannot tell.

        Only the stream: a failure that shows only on stderr is classified by the machine
        adapter (its Harness's :meth:`Harness.stderr_failure`). By default: None.
        """
        return None

    def failure_at(self, now: datetime) -> FailureInfo | None:
        """:attr:`failure` with ``now`` as the current time (which resolves a reset time said
        without a date), so that reading a log again tells the same; by default :attr:`failure`."""
        return self.failure

    @property
    def usage_so_far(self) -> Usage | None:
        """What the stream has said the session used so far, in the measures it says while the
        session runs (its Harness's ``budget_checks.while_running``), or None. The adapter
        checks it against the ``within`` block's Budget after each read. By default: None."""
        return None

    @property
    def still_running(self) -> tuple[str, ...]:
        """Work the stream started and never said ended; the adapter counts it as killed when
        it stops a CLI lingering after its result. By default: none."""
        return ()

    @property
    def turns_ended(self) -> int:
        """How many times the stream said the turn was over; the adapter counts its
        ``after_result`` watchdog from the latest one. By default 0 (it never says)."""
        return 0

    def resumed_after(self, earlier: Usage) -> None:
        """Told, before the first line of a Resume's stream, what the session's earlier calls
        used (their endings' usage added up, as far as this adapter ran them). A CLI whose
        counts on a Resume are the whole session's (Codex, Qwen) takes ``earlier`` off them,
        so that :meth:`ended` and :attr:`usage_so_far` say what this call used. By default
        nothing changes: the counts are the call's own."""
        return None

    @property
    def billing(self) -> Billing | None:
        """How the session is billed, as the stream (or the CLI's settings, through
        :meth:`billed`) said; None until it does. By default: what :meth:`billed` told."""
        return None

    def billed(self, billing: Billing) -> None:
        """Told, before the first line, how the CLI's own settings say the session is billed
        (:meth:`Harness.billing`), for a stream that never says it. By default ignored."""
        return None

    @property
    def refused(self) -> str | None:
        """Why the API has refused the CLI's credentials for good, in words, once the stream
        shows it while the CLI would go on retrying (Claude retries a refused key for three
        minutes); the adapter then stops the session as ``AuthFailed``. By default: None."""
        return None

    def add_subagents(self, used: Usage) -> None:
        """Told, once the CLI has exited, what the session's sub-agents used that its stream
        left out, as its Harness read it from the CLI's own state files
        (:meth:`Harness.subagent_usage`): :meth:`ended` then counts it too. By default
        nothing changes."""
        return None

    def report_tool_calls(self, calls: ToolCalls) -> None:
        """Told, before the first line, whom to tell of each tool call the stream shows, as
        it reads it (the adapter tells it only while something traces the session, so that a
        reader that must read more lines for it pays for them only then). By default ignored:
        the Harness reports no tool calls."""
        return None

    def finish(self, exit_code: int | None) -> None:
        """Take the CLI's exit code once the stream has ended and the CLI has exited (``None``
        when it died by a signal or its status is lost), before anything else is asked; see
        :func:`finish_reading`. By default nothing changes."""
        return None


class Harness(Protocol):
    """One agent CLI: how to invoke it, how to stop it, how to read it.

    Every member is declared here; those with a body have a default, which a Harness gets by
    subclassing this class (the built-in ones do). A Harness that does not subclass it must
    have every member itself: the registry refuses one that lacks any
    (:func:`missing_members`).

    Work the session left running is seen by the machine adapter: each process still running
    once the CLI has exited and the drain is over counts as background work killed as the
    session ended (see :attr:`helper_processes`, :meth:`unwrap_command` and
    :meth:`work_killed_at_exit`).
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

    @property
    def stderr_noise(self) -> tuple[str, ...]:
        """Line prefixes the CLI prints on stderr in every run, never taken as a failed
        session's diagnostic. By default: none."""
        return ()

    @property
    def env_passthrough(self) -> tuple[str, ...]:
        """The environment variables the CLI needs (authentication, configuration), kept
        under the ``minimal`` environment policy. By default: none."""
        return ()

    @property
    def budget_checks(self) -> BudgetChecks:
        """Which Budget measures the CLI's stream says, and when. By default tokens and turns,
        at the end only."""
        return BudgetChecks()

    @property
    def sandbox_needs(self) -> SandboxNeeds:
        """What the CLI needs inside a :class:`~thirdshift.Sandbox`: its state folders, its
        model APIs and their key variables, further endpoints. By default: none, so a
        sandboxed session of this Harness reaches only what ``Sandbox(network=...)`` adds."""
        return SandboxNeeds()

    @property
    def helper_processes(self) -> tuple[str, ...]:
        """``fnmatch`` patterns naming the CLI's own helpers (MCP servers, say), which are not
        work: a left-over process whose command line (argv joined by spaces) matches one is
        stopped but not counted as killed work. By default: none."""
        return ()

    def unwrap_command(self, script: str) -> str:
        """The command inside a shell script the CLI wraps each command in, so that a
        left-over ``bash -c SCRIPT`` is named by it. By default the script itself."""
        return script

    @property
    def resume_missing(self) -> re.Pattern[str] | None:
        """How the CLI says, in its own words, that the session to resume was not found (on
        stderr, or in its stream's failure text). By default: it has no such words."""
        return None

    def genai_provider(self, choice: Choice) -> str:
        """The provider whose model API a session of ``choice`` calls, as OpenTelemetry's GenAI
        semantic conventions name it (``gen_ai.provider.name``: ``anthropic``, ``openai``,
        ``gcp.gemini``, …), as far as the Choice tells. By default the Harness's own name, a
        custom value (which the conventions allow where none of theirs applies)."""
        return self.name

    def stderr_failure(self, line: str | None) -> FailureInfo | None:
        """The failure the last line of the CLI's stderr names, for a session whose stream
        named none. By default: a Resume of a session the CLI cannot find, where
        :attr:`resume_missing` matches the line."""
        wording = self.resume_missing
        return None if wording is None else resume_missing_in(line, wording)

    @property
    def billing_told(self) -> Literal["before", "stream"] | None:
        """Where the CLI says how a session is billed: in its settings, read before it starts
        (``before``: :meth:`billing`), in its stream (``stream``: the reader's ``billing``), or
        nowhere (None, the default), where a Choice that requires a billing is refused."""
        return None

    def billing(self, env: Mapping[str, str]) -> Billing | None:
        """How the CLI's settings say a session will be billed, before it starts (``env`` is
        its environment); None where they do not say. By default: None."""
        return None

    def subagent_usage(self, env: Mapping[str, str], session_id: str, since: float) -> Usage | None:
        """For a CLI whose stream leaves its sub-agents out but whose own state files keep them:
        read once the CLI has exited (``env`` is its environment), what the session's
        sub-agents used from ``since`` (epoch seconds, the call's start) on, with
        ``subagents="counted"``. None: nothing can be said of them (the default)."""
        return None

    def work_killed_at_exit(
        self, worktree: Path, env: Mapping[str, str], session_id: str
    ) -> Mapping[str, str]:
        """For a CLI that kills its background work itself but says so only in its own state
        files: read once the CLI has exited (``env`` is the CLI's environment), the work each
        such file says it killed, file name → description. Files that were there before a
        Resume started are not counted again. By default: none."""
        return {}


def _members(contract: type) -> tuple[str, ...]:
    return tuple(
        name for name in vars(contract) if not name.startswith("_") and name not in vars(Protocol)
    )


HARNESS_MEMBERS = _members(Harness)
"""Every member a Harness has (:class:`Harness` declares each one)."""
STREAM_READER_MEMBERS = _members(StreamReader)
"""Every member a reader has (:class:`StreamReader` declares each one)."""


def missing_members(harness: object) -> tuple[str, ...]:
    """The members of :class:`Harness` that ``harness`` lacks (none for a subclass of it).

    Checked once, where a Harness is offered; everything after uses its members plainly.
    """
    return tuple(name for name in HARNESS_MEMBERS if not hasattr(harness, name))


@dataclass(frozen=True)
class Choice:
    """A Harness with the model, effort, extra CLI arguments and environment to run it with.

    ``env`` sets variables for this Choice's CLI only (a value of None removes one); it may be
    given as a mapping and is kept as sorted pairs. ``env_policy`` says what the CLI gets of
    the orchestrator's environment first: ``inherit`` (the default) or ``minimal`` (see
    :mod:`thirdshift._environment`). ``containment`` says how its processes are held together
    for the stop: ``auto`` (the default: the most isolated this machine allows), ``cgroup``,
    ``namespace`` or ``scan`` (see :mod:`thirdshift._containment`). ``sandbox`` runs each
    session inside a :class:`~thirdshift.Sandbox` (``None``, the default: no sandbox).
    """

    harness: Harness
    model: str | None = None
    effort: str | None = None
    extra_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str | None], ...] = ()
    env_policy: EnvPolicy = "inherit"
    containment: Containment = "auto"
    sandbox: Sandbox | None = None
    billing: Billing | None = None
    """How the session must be billed (``api``, ``subscription``); None: either. A session
    that would be billed otherwise fails before any turn, as a ``ConfigurationError``."""

    def __post_init__(self) -> None:
        missing = missing_members(self.harness)
        if missing:  # refused here, not once its CLI has run and a member is looked up
            raise ConfigurationError(
                f"{self.harness!r} is not a Harness: it has no {', '.join(missing)} "
                "(a subclass of thirdshift.harness.Harness has defaults)"
            )
        given: object = self.env
        pairs = given if isinstance(given, Mapping) else dict(self.env)
        object.__setattr__(self, "env", checked_env(pairs))
        object.__setattr__(self, "env_policy", checked_policy(self.env_policy))
        object.__setattr__(self, "containment", checked_containment(self.containment))
        object.__setattr__(self, "sandbox", checked_sandbox(self.sandbox))
        if self.billing is not None and self.billing not in BILLINGS:
            raise ValueError(f"billing must be None, 'api' or 'subscription', not {self.billing!r}")

    def __str__(self) -> str:
        return (
            f"{self.harness.name} · {self.model or 'default model'} · "
            f"{self.effort or 'default effort'}"
        )


NO_ENV: Mapping[str, str | None] = MappingProxyType({})
"""No variables set: the default ``env`` of every way of making a Choice."""


def made_choice(
    harness: Harness,
    model: str | None,
    effort: str | None,
    extra_args: Iterable[str],
    *,
    env: Mapping[str, str | None],
    env_policy: EnvPolicy | None,
    containment: Containment,
    sandbox: Sandbox | None,
    billing: Billing | None = None,
) -> Choice:
    """The Choice of ``harness`` that ``claude()``, ``choice()`` and the rest make.

    Without an ``env_policy``, a sandboxed Choice gets ``minimal`` (what the sandbox keeps out
    of the CLI's environment stays out of everything it runs) and any other ``inherit``.
    """
    if isinstance(extra_args, str):
        raise TypeError("extra_args must be a sequence of arguments, not one string")
    if env_policy is None:
        env_policy = "minimal" if sandbox is not None else "inherit"
    return Choice(
        harness=harness,
        model=model,
        effort=effort,
        extra_args=tuple(extra_args),
        env=checked_env(env),
        env_policy=env_policy,
        containment=containment,
        sandbox=sandbox,
        billing=billing,
    )


def finish_reading(reader: StreamReader, exit_code: int | None) -> None:
    """The last step of reading a stream: hand the CLI's ``exit_code`` to ``reader``, once the
    stream has ended and the CLI has exited, before anything else is asked of it. Never raises,
    as ``feed`` never does.

    Most streams tell how a turn ended; some cannot tell an interrupted turn from a finished
    one: Gemini CLI exits 0 on SIGINT and SIGTERM, printing nothing more, so its stream then
    simply lacks its ``result``, and its reader's ``finish`` says so.
    """
    try:
        reader.finish(exit_code)
    except Exception:
        pass  # a reader's slip must not turn into a session's traceback
