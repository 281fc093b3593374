"""The OpenAI Responses API as Codex uses it: ``POST /v1/responses`` (SSE) and ``GET /v1/models``.

A scripted request is one that offers the ``exec_command`` tool (Codex's unified exec); any
other one is a side request, answered with a short text and consuming nothing.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import shlex
import time
from collections.abc import Mapping
from typing import Any

from thirdshift.testing._steps import (
    Background,
    Edit,
    LoadSkill,
    Run,
)
from thirdshift.testing._tokens import INPUT_TOKENS, OUTPUT_TOKENS
from thirdshift.testing.fakemodel._admission import BEARER
from thirdshift.testing.fakemodel._reply import Reply, text_of
from thirdshift.testing.fakemodel._script import (
    NO_SCRIPT,
    SIDE,
    FaultMove,
    FinalMove,
    ModelRequest,
    Move,
    ScriptedModel,
    model_request,
    reply_name,
    turn_of,
)
from thirdshift.testing.fakemodel._turn import fault_reply

SESSION_HEADERS = ("session-id", "thread-id", "session_id")
SIDE_TEXT = "ok"
FOREGROUND_YIELD_MS = 30_000  # Codex caps a yield at 30 s; a longer command is then polled
BACKGROUND_YIELD_MS = 1_000
POLL_YIELD_MS = 30_000
POLL = "poll"
"""How a request record names a poll of a foreground command that outlived its first yield."""
_FOREGROUND_CALL = "call_fake_fg_"
_RUNNING = re.compile(r"Process running with session ID (\d+)")
_CALLS = frozenset({"function_call", "custom_tool_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_CWD = re.compile(r"<cwd>([^<]*)</cwd>")
_CONTEXT_MESSAGES = ("<environment_context>", "<skill>", "<user_instructions>", "# AGENTS.md")
"""How the user messages Codex writes itself begin (its context, a skill it inlines)."""
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    429: "rate_limit_exceeded",
    503: "service_unavailable_error",
}
_ids = itertools.count(1)

MODELS: dict[str, Any] = {"object": "list", "data": [], "models": []}
"""The answer to ``GET /v1/models``: no model list, so Codex keeps its built-in one."""


class OpenAIDialect:
    """Reads Codex's requests and answers them from ``fake_model.codex``'s scripts."""

    key_headers = (BEARER,)

    def error(self, status: int, message: str) -> Reply:
        return _error(status, message)

    def answer(
        self, path: str, headers: Mapping[str, str], body: dict[str, Any], model: ScriptedModel
    ) -> tuple[Reply, ModelRequest]:
        session = next((headers[name] for name in SESSION_HEADERS if headers.get(name)), None)
        if session is None and isinstance(body.get("prompt_cache_key"), str):
            session = body["prompt_cache_key"]
        items = body.get("input")
        items = (
            [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
        )
        request = functools.partial(
            model_request, path, body, session, _last_user_text(items), _tool_results(items)
        )
        tools = _tools(body)
        if "exec_command" not in tools:
            return _response([_message(SIDE_TEXT)]), request(reply=SIDE, side=True)
        running = _foreground_still_running(items)
        if running is not None:
            # run() means to the end: wait on the command, as a model would, taking no step.
            arguments = {"session_id": running, "chars": "", "yield_time_ms": POLL_YIELD_MS}
            poll = _call(
                "function_call", "write_stdin", foreground=True, arguments=json.dumps(arguments)
            )
            return _response([poll]), request(reply=POLL, side=False)
        move = model.next_move(session or "", turn_of(items))
        if move is None:
            error = _error(400, "thirdshift FakeModel: no script left for this request")
            return error, request(reply=NO_SCRIPT, side=False)
        return _play(move, _cwd(items), tools), request(reply=reply_name(move), side=False)


def _tools(body: dict[str, Any]) -> dict[str, str]:
    """The tools the request offers, name to type (``function`` or ``custom``)."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return {}
    return {
        tool["name"]: str(tool.get("type"))
        for tool in tools
        if isinstance(tool, dict) and isinstance(tool.get("name"), str)
    }


def _last_user_text(items: list[dict[str, Any]]) -> str | None:
    """The text of the last user message that Codex did not write itself (context, skills)."""
    for item in reversed(items):
        if item.get("type") != "message" or item.get("role") != "user":
            continue
        content = item.get("content")
        blocks = content if isinstance(content, list) else [{"text": content}]
        texts = [
            text
            for block in blocks
            if (text := text_of([block])) and not text.startswith(_CONTEXT_MESSAGES)
        ]
        if texts:
            return "".join(texts)
    return None


def _tool_results(items: list[dict[str, Any]]) -> tuple[str, ...]:
    """The outputs of the last batch of tool calls: the ones this request answers with."""
    found: list[str] = []
    seen_call = False
    for item in reversed(items):
        item_type = item.get("type")
        if item_type in _OUTPUTS and not seen_call:
            output = item.get("output")
            found.append(output if isinstance(output, str) else text_of(output))
        elif item_type in _CALLS and found:
            seen_call = True
        elif item_type != "reasoning":
            break
    return tuple(reversed(found))


