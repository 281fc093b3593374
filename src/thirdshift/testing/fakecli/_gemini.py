"""The fake ``gemini -o stream-json`` (Gemini CLI 0.61.0).

Its events are the real ones of ``templates/gemini.jsonl``, filled in. As the real CLI does
(``OTHER-CLIS.md`` of the captures): ``init`` (the only line with the session id), the user's
``message`` (stdin, then any ``-p`` text), ``tool_use`` / ``tool_result`` of
``run_shell_command``, assistant text as ``message`` deltas, ``result`` (``status``, ``stats``;
no cost). Commands run in sessions of their own, which Gemini never kills: background work
(``is_background: true``) outlives its exit, and a command outlives a SIGINT or SIGTERM, on which
the fake exits 0 with no ``result``, printing nothing. A failed API call is a ``result`` with
``status: "error"`` and exits with the HTTP status & 255 (401: 145). ``-r <id>`` of a session
not made in this cwd: exit 42, no stdout, the real three lines on stderr. With ``-y`` it says
"YOLO mode is enabled…" twice on stderr, as the real one does.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import TYPE_CHECKING, Any

from thirdshift.testing._tokens import usage
from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._argv import Argv, flags
from thirdshift.testing.fakecli._dialect import Profile
from thirdshift.testing.fakecli._templates import DROP, Whole, event, load

if TYPE_CHECKING:
    from thirdshift.testing.fakecli._dialect import Played

TEMPLATES = load("gemini")
ROUTER_MODEL = "gemini-3.5-flash-lite"
"""The model of the router's request, which "auto" makes before each turn."""
ROUTED_MODEL = "gemini-3.8-flash"
YOLO = "YOLO mode is enabled. All tool calls will be automatically approved."
RESUME_REFUSED = """\
Error resuming session: Invalid session identifier "{id}".
  Searched for sessions in {home}/.gemini/tmp/{project}/chats.
  Use --list-sessions to see available sessions, then use --resume {{number}}, --resume {{uuid}}, \
or --resume latest."""
NO_SESSIONS = "Error resuming session: No previous sessions found for this project."
"""A Resume in a directory where Gemini made no session yet (observed on 0.61.0)."""
INVALID_SESSION_EXIT = 42
STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}  # fmt: skip
"""The Google API's status names, which its error bodies carry beside the HTTP code."""

# Gemini CLI's write_file results (not captured: no capture writes a file); Qwen's are the same.
CREATED = "Successfully created and wrote to new file: {path}."
OVERWRITTEN = "Successfully overwrote file: {path}."

PROFILE = Profile(
    valued_flags=frozenset(
        {
            "-m", "--model", "-r", "--resume", "-p", "--prompt", "-o", "--output-format",
            "--approval-mode", "-i", "--prompt-interactive", "-e", "--extensions",
            "--include-directories", "--allowed-tools", "--allowed-mcp-server-names",
        }
    ),
    resumes="cwd",
    own_session=True,
    stop_exits={signal.SIGINT: 0, signal.SIGTERM: 0},
)  # fmt: skip


def parse(args: list[str]) -> Argv:
    """``gemini``'s argv, and how the fake refuses what it does not fake."""
    return parse_like_gemini("gemini", args, PROFILE.valued_flags)


def parse_like_gemini(cli: str, args: list[str], valued: frozenset[str]) -> Argv:
    """The argv of Gemini CLI or of its fork Qwen Code (``cli``), whose ``valued`` flags take
    a value: ``-o stream-json``, ``-m``, ``-r``, ``-p``, ``-y`` / ``--approval-mode``."""
    output, model, resume, prompt, mode = None, None, None, None, "default"
    for flag, value in flags(args, valued):
        if flag in ("-o", "--output-format"):
            output = value
        elif flag in ("-m", "--model"):
            model = value
        elif flag in ("-r", "--resume"):
            resume = value
        elif flag in ("-p", "--prompt"):
            prompt = value
        elif flag in ("-y", "--yolo"):
            mode = "yolo"
        elif flag == "--approval-mode" and value:
            mode = value
    refused = None if output == "stream-json" else (f"fake {cli}: only -o stream-json is faked", 2)
    return Argv(refused, resume, model, mode, prompt)


def _tokens(requests: int) -> dict[str, int]:
    """Token counts of ``requests`` model requests, in the real one's order (the total first)."""
    counts = usage(requests)
    ordered = {name: counts[name] for name in ("total_tokens", "input_tokens", "output_tokens")}
    return {**ordered, "cached": 0, "input": counts["input_tokens"]}


