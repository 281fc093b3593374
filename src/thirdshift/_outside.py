"""The one seam between the Resume rules and the machine.

The rules (:mod:`thirdshift._sessions`) see only :class:`Outside` and the :class:`Ended` value
it returns. The real adapter (:mod:`thirdshift._machine`) spawns CLIs behind it; the testing
toolkit's ``ScriptedOutside`` plays sessions from a script, as a :class:`StandIn` that each
``within`` binds to its :class:`WithinContext`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from thirdshift._values import Ended, Usage

if TYPE_CHECKING:
    from thirdshift.harness._base import Choice

__all__ = ["Ended", "Outside", "StandIn", "Usage", "WithinContext"]


class Outside(Protocol):
    """Everything the rules need from the machine: run a session, hand on a line, wait."""

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        """Run one session labelled ``kind``, continuing session ``resume`` if given.

        Its stream is logged to ``log``. Returns what it ended with once it exited cleanly;
        raises as the session fails, a ``SessionFailed`` carrying what the stream said all the
        same (``usage``, ``final_message``: the record keeps them). An interrupt surfaces here
        as that session's error (``Interrupted``, carrying them too).
        """
        ...

    def report(self, line: str) -> None:
        """Hand on one progress line."""
        ...

    def wait(self, seconds: float) -> None:
        """Wait ``seconds`` (for an API limit to pass); an interrupt or cancel ends it early
        with :class:`~thirdshift.errors.Interrupted`."""
        ...

    def cancel(self) -> None:
        """Stop the session running now, if any (from any thread); it raises ``Interrupted``.

        Later sessions are refused by the rules, not here.
        """
        ...


@dataclass(frozen=True)
class WithinContext:
    """What one :meth:`~thirdshift.Sessions.within` sets up: where, what, and who hears progress."""

    worktree: Path
    choice: Choice
    progress: Callable[[str], None]


@runtime_checkable
class StandIn(Protocol):
    """A testing toolkit's stand-in for the real adapter (``ScriptedOutside`` is one).

    ``within`` hands it its context, so that the stand-in records the ``Choice`` and worktree of
    each session and hands progress lines to the caller's ``progress=``, as production does.
    """

    def bind(self, context: WithinContext) -> Outside:
        """The Outside that runs the sessions of one ``within`` block."""
        ...
