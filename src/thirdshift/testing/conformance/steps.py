"""The agent's side of a conformance scenario, in one vocabulary for both ways of playing it.

A step says what the agent does; :mod:`~thirdshift.testing.conformance.players` turns it into a
fake CLI's step (the fake does it and writes the stream) or a fake model's step (the model asks
the real CLI to do it, and the real CLI writes the stream).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One thing the agent does in a session."""


@dataclass(frozen=True)
class Run(Step):
    """Run ``command`` in the foreground, to its end."""

    command: str


@dataclass(frozen=True)
class Background(Step):
    """Start ``command`` and leave it running when the turn ends.

    ``finishes`` says the command ends within the CLI's grace after the turn (Claude waits
    ~5 s before it kills background work; Codex has no grace and kills it at exit).
    """

    command: str
    finishes: bool = False


@dataclass(frozen=True)
class Edit(Step):
    """Write ``text`` to ``path``, relative to the worktree."""

    path: str
    text: str


@dataclass(frozen=True)
class LoadSkill(Step):
    """Load the skill ``name`` that ``Sessions.within(skills=...)`` copied in."""

    name: str


@dataclass(frozen=True)
class Say(Step):
    """Assistant text; the last one is the session's final message."""

    text: str


@dataclass(frozen=True)
class ApiError(Step):
    """The model API answers with HTTP ``status`` and ``message`` in its error body."""

    status: int
    message: str


def run(command: str) -> Run:
    return Run(command)


def background(command: str, *, finishes: bool = False) -> Background:
    return Background(command, finishes)


def edit(path: str, text: str) -> Edit:
    return Edit(path, text)


def load_skill(name: str) -> LoadSkill:
    return LoadSkill(name)


def say(text: str) -> Say:
    return Say(text)


def api_error(status: int, message: str) -> ApiError:
    return ApiError(status, message)
