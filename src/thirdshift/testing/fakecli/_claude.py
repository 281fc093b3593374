"""The fake ``claude -p --output-format stream-json --verbose`` (Claude Code 2.1.197).

Its events are the real ones of ``templates/claude.jsonl``, filled in. What it does as the real
CLI does (``docs/cli-facts.md``): one ``assistant`` line per content block, each tool use
answered by a ``user`` line; the kill of background work reported *after* the ``result``
(``task_updated`` killed, ``task_notification`` stopped), or, for work done within the grace,
``completed`` notices and a turn of its own; a Resume of a session whose tasks were killed
replays their "No completion record" notices twice, an ``init`` and an empty ``result``; a
Resume from another cwd, or of an unknown id, fails. Stopped by SIGTERM (a watchdog, an
interrupt) while background work still runs, during the turn or the grace after it, it reports
that work stopped and killed on its way out (``task_notification`` stopped, then
``task_updated`` killed, as the real one does then), and exits 143.

Ids are predictable: ``toolu_fake_<call>_<n>``, ``msg_fake_<call>_<n>``, tasks ``b<call><n>``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import time
from typing import TYPE_CHECKING, Any

from thirdshift.testing._tokens import INPUT_TOKENS, OUTPUT_TOKENS
from thirdshift.testing._wire import CLAUDE_TMP_ENV
from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._argv import Argv, flags
from thirdshift.testing.fakecli._dialect import Profile
from thirdshift.testing.fakecli._templates import DROP, Whole, event, load

if TYPE_CHECKING:
    from thirdshift.testing.fakecli._dialect import Played, Task

TEMPLATES = load("claude")
_INIT = json.loads(TEMPLATES["init"])
_MODEL_USAGE = next(iter(json.loads(TEMPLATES["result"])["modelUsage"].values()))
DEFAULT_MODEL = json.loads(TEMPLATES["assistant"])["message"]["model"]
DEFAULT_CONTEXT_MODEL = _INIT["model"]
"""How init and the result's ``modelUsage`` name the default model: with its context, ``[1m]``."""
RESUMED_CONTEXT_WINDOW = 200_000  # a Resume's modelUsage gives the default model this window
TURN_COST_USD = 0.000235  # what the captured one-turn session cost
NO_COMPLETION_RECORD = (  # as claude-bg-resume/stdout.jsonl:1 says it
    "No completion record was found for this background shell command from the previous "
    "session. It may have been stopped (via the UI, Monitor timeout, or agent teardown — these "
    "leave no transcript marker), or it may have been running when the previous Claude Code "
    "process exited. Check the output file for partial results before assuming it completed."
)
FOLLOW_UP_TEXT = "The background command finished."
_STATE_CURRENT = " (file state is current in your context — no need to Read it back)"
"""What Write's result adds after the path (the edit recording of 2.1.197)."""
_API_ERRORS = {401: "authentication_failed", 429: "rate_limit"}  # else server_error

PROFILE = Profile(
    valued_flags=frozenset(
        {
            "--output-format", "--input-format", "--model", "--permission-mode", "--resume", "-r",
            "--effort", "--session-id", "--append-system-prompt", "--system-prompt",
            "--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools",
            "--max-turns", "--add-dir", "--mcp-config", "--settings", "--debug-file",
            "--fallback-model", "--agents", "--setting-sources", "--permission-prompt-tool",
            "--max-budget-usd", "--betas", "--plugin-dir",
        }
    ),
    resumes="cwd",
    api_error_wording={
        # How the real claude words an API error it gives up on (observed on 2.1.197); None: others.
        401: "Failed to authenticate. API Error: 401 {message}",
        None: "API Error: {status} {message}",
    },
)  # fmt: skip


def parse(args: list[str]) -> Argv:
    """``claude``'s argv, and how the real CLI would refuse it, if it would."""
    given: dict[str, str | None] = {}
    for flag, value in flags(args, PROFILE.valued_flags):
        if flag == "--":
            break
        given[{"-r": "--resume", "--print": "-p"}.get(flag, flag)] = value
    mode = given.get("--permission-mode")
    refused = None
    if "-p" not in given:
        refused = "fake claude: only print mode (-p) is faked", 2
    elif given.get("--output-format") != "stream-json":
        refused = "fake claude: only --output-format stream-json is faked", 2
    elif "--verbose" not in given:
        refused = "Error: When using --print, --output-format=stream-json requires --verbose", 1
    elif (
        ("--dangerously-skip-permissions" in given or mode == "bypassPermissions")
        and os.geteuid() == 0
        and os.environ.get("IS_SANDBOX") != "1"
    ):
        refused = (
            "--dangerously-skip-permissions cannot be used with root/sudo privileges "
            "for security reasons",
            1,
        )
    return Argv(refused, given.get("--resume"), given.get("--model"), mode)


