"""The fake ``qwen -o stream-json`` (Qwen Code 0.24.4).

Its events are the real ones of ``templates/qwen.jsonl``, filled in: Claude Code's shape, with
Qwen's own fields (``OTHER-CLIS.md`` of the captures): ``system/init`` (its ``uuid`` is the
session id), a ``stream_event`` ``goal_state``, ``assistant`` lines (``run_shell_command`` and
``write_file`` tool uses), ``user`` tool results, ``result`` (no cost); ``session_id`` on every
line. An API error is an ``assistant`` line ``[API Error: <status> <message>]`` and a ``result``
``error_during_execution``, exit 1.

Background work (``is_background: true``) is killed at the end of the call (after its
``grace``, as Claude's) and nothing in the stream says so; only its status file does, as Qwen's
own does:
``$HOME/.qwen/tmp/<sha256 of the cwd>/background-shells/<session id>/shell-<id>.status.json``
holds ``{"id", "command", "pid", "outputFile", "status", "startTime"}``, ``status`` ``running``
while it runs, then ``cancelled`` (killed) or ``completed`` (with ``exitCode``), with ``endTime``.
(The captures show only ``status: "cancelled"`` and ``endTime``; the file's name and other
fields are the fake's.)

The fake runs as an entry process and a worker that plays the call (``procs.split_off_worker``):
a signal to the entry alone kills it and leaves the worker running, as the real one's three
processes do; only a signal to the group stops the call. SIGINT or SIGTERM to the worker: a
running command is killed and its result is ``[Operation Cancelled] …``, stderr says
``Operation cancelled.``, no ``result``, and the fake dies by the signal. ``-r <id>`` of a
session not made in this cwd: exit 1, no stdout, ``No saved session found with ID <id>. …``
on stderr when the id is a UUID (Qwen looks it up as an id), else ``No saved session found with
title "<id>".``. With ``-y`` (and no ``QWEN_CODE_SUPPRESS_YOLO_WARNING=1``) it prints its
yolo warning on stderr first, as the real one does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import time
from typing import TYPE_CHECKING, Any

from thirdshift.testing._tokens import usage as _tokens
from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._argv import Argv
from thirdshift.testing.fakecli._dialect import Profile
from thirdshift.testing.fakecli._gemini import CREATED, OVERWRITTEN, parse_like_gemini
from thirdshift.testing.fakecli._state import write_text
from thirdshift.testing.fakecli._templates import event, load

if TYPE_CHECKING:
    from thirdshift.testing.fakecli._dialect import Played, Task

TEMPLATES = load("qwen")
SESSION_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}(-agent-[\w.-]+)?",
    re.IGNORECASE,
)
"""What Qwen Code 0.24.4 takes for a session id (its ``isValidSessionId``); else a title."""
_PLAIN = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""A session id that can name a folder as it is."""
CANCELLED = (
    "[Operation Cancelled] Reason: The tool had already completed; its output was discarded. "
    "User intentionally cancelled. Stop and await further instructions; do not retry."
)
"""The tool result of a command cancelled by a signal (qwen-sigINT-group/stdout.jsonl:4)."""
YOLO_WARNING = (
    "Warning: running headless with --yolo / approval-mode=yolo and no sandbox. All tool calls "
    "(shell, write, edit) auto-execute at this process's privilege level. Configure "
    "tools.executionSandbox on Linux or a supported legacy sandbox via --sandbox / QWEN_SANDBOX, "
    "or set QWEN_CODE_SUPPRESS_YOLO_WARNING=1 to silence this notice."
)

PROFILE = Profile(
    valued_flags=frozenset(
        {
            "-m", "--model", "-r", "--resume", "-p", "--prompt", "-o", "--output-format",
            "--auth-type", "--approval-mode", "--openai-base-url", "--openai-api-key",
            "--input-format", "--max-session-turns", "--max-wall-time", "--max-tool-calls",
            "-e", "--extensions", "--include-directories",
        }
    ),
    resumes="cwd",
    dies_by_stop=True,
    runs_a_worker=True,  # three processes, really: see _procs.split_off_worker
)  # fmt: skip


