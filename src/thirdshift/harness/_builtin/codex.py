"""The Codex Harness: ``codex exec --json``, reading the prompt from stdin (``-``).

What the reader relies on, as observed on Codex 0.171.0 (see ``tests/transcripts``):

- Every line is one JSON object with a ``type``: ``thread.started`` (the ``thread_id``, which is
  the id to resume), ``turn.started``, ``item.started`` / ``item.updated`` / ``item.completed``
  (an ``item`` with an ``id``, a ``type`` and a ``status``), ``turn.completed`` (``usage``, no
  cost figure), ``turn.failed`` (``error.message``) and ``error`` (``message``).
- An item is reported more than once as it progresses, so only the first sight of an item id
  gives progress lines, and its latest status is what counts.
- **Background work is detected at ``turn.completed``.** Codex's unified exec returns to the
  model while a command is still running, so a command left running shows only as an
  ``item.started`` ``command_execution`` (or an ``item.completed`` still ``in_progress``) with no
  completion before ``turn.completed``. When ``codex exec`` exits it kills every process it
  started, and its stream never says so: whatever is still running when the turn completes is
  the work that was killed. The same holds for ``collab_tool_call`` items (sub-agents).
- An API error gives an ``error`` event and then ``turn.failed``; the failure is the first
  ``turn.failed``. ``error`` events alone are retries and warnings (``Reconnecting... 1/5``), not
  failures, and so are ``error`` items.
- Commands are reported as the argv Codex ran, joined and quoted (``/bin/bash -lc 'sleep 300'``);
  they are unwrapped to the script for people to read.
- ``codex exec`` waits for stdin to close even with a prompt argument, and its ``resume``
  subcommand rejects ``-C``, ``-s`` and ``--add-dir``: every flag goes before ``resume``, and the
  worktree is the process's cwd.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeGuard

from thirdshift._budget import BudgetChecks, plus
from thirdshift._sandbox import Api, SandboxNeeds, StateFolder
from thirdshift._values import Billing, Usage
from thirdshift.harness._base import (
    SESSION_ID,
    Choice,
    Harness,
    Invocation,
    ToolState,
    checked_session_id,
)
from thirdshift.harness._builtin.codex_rollouts import auth_billing, codex_home, delegated_usage
from thirdshift.harness._events import JsonEventReader
from thirdshift.harness._failures import FailureInfo, by_text
from thirdshift.harness._lines import (
    MAX_ID,
    MAX_KILLED,
    MAX_KILLED_LISTED,
    MAX_TRACKED,
    bash_line,
    cut,
    first_line,
    listed,
    relative,
    shorten,
    unwrap_command,
)
from thirdshift.harness._usage import CodexUsage, TokenNames, without_earlier

_TRACKED = frozenset({"command_execution", "collab_tool_call"})
_ITEM_EVENTS = frozenset({"item.started", "item.updated", "item.completed"})
# The items that are tool calls, each named by its type (an MCP call by its tool's name).
_TOOLS = frozenset(
    {"command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"}
)
_CHANGE_VERBS = {"add": "Add", "delete": "Delete"}  # any other kind of change is an edit


def codex_prompt(prompt: str, skills: Sequence[str]) -> str:
    """``prompt`` with a leading ``/<skill>`` written as Codex's ``$<skill>``.

    Only for a skill in ``skills`` (those linked for the session), so that a prompt starting
    with a path such as ``/etc/hosts`` stays as it is. ``<skill>`` runs to the first whitespace.
    """
    if isinstance(skills, str):
        raise TypeError("skills must be a sequence of skill names, not one string")
    if not prompt.startswith("/"):
        return prompt
    for skill in skills:
        after = prompt[1 + len(skill) : 2 + len(skill)]  # the character after `/<skill>`, if any
        if skill and prompt.startswith(skill, 1) and (not after or after.isspace()):
            return "$" + prompt[1:]
    return prompt


RESUME_MISSING = re.compile(r"no rollout found for thread id", re.IGNORECASE)
"""Codex's wording for a Resume of a session it cannot find (on stderr alone: stdout is empty)."""


