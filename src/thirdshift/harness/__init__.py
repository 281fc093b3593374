"""Harnesses: what thirdshift knows about each agent CLI.

``claude()`` and ``codex()`` make a :class:`Choice` of a built-in Harness; ``harness_named``
finds any registered one, plugins' included (see :mod:`thirdshift.harness.hookspecs`).
"""

from __future__ import annotations

from collections.abc import Iterable

from thirdshift.harness.base import Choice, Harness, Invocation, StreamReader
from thirdshift.harness.builtin.claude import ClaudeHarness, ClaudeReader
from thirdshift.harness.builtin.codex import CodexHarness, CodexReader
from thirdshift.harness.failures import FailureInfo
from thirdshift.harness.hookspecs import hookimpl
from thirdshift.harness.registry import harness_named, harness_names


def _choice(
    harness: Harness, model: str | None, effort: str | None, extra_args: Iterable[str]
) -> Choice:
    if isinstance(extra_args, str):
        raise TypeError("extra_args must be a sequence of arguments, not one string")
    return Choice(harness=harness, model=model, effort=effort, extra_args=tuple(extra_args))


def claude(
    model: str | None = None, effort: str | None = None, extra_args: Iterable[str] = ()
) -> Choice:
    """Claude Code with this model, effort and extra ``claude`` arguments (None: its default)."""
    return _choice(ClaudeHarness(), model, effort, extra_args)


def codex(
    model: str | None = None, effort: str | None = None, extra_args: Iterable[str] = ()
) -> Choice:
    """Codex with this model, reasoning effort and extra ``codex exec`` arguments."""
    return _choice(CodexHarness(), model, effort, extra_args)


__all__ = [
    "Choice",
    "ClaudeHarness",
    "ClaudeReader",
    "CodexHarness",
    "CodexReader",
    "FailureInfo",
    "Harness",
    "Invocation",
    "StreamReader",
    "claude",
    "codex",
    "harness_named",
    "harness_names",
    "hookimpl",
]
