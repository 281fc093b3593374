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
from typing import Any

from thirdshift.testing.fakemodel.reply import Reply, hold_silent
from thirdshift.testing.fakemodel.schema import filled
from thirdshift.testing.fakemodel.script import (
    NO_SCRIPT,
    SIDE,
    FaultMove,
    FinalMove,
    ModelRequest,
    Move,
    ScriptedModel,
    ToolMove,
    reply_name,
)
from thirdshift.testing.fakemodel.steps import (
    Fault,
    Hang,
    HttpError,
    Overloaded,
    RateLimited,
    Stall,
    UsageLimit,
)
from thirdshift.testing.fakemodel.toolcalls import (
    ToolCall,
    Tools,
    play,
    script_key,
    shell_tool,
    tool_arguments,
)

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

    def answer(
        self, path: str, headers: Mapping[str, str], body: dict[str, Any], model: ScriptedModel
    ) -> tuple[Reply, ModelRequest]:
        name, _, method = path.removeprefix(PREFIX).partition(":")
        session = next((headers[key] for key in SESSION_HEADERS if headers.get(key)), None)
        contents = body.get("contents")
        contents = (
            [content for content in contents if isinstance(content, dict)]
            if isinstance(contents, list)
            else []
        )

        def record(reply: str, *, side: bool) -> ModelRequest:
            return ModelRequest(
                path=path,
                model=name or None,
                side=side,
                user_text=_last_user_text(contents),
                tool_results=_tool_results(contents),
                session_id=session,
                reply=reply,
                body=body,
            )

        stream = method == "streamGenerateContent"
        if method == "countTokens":
            return Reply(json={"totalTokens": 1}), record(SIDE, side=True)
        tools = _tools(body)
        if shell_tool(tools) is None:
            return _answer(name, [_side_part(body)], stream=stream), record(SIDE, side=True)
        cwd = _cwd(contents)
        key = script_key(session, cwd)
        move = model.next_move(key)
        if move is None:
            error = _error(400, "thirdshift FakeModel: no script left for this request")
            return error, record(NO_SCRIPT, side=False)
        reply = _play(
            move,
            name=name,
            tools=tools,
            cwd=cwd,
            session=key,
            model=model,
            stream=stream,
        )
        return reply, record(reply_name(move), side=False)


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


def _play(
    move: Move,
    *,
    name: str,
    tools: Tools,
    cwd: str | None,
    session: str,
    model: ScriptedModel,
    stream: bool,
) -> Reply:
    if isinstance(move, FaultMove):
        return _fault(move.step, name)
    parts = [{"text": text} for text in move.texts]
    if isinstance(move, FinalMove):
        return _answer(name, parts, stream=stream)
    if not isinstance(move, ToolMove):
        raise TypeError(f"not a move: {move!r}")
    call = play(move, tools, cwd, session, model)
    return _answer(name, [*parts, _function_call(call)], stream=stream)


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
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "totalTokenCount": 15,
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


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _fault(step: Fault, name: str) -> Reply:
    if isinstance(step, HttpError):
        headers = step.headers
        if step.retry_after is not None:
            headers = (("retry-after", _seconds(step.retry_after)), *headers)
        return _error(step.status, step.message or f"fake model error {step.status}", headers)
    if isinstance(step, Overloaded):
        return _error(503, "The model is overloaded. Please try again later.")
    if isinstance(step, RateLimited):
        delay = _seconds(step.retry_after)
        retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay}s"}
        message = "Resource has been exhausted (e.g. check quota)."
        return _error(429, message, (("retry-after", delay),), (retry,))
    if isinstance(step, UsageLimit):
        quota = {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
        }
        return _error(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            details=(quota,),
        )
    if isinstance(step, Hang):
        return hold_silent()
    if isinstance(step, Stall):
        return Reply(events=(("", _response(name, [{"text": ""}], last=False)),), hold=True)
    raise TypeError(f"not a fault: {step!r}")
