"""The Claude Code Harness: ``claude -p`` with ``--output-format stream-json --verbose``.

What the reader relies on, as observed on Claude Code 2.1.197 (see ``tests/transcripts``):

- Every line is one JSON object with a ``type``. The first ``system``/``init`` carries the
  session id, the ``cwd`` and ``apiKeySource`` (``"none"`` on a subscription, where the cost
  figure is only what the tokens would have cost at API prices); Claude prints it as it sends
  its first request, not before. Claude prints more inits on its own: one per extra turn it
  starts when a background task finishes, and one per turn of a Resume. Only the first
  describes the session.
- An ``assistant`` line holds one content block (Claude prints one line per block, all with one
  ``message.id``), so each ``tool_use`` block is one progress line.
- A background Bash gives ``system``/``task_started`` with the task's ``description``. When the
  turn ends with the task still running, Claude prints its ``result`` first, waits about five
  seconds, kills the task and only then prints ``task_updated`` (``patch.status: "killed"``) and
  ``task_notification`` (``status: "stopped"``), and exits 0. So the reader reads to EOF and
  counts **only the kills after the last result**: a task stopped before a later ``result`` was
  dealt with inside the session, and a Resume replays the old task's "No completion record"
  notices *before* its own results, which must not count as new killed work.
- One ``claude -p`` can print several top-level ``result`` lines (one per turn, and an empty one
  at the start of a Resume); the last one holds the outcome. Results of subagents carry a
  ``parent_tool_use_id`` and are not the session's.
- Each ``assistant`` line carries its message's ``usage`` as counted at the message's start:
  the input in full, the output only as far as the first block (``1``, where the result
  later counts ``7``). Only the result says the cost, and the exact totals.
- A result's ``usage`` and ``num_turns`` are its turn's, the main agent's alone; its
  ``total_cost_usd`` and ``modelUsage`` are the whole call's so far, sub-agents included (the
  call's first result 20 input tokens in both; with a sub-agent, ``usage`` 20 and
  ``modelUsage`` 40). A sub-agent's messages that call tools are printed with a
  ``parent_tool_use_id``; its last one is not, but its ``usage`` comes back in the ``user``
  line whose ``tool_use_result`` (with an ``agentId``) hands the sub-agent's answer on.
- The init's ``apiKeySource`` says how the session is billed: ``"none"`` on a login
  (``CLAUDE_CODE_OAUTH_TOKEN`` too), the key's source (``ANTHROPIC_API_KEY``) otherwise.
- A failed turn can arrive as ``subtype: "success"`` with ``is_error: true`` (an API error), so
  failure is decided from both. ``total_cost_usd`` may be the integer ``0``.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from thirdshift._budget import BudgetChecks
from thirdshift._sandbox import Api, SandboxNeeds, StateFolder
from thirdshift._values import Billing, Usage
from thirdshift.harness._base import Choice, Harness, Invocation, checked_session_id
from thirdshift.harness._builtin.claude_signs import RESUME_MISSING, ClaudeSigns, claude_failure
from thirdshift.harness._events import JsonEventReader
from thirdshift.harness._failures import FailureInfo
from thirdshift.harness._lines import (
    MAX_ID,
    MAX_KILLED,
    MAX_TRACKED,
    bash_line,
    cut,
    listed,
    relative,
    shorten,
)
from thirdshift.harness._usage import ClaudeCall, cost_text, turns_text

# The input fields whose first non-empty string details a tool line, in order of preference.
_DETAIL_KEYS = ("file_path", "pattern", "description", "url", "query")
# Refusals of the key in a row after which a session on an API key is stopped (see refused).
REFUSALS_TO_STOP = 2
# The statuses of a ``task_updated`` patch that say a background task is over.
ENDED_TASK_STATUSES = frozenset({"completed", "failed", "killed", "stopped"})


@dataclass(frozen=True)
class ClaudeHarness(Harness):
    """Claude Code: ``claude -p``, stopped with SIGTERM, project skills in ``.claude/skills``."""

    name: ClassVar[str] = "claude"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = (signal.SIGTERM,)
    skills_dir: ClassVar[str] = ".claude/skills"
    # Each assistant message's usage says tokens and turns as they go (output only as far as the
    # message's first line counted it); each result the call's cost so far, and exact figures.
    budget_checks: ClassVar[BudgetChecks] = BudgetChecks(
        while_running=frozenset({"usd", "tokens", "turns"}),
        at_end=frozenset({"usd", "tokens", "turns"}),
    )
    # Its authentication and configuration: kept under the minimal environment policy.
    env_passthrough: ClassVar[tuple[str, ...]] = (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CLAUDE_CONFIG_DIR",
    )

    # In a sandbox: its settings, sign-in and user-level instructions, agents, commands and
    # skills are copied in (never ~/.claude/projects: other projects' sessions). ~/.claude.json
    # lives beside the folder, in HOME itself.
    sandbox_needs: ClassVar[SandboxNeeds] = SandboxNeeds(
        state=(
            StateFolder("", copied=(".claude.json",)),
            StateFolder(
                ".claude",
                copied=(
                    "settings.json",
                    ".credentials.json",
                    "CLAUDE.md",
                    "agents",
                    "commands",
                    "skills",
                    ".claude.json",
                ),
                variable="CLAUDE_CONFIG_DIR",
            ),
        ),
        apis=(
            Api(
                "https://api.anthropic.com",
                "ANTHROPIC_BASE_URL",
                ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
            ),
        ),
    )

    resume_missing: ClassVar[re.Pattern[str]] = RESUME_MISSING
    # Its init says how the session is billed (apiKeySource); an API key in its environment
    # says so before it starts, as Claude takes the key over a login (seen on 2.1.197).
    billing_told: ClassVar[Literal["stream"]] = "stream"

    def billing(self, env: Mapping[str, str]) -> Billing | None:
        """``api`` where ``ANTHROPIC_API_KEY`` is set: Claude bills it, even over a login."""
        return "api" if env.get("ANTHROPIC_API_KEY") else None

    def genai_provider(self, choice: Choice) -> str:
        """Anthropic's API: ``anthropic``."""
        return "anthropic"

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        """The argv of a session (or of a Resume of ``resume``); the prompt goes to stdin.

        ``--permission-mode auto`` because the other unattended modes are refused as root;
        ``--verbose`` because ``stream-json`` output needs it. An empty model or effort counts
        as none, as in ``str(choice)``. ``skills`` is unused: prompts are already written in
        Claude's ``/<skill>`` form.
        """
        argv = ["claude", "-p", "--permission-mode", "auto"]
        if choice.model:
            argv += ["--model", choice.model]
        if choice.effort:
            argv += ["--effort", choice.effort]
        argv += choice.extra_args
        argv += ["--output-format", "stream-json", "--verbose"]
        if resume is not None:
            argv += ["--resume", checked_session_id(resume)]
        return Invocation(argv=tuple(argv), stdin=prompt)

    def reader(self, worktree: Path) -> ClaudeReader:
        return ClaudeReader(worktree)


