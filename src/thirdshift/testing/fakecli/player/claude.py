"""The fake ``claude -p --output-format stream-json --verbose``.

Shaped on Claude Code 2.1.197 (``/work/shared/transcripts/claude-*``, CLI-FACTS.md):

- ``system``/``init`` first, with ``cwd``, ``session_id``, ``model``, ``permissionMode``,
  ``apiKeySource`` (``ANTHROPIC_API_KEY`` when that variable is set, else ``none``), the tools;
- one ``assistant`` line per content block; a tool use is answered by a ``user`` line holding
  its ``tool_result``; every line carries the ``session_id`` and a ``uuid``;
- a background Bash gives ``system``/``task_started`` between the tool use and its result; when
  the turn ends with it still running, the ``result`` comes first, then the kill:
  ``system``/``task_updated`` (``patch.status: "killed"``) and ``system``/``task_notification``
  (``status: "stopped"``); a task that finished by itself instead gets ``completed`` notices
  and a turn of its own (a second ``init``, an ``assistant`` line and a ``result`` with
  ``origin.kind: "task-notification"``), before any kill;
- a Resume of a session whose tasks were killed replays their "No completion record" notices
  twice, then an ``init`` and an empty ``result`` (``num_turns: 0``), then the real turn;
- a Resume from another cwd (or of an unknown id) fails: exit 1, an ``error_during_execution``
  ``result`` whose ``errors`` say "No conversation found with session ID: …", same on stderr.

Ids are predictable: ``toolu_fake_<call>_<n>``, ``msg_fake_<call>_<n>``, tasks ``b<call><n>``.
"""

from __future__ import annotations

import os
import time

from .dialect import Context, Dialect
from .procs import run_command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .procs import Task

VERSION = "2.1.197"
DEFAULT_MODEL = "claude-opus-4-8"
TOOLS = [
    "Task", "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterWorktree",
    "ExitWorktree", "NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup", "SendMessage",
    "Skill", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
    "WebFetch", "WebSearch", "Workflow", "Write",
]  # fmt: skip
SKILLS_DIR = os.path.join(".claude", "skills")
NO_COMPLETION_RECORD = (
    "No completion record was found for this background shell command from the previous "
    "session. It may have been stopped (via the UI, Monitor timeout, or agent teardown — these "
    "leave no transcript marker), or it may have been running when the previous Claude Code "
    "process exited. Check the output file for partial results before assuming it completed."
)
FOLLOW_UP_TEXT = "The background command finished."
TURN_COST_USD = 0.000235
_MESSAGE_USAGE = {
    "input_tokens": 12,
    "output_tokens": 1,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}

# Flags of `claude` that take a value; any other flag is taken to be a switch.
_VALUED = frozenset(
    {
        "--output-format", "--input-format", "--model", "--permission-mode", "--resume", "-r",
        "--effort", "--session-id", "--append-system-prompt", "--system-prompt",
        "--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools",
        "--max-turns", "--add-dir", "--mcp-config", "--settings", "--debug-file",
        "--fallback-model", "--agents", "--setting-sources", "--permission-prompt-tool",
        "--max-budget-usd", "--betas", "--plugin-dir",
    }
)  # fmt: skip


