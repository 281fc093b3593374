"""The environment a session's CLI starts with, under the Choice's environment policy.

Everything the agent runs inherits it, so it decides which of the orchestrator's secrets an
agent can read. ``inherit`` (the default) passes the orchestrator's environment on, less the
variables that make a CLI think it runs inside another session; ``minimal`` passes only
:data:`MINIMAL_VARIABLES`, the ``LC_*`` ones and the Harness's own ``env_passthrough`` (its
authentication and configuration). Either way ``PWD`` names the directory the CLI starts in
(opencode takes its working directory from ``PWD``, not from its cwd: with the orchestrator's it
works in the orchestrator's directory), and the Choice's ``env`` is applied last. Neither policy
is isolation: an agent can read its parent's environment in ``/proc`` (see
``docs/security.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from thirdshift._values import ENV_POLICIES, EnvPolicy, checked_env, checked_policy

if TYPE_CHECKING:
    from thirdshift.harness._base import Choice

NESTING_VARIABLES = ("CLAUDECODE",)
"""Set inside a Claude Code session; a ``claude`` that sees it refuses to start."""

MINIMAL_VARIABLES = ("HOME", "LANG", "PATH", "TERM", "TMPDIR", "USER")
"""What ``minimal`` keeps of the orchestrator's environment, with every ``LC_*`` variable."""


def session_environment(
    choice: Choice, base: Mapping[str, str], cwd: Path | None = None
) -> dict[str, str]:
    """The environment for a CLI of ``choice`` started in ``cwd``, made from ``base``."""
    if choice.env_policy == "minimal":
        kept = {*MINIMAL_VARIABLES, *choice.harness.env_passthrough}
        env = {k: v for k, v in base.items() if k in kept or k.startswith("LC_")}
    else:
        env = {k: v for k, v in base.items() if k not in NESTING_VARIABLES}
    if cwd is not None:
        env["PWD"] = str(Path(cwd).absolute())
    for name, value in choice.env:
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


__all__ = [
    "ENV_POLICIES",
    "MINIMAL_VARIABLES",
    "NESTING_VARIABLES",
    "EnvPolicy",
    "checked_env",
    "checked_policy",
    "session_environment",
]
