"""The OpenAI Chat Completions API as opencode and Qwen Code use it: ``POST …/chat/completions``.

Streams are server-sent ``data:`` lines of ``chat.completion.chunk`` objects (text in
``delta.content``, calls in ``delta.tool_calls``), a usage chunk when the request asks for one
(``stream_options.include_usage``), then ``data: [DONE]``. A scripted request is one that offers
a shell tool (``bash``, ``run_shell_command``) and is not one of a CLI's own helper agents; any
other one (opencode's title, Qwen's memory agent, which offers a shell tool too) is a side
request: a short text, or an object filled from the schema when the request asks for JSON,
consuming nothing.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thirdshift.testing._tokens import INPUT_TOKENS, OUTPUT_TOKENS
from thirdshift.testing._wire import error_json
from thirdshift.testing.fakemodel._admission import BEARER
from thirdshift.testing.fakemodel._reply import Reply, text_of
from thirdshift.testing.fakemodel._schema import filled
from thirdshift.testing.fakemodel._script import ModelRequest, ScriptedModel, turn_of
from thirdshift.testing.fakemodel._toolcalls import ToolCall, Tools, shell_tool, tool_arguments
from thirdshift.testing.fakemodel._turn import Asked, answer_turn

SESSION_HEADERS = ("x-session-id", "x-session-affinity", "x-opencode-session")
SIDE_TEXT = "ok"
HELPER_AGENTS = ("managed memory extraction subagent",)
"""What a helper agent's system prompt says it is (Qwen's runs after a turn, with a shell)."""
DONE = "[DONE]"
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_CWDS = (
    re.compile(r"Working directory: (/[^\n<]*)"),
    re.compile(r"I'm currently working in the directory: (/[^\n<]*)"),
)
_ids = itertools.count(1)


class ChatCompletionsDialect:
    """Reads one CLI's Chat Completions requests and answers them from that CLI's scripts."""

    key_headers = (BEARER,)

    def error(self, status: int, message: str) -> Reply:
        return _error(status, message)

    def answer(
        self, path: str, headers: Mapping[str, str], body: dict[str, Any], model: ScriptedModel
    ) -> tuple[Reply, ModelRequest]:
        messages = body.get("messages")
        messages = (
            [message for message in messages if isinstance(message, dict)]
            if isinstance(messages, list)
            else []
        )
        name = body.get("model")
        tools = _tools(body)
        asked = Asked(
            path=path,
            model=name if isinstance(name, str) else None,
            session_id=next((headers[key] for key in SESSION_HEADERS if headers.get(key)), None),
            user_text=_last_user_text(messages),
            tool_results=_tool_results(messages),
            tools=tools,
            cwd=_cwd(messages),
            turn=turn_of(messages),
            side=shell_tool(tools) is None or _helper_agent(messages),
            body=body,
        )
        return answer_turn(asked, model, _ChatSpeaker(body, asked.model))


def _tools(body: dict[str, Any]) -> Tools:
    tools = body.get("tools")
    offered: dict[str, frozenset[str]] = {}
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            offered[function["name"]] = tool_arguments(function.get("parameters"))
    return offered


def _helper_agent(messages: list[dict[str, Any]]) -> bool:
    system = " ".join(
        text_of(message.get("content")) for message in messages if message.get("role") == "system"
    )
    return any(agent in system for agent in HELPER_AGENTS)


def _side_text(body: dict[str, Any]) -> str:
    """A short text, or a JSON object that fits the schema when the request asks for one."""
    wanted = body.get("response_format")
    if not isinstance(wanted, dict):
        return SIDE_TEXT
    if wanted.get("type") == "json_object":
        return "{}"
    schema = wanted.get("json_schema")
    if wanted.get("type") == "json_schema" and isinstance(schema, dict):
        return json.dumps(filled(schema.get("schema")))
    return SIDE_TEXT


def _text(content: Any) -> str:
    return _REMINDER.sub("", text_of(content)).strip()


def _last_user_text(messages: list[dict[str, Any]]) -> str | None:
    """The text of the last user message that has any, without injected system reminders."""
    for message in reversed(messages):
        if message.get("role") == "user" and (text := _text(message.get("content"))):
            return text
    return None


def _tool_results(messages: list[dict[str, Any]]) -> tuple[str, ...]:
    """The ``tool`` messages after the last assistant message: what this request answers with."""
    found: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        found.append(text_of(message.get("content")))
    return tuple(reversed(found))


def _cwd(messages: list[dict[str, Any]]) -> str | None:
    """The session's working directory, as the CLI tells the model in its prompts."""
    text = "\n".join(text_of(message.get("content")) for message in messages)
    for pattern in _CWDS:
        if found := pattern.search(text):
            return found.group(1).strip()
    return None


