"""The fake ``opencode run --format json`` (opencode 1.18.33).

Its events are the real ones of ``templates/opencode.jsonl``, filled in. As the real CLI does
(``OTHER-CLIS.md`` of the captures): the session id (``sessionID``) is on every line, and there
is no init line and no result line. Each model response is a step: ``step_start``, its parts
(``text``; ``tool_use``, printed once the tool has finished), ``step_finish`` with ``reason``
``tool-calls`` after a tool and ``stop`` at the end of the turn. A failed turn is one ``error``
line, then exit 1. Commands run in sessions of their own, which opencode never kills: background
work (there is no background flag; the model ends the command with ``&``) outlives its exit,
and a command outlives a SIGINT or SIGTERM, which kill the fake by the signal, printing nothing.
``-s <id>`` of a session it never made: exit 1, no stdout, stderr ``Error: Session not found``
(coloured, as the real one's).

Part ids run ``prt_fake_<call>_1``…, message ids ``msg_fake_<call>_1``… (one per step).
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

from thirdshift.testing._tokens import usage
from thirdshift.testing._wire import OPENCODE_API, error_json
from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._argv import Argv, flags
from thirdshift.testing.fakecli._dialect import Profile
from thirdshift.testing.fakecli._templates import Whole, event, load

if TYPE_CHECKING:
    from thirdshift.testing.fakecli._dialect import Played

TEMPLATES = load("opencode")
SESSION_NOT_FOUND = "\x1b[91m\x1b[1mError: \x1b[0mSession not found"
"""The real stderr line, colours and all (it colours it even when stderr is a file)."""

PROFILE = Profile(
    valued_flags=frozenset(
        {
            "-m", "--model", "-s", "--session", "--variant", "--format", "--agent", "-f", "--file",
            "--title", "--attach", "--port", "--command",
        }
    ),
    resumes="known",
    own_session=True,
    dies_by_stop=True,
)  # fmt: skip


def parse(args: list[str]) -> Argv:
    """``opencode``'s argv, and how the fake refuses what it does not fake."""
    output, model, resume = None, None, None
    for flag, value in flags(args[1:], PROFILE.valued_flags):
        if flag in ("-m", "--model"):
            model = value
        elif flag in ("-s", "--session"):
            resume = value
        elif flag == "--format":
            output = value
    refused = None
    if args[:1] != ["run"]:
        refused = "fake opencode: only `opencode run` is faked", 2
    elif output != "json":
        refused = "fake opencode: only --format json output is faked", 2
    return Argv(refused, resume, model)


NO_OUTPUT = "(no output)"
"""What a command that printed nothing gives (1.18.33), as its output and in its metadata."""
FAKE_MODEL_SERVER = f"BaseHTTP/0.6 Python/{sys.version.split()[0]}"
"""The ``server`` header of the fake model's replies (http.server's), which opencode passes on."""


def _http_date() -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())


def _now() -> int:
    return int(time.time() * 1000)


class Opencode:
    """Plays steps as ``opencode run --format json``."""

    def __init__(self, call: Played, argv: Argv, replay: list[dict[str, Any]]) -> None:
        self.call = call
        self.counts = {"part": 0, "message": 0, "call": 0}
        self.message_id = ""
        self.step_open = False

    def _next(self, what: str) -> int:
        self.counts[what] += 1
        return self.counts[what]

    def _emit(self, name: str, **fills: Any) -> None:
        made = event(TEMPLATES[name], {"timestamp": _now(), **fills})
        session_id = self.call.session_id
        for holder in (made, made.get("part", {})):
            if "sessionID" in holder:
                if session_id is None:
                    del holder["sessionID"]
                else:
                    holder["sessionID"] = session_id
        self.call.out.line(made)

    def _part(self, **fills: Any) -> dict[str, Any]:
        part_id = f"prt_fake_{self.call.number}_{self._next('part')}"
        return {"id": part_id, "messageID": self.message_id, **fills}

    def _open_step(self) -> None:
        if not self.step_open:
            self.step_open = True
            self.message_id = f"msg_fake_{self.call.number}_{self._next('message')}"
            self._emit("step_start", part=self._part())

    def _close_step(self, reason: str) -> None:
        self._open_step()  # a turn that said nothing still had its step
        self.step_open = False
        counts = usage(1)  # a step is one model request
        tokens = {name: counts[f"{name}_tokens"] for name in ("total", "input", "output")}
        self._emit("step_finish", part=self._part(reason=reason, tokens=tokens))

    def _tool(self, tool: str, tool_input: dict[str, Any], output: str, **how: Any) -> None:
        """The ``tool_use`` of a finished tool (``how``: its exit, start and title), which
        ends its step."""
        self._open_step()
        start, code, title = how.get("start", _now()), how.get("exit", 0), how["title"]
        state = {
            "status": "completed",
            "input": Whole(tool_input),
            "output": output,
            "metadata": Whole(output=output, exit=code, truncated=False),
            "title": title,
            "time": {"start": start, "end": _now()},
        }
        call_id = f"call_fake_{self.call.number}_{self._next('call')}"
        self._emit("tool_use", part=self._part(tool=tool, callID=call_id, state=state))
        self._close_step("tool-calls")

    # The steps

    def begin(self) -> None:
        """Nothing: opencode prints no line before the first step."""

    def refuse_resume(self) -> int:
        self.call.out.err(SESSION_NOT_FOUND)
        return 1

    def run(self, step: steps.Run) -> None:
        self._open_step()  # printed before the command runs; its tool_use only once it is done
        start = _now()
        out, err, code = self.call.run_command(step.command)
        tool_input = {"command": step.command}
        if step.description is not None:
            tool_input["description"] = step.description
        output = out + err or NO_OUTPUT
        self._tool("bash", tool_input, output, exit=code, start=start, title=step.command)

    def edit(self, step: steps.Edit) -> None:
        target = self.call.path(step.path)
        self.call.write_file(target, step.text)
        tool_input = {"filePath": target, "content": step.text}
        self._tool("write", tool_input, "Wrote file successfully.", title=step.path)

    def load_skill(self, step: steps.LoadSkill) -> None:
        self.run(steps.read_skill(self.call.skills_dir, step.name))

    def background(self, step: steps.Background) -> None:
        self.call.start_task(step)
        command = f"{step.command} &"
        self._tool("bash", {"command": command}, NO_OUTPUT, title=command)

    def say(self, step: steps.Say) -> None:
        self._open_step()
        now = _now()
        self._emit("text", part=self._part(text=step.text, time={"start": now, "end": now}))

    def fail_turn(self, step: steps.FailTurn) -> int:
        status = step.api_error_status
        if status is None:
            error: dict[str, Any] = Whole(name="UnknownError", data={"message": step.message})
        else:
            body = json.dumps(error_json(status, step.message))  # what the fake model sends
            headers = Whole({"content-length": str(len(body)), "content-type": "application/json"})
            headers.update(date=_http_date(), server=FAKE_MODEL_SERVER)
            data = {"message": step.message, "statusCode": status, "responseBody": body}
            data["metadata"] = {"url": f"http://127.0.0.1:8080{OPENCODE_API}/chat/completions"}
            error = {"data": {**data, "responseHeaders": headers}}
        self._emit("error", error=error)
        return 1

    def end_turn(self) -> None:
        self._close_step("stop")

    def stopped(self, signo: int) -> None:
        """opencode has no handler: it dies by the signal, saying nothing."""


def dialect(call: Played, argv: Argv, replay: list[dict[str, Any]]) -> Opencode:
    """The dialect of one call."""
    return Opencode(call, argv, replay)
