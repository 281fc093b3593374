"""The fake ``codex exec --json`` (Codex 0.171.0).

Its events are the real ones of ``templates/codex.jsonl``, filled in. As the real CLI does
(``docs/cli-facts.md``): ``Reading additional input from stdin...`` on stderr; ``thread.started``,
``turn.started``, items, ``turn.completed``; a failed turn is ``error`` then ``turn.failed``;
background work is an ``item.started`` that never completes, killed silently at exit;
``codex exec [flags] resume <id> [flags] -`` continues thread ``<id>`` from any cwd, and
``-C``/``--cd``, ``-s``/``--sandbox`` and ``--add-dir`` after ``resume`` are refused.

Item ids run ``item_0``, ``item_1``… in each call.
"""

from __future__ import annotations

import os
import shlex
import signal
from typing import TYPE_CHECKING, Any

from thirdshift.testing._tokens import INPUT_TOKENS, OUTPUT_TOKENS
from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._argv import Argv, flags
from thirdshift.testing.fakecli._dialect import Profile
from thirdshift.testing.fakecli._templates import event, load

if TYPE_CHECKING:
    from thirdshift.testing.fakecli._dialect import Played

TEMPLATES = load("codex")
READING_STDIN = "Reading additional input from stdin..."

PROFILE = Profile(
    valued_flags=frozenset(
        {
            "-m", "--model", "-c", "--config", "-C", "--cd", "-s", "--sandbox", "-p", "--profile",
            "--add-dir", "-i", "--image", "--color", "-o", "--output-last-message",
            "--output-schema", "--local-provider", "--enable", "--disable",
        }
    ),
    resumes="any id",
    stdin_notice=READING_STDIN,
    api_error_wording={
        # How the real codex words an API error it gives up on (observed on 0.171.0); None: others.
        401: "unexpected status 401 Unauthorized: {message}, url: http://127.0.0.1:0/v1/responses",
        None: "API Error: {status} {message}",
    },
)  # fmt: skip
_NOT_AFTER_RESUME = frozenset({"-C", "--cd", "-s", "--sandbox", "--add-dir"})


def parse(args: list[str]) -> Argv:
    """``codex``'s argv, and how the real CLI would refuse it, if it would."""
    words: list[str] = []  # after `resume`: its id first
    resuming, json_output, model, refused = False, False, None, None
    for flag, value in flags(args[1:], PROFILE.valued_flags):
        if flag == "resume" and not resuming:
            resuming, words = True, []  # the words so far were values of unknown flags
        elif flag == "-" or not flag.startswith("-"):
            words.append(flag)
        elif resuming and flag in _NOT_AFTER_RESUME and refused is None:
            refused = f"error: unexpected argument '{flag}' found", 2
        elif flag in ("-m", "--model"):
            model = value
        json_output = json_output or flag == "--json"
    if args[:1] not in (["exec"], ["e"]):
        refused = "fake codex: only `codex exec` is faked", 2
    elif refused is None and not json_output:
        refused = "fake codex: only --json output is faked", 2
    return Argv(refused, words[0] if resuming and words else None, model)


class Codex:
    """Plays steps as ``codex exec --json``."""

    def __init__(self, call: Played, argv: Argv, replay: list[dict[str, Any]]) -> None:
        self.call = call
        self.items = 0
        self.tools = 0
        self.running: dict[str, Any] | None = None
        """The item of the command running now, if one is."""

    def _emit(self, name: str, **fills: Any) -> None:
        self.call.out.line(event(TEMPLATES[name], fills))

    def _item_id(self) -> str:
        self.items += 1
        return f"item_{self.items - 1}"

    def _command_started(self, command: str) -> dict[str, Any]:
        self.tools += 1
        item = {"id": self._item_id(), "command": shlex.join(["/bin/bash", "-lc", command])}
        self._emit("command_started", item=item)
        return item

    def begin(self) -> None:
        if self.call.session_id is not None:
            self._emit("thread_started", thread_id=self.call.session_id)
        self._emit("turn_started")

    def refuse_resume(self) -> int:  # Codex resumes from any cwd
        raise AssertionError("unreachable")

    def run(self, step: steps.Run) -> None:
        item = self._command_started(step.command)
        self.running = item
        out, err, code = self.call.run_command(step.command)
        self.running = None
        status = "completed" if code == 0 else "failed"
        done = {**item, "aggregated_output": out + err, "exit_code": code, "status": status}
        self._emit("command_completed", item=done)

    def edit(self, step: steps.Edit) -> None:
        target = self.call.path(step.path)
        change = {"path": target, "kind": "update" if os.path.exists(target) else "add"}
        self.tools += 1
        item = {"id": self._item_id(), "changes": [change]}
        self._emit("file_change_started", item=item)
        self.call.write_file(target, step.text)
        self._emit("file_change", item=item)

    def load_skill(self, step: steps.LoadSkill) -> None:
        self.run(steps.read_skill(self.call.skills_dir, step.name))

    def background(self, step: steps.Background) -> None:
        self._command_started(step.command)
        self.call.start_task(step)

    def say(self, step: steps.Say) -> None:
        self._emit("agent_message", item={"id": self._item_id(), "text": step.text})

    def codex_error(self, step: steps.CodexError) -> None:
        self._emit("error", message=step.message)

    def fail_turn(self, step: steps.FailTurn) -> int:
        self._emit("error", message=step.message)
        self._emit("turn_failed", error={"message": step.message})
        self.call.stop_background()
        return 1

    def end_turn(self) -> None:
        # A request per tool call and one for the answer; its counts are the whole thread's.
        requests = self.call.session_requests(self.tools + 1)
        tokens = {
            "input_tokens": INPUT_TOKENS * requests,
            "output_tokens": OUTPUT_TOKENS * requests,
        }
        self._emit("turn_completed", usage=tokens)
        self.call.stop_background()

    def stopped(self, signo: int) -> None:
        if signo == signal.SIGINT and self.running is not None:  # it says the command failed
            failed = {"aggregated_output": "", "exit_code": 128 + signo, "status": "failed"}
            self._emit("command_completed", item={**self.running, **failed})


def dialect(call: Played, argv: Argv, replay: list[dict[str, Any]]) -> Codex:
    """The dialect of one call."""
    return Codex(call, argv, replay)
