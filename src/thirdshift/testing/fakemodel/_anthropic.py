"""The Anthropic Messages API as Claude Code uses it: ``POST /v1/messages`` and ``count_tokens``.

A scripted request is one that offers the ``Bash`` tool; every other one (titles, quota probes,
the ``--permission-mode auto`` security classifier, token counts) is a side request, answered
with a short text and consuming nothing. The classifier is answered ``<block>no`` (allow): a
reply it cannot parse makes Claude retry it ten times and then block the command.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thirdshift.testing._steps import (
    Background,
    Edit,
    LoadSkill,
    Run,
)
from thirdshift.testing._tokens import INPUT_TOKENS, OUTPUT_TOKENS
from thirdshift.testing.fakemodel._admission import BEARER, X_API_KEY
from thirdshift.testing.fakemodel._reply import Reply, text_of
from thirdshift.testing.fakemodel._script import (
    NO_SCRIPT,
    SIDE,
    FaultMove,
    FinalMove,
    ModelRequest,
    Move,
    ScriptedModel,
    ToolMove,
    model_request,
    reply_name,
    turn_of,
)
from thirdshift.testing.fakemodel._turn import fault_reply

SESSION_HEADER = "x-claude-code-session-id"
CLASSIFIER_ALLOW = "<block>no"
SIDE_TEXT = "ok"
_CWD = re.compile(r"Primary working directory: (/[^\n]*)")
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_ids = itertools.count(1)


class AnthropicDialect:
    """Reads Claude Code's requests and answers them from ``fake_model.claude``'s scripts."""

    key_headers = (X_API_KEY, BEARER)  # a key; a login token (subscriber=True)

    def error(self, status: int, message: str) -> Reply:
        return _error(status, message)

    def answer(
        self, path: str, headers: Mapping[str, str], body: dict[str, Any], model: ScriptedModel
    ) -> tuple[Reply, ModelRequest]:
        session = headers.get(SESSION_HEADER) or _metadata_session(body)
        messages = body.get("messages")
        messages = messages if isinstance(messages, list) else []
        request = functools.partial(
            model_request, path, body, session, _last_user_text(messages), _tool_results(messages)
        )

        if path.endswith("/count_tokens"):
            return Reply(json={"input_tokens": 1}), request(reply=SIDE, side=True)
        if not _offers_bash(body):
            text = CLASSIFIER_ALLOW if _is_classifier(body) else SIDE_TEXT
            return _message(body, [_text_block(text)], "end_turn"), request(reply=SIDE, side=True)
        move = model.next_move(session or "", turn_of(messages))
        if move is None:
            error = _error(400, "thirdshift FakeModel: no script left for this request")
            return error, request(reply=NO_SCRIPT, side=False)
        reply = self._play(move, body, session or "", model)
        return reply, request(reply=reply_name(move), side=False)

    def _play(self, move: Move, body: dict[str, Any], session: str, model: ScriptedModel) -> Reply:
        if isinstance(move, FaultMove):
            return fault_reply(move.step, _Faults(body))
        if isinstance(move, FinalMove):
            return _message(body, [_text_block(text) for text in move.texts], "end_turn")
        blocks = [_text_block(text) for text in move.texts]
        step = move.step
        if isinstance(step, Edit):
            path = _absolute(step.path, _cwd(body))
            if os.path.exists(path) and not move.prepared:
                # Claude refuses to Write over a file it has not Read in this session.
                model.put_back(session, ToolMove(step, prepared=True))
                blocks.append(_tool_block("Read", {"file_path": path}))
            else:
                blocks.append(_tool_block("Write", {"file_path": path, "content": step.text}))
        elif isinstance(step, Background):
            arguments = {"command": step.command, "description": step.described}
            blocks.append(_tool_block("Bash", {**arguments, "run_in_background": True}))
        elif isinstance(step, Run):
            arguments = {"command": step.command, "description": step.described}
            blocks.append(_tool_block("Bash", arguments))
        elif isinstance(step, LoadSkill):
            blocks.append(_tool_block("Skill", {"skill": step.name}))
        return _message(body, blocks, "tool_use")


def _metadata_session(body: dict[str, Any]) -> str | None:
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    try:
        session = json.loads(user_id).get("session_id") if isinstance(user_id, str) else None
    except (ValueError, AttributeError):
        return None
    return session if isinstance(session, str) else None


def _offers_bash(body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return False
    return any(isinstance(tool, dict) and tool.get("name") == "Bash" for tool in tools)


def _is_classifier(body: dict[str, Any]) -> bool:
    """Whether the side request is the security classifier: it asks for a ``<block>`` answer."""
    return "<block>" in json.dumps([body.get("system"), body.get("messages")])


def _last_user_text(messages: list[Any]) -> str | None:
    """The text of the last user message that has any, without Claude's system reminders."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            continue
        texts = [
            text
            for block in blocks
            if (text := text_of([block] if isinstance(block, dict) else block))
            and not text.startswith("<system-reminder>")
            and not (isinstance(block, dict) and block.get("type") == "tool_result")
        ]
        if texts:
            return "".join(texts)
    return None


