"""Plausible events reaching every branch of each CLI's reader, for the readers' property tests.

Claude's and Codex's are one list, fed to both readers: each also meets the other's events.
"""

from __future__ import annotations

from typing import Any

from thirdshift.harness import ClaudeReader, CodexReader, GeminiReader, OpencodeReader, QwenReader

CLAUDE_AND_CODEX: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/w", "apiKeySource": "none"},
    {"type": "system", "subtype": "task_started", "task_id": "b1", "description": "Run tests"},
    {"type": "system", "subtype": "task_updated", "task_id": "b1", "patch": {"status": "killed"}},
    {
        "type": "system",
        "subtype": "task_notification",
        "task_id": "b2",
        "status": "stopped",
        "summary": "Sleep",
    },
    {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "tool_use", "name": "Bash", "input": {"command": "git commit -m x"}},
                {"type": "tool_use", "name": "Skill", "input": {"skill": "review"}},
                {
                    "type": "tool_use",
                    "name": "Read",
                    "input": {"file_path": "/w/a.py", "pattern": "p"},
                },
            ]
        },
    },
    {
        "type": "result",
        "subtype": "error_max_turns",
        "is_error": True,
        "result": "r",
        "errors": ["e1", "e2"],
        "num_turns": 3,
        "total_cost_usd": 0.25,
        "parent_tool_use_id": None,
    },
    {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "allowed_warning",
            "resetsAt": 1796101930,
            "rateLimitType": "five_hour",
            "utilization": 0.92,
        },
    },
    {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1}},
    {"type": "system", "subtype": "api_retry", "error_status": 429, "error": "rate_limit"},
    {"type": "assistant", "message": {"content": []}, "error": "server_error"},
    {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 529,
        "terminal_reason": "completed",
        "result": "You've hit your session limit · resets 5:12am (UTC)",
        "usage": {
            "input_tokens": 1,
            "cache_creation_input_tokens": 2,
            "cache_read_input_tokens": 3,
            "output_tokens": 4,
        },
        "modelUsage": {"m1": {}, "m2": {}},
        "num_turns": 1,
        "total_cost_usd": 0.0007,
    },
    {"type": "thread.started", "thread_id": "t1"},
    {
        "type": "item.started",
        "item": {
            "id": "c1",
            "type": "command_execution",
            "command": "/bin/bash -lc 'sleep 1'",
            "status": "in_progress",
        },
    },
    {
        "type": "item.updated",
        "item": {
            "id": "a1",
            "type": "collab_tool_call",
            "tool": "spawn",
            "prompt": "Run it\nnow",
            "status": "in_progress",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "f1",
            "type": "file_change",
            "changes": [{"path": "/w/a.py", "kind": "add"}, {"path": "/w/b.py", "kind": "update"}],
        },
    },
    {
        "type": "item.completed",
        "item": {"id": "m1", "type": "mcp_tool_call", "server": "gh", "tool": "search"},
    },
    {"type": "item.completed", "item": {"id": "w1", "type": "web_search", "query": "q"}},
    {"type": "item.completed", "item": {"id": "g1", "type": "agent_message", "text": "done"}},
    {"type": "item.completed", "item": {"id": "e1", "type": "error", "message": "warn"}},
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 1, "cached_input_tokens": 2, "output_tokens": 3},
    },
    {"type": "turn.failed", "error": {"message": "boom"}},
    {
        "type": "turn.failed",
        "error": {"message": "You've hit your usage limit. Try again at 5:12 AM."},
    },
    {"type": "error", "message": "Reconnecting... 1/5"},
]

_TOKENS = {"input": 20, "output": 8, "reasoning": 0, "cache": {"read": 1, "write": 0}}

TEMPLATES: dict[type[Any], list[dict[str, Any]]] = {
    ClaudeReader: CLAUDE_AND_CODEX,
    CodexReader: CLAUDE_AND_CODEX,
    OpencodeReader: [
        {"type": "step_start", "sessionID": "ses_1", "part": {"type": "step-start"}},
        {"type": "text", "sessionID": "ses_1", "part": {"id": "p1", "text": "done"}},
        {
            "type": "tool_use",
            "sessionID": "ses_1",
            "part": {"tool": "bash", "state": {"input": {"command": "git push"}}},
        },
        {"type": "tool_use", "part": {"tool": "read", "state": {"input": {"filePath": "/w/a"}}}},
        {"type": "tool_use", "part": {"tool": "skill", "state": {"input": {"name": "review"}}}},
        {"type": "step_finish", "part": {"reason": "stop", "tokens": _TOKENS, "cost": 0.5}},
        {
            "type": "error",
            "error": {"name": "APIError", "data": {"message": "m", "statusCode": 401}},
        },
    ],
    GeminiReader: [
        {"type": "init", "session_id": "s1", "model": "auto"},
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "message", "role": "assistant", "content": "hel", "delta": True},
        {
            "type": "tool_use",
            "tool_name": "run_shell_command",
            "parameters": {"command": "sleep 1", "is_background": True},
        },
        {"type": "tool_use", "tool_name": "read_file", "parameters": {"file_path": "/w/a"}},
        {"type": "tool_use", "tool_name": "activate_skill", "parameters": {"name": "review"}},
        {"type": "tool_result", "tool_id": "t", "status": "success", "output": "x"},
        {"type": "error", "severity": "warning", "message": "loop"},
        {
            "type": "result",
            "status": "error",
            "error": {"type": "unknown", "message": "[API Error]"},
            "stats": {
                "input_tokens": 1,
                "cached": 2,
                "output_tokens": 3,
                "models": {"gemini-x": {}},
            },
        },
    ],
    QwenReader: [
        {"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/w", "model": "m"},
        {
            "type": "system",
            "subtype": "task_updated",
            "task_id": "b1",
            "patch": {"status": "killed"},
        },
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "tool_use", "name": "run_shell_command", "input": {"command": "ls"}},
                    {"type": "tool_use", "name": "skill", "input": {"skill": "review"}},
                    {"type": "tool_use", "name": "read_file", "input": {"file_path": "/w/a"}},
                ]
            },
        },
        {
            "type": "result",
            "subtype": "error_during_execution",
            "is_error": True,
            "num_turns": 1,
            "result": "r",
            "usage": {"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 3},
            "error": {"message": "[API Error: 401]"},
            "parent_tool_use_id": None,
        },
    ],
}