class ClaudeReader(JsonEventReader):
    """Reads one Claude Code ``stream-json`` stream; see the module docstring for the facts.

    Its session id is that of the first ``init``; its final message the last result's.
    """

    def __init__(self, worktree: Path | None = None) -> None:
        super().__init__(worktree)
        self._initialised = False  # the first init describes the session; later ones do not
        self._cwd: str | None = None
        self._billing: Billing | None = None
        self._told: Billing | None = None  # what the CLI's settings said before it started
        # Both bounded (see MAX_TRACKED), and each text shortened as it is stored.
        self._descriptions: dict[str, str] = {}
        # Background tasks started and not yet said to have ended (completed, stopped,
        # killed), oldest first: what a stop of the lingering CLI kills with it.
        self._running: dict[str, None] = {}
        # task id -> (description, whether it is only the task id for want of a better one)
        self._killed: dict[str, tuple[str, bool]] = {}
        self._kills_untracked = 0
        self._failed = False
        self._error: str | None = None
        self._model: str | None = None
        self._call = ClaudeCall()  # what the results said, and what was shown since
        self._signs = ClaudeSigns()  # what tells one failure from another, and quota warnings

    # Reading

    def _may_matter(self, line: str) -> bool:
        """False only for a line whose event :meth:`_event` would surely ignore, unparsed.

        Most of a stream's bytes are tool results (``user`` events), which give no progress
        line and change nothing; parsing them is most of a reader's work. Text and thinking
        (``assistant`` events without a ``tool_use`` block) are parsed for their message's
        ``usage`` alone, which the Budget's check reads as the stream goes (it costs: see
        ``bench/RESULTS.md``). The test is exact, not a guess: without a ``\\u`` escape,
        JSON can spell the string ``result`` only as ``"result"`` (every other escape stands
        for a character that is neither a letter nor ``_``), so an event of type ``result``
        holds ``"result"``, one that gives tool lines holds ``"assistant"`` and ``"tool_use"``,
        one that says a message's usage ``"assistant"`` and ``"usage"``, and so on. A line that
        holds none of what any event that counts must hold is one that :meth:`_event` ignores.
        """
        if ("\\" in line and "\\u" in line) or '"result"' in line:  # "\\" alone: a fast memchr
            return True
        if '"assistant"' in line and (
            '"tool_use"' in line or '"error"' in line or '"usage"' in line
        ):
            return True
        if '"rate_limit_event"' in line or ('"system"' in line and '"api_retry"' in line):
            return True
        if '"user"' in line and '"agentId"' in line:
            return True  # a sub-agent's answer, with its last message's usage
        if self._tools is not None and '"tool_result"' in line:
            return True  # a tool call's end, read only while someone is told of it
        return '"system"' in line and (
            '"task_' in line or (not self._initialised and '"init"' in line)
        )

    def _event(self, event: dict[str, Any]) -> list[str]:
        warning = self._signs.see(event)
        if warning:
            return warning
        kind = event.get("type")
        if kind == "assistant":
            self._call.message(event.get("message"))
            return self._assistant(event)
        if kind == "system":
            return self._system(event)
        if kind == "result":
            self._result(event)
        elif kind == "user":
            ended = event.get("tool_use_result")
            if isinstance(ended, dict) and "agentId" in ended:
                self._call.subagent_ended(ended.get("usage"))  # its last message, never shown
            self._tool_results(event.get("message"))
        return []

    def _tool_results(self, message: object) -> None:
        """Tell of each tool call a ``user`` message hands the result of (if someone listens)."""
        content = message.get("content") if isinstance(message, dict) else None
        if self._tools is None or not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                failed = block.get("is_error") is True
                self._tool(block.get("tool_use_id"), None, "failed" if failed else "ended")

    def _system(self, event: dict[str, Any]) -> list[str]:
        subtype = event.get("subtype")
        if subtype == "init":
            if self._initialised:
                return []
            self._initialised = True
            session_id = event.get("session_id")
            self._session_id = session_id if isinstance(session_id, str) else None
            cwd = event.get("cwd")
            self._cwd = cwd if isinstance(cwd, str) else None
            self._billing = _billing(event.get("apiKeySource"))
            model = event.get("model")
            self._model = shorten(model) if isinstance(model, str) else None
            return ["session started"]
        task_id = event.get("task_id")
        if not isinstance(task_id, str):
            return []
        task_id = task_id[:MAX_ID]
        if subtype == "task_started":
            description = event.get("description")
            if isinstance(description, str) and description:
                if len(self._descriptions) >= MAX_TRACKED and task_id not in self._descriptions:
                    del self._descriptions[next(iter(self._descriptions))]  # the oldest
                self._descriptions[task_id] = shorten(description, MAX_KILLED)
            if len(self._running) < MAX_TRACKED:
                self._running[task_id] = None
        elif subtype == "task_updated":
            patch = event.get("patch")
            status = patch.get("status") if isinstance(patch, dict) else None
            if isinstance(status, str) and status in ENDED_TASK_STATUSES:
                self._running.pop(task_id, None)
            if status == "killed":
                self._kill(task_id, None)
        elif subtype == "task_notification":
            self._running.pop(task_id, None)
            if event.get("status") == "stopped":
                summary = event.get("summary")
                self._kill(task_id, summary if isinstance(summary, str) and summary else None)
        return []

    def _kill(self, task_id: str, summary: str | None) -> None:
        """Record that ``task_id`` was killed, once, with the best description known."""
        described = self._descriptions.get(task_id)
        if described is not None:
            best = (described, False)
        elif summary is not None:
            best = (shorten(summary, MAX_KILLED), False)
        else:
            best = (shorten(task_id, MAX_KILLED), True)
        known = self._killed.get(task_id)
        if known is None and len(self._killed) >= MAX_TRACKED:
            self._kills_untracked += 1  # counted, not described: "and N more" says it
            return
        # A later event may describe a task that an earlier one could only name by its id.
        if known is None or (known[1] and not best[1]):
            self._killed[task_id] = best

    def _result(self, event: dict[str, Any]) -> None:
        if event.get("parent_tool_use_id") is not None:
            return  # a subagent's result, not the session's
        self._turns_ended += 1
        self._call.result(event, self._model)
        if not _answers_a_notification(event):
            self._killed.clear()
            self._kills_untracked = 0
        self._failed = event.get("subtype") != "success" or event.get("is_error") is True
        result = event.get("result")
        self._final_message = cut(result) if isinstance(result, str) else None
        self._error = cut(self._result_error(event)) if self._failed else None

    @staticmethod
    def _result_error(event: dict[str, Any]) -> str:
        errors = event.get("errors")
        if isinstance(errors, list):
            texts = [error for error in errors if isinstance(error, str)]
            if texts:
                return "\n".join(texts)
        result = event.get("result")
        if isinstance(result, str) and result:
            return result
        subtype = event.get("subtype")
        return subtype if isinstance(subtype, str) and subtype else "the turn failed"

    def _assistant(self, event: dict[str, Any]) -> list[str]:
        message = event.get("message")
        if not isinstance(message, dict):
            return []
        content = message.get("content")
        if not isinstance(content, list):
            return []
        lines = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                name = block.get("name")
                if isinstance(name, str):
                    self._tool(block.get("id"), name, "started")
                    tool_input = block.get("input")
                    lines.append(
                        self._tool_line(name, tool_input if isinstance(tool_input, dict) else {})
                    )
        return lines

    def _tool_line(self, name: str, tool_input: dict[str, Any]) -> str:
        if name == "Bash":
            command = tool_input.get("command")
            return bash_line(command) if isinstance(command, str) else "Bash"
        if name == "Skill":
            skill = tool_input.get("skill")
            return "skill " + (shorten(skill) if isinstance(skill, str) and skill else "?")
        name = shorten(name)
        for key in _DETAIL_KEYS:
            detail = tool_input.get(key)
            if isinstance(detail, str) and detail:
                base = self._cwd if self._cwd is not None else self._worktree
                return f"{name} {shorten(relative(detail, base))}"
        return name

    # After the stream

    @property
    def still_running(self) -> tuple[str, ...]:
        """Background tasks the stream started and never said ended, in order: what a stop of
        the CLI lingering after its result kills, when it dies before it can report them."""
        if self._failed:
            return ()
        return listed([self._descriptions.get(task, task) for task in self._running], 0)

    @property
    def killed(self) -> tuple[str, ...]:
        """Tasks killed after the last result, in order; empty if the last result failed.

        At most ``MAX_KILLED_LISTED`` entries: past that, the last is ``and N more``.
        """
        if self._failed:
            return ()
        return listed([text for text, _ in self._killed.values()], self._kills_untracked)

    @property
    def summary(self) -> str | None:
        """``<n> turn(s), $<cost>``, ``at API prices`` on a subscription; None without both."""
        usage = self._call.results
        if usage is None or usage.turns is None or usage.cost_usd is None:
            return None
        text = f"{turns_text(usage.turns)}, {cost_text(usage.cost_usd)}"
        return text + " at API prices" if self.billing == "subscription" else text

    @property
    def failed(self) -> bool:
        return self._failed

    @property
    def billing(self) -> Billing | None:
        """As the init's ``apiKeySource`` says (see :func:`_billing`), else as told."""
        return self._billing or self._told

    def billed(self, billing: Billing) -> None:
        self._told = billing

    @property
    def refused(self) -> str | None:
        """Said once two tries in a row had the key refused (401), on an API key: Claude
        2.1.197 would go on for eight more over about three minutes. A login is left alone:
        under the fake model one recovered after a first 401, and Claude gives one up itself
        after its second."""
        if self._signs.refusals < REFUSALS_TO_STOP or self.billing == "subscription":
            return None
        return (
            f"the API refused its key {self._signs.refusals} times in a row (401), and claude "
            "would go on retrying for minutes"
        )

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def usage(self) -> Usage | None:
        """What the top-level results report: their turns added up, the last one's tokens
        (sub-agents' included) and cost, the call's so far; None before one."""
        return self._described(self._call.results)

    @property
    def usage_so_far(self) -> Usage | None:
        """What the results said, and the assistant messages shown since the last one (see the
        module docstring: their output is undercounted); None before either. Its cost is the
        last result's: only a result says one."""
        return self._described(self._call.so_far)

    def _described(self, usage: Usage | None) -> Usage | None:
        """``usage`` with how the init said the session was billed, and the model it named."""
        if usage is None:
            return None
        models = usage.models or (() if self._model is None else (self._model,))
        return replace(usage, billing=self.billing, models=models)

    @property
    def failure(self) -> FailureInfo | None:
        """Which failure the stream shows, if the last turn failed; see :meth:`failure_at`."""
        return self.failure_at(datetime.now().astimezone())

    def failure_at(self, now: datetime) -> FailureInfo | None:
        """Which failure the stream shows, a reset time without a date resolved after ``now``.

        None if the last turn did not fail, or failed in a way no rule tells apart.
        """
        turn = self._signs.last_turn
        if not self._failed or turn is None:
            return None
        return claude_failure(turn, now)


def _billing(source: object) -> Billing | None:
    """How Claude's ``apiKeySource`` says the session is billed: ``"none"`` is a subscription's
    login (no key is sent), any key's source (``ANTHROPIC_API_KEY``, ``apiKeyHelper``, …) an
    API key. None where the init does not say."""
    if source == "none":
        return "subscription"
    return "api" if isinstance(source, str) and source else None


def _answers_a_notification(result: dict[str, Any]) -> bool:
    """Whether ``result`` ends a turn Claude took by itself to read a task's notification.

    Stopped in its grace, the real Claude can report the work it killed and then take that
    report up in a turn of its own before it exits (``origin: task-notification``): the work
    is still dead, so such a turn keeps the kills it follows. A turn the prompt or a Resume
    started clears them, as its model had the chance to start the work again.
    """
    origin = result.get("origin")
    return isinstance(origin, dict) and origin.get("kind") == "task-notification"
