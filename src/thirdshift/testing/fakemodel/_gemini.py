"""The Gemini API as Gemini CLI uses it: ``/v1beta/models/<model>:<method>``.

``:streamGenerateContent?alt=sse`` streams ``data:`` lines of ``GenerateContentResponse``
chunks; ``:generateContent`` answers one. A scripted request offers the shell tool
(``run_shell_command``); any other is a side request: the model router and the CLI's other
helpers ask ``:generateContent`` for a JSON object (``responseMimeType: application/json`` with
a schema) and get one filled from the schema, anything else gets a short text; ``:countTokens``
gets a count. None of them consumes a script.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thirdshift.testing._tokens import INPUT_TOKENS, OUTPUT_TOKENS
from thirdshift.testing.fakemodel._admission import GOOG_API_KEY
from thirdshift.testing.fakemodel._reply import Reply
from thirdshift.testing.fakemodel._schema import filled
from thirdshift.testing.fakemodel._script import ModelRequest, ScriptedModel, turn_of
from thirdshift.testing.fakemodel._toolcalls import ToolCall, Tools, shell_tool, tool_arguments
from thirdshift.testing.fakemodel._turn import Asked, answer_turn

PREFIX = "/v1beta/models/"
SESSION_HEADERS = ("x-gemini-session-id", "x-session-id")
SIDE_TEXT = "ok"
CONTEXT = "<session_context>"
_CWDS = (
    re.compile(r"Workspace Directories:\*\*\n\s*- (/[^\n<]*)"),
    re.compile(r"I'm currently working in the directory: (/[^\n<]*)"),
)
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_ids = itertools.count(1)


class GeminiDialect:
    """Reads Gemini CLI's requests and answers them from ``fake_model.gemini``'s scripts."""

    key_headers = (GOOG_API_KEY,)

    def error(self, status: int, message: str) -> Reply:
        return _error(status, message)

    def answer(
        self, path: str, headers: Mapping[str, str], body: dict[str, Any], model: ScriptedModel
    ) -> tuple[Reply, ModelRequest]:
        name, _, method = path.removeprefix(PREFIX).partition(":")
        contents = body.get("contents")
        contents = (
            [content for content in contents if isinstance(content, dict)]
            if isinstance(contents, list)
            else []
        )
        tools = _tools(body)
        asked = Asked(
            path=path,
            model=name or None,
            session_id=next((headers[key] for key in SESSION_HEADERS if headers.get(key)), None),
            user_text=_last_user_text(contents),
            tool_results=_tool_results(contents),
            tools=tools,
            cwd=_cwd(contents),
            turn=turn_of(contents),
            side=method == "countTokens" or shell_tool(tools) is None,
            body=body,
        )
        speaker = _GeminiSpeaker(body, name, method)
        return answer_turn(asked, model, speaker)


def _tools(body: dict[str, Any]) -> Tools:
    offered: dict[str, frozenset[str]] = {}
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declared in declarations if isinstance(declarations, list) else []:
            if isinstance(declared, dict) and isinstance(declared.get("name"), str):
                schema = declared.get("parametersJsonSchema") or declared.get("parameters")
                offered[declared["name"]] = tool_arguments(schema)
    return offered


def _side_part(body: dict[str, Any]) -> dict[str, Any]:
    """A short text, or a JSON object that fits the schema when the request asks for one."""
    config = body.get("generationConfig")
    config = config if isinstance(config, dict) else {}
    if config.get("responseMimeType") != "application/json":
        return {"text": SIDE_TEXT}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return {"text": json.dumps(filled(schema) if schema is not None else {})}


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    parts = content.get("parts")
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _last_user_text(contents: list[dict[str, Any]]) -> str | None:
    """The text of the last user content that has any (tool results carry none).

    Without the session context Gemini CLI sends as the first part of the first prompt.
    """
    for content in reversed(contents):
        if content.get("role") != "user":
            continue
        texts = [
            text
            for part in _parts(content)
            if isinstance(text := part.get("text"), str) and not text.startswith(CONTEXT)
        ]
        if text := "".join(texts).strip():
            return text
    return None


def _tool_results(contents: list[dict[str, Any]]) -> tuple[str, ...]:
    """The function responses in the last content: the ones this request answers with."""
    if not contents or contents[-1].get("role") != "user":
        return ()
    found = []
    for part in _parts(contents[-1]):
        response = part.get("functionResponse")
        if not isinstance(response, dict):
            continue
        result = response.get("response")
        output = result.get("output") if isinstance(result, dict) else None
        found.append(output if isinstance(output, str) else json.dumps(result))
    return tuple(found)


def _cwd(contents: list[dict[str, Any]]) -> str | None:
    for content in contents:
        for part in _parts(content):
            text = part.get("text")
            if not isinstance(text, str):
                continue
            for pattern in _CWDS:
                if found := pattern.search(text):
                    return found.group(1).strip()
    return None


def _function_call(call: ToolCall) -> dict[str, Any]:
    return {"functionCall": {"name": call.name, "args": dict(call.arguments)}}


def _response(name: str, parts: list[dict[str, Any]], *, last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    response: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": name or "gemini-fake",
        "responseId": f"fake-{next(_ids):06d}",
    }
    if last:
        candidate["finishReason"] = "STOP"
        response["usageMetadata"] = {
            "promptTokenCount": INPUT_TOKENS,
            "candidatesTokenCount": OUTPUT_TOKENS,
            "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS,
        }
    return response


def _answer(name: str, parts: list[dict[str, Any]], *, stream: bool) -> Reply:
    """``parts`` as one response, or streamed: each part its chunk, the last one finishing."""
    if not stream:
        return Reply(json=_response(name, parts, last=True))
    parts = parts or [{"text": ""}]
    chunks = [
        _response(name, [part], last=index == len(parts) - 1) for index, part in enumerate(parts)
    ]
    return Reply(events=tuple(("", chunk) for chunk in chunks))


def _error(
    status: int,
    message: str,
    headers: tuple[tuple[str, str], ...] = (),
    details: tuple[dict[str, Any], ...] = (),
) -> Reply:
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _STATUSES.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = list(details)
    return Reply(status=status, headers=headers, json={"error": error})


@dataclass(frozen=True)
class _GeminiSpeaker:
    """Answers in the Gemini API's words: ``:streamGenerateContent`` streams, others do not."""

    body: dict[str, Any]
    name: str
    method: str

    def side(self) -> Reply:
        if self.method == "countTokens":
            return Reply(json={"totalTokens": 1})
        return _answer(self.name, [_side_part(self.body)], stream=self.streams)

    def answer(self, texts: list[str], calls: list[ToolCall]) -> Reply:
        parts = [{"text": text} for text in texts] + [_function_call(call) for call in calls]
        return _answer(self.name, parts, stream=self.streams)

    @property
    def streams(self) -> bool:
        return self.method == "streamGenerateContent"

    def error(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        return _error(status, message, headers)

    def at_capacity(self) -> Reply:
        return _error(503, "The model is overloaded. Please try again later.")

    def too_many_requests(self, retry_after: str) -> Reply:
        retry = {
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": f"{retry_after}s",
        }
        message = "Resource has been exhausted (e.g. check quota)."
        return _error(429, message, (("retry-after", retry_after),), (retry,))

    def quota_spent(self, resets_at: float) -> Reply:
        quota = {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
        }
        message = "You exceeded your current quota, please check your plan and billing details."
        return _error(429, message, details=(quota,))

    def stall(self) -> Reply:
        return Reply(events=(("", _response(self.name, [{"text": ""}], last=False)),), hold=True)
