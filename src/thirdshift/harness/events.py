"""What every JSON-lines stream reader shares: one event per line, and no line is fatal."""

from __future__ import annotations

from typing import Any

from thirdshift.harness.lines import loads


class JsonEventReader:
    """Feeds each line that holds a JSON object to :meth:`_event`; never raises.

    Subclasses read the events (:meth:`_event`) and may skip lines unparsed
    (:meth:`_may_matter`). Unknown, malformed, non-object and truncated lines give nothing, and
    so does anything an event handler did not foresee (a ``RecursionError`` on deep nesting,
    say): a session is never failed by a line of its stream.
    """

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