_NO_OUTPUT = (  # what Qwen 0.24.4 answers for a command that printed nothing
    "Command: {command}\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: {code}\n"
    "Signal: (none)\nProcess Group PGID: {pgid}"
)


def parse(args: list[str]) -> Argv:
    """``qwen``'s argv (Gemini CLI's, with flags of its own), and how the fake refuses what it
    does not fake."""
    return parse_like_gemini("qwen", args, PROFILE.valued_flags)


def _now() -> int:
    return int(time.time() * 1000)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class Qwen:
    """Plays steps as ``qwen -o stream-json``."""

    def __init__(self, call: Played, argv: Argv, replay: list[dict[str, Any]]) -> None:
        self.call = call
        self.model = argv.model
        self.permission_mode = argv.permission_mode or "default"
        self.tools = 0
        self.final = ""
        self.running: str | None = None
        """The tool use id of the command running now, if one is."""
        self.shells: list[tuple[Task, dict[str, Any], str]] = []
        """Background shells: the task, its status, its status file."""
        self.clock = time.monotonic()
        self.lines = 0

    def _uuid(self) -> str:
        """A fresh line uuid, predictable as Claude's (session ids start 00000000, these not)."""
        self.lines += 1
        return f"{self.call.number:08x}-0000-4000-8000-{self.lines:012x}"

    def _emit(self, name: str, **fills: Any) -> None:
        if "uuid" not in fills:
            fills["uuid"] = self._uuid()
        made = event(TEMPLATES[name], fills)
        if "session_id" in made:
            made["session_id"] = self.call.session_id
            if self.call.session_id is None:
                del made["session_id"]
        self.call.out.line(made)

    def _assistant(self, block: dict[str, Any], stop_reason: str | None = None) -> None:
        line_id = self._uuid()  # the message's id is its line's uuid
        message: dict[str, Any] = {
            "id": line_id,
            "content": [block],
            "stop_reason": stop_reason,
            "usage": _tokens(1),
        }
        if self.model is not None:
            message["model"] = self.model
        self._emit("assistant", uuid=line_id, message=message)

    def _tool_use(self, name: str, tool_input: dict[str, Any]) -> str:
        self.tools += 1
        tool_id = f"call_fake_{self.call.number}_{self.tools}"
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        self._assistant(block, "tool_use")
        return tool_id

    def _tool_result(self, tool_id: str, content: str, *, is_error: bool = False) -> None:
        block = {"type": "tool_result", "tool_use_id": tool_id, "is_error": is_error}
        self._emit("tool_result", message={"content": [{**block, "content": content}]})

    def _shell(self, step: steps.Run | steps.Background, background: bool) -> str:
        return self._tool_use("run_shell_command", steps.shell_tool_input(step, background))

    def _turns(self) -> dict[str, Any]:
        duration = int((time.monotonic() - self.clock) * 1000)
        return {"duration_ms": duration, "duration_api_ms": duration, "num_turns": self.tools + 1}

    def _status_file(self, shell_id: str) -> str:
        home = os.environ.get("HOME", "/root")
        project = _digest(self.call.cwd)
        session = self.call.session_id or "no-session"
        if not _PLAIN.fullmatch(session) or session in (".", ".."):  # a hostile scripted id
            session = f"unsafe-{_digest(session)[:16]}"
        folder = os.path.join(home, ".qwen", "tmp", project, "background-shells", session)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return os.path.join(folder, f"shell-{shell_id}.status.json")

    def _end_shells(self, *, grace: bool = True) -> None:
        """Kill the background shells still running (after their grace, unless stopped), and
        say how each ended in its file."""
        shells = [shell for shell in self.shells if shell[1]["status"] == "running"]
        if grace:
            self.call.wait_out_grace([task for task, _, _ in shells])
        for task, status, path in shells:
            if task.process.running():
                task.process.kill()
                status["status"] = "cancelled"
            else:
                status.update(status="completed", exitCode=task.process.exit_code)
            status["endTime"] = _now()
            write_text(path, json.dumps(status, indent=2))

    # The steps

    def begin(self) -> None:
        if self.permission_mode == "yolo" and not os.environ.get("QWEN_CODE_SUPPRESS_YOLO_WARNING"):
            self.call.out.err(YOLO_WARNING)
        session_id = self.call.session_id
        fills: dict[str, Any] = {"cwd": self.call.cwd, "permission_mode": self.permission_mode}
        if self.model is not None:
            fills["model"] = self.model
        self._emit("init", uuid=session_id or self._uuid(), **fills)
        self._emit("goal_state")

    def refuse_resume(self) -> int:
        resumed = self.call.resumed or ""
        if SESSION_ID.fullmatch(resumed):  # Qwen looks a session id up as an id, else as a title
            self.call.out.err(
                f"No saved session found with ID {resumed}. Run `qwen --resume` without an ID "
                "to choose from existing sessions."
            )
        else:
            self.call.out.err(f'No saved session found with title "{resumed}".')
        return 1

    def run(self, step: steps.Run) -> None:
        tool_id = self._shell(step, background=False)
        self.running = tool_id
        out, err, code = self.call.run_command(step.command)
        self.running = None
        output = (out + err).rstrip("\n")
        if not output:  # in the command's process group, which is the fake's own
            output = _NO_OUTPUT.format(command=step.command, code=code, pgid=os.getpgid(0))
        self._tool_result(tool_id, output, is_error=code != 0)

    def edit(self, step: steps.Edit) -> None:
        target = self.call.path(step.path)
        tool_id = self._tool_use("write_file", {"file_path": target, "content": step.text})
        created = self.call.write_file(target, step.text)
        self._tool_result(tool_id, (CREATED if created else OVERWRITTEN).format(path=target))

    def load_skill(self, step: steps.LoadSkill) -> None:
        self.run(steps.read_skill(self.call.skills_dir, step.name))

    def background(self, step: steps.Background) -> None:
        tool_id = self._shell(step, background=True)
        task = self.call.start_task(step)
        shell_id = f"bg_{self.call.number:04x}{len(self.shells):04x}"
        path = self._status_file(shell_id)
        status = {
            "id": shell_id,
            "command": step.command,
            "pid": task.process.pid,
            "outputFile": task.output,
            "status": "running",
            "startTime": _now(),
        }
        write_text(path, json.dumps(status, indent=2))
        self.shells.append((task, status, path))
        self._tool_result(tool_id, f"Background shell {shell_id} started (pid {task.process.pid}).")

    def say(self, step: steps.Say) -> None:
        self._assistant({"type": "text", "text": step.text})
        self.final = step.text

    def fail_turn(self, step: steps.FailTurn) -> int:
        text = step.message
        if step.api_error_status is not None:
            text = f"[API Error: {step.api_error_status} {step.message}]"
            line_id = self._uuid()
            message = {"id": line_id, "content": [{"type": "text", "text": text}]}
            self._emit("assistant_api_error", uuid=line_id, message=message)
        self._emit("result_error", error={"message": text}, **self._turns())
        self._end_shells()
        return 1

    def end_turn(self) -> None:
        turns = self._turns()
        # A turn that called no tool ends with a request of its memory extraction, which its
        # counts include. They are the whole session's, its earlier calls' included; its
        # num_turns is the call's own.
        extraction = 1 if self.tools == 0 else 0
        requests = self.call.session_requests(turns["num_turns"] + extraction)
        self._emit("result", result=self.final, usage=_tokens(requests), **turns)
        self._end_shells()

    def stopped(self, signo: int) -> None:
        """Qwen cancels the running command, says so, and dies by the signal."""
        if signo in (signal.SIGINT, signal.SIGTERM):
            if self.running is not None:
                self._tool_result(self.running, CANCELLED, is_error=True)
            self.call.out.err("Operation cancelled.")
        self._end_shells(grace=False)


def dialect(call: Played, argv: Argv, replay: list[dict[str, Any]]) -> Qwen:
    """The dialect of one call."""
    return Qwen(call, argv, replay)