@dataclass(frozen=True)
class CodexHarness(Harness):
    """Codex: ``codex exec``, stopped with SIGINT then SIGTERM, skills in ``.agents/skills``.

    SIGINT comes first because it is the only signal on which Codex stops cleanly: it
    interrupts the turn.
    """

    name: ClassVar[str] = "codex"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = (signal.SIGINT, signal.SIGTERM)
    skills_dir: ClassVar[str] = ".agents/skills"
    # Each turn.completed says its tokens; the stream never says a cost.
    budget_checks: ClassVar[BudgetChecks] = BudgetChecks(
        while_running=frozenset({"tokens", "turns"}), at_end=frozenset({"tokens", "turns"})
    )
    # Its authentication and configuration: kept under the minimal environment policy.
    env_passthrough: ClassVar[tuple[str, ...]] = (
        "CODEX_API_KEY",
        "CODEX_HOME",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    )
    # In a sandbox: its configuration, sign-in, instructions and prompts are copied in (never
    # its sessions); a ChatGPT sign-in reaches chatgpt.com, and refreshes at auth.openai.com.
    sandbox_needs: ClassVar[SandboxNeeds] = SandboxNeeds(
        state=(
            StateFolder(
                ".codex",
                copied=("config.toml", "auth.json", "AGENTS.md", "prompts"),
                variable="CODEX_HOME",
            ),
        ),
        apis=(
            Api(
                "https://api.openai.com/v1", "OPENAI_BASE_URL", ("OPENAI_API_KEY", "CODEX_API_KEY")
            ),
        ),
        endpoints=("chatgpt.com", "auth.openai.com"),
        unneeded=("github.com", "api.github.com"),  # asked on every start (0.171.0)
    )
    # Printed on every headless run (stdin is not a terminal; a home under /tmp): never the
    # reason a session failed, so never its diagnostic.
    stderr_noise: ClassVar[tuple[str, ...]] = (
        "Reading additional input from stdin...",
        "WARNING: proceeding, even though we could not create PATH aliases",
    )

    resume_missing: ClassVar[re.Pattern[str]] = RESUME_MISSING

    def genai_provider(self, choice: Choice) -> str:
        """OpenAI's API: ``openai``."""
        return "openai"

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        """The argv of a session (or of a Resume of ``resume``); the prompt goes to stdin.

        A Resume repeats every flag, as Codex keeps none of them, and puts ``resume <id>``
        after all of them. An empty model or effort counts as none, as in ``str(choice)``.
        """
        argv = [
            "codex",
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
        ]
        if choice.model:
            argv += ["-m", choice.model]
        if choice.effort:
            # A TOML string: json.dumps quotes a plain word as "high", and escapes anything
            # else the way TOML's basic strings read it, so an effort cannot add config keys.
            effort = json.dumps(choice.effort, ensure_ascii=False)
            argv += ["-c", f"model_reasoning_effort={effort}"]
        argv += choice.extra_args
        if resume is not None:
            argv += ["resume", checked_session_id(resume)]
        argv.append("-")
        return Invocation(argv=tuple(argv), stdin=codex_prompt(prompt, skills))

    def reader(self, worktree: Path) -> CodexReader:
        return CodexReader(worktree)

    # Its settings say how it bills (CODEX_API_KEY, auth.json); its stream never does.
    billing_told: ClassVar[Literal["before"]] = "before"

    def billing(self, env: Mapping[str, str]) -> Billing | None:
        return auth_billing(env)

    def subagent_usage(self, env: Mapping[str, str], session_id: str, since: float) -> Usage | None:
        """What the threads the session spawned used in this call, from its rollouts under
        ``CODEX_HOME`` (:mod:`thirdshift.harness._builtin.codex_rollouts`)."""
        home = codex_home(env)
        if home is None or not SESSION_ID.fullmatch(session_id):
            return None  # stream data never becomes a path unless it is a plain id
        return delegated_usage(home, session_id, since)