def _foreground_still_running(items: list[dict[str, Any]]) -> int | None:
    """The exec session of a ``run()`` command still running when its call returned, if any."""
    if not items or items[-1].get("type") != "function_call_output":
        return None
    call_id, output = items[-1].get("call_id"), items[-1].get("output")
    if not isinstance(call_id, str) or not call_id.startswith(_FOREGROUND_CALL):
        return None
    running = _RUNNING.search(output if isinstance(output, str) else text_of(output))
    return int(running.group(1)) if running else None


def _cwd(items: list[dict[str, Any]]) -> str | None:
    """The session's working directory, as Codex's environment context states it."""
    for item in items:
        found = _CWD.search(text_of(item.get("content")))
        if found:
            return found.group(1)
    return None


def _play(move: Move, cwd: str | None, tools: Mapping[str, str]) -> Reply:
    if isinstance(move, FaultMove):
        return fault_reply(move.step, _Faults())
    if isinstance(move, FinalMove):
        return _response([_message(text) for text in move.texts])
    items = [_message(text) for text in move.texts]
    step = move.step
    if isinstance(step, Run):
        items.append(_exec(step.command, FOREGROUND_YIELD_MS, foreground=True))
    elif isinstance(step, Background):
        items.append(_exec(step.command, BACKGROUND_YIELD_MS))
    elif isinstance(step, LoadSkill):
        items.append(_exec(f"cat {shlex.quote(f'.agents/skills/{step.name}/SKILL.md')}", 10_000))
    elif isinstance(step, Edit):
        patch = _patch(step.path, step.text, cwd)
        if tools.get("apply_patch") == "custom":
            items.append(_call("custom_tool_call", "apply_patch", input=patch))
        else:
            arguments = json.dumps({"input": patch})
            items.append(_call("function_call", "apply_patch", arguments=arguments))
    return _response(items)


def _patch(path: str, text: str, cwd: str | None) -> str:
    """An ``apply_patch`` patch that makes ``path`` hold exactly ``text``."""
    lines = text.splitlines()
    full = path if path.startswith("/") or cwd is None else f"{cwd}/{path}"
    try:
        with open(full, encoding="utf-8") as existing:
            old = existing.read().splitlines()
    except OSError:
        added = "".join(f"+{line}\n" for line in lines)
        return f"*** Begin Patch\n*** Add File: {path}\n{added}*** End Patch\n"
    removed = "".join(f"-{line}\n" for line in old)
    added = "".join(f"+{line}\n" for line in lines)
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{removed}{added}*** End Patch\n"


def _exec(command: str, yield_ms: int, *, foreground: bool = False) -> dict[str, Any]:
    arguments = json.dumps({"cmd": command, "yield_time_ms": yield_ms})
    return _call("function_call", "exec_command", foreground=foreground, arguments=arguments)


def _call(item_type: str, name: str, *, foreground: bool = False, **payload: str) -> dict[str, Any]:
    """A tool call; a foreground one's id says so, for the request that carries its output."""
    number = next(_ids)
    return {
        "type": item_type,
        "id": f"fc_fake_{number:06d}",
        "call_id": f"{_FOREGROUND_CALL if foreground else 'call_fake_'}{number:06d}",
        "name": name,
        "status": "completed",
        **payload,
    }


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_fake_{next(_ids):06d}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _created() -> tuple[str, dict[str, Any]]:
    response = {"id": f"resp_fake_{next(_ids):06d}", "object": "response", "status": "in_progress"}
    return "response.created", {"type": "response.created", "response": response}


def _response(items: list[dict[str, Any]]) -> Reply:
    created = _created()
    events: list[tuple[str, dict[str, Any]]] = [created]
    for index, item in enumerate(items):
        for name in ("response.output_item.added", "response.output_item.done"):
            events.append((name, {"type": name, "output_index": index, "item": item}))
    usage = {
        "input_tokens": INPUT_TOKENS,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    }
    response = {**created[1]["response"], "status": "completed", "usage": usage}
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return Reply(events=tuple(events))


def _error(
    status: int,
    message: str,
    headers: tuple[tuple[str, str], ...] = (),
    *,
    error_type: str = "",
    **extra: Any,
) -> Reply:
    error_type = error_type or _ERROR_TYPES.get(status, "server_error")
    error = {"type": error_type, "code": error_type, "message": message, "param": None, **extra}
    return Reply(status=status, headers=headers, json={"error": error})


class _Faults:
    """How the Responses API fails (a :class:`~.turn.FaultSpeaker`)."""

    def error(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        return _error(status, message, headers)

    def at_capacity(self) -> Reply:
        message = "Selected model is at capacity. Please try a different model."
        return _error(503, message, code="server_is_overloaded")

    def too_many_requests(self, retry_after: str) -> Reply:
        retry = (("retry-after", retry_after),)
        return _error(429, "Rate limit reached, please try again later.", retry)

    def quota_spent(self, resets_at: float) -> Reply:
        return _error(
            429,
            "The usage limit has been reached",
            error_type="usage_limit_reached",
            plan_type="plus",
            resets_at=int(resets_at),
            resets_in_seconds=max(0, int(resets_at - time.time())),
        )

    def stall(self) -> Reply:
        return Reply(events=(_created(),), hold=True)
