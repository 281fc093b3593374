"""What every JSON-lines stream reader shares: one event per line, no line is fatal, and the
ending read from the events (the session id, the final message, the killed work)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from thirdshift._values import Ended, Usage
from thirdshift.harness._base import StreamReader, ToolCalls, ToolState
from thirdshift.harness._lines import MAX_ID, loads


def reads_objects_only(reader: StreamReader) -> bool:
    """Whether ``reader`` reads nothing but lines that each hold one JSON object (it is a
    :class:`JsonEventReader`), so that whoever splits its stream may leave every other line out
    unread (:class:`~thirdshift._machine.follow.LineSplitter`'s ``objects_only``)."""
    return isinstance(reader, JsonEventReader)


class JsonEventReader(StreamReader):
    """Feeds each line that holds a JSON object to :meth:`_event`; never raises.

    Subclasses read the events (:meth:`_event`) and may skip lines unparsed
    (:meth:`_may_matter`). Unknown, malformed, non-object and truncated lines give nothing, and
    so does anything an event handler did not foresee (a ``RecursionError`` on deep nesting,
    say): a session is never failed by a line of its stream.

    Subclasses set ``_session_id`` and ``_final_message`` as they read, and say what was
    killed (:attr:`killed`) and used (:attr:`usage`); :meth:`ended` puts them together. Those
    whose stream shows tool calls tell of each through :meth:`_tool`.
    """

    def __init__(self, worktree: Path | None = None) -> None:
        self._worktree = None if worktree is None else str(worktree)
        self._session_id: str | None = None
        self._final_message: str | None = None
        self._turns_ended = 0
        self._tools: ToolCalls | None = None

    def report_tool_calls(self, calls: ToolCalls) -> None:
        self._tools = calls

    def _tool(self, call_id: object, name: object, state: ToolState) -> None:
        """Tell of a tool call, if someone listens and the stream gave it an id (and, unless it
        is said to end, a name)."""
        if self._tools is None or not isinstance(call_id, str) or not call_id:
            return
        named = name if isinstance(name, str) else ""
        if named or state != "started":
            self._tools.saw(call_id[:MAX_ID], named, state)

    def feed(self, line: str) -> list[str]:
        """Read one line of the stream; return its progress-line bodies. Never raises."""
        try:
            if not self._may_matter(line) or not line.lstrip().startswith("{"):
                return []
            event = loads(line)
            return self._event(event) if isinstance(event, dict) else []
        except Exception:
            return []

    def _may_matter(self, line: str) -> bool:
        """False for a line whose event :meth:`_event` would surely ignore (not parsed then)."""
        return True

    def _event(self, event: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    # After the stream

    @property
    def session_id(self) -> str | None:
        """The id to resume the session by, as the stream first gave it; None if it gave none."""
        return self._session_id

    @property
    def final_message(self) -> str | None:
        """The session's last message to the caller (cut past ``MAX_MESSAGE`` characters)."""
        return self._final_message

    @property
    def turns_ended(self) -> int:
        """How many times the stream said the turn was over (a result); 0 if it never did.

        The machine adapter counts its ``after_result`` watchdog from the latest one.
        """
        return self._turns_ended

    @property
    def killed(self) -> tuple[str, ...]:
        """Background work killed as the session ended; empty if its last turn failed."""
        raise NotImplementedError

    @property
    def usage(self) -> Usage | None:
        """What the session used, as far as the stream said; None if it said nothing."""
        return None

    @property
    def usage_so_far(self) -> Usage | None:
        """What the stream has said the session used while it runs, in the measures it says
        as it goes (its Harness's ``budget_checks.while_running``); None: nothing yet, or a
        stream that says usage only at its end."""
        return None

    def ended(self) -> Ended:
        return Ended(
            session_id=self.session_id,
            killed=self.killed,
            final_message=self.final_message,
            usage=self.usage,
        )