class CodexReader(JsonEventReader):
    """Reads one ``codex exec --json`` stream; see the module docstring for the facts.

    Its session id is the thread id of the first ``thread.started``; its final message the
    text of the last agent message.
    """

    def __init__(self, worktree: Path | None = None) -> None:
        super().__init__(worktree)
        # All bounded (see MAX_TRACKED), each text shortened as it is stored.
        self._seen: dict[str, None] = {}  # item ids, oldest first
        self._running: dict[str, str] = {}  # item id -> how it reads if it is killed
        self._killed: list[str] = []
        self._killed_unlisted = 0
        self._last_error: str | None = None
        self._failure: str | None = None
        self._usage: tuple[int, int, int] | None = None
        self._total = CodexUsage()
        self._earlier: Usage | None = None
        self._delegated: Usage | None = None  # its sub-agents', from the rollouts
        self._billing: Billing | None = None  # as its settings said, before it started
        self._refusals = 0  # retries in a row that the API refused the key (401)

    # Reading

    def _event(self, event: dict[str, Any]) -> list[str]:
        kind = event.get("type")
        if not isinstance(kind, str):
            return []
        if kind in _ITEM_EVENTS:
            item = event.get("item")
            return self._item(item) if isinstance(item, dict) else []
        if kind == "thread.started":
            thread_id = event.get("thread_id")
            if self._session_id is None and isinstance(thread_id, str):
                self._session_id = thread_id
                return ["session started"]
        elif kind == "turn.completed":
            self._turn_completed(event)
        elif kind == "turn.failed":
            if self._failure is None:
                error = event.get("error")
                message = error.get("message") if isinstance(error, dict) else None
                self._failure = cut(message) if isinstance(message, str) else "turn failed"
        elif kind == "error":
            message = event.get("message")
            if isinstance(message, str):
                self._last_error = cut(message)
                refused = _RETRY_REFUSED.match(message) is not None
                self._refusals = self._refusals + 1 if refused else 0
        return []

    def _item(self, item: dict[str, Any]) -> list[str]:
        item_id = item.get("id")
        item_id = item_id[:MAX_ID] if isinstance(item_id, str) else ""
        kind = item.get("type")
        if not isinstance(kind, str):
            kind = ""
        if kind in _TOOLS:
            self._tool(item_id, _tool_name(kind, item), _tool_state(item.get("status")))
        if kind in _TRACKED:
            if item.get("status") != "in_progress":
                self._running.pop(item_id, None)
            elif item_id in self._running or len(self._running) < MAX_TRACKED:
                self._running[item_id] = shorten(_killed_description(item), MAX_KILLED)
        elif kind == "agent_message":
            text = item.get("text")
            if isinstance(text, str):
                self._final_message = cut(text)
        elif kind == "error":
            message = item.get("message")
            if isinstance(message, str):
                self._last_error = cut(message)
        if item_id in self._seen:
            return []
        if len(self._seen) >= MAX_TRACKED:
            del self._seen[next(iter(self._seen))]  # the oldest: its events are long past
        self._seen[item_id] = None
        return self._item_lines(kind, item)

    def _item_lines(self, kind: str, item: dict[str, Any]) -> list[str]:
        if kind == "command_execution":
            command = item.get("command")
            return [bash_line(unwrap_command(command))] if isinstance(command, str) else []
        if kind == "file_change":
            changes = item.get("changes")
            if not isinstance(changes, list):
                return []
            lines = []
            for change in changes:
                if isinstance(change, dict):
                    path = change.get("path")
                    if isinstance(path, str) and path:
                        how = change.get("kind")
                        verb = _CHANGE_VERBS.get(how, "Edit") if isinstance(how, str) else "Edit"
                        lines.append(f"{verb} {shorten(relative(path, self._worktree))}")
            return lines
        if kind == "mcp_tool_call":
            return [f"{_text_or_unknown(item.get('server'))} {_text_or_unknown(item.get('tool'))}"]
        if kind == "web_search":
            query = item.get("query")
            return [f"web search {shorten(query)}" if isinstance(query, str) else "web search"]
        if kind == "collab_tool_call":
            return [f"agent {_text_or_unknown(item.get('tool'))}"]
        return []

    def _turn_completed(self, event: dict[str, Any]) -> None:
        self._turns_ended += 1
        # A Resume's counts are the whole thread's (0.171.0): its earlier calls' are taken off.
        usage = without_earlier(event.get("usage"), self._earlier, _TOKEN_NAMES)
        self._total.add(usage)
        if isinstance(usage, dict):
            tokens_in, cached, tokens_out = (
                usage.get("input_tokens"),
                usage.get("cached_input_tokens"),
                usage.get("output_tokens"),
            )
            if _is_count(tokens_in) and _is_count(tokens_out):
                self._usage = (tokens_in, cached if _is_count(cached) else 0, tokens_out)
        # Codex kills what is still running as `codex exec` exits, without a word in the stream.
        for description in self._running.values():
            if len(self._killed) < MAX_KILLED_LISTED:
                self._killed.append(description)
            else:
                self._killed_unlisted += 1
        self._running.clear()

    # After the stream

    @property
    def killed(self) -> tuple[str, ...]:
        """Work still running at ``turn.completed``, in order; empty if a turn failed.

        At most ``MAX_KILLED_LISTED`` entries: past that, the last is ``and N more``.
        """
        return () if self.failed else listed(self._killed, self._killed_unlisted)

    @property
    def summary(self) -> str | None:
        """``<in> input tokens (<cached> cached), <out> output tokens``; None without usage."""
        if self._usage is None:
            return None
        tokens_in, cached, tokens_out = self._usage
        return f"{tokens_in} input tokens ({cached} cached), {tokens_out} output tokens"

    @property
    def failed(self) -> bool:
        return self._failure is not None

    @property
    def error(self) -> str | None:
        """The failure of the first failed turn, else the last error reported, if any."""
        return self._failure if self._failure is not None else self._last_error

    def resumed_after(self, earlier: Usage) -> None:
        self._earlier = earlier

    def add_subagents(self, used: Usage) -> None:
        self._delegated = used

    @property
    def billing(self) -> Billing | None:
        return self._billing

    def billed(self, billing: Billing) -> None:
        self._billing = billing

    @property
    def refused(self) -> str | None:
        """Said once two retries in a row had the key refused (401), on an API key; a ChatGPT
        login is left to its own retries (which refresh its token)."""
        if self._refusals < REFUSALS_TO_STOP or self._billing != "api":
            return None
        return (
            f"the API refused its key {self._refusals} times in a row (401), and codex would "
            "go on retrying"
        )

    @property
    def usage(self) -> Usage | None:
        """The usage of every ``turn.completed``, added up, and its sub-agents' once the
        Harness has read them from the rollouts; None if no turn completed."""
        total = self._total.total()
        if total is not None and self._delegated is not None:
            total = replace(plus(total, self._delegated), subagents=self._delegated.subagents)
        return total if total is None else replace(total, billing=self._billing)

    @property
    def usage_so_far(self) -> Usage | None:
        """The usage of every ``turn.completed`` so far, as the session goes (and its
        sub-agents', once read after it)."""
        return self.usage

    @property
    def failure(self) -> FailureInfo | None:
        """Which failure the stream shows, if a turn failed; see :meth:`failure_at`."""
        return self.failure_at(datetime.now().astimezone())

    def failure_at(self, now: datetime) -> FailureInfo | None:
        """Which failure the first failed turn names, a reset time resolved after ``now``.

        Codex gives a local time without a date ("try again at 5:12 AM"): the next such time.
        None if no turn failed, or it failed in a way no rule tells apart.
        """
        return None if self._failure is None else by_text(self._failure, now, RESUME_MISSING)