class Parsed:
    """What the fake takes from ``claude``'s argv (leniently: unknown flags are skipped)."""

    def __init__(self, args: list[str]) -> None:
        self.print_mode = False
        self.verbose = False
        self.output_format: str | None = None
        self.resume: str | None = None
        self.model: str | None = None
        self.permission_mode: str | None = None
        self.skip_permissions = False
        values: dict[str, str] = {}
        index = 0
        while index < len(args):
            arg = args[index]
            index += 1
            if arg == "--":
                break
            name, equals, value = arg.partition("=")
            if name in _VALUED:
                if not equals:
                    if index >= len(args):
                        break
                    value = args[index]
                    index += 1
                values[name] = value
            elif arg in ("-p", "--print"):
                self.print_mode = True
            elif arg == "--verbose":
                self.verbose = True
            elif arg == "--dangerously-skip-permissions":
                self.skip_permissions = True
        self.output_format = values.get("--output-format")
        self.resume = values.get("--resume", values.get("-r"))
        self.model = values.get("--model")
        self.permission_mode = values.get("--permission-mode")

    def error(self) -> tuple[str, int] | None:
        """The message and exit code the real CLI would refuse this argv with, if it would."""
        if not self.print_mode:
            return "fake claude: only print mode (-p) is faked", 2
        if self.output_format != "stream-json":
            return "fake claude: only --output-format stream-json is faked", 2
        if not self.verbose:
            return (
                "Error: When using --print, --output-format=stream-json requires --verbose",
                1,
            )
        bypass = self.skip_permissions or self.permission_mode == "bypassPermissions"
        if bypass and os.geteuid() == 0 and os.environ.get("IS_SANDBOX") != "1":
            return (
                "--dangerously-skip-permissions cannot be used with root/sudo privileges "
                "for security reasons",
                1,
            )
        return None


