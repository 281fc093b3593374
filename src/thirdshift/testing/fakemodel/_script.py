"""Scripts of the model's side of sessions, handed out to the sessions that ask, and the record.

One :class:`ScriptedModel` per CLI. A script belongs to one session (one CLI process): the first
scripted-session request of a session takes the next queued script, and every later request of
that session (its tool results, its own retries) takes that script's next move. A session whose
script is played to the end takes the next script on its next request, which is what a Resume
of the same session id does.

A fault that ends its script holds: every retry of the request it answered (the same session,
at the same place in its conversation) is answered with it again, until the CLI gives up. Else
the retry would take the implicit end of the turn, and a CLI that retries would turn the
scripted failure into a success.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from thirdshift.testing._steps import (
    Fault,
    Say,
    Step,
    describe,
)
from thirdshift.testing.fakemodel._steps import (
    TOOL_STEPS,
    ToolStep,
    check_steps,
)

DEFAULT_FINAL_TEXT = "Done."


@dataclass(frozen=True)
class ToolMove:
    """Answer with a tool call, after the texts the script said before it."""

    step: ToolStep
    texts: tuple[str, ...] = ()
    prepared: bool = False
    """Whether the preparing call this step needs went out already (Claude's Read before Write)."""


@dataclass(frozen=True)
class FaultMove:
    """Answer with a fault instead of a reply."""

    step: Fault


@dataclass(frozen=True)
class FinalMove:
    """End the turn (``end_turn``) with these texts; the last one is the final message."""

    texts: tuple[str, ...]
    implicit: bool = False
    """No ``say`` asked for it: a session a fault ended may leave it unsent."""


Move = ToolMove | FaultMove | FinalMove


def moves(steps: Iterable[Step]) -> list[Move]:
    """The replies that play ``steps``: texts go with the tool call after them, or end the turn."""
    planned: list[Move] = []
    texts: list[str] = []
    for step in steps:
        if isinstance(step, Say):
            texts.append(step.text)
        elif isinstance(step, TOOL_STEPS):
            planned.append(ToolMove(step, tuple(texts)))
            texts = []
        elif isinstance(step, Fault):
            planned.append(FaultMove(step))
        else:
            raise TypeError(f"not a fake model step: {step!r}")
    if texts:
        planned.append(FinalMove(tuple(texts)))
    elif not (planned and isinstance(planned[-1], FaultMove)):  # a last fault holds instead
        planned.append(FinalMove((DEFAULT_FINAL_TEXT,), True))
    return planned


def turn_of(conversation: object) -> str:
    """Where a request stands in its conversation: how many messages (items, contents) it
    carries, and a digest of the last. A CLI's retry of a request carries the same
    conversation; its next turn carries a longer one."""
    items = conversation if isinstance(conversation, list) else []
    try:
        last = json.dumps(items[-1] if items else None, sort_keys=True, default=str)
    except (ValueError, RecursionError):  # hostile input: a shape json cannot write
        last = "?"
    return f"{len(items)}:{hashlib.sha256(last.encode()).hexdigest()[:16]}"


@dataclass(frozen=True)
class ModelRequest:
    """One request a CLI sent to the fake model, as the fake model understood it."""

    path: str
    model: str | None
    side: bool
    """A request the script does not own: titles, quota probes, token counts, classifiers."""
    user_text: str | None
    """The text of the last user message (the prompt, or the Resume prompt), if it had any."""
    tool_results: tuple[str, ...]
    """The text of each tool result the request carried, in order."""
    session_id: str | None
    """The session the CLI said the request belongs to (a header both CLIs send)."""
    reply: str
    """What the fake model answered: ``run('ls')``, ``end_turn``, ``side``, ``no script``."""
    body: Mapping[str, Any] = field(repr=False, compare=False)
    """The request body, parsed (what the CLI sent: read it, never trust it)."""


def model_request(
    path: str,
    body: Mapping[str, Any],
    session_id: str | None,
    user_text: str | None,
    tool_results: tuple[str, ...],
    *,
    reply: str,
    side: bool,
) -> ModelRequest:
    """The :class:`ModelRequest` of a request to ``path`` with ``body``, answered ``reply``."""
    name = body.get("model")
    return ModelRequest(
        path=path,
        model=name if isinstance(name, str) else None,
        side=side,
        user_text=user_text,
        tool_results=tool_results,
        session_id=session_id,
        reply=reply,
        body=body,
    )


@dataclass
class _Script:
    steps: tuple[Step, ...]
    moves: deque[Move]
    started: bool = False
    held: tuple[FaultMove, str] | None = None
    """The fault that ended the script, and the turn it answered: retries of it get it again."""


class ScriptedModel:
    """The fake model as one CLI sees it: ``fake_model.claude`` or ``fake_model.codex``."""

    def __init__(self, cli: str, on_script: Callable[[str], None] | None = None) -> None:
        self.cli = cli
        self._on_script = on_script
        self._lock = threading.Lock()
        self._queued: deque[_Script] = deque()
        self._playing: dict[str, _Script] = {}
        self._played: list[_Script] = []
        self._requests: list[ModelRequest] = []
        self._unscripted: list[str] = []

    def script(self, *steps: Step) -> None:
        """Queue the model's side of one session: ``script(run("make test"), say("green"))``."""
        checked = check_steps(self.cli, steps)
        if self._on_script is not None:
            self._on_script(self.cli)
        with self._lock:
            self._queued.append(_Script(checked, deque(moves(checked))))

    def withdraw(self) -> int:
        """Drop the queued scripts no session has taken yet (scripted for a turn that may not
        come); how many were dropped."""
        with self._lock:
            dropped = len(self._queued)
            self._queued.clear()
            return dropped

    @property
    def requests(self) -> list[ModelRequest]:
        """Every request so far, side requests included, in the order they arrived."""
        with self._lock:
            return list(self._requests)

    def scripted_requests(self) -> list[ModelRequest]:
        """The requests the scripts own (no side requests)."""
        return [request for request in self.requests if not request.side]

    def next_move(self, session: str, turn: str) -> Move | None:
        """The move that answers the next scripted request of ``session``, which stands at
        ``turn`` in its conversation (:func:`turn_of`); None: no script."""
        with self._lock:
            playing = self._playing.get(session)
            if playing is not None and playing.held is not None:
                fault, held_turn = playing.held
                if held_turn == turn:
                    return fault  # the CLI retries the request the fault answered
                playing.held = None  # another request: the CLI gave that one up
            if playing is None or not playing.moves:
                if not self._queued:
                    return None
                playing = self._queued.popleft()
                playing.started = True
                self._playing[session] = playing
                self._played.append(playing)
            move = playing.moves.popleft()
            if isinstance(move, FaultMove) and not playing.moves:
                playing.held = (move, turn)
            return move

    def put_back(self, session: str, move: Move) -> None:
        """Make ``move`` the next move of ``session`` again (a step that takes two calls)."""
        with self._lock:
            self._playing[session].moves.appendleft(move)

    def keep(self, request: ModelRequest) -> None:
        with self._lock:
            self._requests.append(request)
            if request.reply == NO_SCRIPT:
                self._unscripted.append(
                    f"{self.cli}: a request found no script: {request.path}, session "
                    f"{request.session_id or '(none)'}, last user text {request.user_text!r}"
                )

    def problems(self, *, include_unconsumed: bool = True) -> list[str]:
        """What a test should fail on: requests without a script, and script never used."""
        with self._lock:
            found = list(self._unscripted)
            if include_unconsumed:
                for unused in self._queued:
                    steps = ", ".join(describe(step) for step in unused.steps) or "no steps"
                    found.append(f"{self.cli}: a script was never used: {steps}")
                for played in self._played:
                    left = sum(not _implicit(move) for move in played.moves)
                    if left:
                        found.append(
                            f"{self.cli}: a script was left with {left} of its replies unsent "
                            f"(steps: {', '.join(describe(step) for step in played.steps)})"
                        )
            return found


NO_SCRIPT = "no script"
SIDE = "side"
END_TURN = "end_turn"


def _implicit(move: Move) -> bool:
    return isinstance(move, FinalMove) and move.implicit


def reply_name(move: Move) -> str:
    """How a request record names the move that answered it."""
    if isinstance(move, FinalMove):
        return END_TURN
    return describe(move.step)