_TOKEN_NAMES: TokenNames = ("input_tokens", "cached_input_tokens", "output_tokens")
# A retry of Codex 0.171.0 that the API refused: "Reconnecting... 1/5 (unexpected status 401
# Unauthorized: …)" (tests/transcripts/codex-401-retries5: five retries over about 6 s).
_RETRY_REFUSED = re.compile(r"Reconnecting\.\.\. \d+/\d+ \(unexpected status 401\b")
REFUSALS_TO_STOP = 2


def _tool_name(kind: str, item: dict[str, Any]) -> str:
    """A tool call's name: its item's type; an MCP call's, ``<server>.<tool>``."""
    if kind == "mcp_tool_call":
        return f"{_text_or_unknown(item.get('server'))}.{_text_or_unknown(item.get('tool'))}"
    return kind


def _tool_state(status: object) -> ToolState:
    """Where an item's ``status`` says its tool call stands."""
    if status == "in_progress":
        return "started"
    return "failed" if status in ("failed", "declined") else "ended"


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _text_or_unknown(value: object) -> str:
    return shorten(value) if isinstance(value, str) and value else "?"


def _killed_description(item: dict[str, Any]) -> str:
    """How killed work reads in the Resume prompt: the command, or the sub-agent's call."""
    if item.get("type") == "command_execution":
        command = item.get("command")
        return unwrap_command(command) if isinstance(command, str) and command else "a command"
    tool = _text_or_unknown(item.get("tool"))
    prompt = item.get("prompt")
    if isinstance(prompt, str) and first_line(prompt):
        return f"agent {tool}: {shorten(first_line(prompt))}"
    return f"agent {tool}"
