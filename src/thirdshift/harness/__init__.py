"""Harnesses: what thirdshift knows about each agent CLI.

``claude()``, ``codex()``, ``opencode()``, ``gemini()`` and ``qwen()`` make a :class:`Choice` of
a built-in Harness; ``harness_named`` finds any registered one, plugins' included.

The extension point of thirdshift is here: a package adds Harnesses (and conformance scenarios
for ``thirdshift check``) by implementing the pluggy hooks ``thirdshift_harnesses`` and
``thirdshift_conformance_scenarios`` with :data:`hookimpl`, found through its ``thirdshift``
entry points; :mod:`thirdshift.harness._hookspecs` says what the registry promises a plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from thirdshift._containment import Containment
from thirdshift._sandbox import Sandbox
from thirdshift._values import Billing, EnvPolicy
from thirdshift.harness._base import (
    NO_ENV,
    Choice,
    Harness,
    Invocation,
    StreamReader,
    ToolCalls,
    ToolState,
)
from thirdshift.harness._base import made_choice as _made_choice
from thirdshift.harness._builtin.claude import ClaudeHarness, ClaudeReader
from thirdshift.harness._builtin.codex import CodexHarness, CodexReader
from thirdshift.harness._builtin.gemini import GeminiHarness, GeminiReader
from thirdshift.harness._builtin.opencode import OpencodeHarness, OpencodeReader
from thirdshift.harness._builtin.qwen import QwenHarness, QwenReader
from thirdshift.harness._failures import FailureInfo
from thirdshift.harness._hookspecs import hookimpl
from thirdshift.harness._registry import harness_named, harness_names


# claude() and codex() share their signature on purpose: each is public API whose parameters
# people and type checkers read at the call; all they do is one call to made_choice.
def claude(
    model: str | None = None,
    effort: str | None = None,
    extra_args: Iterable[str] = (),
    *,
    env: Mapping[str, str | None] = NO_ENV,
    env_policy: EnvPolicy | None = None,
    containment: Containment = "auto",
    sandbox: Sandbox | None = None,
    billing: Billing | None = None,
) -> Choice:
    """Claude Code with this model, effort and extra ``claude`` arguments (None: its default).

    ``env`` sets variables for this CLI only (None removes one); ``env_policy`` is ``inherit``
    (the orchestrator's environment) or ``minimal`` (see :mod:`thirdshift._environment`; the
    default is ``minimal`` with a sandbox, ``inherit`` without); ``containment`` is ``auto``,
    ``cgroup``, ``namespace`` or ``scan`` (see :mod:`thirdshift._containment`); ``sandbox``
    runs each session inside a :class:`~thirdshift.Sandbox` (``None``: no sandbox);
    ``billing`` (``"api"`` or ``"subscription"``) requires the session be billed so, or it
    fails before any turn with a ``ConfigurationError``.
    """
    return _made_choice(
        ClaudeHarness(),
        model,
        effort,
        extra_args,
        env=env,
        env_policy=env_policy,
        containment=containment,
        sandbox=sandbox,
        billing=billing,
    )


def codex(
    model: str | None = None,
    effort: str | None = None,
    extra_args: Iterable[str] = (),
    *,
    env: Mapping[str, str | None] = NO_ENV,
    env_policy: EnvPolicy | None = None,
    containment: Containment = "auto",
    sandbox: Sandbox | None = None,
    billing: Billing | None = None,
) -> Choice:
    """Codex with this model, reasoning effort and extra ``codex exec`` arguments.

    ``env``, ``env_policy``, ``containment``, ``sandbox`` and ``billing`` as for :func:`claude`.
    """
    return _made_choice(
        CodexHarness(),
        model,
        effort,
        extra_args,
        env=env,
        env_policy=env_policy,
        containment=containment,
        sandbox=sandbox,
        billing=billing,
    )


def opencode(
    model: str | None = None,
    effort: str | None = None,
    extra_args: Iterable[str] = (),
    *,
    env: Mapping[str, str | None] = NO_ENV,
    env_policy: EnvPolicy | None = None,
    containment: Containment = "auto",
    sandbox: Sandbox | None = None,
    billing: Billing | None = None,
) -> Choice:
    """opencode with this ``provider/model``, variant (its effort) and extra ``run`` arguments.

    ``env``, ``env_policy``, ``containment``, ``sandbox`` and ``billing`` as for :func:`claude`.
    """
    return _made_choice(
        OpencodeHarness(),
        model,
        effort,
        extra_args,
        env=env,
        env_policy=env_policy,
        containment=containment,
        sandbox=sandbox,
        billing=billing,
    )


def gemini(
    model: str | None = None,
    *,
    extra_args: Iterable[str] = (),
    env: Mapping[str, str | None] = NO_ENV,
    env_policy: EnvPolicy | None = None,
    containment: Containment = "auto",
    sandbox: Sandbox | None = None,
    billing: Billing | None = None,
) -> Choice:
    """Gemini CLI with this model and extra ``gemini`` arguments; it has no effort setting.

    ``env``, ``env_policy``, ``containment``, ``sandbox`` and ``billing`` as for :func:`claude`.
    """
    return _made_choice(
        GeminiHarness(),
        model,
        None,
        extra_args,
        env=env,
        env_policy=env_policy,
        containment=containment,
        sandbox=sandbox,
        billing=billing,
    )


def qwen(
    model: str | None = None,
    *,
    extra_args: Iterable[str] = (),
    env: Mapping[str, str | None] = NO_ENV,
    env_policy: EnvPolicy | None = None,
    containment: Containment = "auto",
    sandbox: Sandbox | None = None,
    billing: Billing | None = None,
) -> Choice:
    """Qwen Code with this model and extra ``qwen`` arguments; it has no effort setting.

    ``env``, ``env_policy``, ``containment``, ``sandbox`` and ``billing`` as for :func:`claude`.
    """
    return _made_choice(
        QwenHarness(),
        model,
        None,
        extra_args,
        env=env,
        env_policy=env_policy,
        containment=containment,
        sandbox=sandbox,
        billing=billing,
    )


__all__ = [
    "Choice",
    "ClaudeHarness",
    "ClaudeReader",
    "CodexHarness",
    "CodexReader",
    "FailureInfo",
    "GeminiHarness",
    "GeminiReader",
    "Harness",
    "Invocation",
    "OpencodeHarness",
    "OpencodeReader",
    "QwenHarness",
    "QwenReader",
    "StreamReader",
    "ToolCalls",
    "ToolState",
    "claude",
    "codex",
    "gemini",
    "harness_named",
    "harness_names",
    "hookimpl",
    "opencode",
    "qwen",
]
