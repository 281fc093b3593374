"""The Qwen Code Harness: ``qwen -o stream-json -y``, the prompt on stdin.

What the reader relies on, as observed on Qwen Code 0.24.4 (see ``tests/transcripts/qwen-*``):

- The stream is Claude Code's ``stream-json`` in shape: ``system``/``init`` (``session_id``,
  ``cwd``, ``model``), ``assistant`` lines with ``tool_use`` blocks, ``user`` lines with tool
  results, and a ``result`` (``subtype``, ``is_error``, ``num_turns``, ``result``, ``usage``).
  So :class:`QwenReader` is a :class:`~thirdshift.harness.ClaudeReader` for the init and the
  result, and differs where Qwen does: its tools are Gemini CLI's (Qwen Code is a fork of it),
  its ``result`` has no ``total_cost_usd`` but ``usage``, and a failed one says why in
  ``error.message`` (an API error: ``[API Error: 401 …]``, with ``subtype
  error_during_execution``; exit 1).
- Background work never shows in the stream: ``run_shell_command`` with ``is_background``
  starts a shell that Qwen kills as it exits, saying so only in a status file under
  ``~/.qwen/tmp``. No ``task_*`` events come, so the reader's ``killed`` is always empty; the
  Harness's :meth:`QwenHarness.work_killed_at_exit` reads the status files instead
  (:mod:`thirdshift.harness._builtin.qwen_shells`).
- A stream without a ``result`` has failed: Qwen ends so only when it could not start (an
  unknown resume id: exit 1, stdout empty) or was stopped mid-turn.
- Qwen runs as three processes in one group, and only signalling all of them stops it (the
  supervisor signals every process of the session). On SIGINT it cancels the running tool,
  prints ``Operation cancelled.`` on stderr and dies by the signal, with no ``result``.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from thirdshift._budget import BudgetChecks
from thirdshift._sandbox import Api, SandboxNeeds, StateFolder
from thirdshift._values import Usage
from thirdshift.harness._base import Choice, Harness, Invocation, checked_session_id
from thirdshift.harness._builtin.claude import ClaudeReader
from thirdshift.harness._builtin.counts import count_or_zero, status_failure, tokens_summary
from thirdshift.harness._builtin.gemini import gemini_tool_line, refuse_effort
from thirdshift.harness._builtin.qwen_shells import cancelled_shells, home_of
from thirdshift.harness._failures import FailureInfo, by_text
from thirdshift.harness._lines import cut, shorten
from thirdshift.harness._usage import TokenNames, count, turns_text, without_earlier

_TOKEN_NAMES: TokenNames = ("input_tokens", "cache_read_input_tokens", "output_tokens")

RESUME_MISSING = re.compile(r"No saved session found with (?:title|ID)", re.IGNORECASE)
"""Qwen Code's wording for a Resume of a session it cannot find (on stderr): an id that is no
UUID, a UUID."""


@dataclass(frozen=True)
class QwenHarness(Harness):
    """Qwen Code: ``qwen``, stopped with SIGINT then SIGTERM, project skills in ``.qwen/skills``.

    SIGINT first because it is Qwen's own way to stop: it cancels the running tool.
    """

    name: ClassVar[str] = "qwen"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = (signal.SIGINT, signal.SIGTERM)
    skills_dir: ClassVar[str] = ".qwen/skills"
    # Only the result says tokens and turns; no cost.
    budget_checks: ClassVar[BudgetChecks] = BudgetChecks(
        while_running=frozenset(), at_end=frozenset({"tokens", "turns"})
    )
    # The keys and endpoints of each provider it signs in to from the environment (OpenAI's
    # API or one like it, Anthropic, Gemini, Vertex AI), DashScope's for its image and audio
    # tools, and the switch that quiets its yolo warning.
    env_passthrough: ClassVar[tuple[str, ...]] = (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "DASHSCOPE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_CLOUD_PROJECT",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING",
    )
    # In a sandbox: its settings, Qwen sign-in and instructions are copied in (never its
    # chats); the Qwen sign-in reaches chat.qwen.ai. Its OpenAI-compatible API is the one a key
    # in the environment is kept out of the sandbox for.
    sandbox_needs: ClassVar[SandboxNeeds] = SandboxNeeds(
        state=(StateFolder(".qwen", copied=("settings.json", "oauth_creds.json", "QWEN.md")),),
        apis=(
            Api("https://api.openai.com/v1", "OPENAI_BASE_URL", ("OPENAI_API_KEY",)),
            Api("https://api.anthropic.com", "ANTHROPIC_BASE_URL", ("ANTHROPIC_API_KEY",)),
            Api(
                "https://dashscope.aliyuncs.com/compatible-mode/v1",
                None,
                ("DASHSCOPE_API_KEY",),
            ),
            Api(
                "https://generativelanguage.googleapis.com",
                None,
                ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            ),
        ),
        endpoints=("chat.qwen.ai",),
    )
    # Printed in every headless run (its vendored ripgrep, yolo without a sandbox): never the
    # reason a session failed.
    stderr_noise: ClassVar[tuple[str, ...]] = (
        "Ripgrep not available:",
        "Warning: running headless with --yolo",
    )

    resume_missing: ClassVar[re.Pattern[str]] = RESUME_MISSING

    def genai_provider(self, choice: Choice) -> str:
        """OpenAI's API shape (DashScope's compatible mode, or ``OPENAI_BASE_URL``), which
        the conventions name by its shape: ``openai``."""
        return "openai"

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        """The argv of a session (or of a Resume of ``resume``); the prompt goes to stdin.

        ``-y`` approves every tool call, as an unattended session needs. Qwen has a model
        (``-m``) but no effort setting, so an effort is refused. An empty model counts as none.
        How Qwen authenticates is its own settings' business (``--auth-type`` may be added to
        ``extra_args``). ``skills`` is unused: Qwen offers its skills to the model itself, so
        the prompt is passed on as written.
        """
        refuse_effort(self.name, choice)
        argv = ["qwen", "-o", "stream-json", "-y"]
        if choice.model:
            argv += ["-m", choice.model]
        argv += choice.extra_args
        if resume is not None:
            argv += ["-r", checked_session_id(resume)]
        return Invocation(argv=tuple(argv), stdin=prompt)

    def reader(self, worktree: Path) -> QwenReader:
        return QwenReader(worktree)

    def work_killed_at_exit(
        self, worktree: Path, env: Mapping[str, str], session_id: str
    ) -> dict[str, str]:
        """The background shells Qwen's status files say it cancelled: file name → command."""
        return cancelled_shells(home_of(env), worktree, session_id)


