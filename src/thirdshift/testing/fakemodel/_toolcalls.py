"""The steps as function calls to the tools a request offers, for the APIs with plain tool lists.

opencode, Gemini CLI and Qwen Code each name their tools their own way (opencode's ``bash`` and
``write``, Gemini's and Qwen's ``run_shell_command`` and ``write_file``) and name the arguments
their own way too (``filePath``, ``file_path``). So a call is built from what the request
offers: the tool picked by name, each argument by the properties its schema declares. A request
is scripted when it offers a shell tool; a side request (a title, a router, a memory agent)
offers none.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thirdshift.testing._steps import Background, Edit, LoadSkill, Run
from thirdshift.testing.fakemodel._script import ScriptedModel, ToolMove
from thirdshift.testing.fakemodel._steps import (
    ToolStep,
)

SHELL_TOOLS = ("bash", "run_shell_command")
"""opencode's shell tool, then Gemini CLI's and Qwen Code's."""
WRITE_TOOLS = ("write", "write_file")
READ_TOOLS = ("read", "read_file")
SKILL_TOOLS = ("skill", "activate_skill")

Tools = Mapping[str, frozenset[str]]
"""What a request offers: each tool's name, and the names of the arguments its schema declares."""


@dataclass(frozen=True)
class ToolCall:
    """One function call of the model: the tool's name and its arguments."""

    name: str
    arguments: Mapping[str, Any]


def tool_arguments(schema: Any) -> frozenset[str]:
    """The argument names a JSON schema of a tool's parameters declares (none if unreadable)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return frozenset()
    return frozenset(name for name in properties if isinstance(name, str))


def script_key(session: str | None, cwd: str | None) -> str:
    """Which script a request plays: its session's, else its working directory's.

    Gemini CLI and Qwen Code send no session id, so their sessions are told apart by the
    directory they run in: sessions in different worktrees play their own scripts at once,
    sessions in one directory play them one after the other (a Resume takes the next).
    """
    if session:
        return session
    return f"cwd:{cwd}" if cwd else ""


def shell_tool(tools: Tools) -> str | None:
    """The shell tool the request offers, if any: what makes a request a scripted one."""
    return next((name for name in SHELL_TOOLS if name in tools), None)


def _offered(tools: Tools, names: tuple[str, ...]) -> str | None:
    return next((name for name in names if name in tools), None)


def _path_argument(arguments: frozenset[str]) -> str:
    """The argument that takes a file's path: ``filePath``, ``file_path``, ``absolute_path``."""
    return next((name for name in sorted(arguments) if "path" in name.lower()), "file_path")


def absolute(path: str, cwd: str | None) -> str:
    """``path`` under ``cwd`` when it is relative and the cwd is known."""
    return path if os.path.isabs(path) or cwd is None else os.path.join(cwd, path)


def play(
    move: ToolMove, tools: Tools, cwd: str | None, session: str, model: ScriptedModel
) -> ToolCall:
    """The call that plays ``move``; an edit of an existing file reads it first, in two calls."""
    if needs_read_first(move.step, tools, cwd, prepared=move.prepared):
        model.put_back(session, ToolMove(move.step, prepared=True))
    return call_for(move.step, tools, cwd, prepared=move.prepared)


def call_for(step: ToolStep, tools: Tools, cwd: str | None, *, prepared: bool) -> ToolCall:
    """The call that plays ``step`` with the tools offered (the request offers a shell tool).

    ``prepared``: the file an :class:`Edit` replaces was read already in this session (opencode
    refuses to write over a file it has not read; reading first costs the others nothing).
    """
    shell = shell_tool(tools) or SHELL_TOOLS[0]
    if isinstance(step, Run):
        return _shell(shell, tools, step.command, step.described, background=False)
    if isinstance(step, Background):
        return _shell(shell, tools, step.command, step.described, background=True)
    if isinstance(step, LoadSkill):
        skill = _offered(tools, SKILL_TOOLS)
        if skill is None:
            path = shlex.quote(f".agents/skills/{step.name}/SKILL.md")
            return _shell(shell, tools, f"cat {path}", f"cat {path}", background=False)
        declared = tools[skill]
        argument = next((name for name in ("name", "skill") if name in declared), "name")
        return ToolCall(skill, {argument: step.name})
    if isinstance(step, Edit):
        return _edit(step, tools, cwd, shell, prepared=prepared)
    raise TypeError(f"not a tool step: {step!r}")


def needs_read_first(step: ToolStep, tools: Tools, cwd: str | None, *, prepared: bool) -> bool:
    """Whether ``step`` is an edit of an existing file that must be read first."""
    if not isinstance(step, Edit) or prepared:
        return False
    if _offered(tools, WRITE_TOOLS) is None or _offered(tools, READ_TOOLS) is None:
        return False
    return os.path.exists(absolute(step.path, cwd))


def _edit(step: Edit, tools: Tools, cwd: str | None, shell: str, *, prepared: bool) -> ToolCall:
    path = absolute(step.path, cwd)
    if needs_read_first(step, tools, cwd, prepared=prepared):
        read = _offered(tools, READ_TOOLS) or READ_TOOLS[0]
        return ToolCall(read, {_path_argument(tools[read]): path})
    write = _offered(tools, WRITE_TOOLS)
    if write is None:
        command = f"printf %s {shlex.quote(step.text)} > {shlex.quote(path)}"
        return _shell(shell, tools, command, f"write {step.path}", background=False)
    return ToolCall(write, {_path_argument(tools[write]): path, "content": step.text})


def _shell(
    shell: str, tools: Tools, command: str, description: str, *, background: bool
) -> ToolCall:
    declared = tools.get(shell, frozenset())
    flag = "is_background" in declared
    if background and not flag:
        # No background flag (opencode): a shell `&` child with its output elsewhere returns
        # at once and goes on running; one that kept the tool's stdout would hold the tool.
        command = f"({command}) </dev/null >/dev/null 2>&1 &"
    arguments: dict[str, Any] = {"command": command}
    if flag:
        arguments["is_background"] = background
    if "description" in declared:
        arguments["description"] = description
    return ToolCall(shell, arguments)
