"""The model's side of a scripted session: the steps, and the functions that make them.

The step functions have the names and signatures of :mod:`thirdshift.testing.fakecli`'s, so one
scenario reads the same whether a fake CLI plays it or a real CLI under the fake model does. Here
a step is what the *model* answers: a tool call the real CLI then carries out with its real tools,
or a fault the model server answers with instead of a reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Step:
    """One step of the model's side of a session."""


@dataclass(frozen=True)
class ToolStep(Step):
    """A step the model answers with a tool call."""


@dataclass(frozen=True)
class Run(ToolStep):
    """Ask the CLI to run ``command`` in the foreground."""

    command: str
    description: str | None = None


@dataclass(frozen=True)
class Background(ToolStep):
    """Ask the CLI to start ``command`` and leave it running."""

    command: str
    description: str | None = None
    grace: float = 0.0
    """Unused: the real CLI has a grace of its own (Claude's ~5 s); kept for fakecli's shape."""


@dataclass(frozen=True)
class Edit(ToolStep):
    """Ask the CLI to write ``text`` to ``path`` (relative to the session's cwd, or absolute)."""

    path: str
    text: str


@dataclass(frozen=True)
class LoadSkill(ToolStep):
    """Ask the CLI to load the skill ``name``."""

    name: str


@dataclass(frozen=True)
class Say(Step):
    """Assistant text; the last one is the final message of the turn."""

    text: str


@dataclass(frozen=True)
class Fault(Step):
    """A step the model server answers with a failure instead of a reply; one request each."""


@dataclass(frozen=True)
class HttpError(Fault):
    """An HTTP error with the API's own error body."""

    status: int
    message: str | None = None
    retry_after: float | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Overloaded(Fault):
    """The API is overloaded: Anthropic's 529 ``overloaded_error``, OpenAI's 503."""


@dataclass(frozen=True)
class RateLimited(Fault):
    """A 429 with ``retry-after``."""

    retry_after: float


@dataclass(frozen=True)
class UsageLimit(Fault):
    """The plan or quota is spent until ``resets_at`` (seconds since the epoch)."""

    resets_at: float


@dataclass(frozen=True)
class Hang(Fault):
    """Accept the request and never answer (until the fake model closes)."""


@dataclass(frozen=True)
class Stall(Fault):
    """Answer with the first events of a stream, then nothing (until the fake model closes)."""


def run(command: str, *, description: str | None = None) -> Run:
    """The model runs ``command`` in the foreground.

    Claude: a ``Bash`` tool use. Codex: an ``exec_command`` call, then ``write_stdin`` polls
    for as long as the command runs (Codex returns from a call after 30 s at most).
    """
    return Run(command, description)


def background(command: str, *, description: str | None = None, grace: float = 0.0) -> Background:
    """The model starts ``command`` and leaves it running, as agents leave test runs.

    Claude: a ``Bash`` tool use with ``run_in_background: true``. Codex: an ``exec_command`` call
    with a 1 s ``yield_time_ms``, so the command is still running when the turn ends. ``grace``
    is accepted for the fake CLIs' signature and unused: the real CLI keeps its own.
    """
    return Background(command, description, grace)


def edit(path: str, text: str) -> Edit:
    """The model writes ``text`` to ``path`` (relative paths are under the session's cwd).

    Claude: a ``Write`` tool use, after a ``Read`` when the file exists (Claude refuses to
    overwrite a file it has not read). Codex: an ``apply_patch`` call that adds or updates it.
    """
    return Edit(path, text)


def load_skill(name: str) -> LoadSkill:
    """The model loads the skill ``name``.

    Claude: a ``Skill`` tool use. Codex: ``cat .agents/skills/<name>/SKILL.md`` through
    ``exec_command``, which is how Codex reads a skill.
    """
    return LoadSkill(name)


def say(text: str) -> Say:
    """Assistant text; the last ``say`` of a session is its final message."""
    return Say(text)


def http_error(
    status: int,
    *,
    message: str | None = None,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpError:
    """Answer one request with HTTP ``status`` and the API's error body (``message`` in it)."""
    if not 400 <= status <= 599:
        raise ValueError(f"http_error: status must be 400-599, got {status}")
    return HttpError(status, message, retry_after, tuple((headers or {}).items()))


def overloaded() -> Overloaded:
    """Answer one request as an overloaded API (Anthropic 529, OpenAI 503)."""
    return Overloaded()


def rate_limited(retry_after: float) -> RateLimited:
    """Answer one request with a 429 and ``retry-after: <retry_after>``."""
    return RateLimited(retry_after)


def usage_limit(resets_at: datetime | float) -> UsageLimit:
    """Answer one request the way each API says the plan or quota is spent until ``resets_at``.

    Claude: a 429 ``rate_limit_error`` with the ``anthropic-ratelimit-unified-*`` headers
    (``status: rejected``, the reset time); with an API key Claude takes it as any 429 (retried,
    then "API Error: Request rejected (429) · You have reached your usage limit").
    Codex: a 429 ``usage_limit_reached`` error with ``resets_at``, which Codex reports as
    "You've hit your usage limit. … try again at <time>." without retrying.
    """
    when = resets_at.timestamp() if isinstance(resets_at, datetime) else float(resets_at)
    return UsageLimit(when)


def hang() -> Hang:
    """Accept one request and never answer it (until the fake model closes)."""
    return Hang()


def stall() -> Stall:
    """Start answering one request (the response's first events), then send nothing more."""
    return Stall()


def describe(step: Step) -> str:
    """``step`` the way a test writes it, for failure messages: ``run('make test')``."""
    name = {
        Run: "run",
        Background: "background",
        Edit: "edit",
        LoadSkill: "load_skill",
        Say: "say",
        HttpError: "http_error",
        Overloaded: "overloaded",
        RateLimited: "rate_limited",
        UsageLimit: "usage_limit",
        Hang: "hang",
        Stall: "stall",
    }.get(type(step), type(step).__name__)
    first = next(iter(vars(step).values()), None)
    return f"{name}({first!r})" if first is not None else f"{name}()"