class Gemini:
    """Plays steps as ``gemini -o stream-json``."""

    def __init__(self, call: Played, argv: Argv, replay: list[dict[str, Any]]) -> None:
        self.call = call
        self.model = argv.model
        self.prompt = argv.prompt
        self.yolo = argv.permission_mode == "yolo"
        self.tools = 0
        self.clock = time.monotonic()

    def _emit(self, name: str, **fills: Any) -> None:
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
        stamp += f".{int(now % 1 * 1000):03d}Z"
        self.call.out.line(event(TEMPLATES[name], {"timestamp": stamp, **fills}))

    def _tool_use(self, tool: str, parameters: dict[str, Any]) -> str:
        self.tools += 1
        tool_id = f"{tool}__{tool}_{int(time.time() * 1000)}_{self.tools - 1}"
        self._emit("tool_use", tool_name=tool, tool_id=tool_id, parameters=Whole(parameters))
        return tool_id

    def _shell(self, step: steps.Run | steps.Background, background: bool) -> str:
        return self._tool_use("run_shell_command", steps.shell_tool_input(step, background))

    def _stats(self, *, failed: bool = False) -> dict[str, Any]:
        """The turn's stats: a request per tool result and the turn's first, of which a
        ``failed`` turn's last was refused (it counts no tokens, but its model is named)."""
        answered = self.tools + (0 if failed else 1)
        requests = answered
        if self.model is None:  # "auto": the router asks a model of its own first
            models = {ROUTER_MODEL: _tokens(1), ROUTED_MODEL: _tokens(answered)}
            requests += 1
        else:
            models = {self.model: _tokens(answered)}
        duration = int((time.monotonic() - self.clock) * 1000)
        return Whole(_tokens(requests), duration_ms=duration, tool_calls=self.tools, models=models)

    # The steps

    def begin(self) -> None:
        if self.yolo:
            self.call.out.err(f"{YOLO}\n{YOLO}")
        session_id = DROP if self.call.session_id is None else self.call.session_id
        self._emit("init", session_id=session_id, model=self.model or "auto")
        stdin = self.call.fake_call.stdin if self.call.fake_call is not None else None
        prompt = "\n\n".join(text for text in (stdin, self.prompt) if text)
        self._emit("user_message", content=prompt)

    def refuse_resume(self) -> int:
        home = os.environ.get("HOME", "/root")
        project = os.path.basename(self.call.cwd)
        message = RESUME_REFUSED.format(id=self.call.resumed, home=home, project=project)
        if not self.call.sessions_here:
            message = NO_SESSIONS
        self.call.out.err(message)
        return INVALID_SESSION_EXIT

    def run(self, step: steps.Run) -> None:
        tool_id = self._shell(step, background=False)
        out, err, code = self.call.run_command(step.command)
        status = "success" if code == 0 else "error"
        output = (out + err).rstrip("\n")
        self._emit("tool_result", tool_id=tool_id, status=status, output=output)

    def edit(self, step: steps.Edit) -> None:
        target = self.call.path(step.path)
        tool_id = self._tool_use("write_file", {"file_path": target, "content": step.text})
        created = self.call.write_file(target, step.text)
        output = (CREATED if created else OVERWRITTEN).format(path=target)
        self._emit("tool_result", tool_id=tool_id, status="success", output=output)

    def load_skill(self, step: steps.LoadSkill) -> None:
        self.run(steps.read_skill(self.call.skills_dir, step.name))

    def background(self, step: steps.Background) -> None:
        tool_id = self._shell(step, background=True)
        task = self.call.start_task(step)
        output = (
            f"Command moved to background (PID: {task.process.pid}). Output hidden. "
            "Press Ctrl+B to view."
        )
        self._emit("tool_result", tool_id=tool_id, status="success", output=output)

    def say(self, step: steps.Say) -> None:
        self._emit("assistant_message", content=step.text)

    def fail_turn(self, step: steps.FailTurn) -> int:
        status = step.api_error_status
        if status is None:
            self._emit("result_error", error={"message": step.message}, stats=self._stats())
            return 1
        body = {"code": status, "message": step.message, "status": STATUS_NAMES.get(status, "")}
        text = json.dumps({"error": body}, separators=(",", ":"))
        self._emit(
            "result_error",
            error={"message": f"[API Error: {text}]"},
            stats=self._stats(failed=True),
        )
        return status & 255  # what the real one exits with: the error's status, masked

    def end_turn(self) -> None:
        self._emit("result", status="success", stats=self._stats())

    def stopped(self, signo: int) -> None:
        """A SIGINT or SIGTERM ends Gemini at once with exit 0 (its profile), saying nothing."""


def dialect(call: Played, argv: Argv, replay: list[dict[str, Any]]) -> Gemini:
    """The dialect of one call."""
    return Gemini(call, argv, replay)