class ClaudeDialect(Dialect):
    """Plays steps as Claude Code's stream-json."""

    def __init__(self, ctx: Context, parsed: Parsed, replay: list[dict[str, Any]]) -> None:
        super().__init__(ctx)
        self.model = ctx.model or DEFAULT_MODEL
        self.permission_mode = parsed.permission_mode or "default"
        self.replay = replay
        self.clock = time.monotonic()
        self.counts = {"uuid": 0, "msg": 0, "tool": 0, "task": 0}
        self.tool_uses = 0
        self.final = ""

    # Making events

    def _next(self, what: str) -> int:
        self.counts[what] += 1
        return self.counts[what]

    def _uuid(self) -> str:
        return f"{self.ctx.number:08x}-0000-4000-8000-{self._next('uuid'):012x}"

    def _emit(self, event: dict[str, Any]) -> None:
        if self.ctx.session_id is not None:
            event["session_id"] = self.ctx.session_id
        event["uuid"] = self._uuid()
        self.ctx.out.line(event)

    def _skills(self) -> list[str]:
        folder = os.path.join(self.ctx.cwd, SKILLS_DIR)
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        return sorted(n for n in names if os.path.isfile(os.path.join(folder, n, "SKILL.md")))

    def _memory_path(self) -> str:
        home = os.environ.get("HOME", "/root")
        project = self.ctx.cwd.replace("/", "-").replace(".", "-")
        return f"{home}/.claude/projects/{project}/memory/"

    def _init(self) -> None:
        skills = self._skills()
        event: dict[str, Any] = {"type": "system", "subtype": "init", "cwd": self.ctx.cwd}
        if self.ctx.session_id is not None:
            event["session_id"] = self.ctx.session_id
        event.update(
            tools=TOOLS,
            mcp_servers=[],
            model=self.model,
            permissionMode=self.permission_mode,
            slash_commands=[*skills, "clear", "compact", "init", "review"],
            apiKeySource="ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else "none",
            claude_code_version=VERSION,
            output_style="default",
            agents=["general-purpose"],
            skills=skills,
            plugins=[],
            analytics_disabled=True,
            product_feedback_disabled=True,
            uuid=self._uuid(),
            memory_paths={"auto": self._memory_path()},
            fast_mode_state="off",
        )
        self.ctx.out.line(event)

    def _assistant(self, block: dict[str, Any], message_id: str | None = None) -> None:
        self._emit(
            {
                "type": "assistant",
                "message": {
                    "id": message_id or f"msg_fake_{self.ctx.number}_{self._next('msg')}",
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [block],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": dict(_MESSAGE_USAGE),
                    "context_management": None,
                },
                "parent_tool_use_id": None,
                "request_id": f"req_fake_{self.ctx.number}_{self.counts['msg']}",
            }
        )

    def _tool_use(self, name: str, tool_input: dict[str, Any]) -> str:
        tool_use_id = f"toolu_fake_{self.ctx.number}_{self._next('tool')}"
        self.tool_uses += 1
        self._assistant({"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input})
        return tool_use_id

    def _tool_result(
        self, tool_use_id: str, content: str, *, is_error: bool, details: object
    ) -> None:
        self._emit(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": tool_use_id,
                            "type": "tool_result",
                            "content": content,
                            "is_error": is_error,
                        }
                    ],
                },
                "parent_tool_use_id": None,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                "tool_use_result": f"Error: {content}" if is_error else details,
            }
        )

    def _result(self, **fields: Any) -> None:
        turns = fields.pop("num_turns", self.tool_uses + 1)
        event: dict[str, Any] = {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "api_error_status": None,
            "duration_ms": int((time.monotonic() - self.clock) * 1000),
            "duration_api_ms": 0,
            "num_turns": turns,
            "result": self.final,
            "stop_reason": "end_turn",
            "total_cost_usd": round(TURN_COST_USD * turns, 6) if turns else 0,
            "usage": {
                "input_tokens": 12 * turns,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 7 * turns,
                "service_tier": "standard",
            },
            "modelUsage": {},
            "permission_denials": [],
            "terminal_reason": "completed",
            "fast_mode_state": "off",
        }
        event.update(fields)
        self._emit({key: value for key, value in event.items() if value is not _DROP})

    def _notification(self, task_id: str, tool_use_id: str, status: str, summary: str) -> None:
        self._emit(
            {
                "type": "system",
                "subtype": "task_notification",
                "task_id": task_id,
                "tool_use_id": tool_use_id,
                "status": status,
                "output_file": "",
                "summary": summary,
            }
        )

    def _task_updated(self, task_id: str, status: str) -> None:
        self._emit(
            {
                "type": "system",
                "subtype": "task_updated",
                "task_id": task_id,
                "patch": {"status": status, "end_time": int(time.time() * 1000)},
            }
        )

    # The steps

    def begin(self) -> None:
        if self.replay:
            for _ in range(2):
                for task in self.replay:
                    self._notification(
                        task["task_id"], task["tool_use_id"], "stopped", NO_COMPLETION_RECORD
                    )
            self._init()
            self._result(
                num_turns=0,
                result="",
                stop_reason=None,
                terminal_reason=_DROP,
                origin={"kind": "task-notification"},
            )
        self._init()

    def refuse_resume(self, session_id: str) -> int:
        message = f"No conversation found with session ID: {session_id}"
        self.ctx.out.err(message)
        self._result(
            subtype="error_during_execution",
            is_error=True,
            num_turns=0,
            result=_DROP,
            stop_reason=None,
            terminal_reason=_DROP,
            errors=[message],
        )
        return 1

    def run(self, command: str, description: str | None) -> None:
        tool_input: dict[str, Any] = {"command": command}
        if description is not None:
            tool_input["description"] = description
        tool_use_id = self._tool_use("Bash", tool_input)
        out, err, code = run_command(
            command, self.ctx.cwd, lambda pid, start: self.ctx.started(pid, start, "run", command)
        )
        text = (out + err).rstrip("\n")
        details = {
            "stdout": out.rstrip("\n"),
            "stderr": err.rstrip("\n"),
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        }
        if code == 0:
            self._tool_result(tool_use_id, text, is_error=False, details=details)
        else:
            content = f"Exit code {code}\n{text}" if text else f"Exit code {code}"
            self._tool_result(tool_use_id, content, is_error=True, details=details)

    def edit(self, path: str, text: str) -> None:
        target = self.ctx.path(path)
        try:
            with open(target, encoding="utf-8") as file:
                old: str | None = file.read()
        except OSError:
            old = None
        if old is None:
            tool_use_id = self._tool_use("Write", {"file_path": target, "content": text})
        else:
            tool_use_id = self._tool_use(
                "Edit",
                {"file_path": target, "old_string": old, "new_string": text, "replace_all": False},
            )
        self.write_file(target, text)
        if old is None:
            content = f"File created successfully at: {target}"
        else:
            content = f"The file {target} has been updated successfully."
        kind = "create" if old is None else "update"
        self._tool_result(
            tool_use_id, content, is_error=False, details={"type": kind, "filePath": target}
        )

    def load_skill(self, name: str) -> None:
        tool_use_id = self._tool_use("Skill", {"skill": name})
        if os.path.isfile(os.path.join(self.ctx.cwd, SKILLS_DIR, name, "SKILL.md")):
            self._tool_result(
                tool_use_id,
                f"Launching skill: {name}",
                is_error=False,
                details={"success": True, "commandName": name},
            )
        else:
            self._tool_result(tool_use_id, f"Unknown skill: {name}", is_error=True, details=None)

    def background(self, command: str, description: str | None, grace: float) -> None:
        described = command if description is None else description
        tool_use_id = self._tool_use(
            "Bash", {"command": command, "description": described, "run_in_background": True}
        )
        task = self.start_task(command, described, grace)
        task.task_id = f"b{self.ctx.number:04d}{self._next('task'):04d}"
        task.tool_use_id = tool_use_id
        self._emit(
            {
                "type": "system",
                "subtype": "task_started",
                "task_id": task.task_id,
                "tool_use_id": tool_use_id,
                "description": described,
                "task_type": "local_bash",
            }
        )
        self._tool_result(
            tool_use_id,
            f"Command running in background with ID: {task.task_id}. Output is being written "
            f"to: {task.output}. You will be notified when it completes. To check interim "
            "output, use Read on that file path.",
            is_error=False,
            details={
                "stdout": "",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": False,
                "backgroundTaskId": task.task_id,
            },
        )

    def say(self, text: str) -> None:
        self._assistant({"type": "text", "text": text})
        self.final = text

    def codex_error(self, message: str) -> None:
        raise ValueError("codex_error() is a Codex step")

    def fail_turn(self, message: str, api_error_status: int | None) -> None:
        if api_error_status is None:
            self._result(
                subtype="error_during_execution",
                is_error=True,
                result=_DROP,
                stop_reason=None,
                terminal_reason=_DROP,
                errors=[message],
            )
        else:  # an API error: a synthetic assistant message, and "success" that is an error
            self._assistant(
                {"type": "text", "text": message}, message_id=f"{self._uuid()}-synthetic"
            )
            self.final = message
            self._result(
                is_error=True, api_error_status=api_error_status, stop_reason="stop_sequence"
            )
        self._finish_tasks()

    def end_turn(self) -> None:
        self._result()
        self._finish_tasks()

    def _finish_tasks(self) -> None:
        """After the result: wait out the grace, report tasks that finished, kill the rest."""
        live = [task for task in self.tasks if not task.finished]
        if not live:
            return
        deadline = time.monotonic() + max(task.grace for task in live)
        while any(task.running() for task in live) and time.monotonic() < deadline:
            time.sleep(0.01)
        done = [task for task in live if not task.running()]
        for task in done:
            task.finished = True
            self._task_updated(task.task_id, "completed")
            self._notification(
                task.task_id,
                task.tool_use_id,
                "completed",
                f'Background command "{task.description}" completed (exit code {task.returncode})',
            )
        if done:  # Claude takes up the notification in a turn of its own
            self._init()
            self.final = FOLLOW_UP_TEXT
            self.say(FOLLOW_UP_TEXT)
            self._result(num_turns=1, origin={"kind": "task-notification"})
        killed: list[Task] = []
        for task in live:
            if not task.finished:
                task.kill()
                killed.append(task)
                self._task_updated(task.task_id, "killed")
                self._notification(task.task_id, task.tool_use_id, "stopped", task.description)
        if killed:
            self.ctx.remember_killed(
                [
                    {"task_id": t.task_id, "tool_use_id": t.tool_use_id, "command": t.command}
                    for t in killed
                ]
            )


class _Drop:
    """Marks a field of the result that this kind of result leaves out."""


_DROP: Any = _Drop()