class QwenReader(ClaudeReader):
    """Reads one ``qwen -o stream-json`` stream; see the module docstring for the facts."""

    def __init__(self, worktree: Path | None = None) -> None:
        super().__init__(worktree)
        self._base = None if worktree is None else str(worktree)
        self._init_seen = False
        self._model: str | None = None
        self._turns_taken: int | None = None
        self._tokens: tuple[int, int, int] | None = None  # input, cached, output
        self._earlier: Usage | None = None
        self._result_seen = False
        self._result_failure: str | None = None

    def _event(self, event: dict[str, Any]) -> list[str]:
        kind = event.get("type")
        if kind == "assistant":
            return self._tool_lines(event.get("message"))
        if kind == "system":
            if event.get("subtype") != "init":
                return []  # Qwen reports no tasks; whatever claims to be one is not its own
            self._init(event)
        lines = super()._event(event)  # the init and the result, read as Claude's
        if kind == "result" and event.get("parent_tool_use_id") is None:
            self._result_details(event)
        return lines

    def _init(self, event: dict[str, Any]) -> None:
        if self._init_seen:
            return  # only the first init describes the session
        self._init_seen = True
        cwd, model = event.get("cwd"), event.get("model")
        if isinstance(cwd, str) and cwd:
            self._base = cwd
        if isinstance(model, str) and model:
            self._model = shorten(model)

    def _tool_lines(self, message: object) -> list[str]:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return []
        lines = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                name, tool_input = block.get("name"), block.get("input")
                if isinstance(name, str) and name:
                    self._tool(block.get("id"), name, "started")  # its result: as Claude's
                    tool_input = tool_input if isinstance(tool_input, dict) else {}
                    lines.append(gemini_tool_line(name, tool_input, self._base))
        return lines

    def _result_details(self, event: dict[str, Any]) -> None:
        self._result_seen = True
        turns = event.get("num_turns")
        self._turns_taken = turns if count(turns) else None
        # A Resume's token counts are the whole session's (0.24.4): its earlier calls' are taken
        # off. Its num_turns is the call's own.
        usage = without_earlier(event.get("usage"), self._earlier, _TOKEN_NAMES)
        # Unlike Claude's, Qwen's input_tokens (Gemini CLI's prompt count) already holds the
        # cache reads it names apart, so they are not added again.
        if isinstance(usage, dict) and count(usage.get("input_tokens")):
            self._tokens = (
                usage["input_tokens"],
                count_or_zero(usage.get("cache_read_input_tokens")),
                count_or_zero(usage.get("output_tokens")),
            )
        else:
            self._tokens = None
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        self._result_failure = cut(message) if isinstance(message, str) and message else None

    # After the stream

    def resumed_after(self, earlier: Usage) -> None:
        self._earlier = earlier

    @property
    def usage_so_far(self) -> Usage | None:
        """Always None: only Qwen's result is read for usage, at the session's end."""
        return None

    @property
    def killed(self) -> tuple[str, ...]:
        """Always empty: Qwen's stream never reports the background shells it kills."""
        return ()

    @property
    def usage(self) -> Usage | None:
        """The last result's turns and tokens, and the init's model; None without tokens."""
        if self._tokens is None:
            return None
        tokens_in, cached, tokens_out = self._tokens
        return Usage(
            turns=self._turns_taken,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cached_input_tokens=cached,
            models=() if self._model is None else (self._model,),
            subagents="unknown",  # not seen to count its sub-agents: none was run under it
        )

    @property
    def summary(self) -> str | None:
        """``[<n> turn(s), ]<in> input tokens (<cached> cached), <out> output tokens``."""
        if self._tokens is None:
            return None
        tokens = tokens_summary(*self._tokens)
        turns = self._turns_taken
        return tokens if turns is None else f"{turns_text(turns)}, {tokens}"

    @property
    def failed(self) -> bool:
        """As Claude's reading of the last result has it; no result at all is a failure too.

        Qwen ends without one only when it could not start (an unknown resume id) or was
        stopped mid-turn.
        """
        return not self._result_seen or super().failed

    @property
    def error(self) -> str | None:
        """A failed result's ``error.message``, else what Claude's reading of it says."""
        if self.failed and self._result_failure is not None:
            return self._result_failure
        return super().error

    def failure_at(self, now: datetime) -> FailureInfo | None:
        """Which failure a failed result's ``error.message`` names, else Claude's reading.

        Qwen quotes an API error's HTTP status (``[API Error: 401 …]``), which counts first.
        """
        if not self.failed:
            return None
        message = self._result_failure
        if message is not None:
            status = _api_error_status(message)
            info = None if status is None else status_failure(status, now)
            info = info or by_text(message, now, RESUME_MISSING)
            if info is not None:
                return info
        return super().failure_at(now)


def _api_error_status(message: str) -> int | None:
    """The status of ``[API Error: <status> …]``; None for any other message."""
    head = message.removeprefix("[API Error: ")
    if head is message or not head[:3].isdigit() or head[3:4] not in ("", " ", "]"):
        return None
    return int(head[:3])
