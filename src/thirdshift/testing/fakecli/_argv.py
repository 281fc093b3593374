"""What a fake takes from its argv: the one value each dialect's parser makes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Argv:
    """A call's argv as the fake understood it (leniently: unknown flags are skipped)."""

    refused: tuple[str, int] | None = None
    """The message and exit code with which the real CLI would refuse it, if it would."""
    resume: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    prompt: str | None = None
    """A prompt given in argv (Gemini's ``-p``, which it appends to stdin)."""


def flags(args: list[str], valued: frozenset[str]) -> Iterator[tuple[str, str | None]]:
    """``(flag, value)`` for each flag (``value`` None for a switch), ``(word, None)`` for each
    other word; ``--flag=value`` and ``--flag value`` alike, for the flags in ``valued``."""
    words = iter(args)
    for word in words:
        name, equals, value = word.partition("=")
        if name in valued and word.startswith("-"):
            yield name, value if equals else next(words, "")
        else:
            yield word, None