def _chunk(name: str | None, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{next(_ids):06d}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": name or "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage() -> dict[str, int]:
    total = INPUT_TOKENS + OUTPUT_TOKENS
    return {
        "prompt_tokens": INPUT_TOKENS,
        "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": total,
    }


def _wire_call(index: int, call: ToolCall) -> dict[str, Any]:
    return {
        "index": index,
        "id": f"call_fake_{next(_ids):06d}",
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
    }


def _completion(
    body: dict[str, Any], name: str | None, texts: list[str], calls: list[ToolCall]
) -> Reply:
    """The answer: ``texts`` then ``calls``, streamed when the request asked for a stream."""
    finish = "tool_calls" if calls else "stop"
    text = "\n\n".join(texts)
    wire = [_wire_call(index, call) for index, call in enumerate(calls)]
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if wire:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in wire]
        completion = _chunk(name, {}, finish) | {"object": "chat.completion", "usage": _usage()}
        completion["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
        return Reply(json=completion)
    chunks: list[dict[str, Any]] = [_chunk(name, {"role": "assistant", "content": ""}, None)]
    if text:
        chunks.append(_chunk(name, {"content": text}, None))
    for call in wire:
        # The name and id first, the arguments after, as OpenAI streams a call.
        opening = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
        chunks.append(_chunk(name, {"tool_calls": [opening]}, None))
        rest = {"index": call["index"], "function": {"arguments": call["function"]["arguments"]}}
        chunks.append(_chunk(name, {"tool_calls": [rest]}, None))
    chunks.append(_chunk(name, {}, finish))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        chunks.append(_chunk(name, {}, None) | {"choices": [], "usage": _usage()})
    events: list[tuple[str, Mapping[str, Any] | str]] = [("", chunk) for chunk in chunks]
    events.append(("", DONE))
    return Reply(events=tuple(events))


def _error(
    status: int, message: str, headers: tuple[tuple[str, str], ...] = (), *, error_type: str = ""
) -> Reply:
    return Reply(status=status, headers=headers, json=error_json(status, message, error_type))


@dataclass(frozen=True)
class _ChatSpeaker:
    """Answers in Chat Completions' words, streamed when the request asked for a stream."""

    body: dict[str, Any]
    name: str | None

    def side(self) -> Reply:
        return _completion(self.body, self.name, [_side_text(self.body)], [])

    def answer(self, texts: list[str], calls: list[ToolCall]) -> Reply:
        return _completion(self.body, self.name, texts, calls)

    def error(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        return _error(status, message, headers)

    def at_capacity(self) -> Reply:
        return _error(503, "The server is overloaded. Please try again later.")

    def too_many_requests(self, retry_after: str) -> Reply:
        message = "Rate limit reached, please try again later."
        return _error(429, message, (("retry-after", retry_after),))

    def quota_spent(self, resets_at: float) -> Reply:
        message = "You exceeded your current quota, please check your plan and billing details."
        return _error(429, message, error_type="insufficient_quota")

    def stall(self) -> Reply:
        opening = _chunk(self.name, {"role": "assistant", "content": ""}, None)
        return Reply(events=(("", opening),), hold=True)