def _tool_results(messages: list[Any]) -> tuple[str, ...]:
    """The tool results in the last message (the ones this request answers with)."""
    if not messages or not isinstance(messages[-1], dict):
        return ()
    content = messages[-1].get("content")
    if not isinstance(content, list):
        return ()
    return tuple(
        text_of(block.get("content"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def _cwd(body: dict[str, Any]) -> str | None:
    """The session's working directory, as Claude's system prompt states it."""
    found = _CWD.search(text_of(body.get("system")))
    return found.group(1).strip() if found else None


def _absolute(path: str, cwd: str | None) -> str:
    return path if os.path.isabs(path) or cwd is None else os.path.join(cwd, path)


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_block(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_fake_{next(_ids):06d}",
        "name": name,
        "input": arguments,
    }


def _usage() -> dict[str, int]:
    return {
        "input_tokens": INPUT_TOKENS,
        "output_tokens": OUTPUT_TOKENS,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _message_start(body: dict[str, Any]) -> dict[str, Any]:
    name = body.get("model")
    return {
        "id": f"msg_fake_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": name if isinstance(name, str) else "claude-fake",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(),
    }


def _message(body: dict[str, Any], blocks: list[dict[str, Any]], stop_reason: str) -> Reply:
    """The message of ``blocks``: streamed as SSE when the request asked for a stream."""
    start = _message_start(body)
    headers = (("request-id", f"req_fake_{next(_ids):06d}"),)  # as the real API names each reply
    if not body.get("stream"):
        return Reply(headers=headers, json={**start, "content": blocks, "stop_reason": stop_reason})
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_start", {"index": index, "content_block": opening}))
        events.append(("content_block_delta", {"index": index, "delta": delta}))
        events.append(("content_block_stop", {"index": index}))
    events.append(
        (
            "message_delta",
            {"delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": _usage()},
        )
    )
    events.append(("message_stop", {}))
    return Reply(
        headers=headers, events=tuple((name, {"type": name, **data}) for name, data in events)
    )


def _error(
    status: int, message: str, headers: tuple[tuple[str, str], ...] = (), *, error_type: str = ""
) -> Reply:
    error = {"type": error_type or _ERROR_TYPES.get(status, "api_error"), "message": message}
    body = {"type": "error", "error": error, "request_id": f"req_fake_{next(_ids):06d}"}
    return Reply(status=status, headers=headers, json=body)


@dataclass(frozen=True)
class _Faults:
    """How the Messages API fails (a :class:`~.turn.FaultSpeaker`), for the request ``body``."""

    body: dict[str, Any]

    def error(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        return _error(status, message, headers)

    def at_capacity(self) -> Reply:
        return _error(529, "Overloaded")

    def too_many_requests(self, retry_after: str) -> Reply:
        retry = (("retry-after", retry_after),)
        return _error(429, "Number of requests has exceeded your rate limit", retry)

    def quota_spent(self, resets_at: float) -> Reply:
        headers = (
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", str(int(resets_at))),
            ("anthropic-ratelimit-unified-representative-claim", "five_hour"),
        )
        return _error(429, "You have reached your usage limit", headers)

    def stall(self) -> Reply:
        start = ("message_start", {"type": "message_start", "message": _message_start(self.body)})
        opening = {"type": "content_block_start", "index": 0}
        block = ("content_block_start", {**opening, "content_block": _text_block("")})
        return Reply(events=(start, block), hold=True)
