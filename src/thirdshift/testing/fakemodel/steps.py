"""The model's side of a scripted session: the steps, and the functions that make them.

The five steps the model answers with, ``run``, ``background``, ``edit``, ``load_skill`` and
``say``, are the fake CLIs' own step objects
(:mod:`thirdshift.testing.fakecli.steps`), so one scenario is played the same by a fake CLI or
by a real CLI under the fake model. Here such a step is what the *model* answers: a tool call
the real CLI then carries out with its real tools, or assistant text. The real CLI does the
work, so the fields that shape what a fake CLI does itself are ignored: ``background``'s
``grace`` (the real CLI has its own, Claude's ~5 s). The fake CLIs' other steps (``die``,
``hang``, ``exit``, ``raw``…) are refused: only a fake program can act them out.

The faults are the fake model's own: the model server answers with a failure instead of a reply.
Each answers one request; the one that ends its script answers every retry of it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

from thirdshift.testing.fakecli import steps as cli
from thirdshift.testing.fakecli.steps import Background, Edit, LoadSkill, Run, Say


@dataclass(frozen=True)
class Fault:
    """A step the model server answers with a failure instead of a reply: one request, or,
    when it ends its script, that request and every retry of it (the CLI gives up at last)."""


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


ToolStep: TypeAlias = Run | Background | Edit | LoadSkill
"""A step the model answers with a tool call, which the real CLI then carries out."""
Step: TypeAlias = ToolStep | Say | Fault
"""One step of the model's side of a session."""
TOOL_STEPS = (Run, Background, Edit, LoadSkill)
MODEL_STEPS = (*TOOL_STEPS, Say, Fault)


def check_steps(cli_name: str, steps: Iterable[object]) -> tuple[Step, ...]:
    """``steps`` as one script of ``cli_name``; raises TypeError on a step the model cannot play."""
    checked: list[Step] = []
    for step in steps:
        if isinstance(step, MODEL_STEPS):
            checked.append(step)
        elif isinstance(step, cli.Step):
            raise TypeError(
                f"{cli_name}.script: {step.kind}() is a step of the fake CLIs only; the fake "
                "model plays run, background, edit, load_skill, say and its own faults "
                "(thirdshift.testing.fakemodel: http_error, overloaded, rate_limited, "
                "usage_limit, hang, stall)"
            )
        else:
            raise TypeError(f"{cli_name}.script: not a fake model step: {step!r}")
    return tuple(checked)


def describe(step: Step) -> str:
    """``step`` the way a test writes it, for failure messages: ``run('make test')``."""
    name = step.kind if isinstance(step, cli.Step) else _snake_case(type(step).__name__)
    first = next(iter(vars(step).values()), None)
    return f"{name}({first!r})" if first is not None else f"{name}()"


def _snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