def folder_name(path: str) -> str:
    """How Claude names a project's folder: its path, each character not a letter or digit a -."""
    return re.sub("[^A-Za-z0-9]", "-", path)


class Claude:
    """Plays steps as Claude Code's stream-json."""

    def __init__(self, call: Played, argv: Argv, replay: list[dict[str, Any]]) -> None:
        self.call = call
        self.model = argv.model or DEFAULT_MODEL
        # A Resume names the default model without its context, in init and in modelUsage.
        self.context_model = argv.model or (DEFAULT_MODEL if argv.resume else DEFAULT_CONTEXT_MODEL)
        self.permission_mode = argv.permission_mode or "default"
        self.replay = replay
        self.clock = time.monotonic()
        self.counts = {"uuid": 0, "msg": 0, "tool": 0, "task": 0, "skill": 0}
        self.billed = 0  # model requests answered in this call so far
        self.final = ""
        self.killed: list[Task] = []
        """Tasks reported killed so far: what a Resume of this session replays."""

    def _next(self, what: str) -> int:
        self.counts[what] += 1
        return self.counts[what]

    def _uuid(self) -> str:
        return f"{self.call.number:08x}-0000-4000-8000-{self._next('uuid'):012x}"

    def _emit(self, name: str, **fills: Any) -> None:
        made = event(TEMPLATES[name], fills)
        session_id = self.call.session_id
        if session_id is None:
            made.pop("session_id", None)
        elif "session_id" in made:
            made["session_id"] = session_id
        made["uuid"] = self._uuid()
        self.call.out.line(made)

    def _assistant(self, block: dict[str, Any]) -> None:
        number = self.call.number
        message_id = f"msg_fake_{number}_{self._next('msg')}"
        usage = {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}
        message = {"id": message_id, "model": self.model, "content": [block], "usage": usage}
        self._emit(
            "assistant", message=message, request_id=f"req_fake_{number}_{self.counts['msg']}"
        )

    def _tool_use(self, name: str, tool_input: dict[str, Any]) -> str:
        tool_use_id = f"toolu_fake_{self.call.number}_{self._next('tool')}"
        self._assistant({"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input})
        return tool_use_id

    def _tool_result(
        self,
        tool_use_id: str,
        content: str,
        details: Any,
        *,
        is_error: bool | None = False,
        name: str = "tool_result",
    ) -> None:
        """A tool's result; ``is_error`` None: one that says nothing of errors (Write, Skill)."""
        block: dict[str, Any] = {
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": content,
        }
        if is_error is not None:
            block["is_error"] = is_error
        self._emit(
            name,
            message={"content": [block]},
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            tool_use_result=f"Error: {content}" if is_error else details,
        )

    def _result(
        self,
        name: str = "result",
        turns: int | None = None,
        *,
        billed: int | None = None,
        **fills: Any,
    ) -> None:
        """The turn's result: ``turns`` model requests, ``billed`` of them answered (all, by
        default; a request the API refused costs nothing and is not in ``modelUsage``).

        Its ``usage`` and ``num_turns`` are the turn's (a loaded skill counts a turn more), its
        cost and ``modelUsage`` the whole call's, as the real one's are.
        """
        requests = self.counts["tool"] + 1 if turns is None else turns
        billed = requests if billed is None else billed
        self.billed += billed
        cost = round(TURN_COST_USD * self.billed, 6) if self.billed else 0
        tokens = {"input_tokens": INPUT_TOKENS * billed, "output_tokens": OUTPUT_TOKENS * billed}
        usage = {**_MODEL_USAGE, "inputTokens": INPUT_TOKENS * self.billed, "costUSD": cost}
        if self.context_model == DEFAULT_MODEL:  # the default model named without [1m]
            usage["contextWindow"] = RESUMED_CONTEXT_WINDOW
        usage["outputTokens"] = OUTPUT_TOKENS * self.billed
        self._emit(
            name,
            **{
                "duration_ms": int((time.monotonic() - self.clock) * 1000),
                "num_turns": requests + (self.counts["skill"] if turns is None else 0),
                "result": self.final,
                "total_cost_usd": cost,
                "usage": tokens,
                "modelUsage": Whole({self.context_model: usage} if self.billed else {}),
                **fills,
            },
        )

    def _init(self) -> None:
        folder = os.path.join(self.call.cwd, self.call.skills_dir)
        try:
            names = os.listdir(folder)
        except OSError:
            names = []
        skills = sorted(n for n in names if os.path.isfile(os.path.join(folder, n, "SKILL.md")))
        project = folder_name(self.call.cwd)
        memory = f"{os.environ.get('HOME', '/root')}/.claude/projects/{project}/memory/"
        api_key = "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else "none"
        self._emit(
            "init",
            cwd=self.call.cwd,
            model=self.context_model,
            permissionMode=self.permission_mode,
            slash_commands=[*skills, *_INIT["slash_commands"]],
            apiKeySource=api_key,
            skills=[*skills, *_INIT["skills"]],  # the project's, then those it bundles
            memory_paths=Whole(auto=memory),
        )

    def _task_output(self, task_id: str) -> str:
        """Where Claude writes a background task's output: its per-uid temporary folder (under
        ``CLAUDE_CODE_TMPDIR``), the project's folder named as Claude names it, the session."""
        tmp = os.environ.get(CLAUDE_TMP_ENV) or tempfile.gettempdir()
        project = os.path.join(tmp, f"claude-{os.getuid()}", folder_name(self.call.cwd))
        return os.path.join(project, self.call.session_id or "", "tasks", f"{task_id}.output")

    def _notification(
        self, task_id: str, tool_use_id: str, status: str, summary: str, output_file: str = ""
    ) -> None:
        """A notice of a task's end; only a completed one names its output file."""
        self._emit(
            "task_notification",
            task_id=task_id,
            tool_use_id=tool_use_id,
            status=status,
            summary=summary,
            output_file=output_file,
        )

    # The steps

    def begin(self) -> None:
        if self.replay:
            for _ in range(2):
                for task in self.replay:
                    ids = task["task_id"], task["tool_use_id"]
                    self._notification(*ids, "stopped", NO_COMPLETION_RECORD)
            self._init()
            self._result("result_replayed", turns=0, result="")
        self._init()

    def refuse_resume(self) -> int:
        message = f"No conversation found with session ID: {self.call.resumed}"
        self.call.out.err(message)
        self._result("result_error", turns=0, result=DROP, errors=[message])
        return 1

    def run(self, step: steps.Run) -> None:
        tool_use_id = self._tool_use(
            "Bash", {"command": step.command, "description": step.described}
        )
        out, err, code = self.call.run_command(step.command)
        text = (out + err).rstrip("\n")
        details = {"stdout": out.rstrip("\n"), "stderr": err.rstrip("\n")}
        if code:
            text = f"Exit code {code}\n{text}" if text else f"Exit code {code}"
        elif not text:
            text = "(Bash completed with no output)"
        self._tool_result(tool_use_id, text, details, is_error=code != 0)

    def edit(self, step: steps.Edit) -> None:
        target = self.call.path(step.path)
        try:
            with open(target, encoding="utf-8") as file:
                old: str | None = file.read()
        except OSError:
            old = None
        if old is None:
            tool_use_id = self._tool_use("Write", {"file_path": target, "content": step.text})
        else:
            edit = {"file_path": target, "old_string": old, "new_string": step.text}
            tool_use_id = self._tool_use("Edit", {**edit, "replace_all": False})
        self.call.write_file(target, step.text)
        if old is None:
            content, change = f"File created successfully at: {target}{_STATE_CURRENT}", "create"
        else:
            content, change = f"The file {target} has been updated successfully.", "update"
        # structuredPatch is left empty: no recording shows an update's, and no reader reads it.
        details = Whole(type=change, filePath=target, content=step.text, structuredPatch=[])
        details.update(originalFile=old, userModified=False)
        self._tool_result(tool_use_id, content, details, is_error=None)

    def load_skill(self, step: steps.LoadSkill) -> None:
        tool_use_id = self._tool_use("Skill", {"skill": step.name})
        if os.path.isfile(os.path.join(self.call.cwd, self.call.skills_dir, step.name, "SKILL.md")):
            details = Whole(success=True, commandName=step.name)
            self._next("skill")
            self._tool_result(tool_use_id, f"Launching skill: {step.name}", details, is_error=None)
        else:
            self._tool_result(tool_use_id, f"Unknown skill: {step.name}", None, is_error=True)

    def background(self, step: steps.Background) -> None:
        tool_use_id = self._tool_use(
            "Bash",
            {"command": step.command, "description": step.described, "run_in_background": True},
        )
        task_id = f"b{self.call.number:04d}{self._next('task'):04d}"
        task = self.call.start_task(step, self._task_output(task_id))
        task.task_id = task_id
        task.tool_use_id = tool_use_id
        self._emit(
            "task_started",
            task_id=task.task_id,
            tool_use_id=tool_use_id,
            description=step.described,
        )
        self._tool_result(
            tool_use_id,
            f"Command running in background with ID: {task.task_id}. Output is being written "
            f"to: {task.output}. You will be notified when it completes. To check interim "
            "output, use Read on that file path.",
            {"backgroundTaskId": task.task_id},
            name="tool_result_background",
        )

    def say(self, step: steps.Say) -> None:
        self._assistant({"type": "text", "text": step.text})
        self.final = step.text

    def fail_turn(self, step: steps.FailTurn) -> int:
        if step.api_error_status is None:
            self._result("result_error", result=DROP, errors=[step.message])
        else:  # an API error: its retries, a synthetic assistant message, "success" that fails
            error = _API_ERRORS.get(step.api_error_status, "server_error")
            retries = _max_retries()
            for attempt in range(1, retries + 1):
                self._emit(
                    "api_retry",
                    attempt=attempt,
                    max_retries=retries,
                    error_status=step.api_error_status,
                    error=error,
                )
            self._emit(
                "assistant_synthetic",
                message={"id": self._uuid(), "content": [{"type": "text", "text": step.message}]},
                error=error,
                request_id=f"req_fake_{self.call.number}_{self._next('msg')}",
            )
            self.final = step.message
            billed = self.counts["tool"]
            self._result("result_api_error", billed=billed, api_error_status=step.api_error_status)
        self._finish_tasks()
        return 1

    def end_turn(self) -> None:
        self._result()
        self._finish_tasks()

    def stopped(self, signo: int) -> None:
        if signo == signal.SIGTERM:
            # The real claude, stopped by SIGTERM, reports the work it kills on its way out;
            # its notice comes first then, and its summary is the task's description.
            live = [task for task in self.call.tasks if not task.process.finished]
            for task in live:
                task.process.kill()
                self._notification(task.task_id, task.tool_use_id, "stopped", task.description)
                self._task_updated(task, "killed")
            self._remember_killed(live)

    def _finish_tasks(self) -> None:
        """After the result: wait out the grace, report tasks that finished, kill the rest."""
        live = [task for task in self.call.tasks if not task.process.finished]
        if not live:
            return
        self.call.wait_out_grace(live)
        done = [task for task in live if not task.process.running()]
        for task in done:
            task.process.finished = True
            self._task_updated(task, "completed")
            summary = f'Background command "{task.description}" completed'
            summary += f" (exit code {task.process.exit_code})"
            self._notification(task.task_id, task.tool_use_id, "completed", summary, task.output)
        if done:  # Claude takes up the notification in a turn of its own
            self._init()
            self.say(steps.Say(FOLLOW_UP_TEXT))
            self._result(turns=1, origin={"kind": "task-notification"})
        killed: list[Task] = []
        for task in live:
            if not task.process.finished:
                task.process.kill()
                killed.append(task)
                self._task_updated(task, "killed")
                self._notification(task.task_id, task.tool_use_id, "stopped", task.description)
        self._remember_killed(killed)

    def _remember_killed(self, tasks: list[Task]) -> None:
        if not tasks:
            return
        self.killed += tasks
        self.call.remember_killed(
            [{"task_id": t.task_id, "tool_use_id": t.tool_use_id} for t in self.killed]
        )

    def _task_updated(self, task: Task, status: str) -> None:
        end_time = int(time.time() * 1000)
        self._emit(
            "task_updated", task_id=task.task_id, patch={"status": status, "end_time": end_time}
        )


def _max_retries() -> int:
    """How often claude retries a failed API call: ``CLAUDE_CODE_MAX_RETRIES``, else its 10.

    The fake says each retry at once; the real one waits between them."""
    try:
        return max(0, int(os.environ.get("CLAUDE_CODE_MAX_RETRIES", "10")))
    except ValueError:
        return 10


def dialect(call: Played, argv: Argv, replay: list[dict[str, Any]]) -> Claude:
    """The dialect of one call."""
    return Claude(call, argv, replay)
