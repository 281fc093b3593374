"""One request of a function-calling API, answered from its CLI's script: the part both share.

Chat Completions and the Gemini API differ in how a request reads and how an answer is written,
not in what is answered: a side request gets a side answer; a scripted one plays the next move
of its session's script (texts, then a tool call; a fault; or the end of the turn). Each dialect
reads its request into an :class:`Asked` and writes answers through a :class:`Speaker`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from thirdshift.testing._steps import (
    AtCapacity,
    Fault,
    Hang,
    HttpError,
    QuotaSpent,
    Stall,
    TooManyRequests,
)
from thirdshift.testing.fakemodel._reply import Reply, hold_silent
from thirdshift.testing.fakemodel._script import (
    NO_SCRIPT,
    SIDE,
    FaultMove,
    FinalMove,
    ModelRequest,
    ScriptedModel,
    reply_name,
)
from thirdshift.testing.fakemodel._toolcalls import ToolCall, Tools, play, script_key

NO_SCRIPT_TEXT = "thirdshift FakeModel: no script left for this request"


@dataclass(frozen=True)
class Asked:
    """What one request says, as its dialect read it."""

    path: str
    model: str | None
    session_id: str | None
    user_text: str | None
    tool_results: tuple[str, ...]
    tools: Tools
    cwd: str | None
    turn: str
    """Where the request stands in its conversation (:func:`~.script.turn_of`)."""
    side: bool
    """A request no script owns: a title, a router, a helper agent."""
    body: Mapping[str, Any] = field(repr=False)

    def request(self, reply: str) -> ModelRequest:
        return ModelRequest(
            path=self.path,
            model=self.model,
            side=self.side,
            user_text=self.user_text,
            tool_results=self.tool_results,
            session_id=self.session_id,
            reply=reply,
            body=self.body,
        )


class FaultSpeaker(Protocol):
    """How one API writes each of its failures."""

    def error(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        """An HTTP error in the API's own shape."""
        ...

    def at_capacity(self) -> Reply: ...

    def too_many_requests(self, retry_after: str) -> Reply: ...

    def quota_spent(self, resets_at: float) -> Reply: ...

    def stall(self) -> Reply:
        """The first event of an answer, then nothing."""
        ...


class Speaker(FaultSpeaker, Protocol):
    """How one API writes each kind of answer to the request at hand."""

    def side(self) -> Reply:
        """The answer to a side request."""
        ...

    def answer(self, texts: list[str], calls: list[ToolCall]) -> Reply:
        """Assistant ``texts``, then ``calls``; no calls ends the turn."""
        ...


def seconds(value: float) -> str:
    """``value`` as a ``retry-after`` header says it: ``7``, ``0.5``."""
    return str(int(value)) if float(value).is_integer() else str(value)


def answer_turn(asked: Asked, model: ScriptedModel, speaker: Speaker) -> tuple[Reply, ModelRequest]:
    """The reply to ``asked`` and its record (the caller records it)."""
    if asked.side:
        return speaker.side(), asked.request(SIDE)
    key = script_key(asked.session_id, asked.cwd)
    move = model.next_move(key, asked.turn)
    if move is None:
        return speaker.error(400, NO_SCRIPT_TEXT), asked.request(NO_SCRIPT)
    if isinstance(move, FaultMove):
        reply = fault_reply(move.step, speaker)
    elif isinstance(move, FinalMove):
        reply = speaker.answer(list(move.texts), [])
    else:
        call = play(move, asked.tools, asked.cwd, key, model)
        reply = speaker.answer(list(move.texts), [call])
    return reply, asked.request(reply_name(move))


def fault_reply(step: Fault, speaker: FaultSpeaker) -> Reply:
    """The reply that plays ``step``, in the API ``speaker`` speaks for."""
    if isinstance(step, HttpError):
        headers = step.headers
        if step.retry_after is not None:
            headers = (("retry-after", seconds(step.retry_after)), *headers)
        return speaker.error(
            step.status, step.message or f"fake model error {step.status}", headers
        )
    if isinstance(step, AtCapacity):
        return speaker.at_capacity()
    if isinstance(step, TooManyRequests):
        return speaker.too_many_requests(seconds(step.retry_after))
    if isinstance(step, QuotaSpent):
        return speaker.quota_spent(step.resets_at)
    if isinstance(step, Hang):
        return hold_silent()
    if isinstance(step, Stall):
        return speaker.stall()
    raise TypeError(f"not a fault: {step!r}")
