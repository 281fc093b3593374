"""The fake ``codex exec --json``.

Shaped on Codex 0.171.0 (``/work/shared/transcripts/codex-*``, CLI-FACTS.md):

- stderr says ``Reading additional input from stdin...`` when stdin is not a terminal, and the
  fake reads stdin to its end before anything else, as Codex does;
- ``thread.started`` (``thread_id``), ``turn.started``, then items: ``item.started`` /
  ``item.completed`` for a ``command_execution`` (``command`` as ``/bin/bash -lc '…'``,
  ``aggregated_output``, ``exit_code``, ``status``), ``item.completed`` for a ``file_change``
  and for an ``agent_message``; then ``turn.completed`` with ``usage``;
- a failed turn is an ``error`` event, then ``turn.failed`` (``error.message``);
- background work is an ``item.started`` that never completes; at exit the fake kills it and
  says nothing, like Codex;
- ``codex exec [flags] resume <id> [flags] -`` continues thread ``<id>`` from any cwd;
  ``-C``/``--cd``, ``-s``/``--sandbox`` and ``--add-dir`` after ``resume`` are refused.

Item ids run ``item_0``, ``item_1``… in each call.
"""

from __future__ import annotations

from .dialect import Context, Dialect
from .procs import run_command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SKILLS_DIR = ".agents/skills"
READING_STDIN = "Reading additional input from stdin..."

# Flags of `codex exec` that take a value; any other flag is taken to be a switch.
_VALUED = frozenset(
    {
        "-m", "--model", "-c", "--config", "-C", "--cd", "-s", "--sandbox", "-p", "--profile",
        "--add-dir", "-i", "--image", "--color", "-o", "--output-last-message",
        "--output-schema", "--local-provider", "--enable", "--disable",
    }
)  # fmt: skip
_NOT_AFTER_RESUME = frozenset({"-C", "--cd", "-s", "--sandbox", "--add-dir"})


class Parsed:
    """What the fake takes from ``codex``'s argv (leniently: unknown flags are skipped)."""

    def __init__(self, args: list[str]) -> None:
        self.subcommand = args[0] if args else None
        self.json = False
        self.resume: str | None = None
        self.model: str | None = None
        self.prompt: str | None = None
        self.refused: str | None = None
        resuming = False
        positional: list[str] = []
        index = 1
        while index < len(args):
            arg = args[index]
            index += 1
            name, equals, value = arg.partition("=")
            if arg == "-" or not arg.startswith("-"):
                if arg == "resume" and not resuming:
                    resuming = True
                    positional = []  # values of flags the fake does not know, if any
                else:
                    positional.append(arg)
                continue
            if resuming and name in _NOT_AFTER_RESUME and self.refused is None:
                self.refused = name
            if name in _VALUED:
                if not equals:
                    if index >= len(args):
                        break
                    value = args[index]
                    index += 1
                if name in ("-m", "--model"):
                    self.model = value
            elif arg == "--json":
                self.json = True
        if resuming:
            self.resume = positional.pop(0) if positional else None
        self.prompt = positional[0] if positional else None

    def error(self) -> tuple[str, int] | None:
        """The message and exit code the real CLI would refuse this argv with, if it would."""
        if self.subcommand not in ("exec", "e"):
            return "fake codex: only `codex exec` is faked", 2
        if self.refused is not None:
            return f"error: unexpected argument '{self.refused}' found", 2
        if not self.json:
            return "fake codex: only --json output is faked", 2
        return None


class CodexDialect(Dialect):
    """Plays steps as ``codex exec --json``."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.items = 0

    def _item_id(self) -> str:
        self.items += 1
        return f"item_{self.items - 1}"

    def _item(self, event: str, item: dict[str, Any]) -> None:
        self.ctx.out.line({"type": event, "item": item})

    @staticmethod
    def _shown(command: str) -> str:
        import shlex

        return shlex.join(["/bin/bash", "-lc", command])

    def _command_started(self, command: str) -> dict[str, Any]:
        item = {
            "id": self._item_id(),
            "type": "command_execution",
            "command": self._shown(command),
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        }
        self._item("item.started", item)
        return item

    # The steps

    def begin(self) -> None:
        if self.ctx.session_id is not None:
            self.ctx.out.line({"type": "thread.started", "thread_id": self.ctx.session_id})
        self.ctx.out.line({"type": "turn.started"})

    def refuse_resume(self, session_id: str) -> int:  # Codex resumes from any cwd
        raise AssertionError("unreachable")

    def run(self, command: str, description: str | None) -> None:
        item = self._command_started(command)
        out, err, code = run_command(
            command, self.ctx.cwd, lambda pid, start: self.ctx.started(pid, start, "run", command)
        )
        item.update(
            aggregated_output=out + err,
            exit_code=code,
            status="completed" if code == 0 else "failed",
        )
        self._item("item.completed", item)

    def edit(self, path: str, text: str) -> None:
        target, created = self.write_file(path, text)
        self._item(
            "item.completed",
            {
                "id": self._item_id(),
                "type": "file_change",
                "changes": [{"path": target, "kind": "add" if created else "update"}],
                "status": "completed",
            },
        )

    def load_skill(self, name: str) -> None:
        import shlex

        self.run(f"cat {shlex.quote(f'{SKILLS_DIR}/{name}/SKILL.md')}", None)

    def background(self, command: str, description: str | None, grace: float) -> None:
        self._command_started(command)
        self.start_task(command, command if description is None else description, grace)

    def say(self, text: str) -> None:
        self._item("item.completed", {"id": self._item_id(), "type": "agent_message", "text": text})

    def codex_error(self, message: str) -> None:
        self.ctx.out.line({"type": "error", "message": message})

    def fail_turn(self, message: str, api_error_status: int | None) -> None:
        self.codex_error(message)
        self.ctx.out.line({"type": "turn.failed", "error": {"message": message}})
        self.stop_background()

    def end_turn(self) -> None:
        self.ctx.out.line(
            {
                "type": "turn.completed",
                "usage": {
                    "input_tokens": 40 * (self.items + 1),
                    "cached_input_tokens": 0,
                    "cache_write_input_tokens": 0,
                    "output_tokens": 16 * (self.items + 1),
                    "reasoning_output_tokens": 0,
                },
            }
        )
        self.stop_background()
