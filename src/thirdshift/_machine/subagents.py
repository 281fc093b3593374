"""What the sub-agents of each CLI session used beyond what its stream showed.

A Harness whose stream leaves its sub-agents out reads them from the CLI's own state files once
the call has ended (:meth:`~thirdshift.harness.Harness.subagent_usage`: Codex's rollouts), and
its reader adds them to the call's usage. They are kept apart here, per CLI session, because a
Resume's reader is told what the session's earlier calls used in the terms of its stream
(Codex reports a Resume's tokens from the session's start, its own thread's alone): counting
the sub-agents there too would take them off twice.
"""

from __future__ import annotations

from collections.abc import Mapping

from thirdshift._budget import plus
from thirdshift._values import Usage
from thirdshift.harness._base import Harness, StreamReader


class SubagentUsage:
    """Per CLI session, what its sub-agents used in the calls this adapter ran."""

    def __init__(self) -> None:
        self._by_session: dict[str, Usage] = {}

    def read(
        self,
        harness: Harness,
        reader: StreamReader,
        env: Mapping[str, str],
        session_id: str | None,
        since: float,
    ) -> None:
        """Once the call has ended: ask ``harness`` what its sub-agents used since ``since``
        (epoch seconds), and tell ``reader``."""
        if session_id is None:
            return
        used = harness.subagent_usage(env, session_id, since)
        if used is None:
            return
        reader.add_subagents(used)
        self._by_session[session_id] = plus(self._by_session.get(session_id, Usage()), used)

    def in_stream_terms(self, session_id: str, used: Usage) -> Usage:
        """``used`` (what the session's calls used) less what its sub-agents added to it."""
        extra = self._by_session.get(session_id)
        if extra is None:
            return used
        return Usage(
            turns=used.turns,
            input_tokens=_less(used.input_tokens, extra.input_tokens),
            output_tokens=_less(used.output_tokens, extra.output_tokens),
            cached_input_tokens=_less(used.cached_input_tokens, extra.cached_input_tokens),
            cost_usd=used.cost_usd,
            models=used.models,
        )


def _less(a: int | None, b: int | None) -> int | None:
    return a if a is None or b is None else max(0, a - b)
