"""The floor: the values every layer uses, importing nothing of thirdshift.

The rules (:mod:`thirdshift._sessions`), the seam (:mod:`thirdshift._outside`), the Harnesses
(:mod:`thirdshift.harness`) and the machine adapter all speak in these, so they live below all
of them: a session's :class:`Usage` and :class:`Ended`, a CLI's :class:`Invocation`, and the
environment settings a :class:`~thirdshift.harness.Choice` is checked against. Nothing here
imports a thirdshift module (a test holds it to that), so no import circle can pass through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

Billing: TypeAlias = Literal["api", "subscription"]
"""How a session's tokens were paid for: by an API key (``api``) or by a plan's login
(``subscription``, where a cost figure is only what the tokens would have cost at API prices)."""
BILLINGS: tuple[Billing, ...] = ("api", "subscription")

Subagents: TypeAlias = Literal["counted", "unknown"]
"""Whether a usage counts what the session's sub-agents used (``counted``), or comes from a
stream that cannot show it (``unknown``: the figures may be short of what was spent)."""


@dataclass(frozen=True)
class Usage:
    """What one session used, as far as its stream said (``None``: the stream did not say)."""

    turns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost_usd: float | None = None
    """Claude's ``total_cost_usd``; Codex reports no cost."""
    models: tuple[str, ...] = ()
    billing: Billing | None = None
    """How the CLI said the session was billed; ``None`` where it did not say."""
    subagents: Subagents | None = None
    """Whether the figures count the session's sub-agents; ``None`` where nothing was said."""


@dataclass(frozen=True)
class Ended:
    """What one session ended with, as far as the Resume rules care."""

    session_id: str | None
    killed: tuple[str, ...] = ()
    """Descriptions of background work killed as the session ended, in order."""
    final_message: str | None = None
    usage: Usage | None = None
    containment: str | None = field(default=None, compare=False, repr=False)
    """Which containment held its processes (``cgroup``, ``namespace``, ``scan``); ``None``
    where no process was started (a stand-in). Neither compared nor shown: the rules do
    not care."""
    sandbox: bool = field(default=False, compare=False, repr=False)
    """Whether it ran sandboxed (a stand-in says what its Choice asked). Neither compared nor
    shown, as ``containment``."""


@dataclass(frozen=True)
class Invocation:
    """How to start one session: ``argv`` (program first), and the prompt for its stdin."""

    argv: tuple[str, ...]
    stdin: str


EnvPolicy: TypeAlias = Literal["inherit", "minimal"]
"""What a CLI gets of the orchestrator's environment (see :mod:`thirdshift._environment`)."""
ENV_POLICIES: tuple[EnvPolicy, ...] = ("inherit", "minimal")


def checked_env(env: Mapping[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    """``env`` as sorted pairs, once every name and value is one a process can be given."""
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a mapping of names to values, not {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise ValueError(f"environment variable name {name!r} is not one a process can have")
        if value is not None and (not isinstance(value, str) or "\0" in value):
            raise ValueError(f"environment variable {name}: its value must be a string without NUL")
    return tuple(sorted(env.items()))


def checked_policy(policy: str) -> EnvPolicy:
    """``policy`` if it is ``inherit`` or ``minimal``."""
    for known in ENV_POLICIES:
        if policy == known:
            return known
    raise ValueError(f"unknown environment policy {policy!r}: choose inherit or minimal")
