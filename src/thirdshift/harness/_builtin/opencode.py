"""The opencode Harness: ``opencode run --format json --auto``, the prompt on stdin.

What the reader relies on, as observed on opencode 1.18.33 (see ``tests/transcripts/opencode-*``):

- Every line is one JSON object with a ``type``, a ``timestamp`` and the ``sessionID`` (the id
  to resume with ``-s``); there is no init line, so the first id seen is the session's.
- ``step_start`` opens one model call; ``text`` carries a finished text part (``part.text``);
  ``tool_use`` a tool call, printed only once the tool has finished (``part.tool``,
  ``part.state.input``); ``step_finish`` closes the call with its ``reason`` (``tool-calls``
  or ``stop``), its ``tokens`` (uncached ``input``, ``output`` less ``reasoning``, and
  ``cache.read``/``cache.write`` apart) and its ``cost``. An API failure is one ``error`` event
  (``error.name``, ``error.data.message``, ``error.data.statusCode``) and exit 1.
- **There is no result line.** The turn ended well when the last ``step_finish`` has reason
  ``stop`` and no ``error`` came; a stream that stops anywhere else (SIGINT and SIGTERM kill
  opencode at once, printing nothing) is an unfinished turn. The final message is the last
  text part printed (a part printed again replaces itself).
- Background work never shows in the stream: the bash tool has no background flag, and a shell
  ``&`` child outlives opencode without a word. ``killed`` is therefore always empty; only the
  supervisor can see such work.
- A positional message reaches the model wrapped in quotes (opencode joins and quotes argv
  words), so the prompt goes to stdin, where it arrives verbatim.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from thirdshift._budget import BudgetChecks
from thirdshift._sandbox import Api, SandboxNeeds, StateFolder
from thirdshift._values import Usage
from thirdshift.errors import ConfigurationError
from thirdshift.harness._base import Choice, Harness, Invocation, checked_session_id
from thirdshift.harness._builtin.counts import count_or_zero, status_failure, tokens_summary
from thirdshift.harness._events import JsonEventReader
from thirdshift.harness._failures import FailureInfo, by_text
from thirdshift.harness._lines import bash_line, cut, relative, shorten
from thirdshift.harness._usage import cost_text, count, dollars

# The input fields whose first non-empty string details a tool line, in order of preference
# (opencode's tools name their arguments in camelCase).
_DETAIL_KEYS = ("filePath", "pattern", "path", "url", "query", "description")


RESUME_MISSING = re.compile(r"Error: \S*Session not found", re.IGNORECASE)
"""opencode's wording for a Resume of a session it cannot find (on stderr, coloured)."""


# opencode's provider ids that OpenTelemetry's GenAI conventions name otherwise.
_PROVIDERS = {
    "amazon-bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "google": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
}


@dataclass(frozen=True)
class OpencodeHarness(Harness):
    """opencode: ``opencode run``, stopped with SIGTERM, project skills in ``.opencode/skills``.

    SIGTERM and SIGINT both kill opencode at once (it has no handler for either); a foreground
    tool runs in a session of its own and survives them, which the supervisor deals with.
    """

    name: ClassVar[str] = "opencode"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = (signal.SIGTERM,)
    skills_dir: ClassVar[str] = ".opencode/skills"
    # Each step_finish says its tokens and cost as the session goes.
    budget_checks: ClassVar[BudgetChecks] = BudgetChecks(
        while_running=frozenset({"usd", "tokens", "turns"}),
        at_end=frozenset({"usd", "tokens", "turns"}),
    )
    # Its config (which names each provider's key, e.g. "{env:ANTHROPIC_API_KEY}"), the keys
    # of its main providers as its models catalogue names them, where `opencode auth login`
    # keeps keys ($XDG_DATA_HOME/opencode/auth.json), and the switches that keep it off the
    # network; another provider's key goes in `env`.
    env_passthrough: ClassVar[tuple[str, ...]] = (
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENERATIVE_AI_API_KEY",
        "OPENAI_API_KEY",
        "OPENCODE_API_KEY",
        "OPENCODE_CONFIG",
        "OPENCODE_CONFIG_DIR",
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_SHARE",
        "OPENROUTER_API_KEY",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
    )
    # In a sandbox: its configuration folder and its sign-ins (auth.json) are copied in (never
    # its sessions). Its providers' keys in the environment are kept out of the sandbox; no
    # variable moves a provider's address, so they reach the API through the proxy only by
    # what opencode's own configuration says (see docs/security.md).
    sandbox_needs: ClassVar[SandboxNeeds] = SandboxNeeds(
        state=(
            StateFolder(".config", copied=("opencode",), variable="XDG_CONFIG_HOME"),
            StateFolder(".local/share", copied=("opencode/auth.json",), variable="XDG_DATA_HOME"),
        ),
        apis=(
            Api("https://api.anthropic.com", None, ("ANTHROPIC_API_KEY",)),
            Api("https://api.openai.com/v1", None, ("OPENAI_API_KEY",)),
            Api(
                "https://generativelanguage.googleapis.com",
                None,
                ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"),
            ),
            Api("https://openrouter.ai/api/v1", None, ("OPENROUTER_API_KEY",)),
            Api("https://opencode.ai/zen/v1", None, ("OPENCODE_API_KEY",)),
        ),
        unneeded=("registry.npmjs.org",),  # its plugins' check on every start (1.18.33)
    )

    resume_missing: ClassVar[re.Pattern[str]] = RESUME_MISSING

    def genai_provider(self, choice: Choice) -> str:
        """The provider a ``provider/model`` model names, as the conventions name it (``google``:
        ``gcp.gemini``; one they do not know by its own name); ``opencode`` without a model."""
        provider, slash, _ = (choice.model or "").partition("/")
        if not slash or not provider:
            return "opencode"
        return _PROVIDERS.get(provider, provider)

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        """The argv of a session (or of a Resume of ``resume``); the prompt goes to stdin.

        ``--auto`` approves every permission, as an unattended session needs. The model is
        opencode's ``provider/model``; the effort is its ``--variant``. An empty model or effort
        counts as none, as in ``str(choice)``. ``skills`` is unused: opencode offers its skills
        to the model itself, so the prompt is passed on as written.
        """
        argv = ["opencode", "run", "--format", "json", "--auto"]
        if choice.model:
            argv += ["-m", _checked_model(choice.model)]
        if choice.effort:
            argv += ["--variant", choice.effort]
        argv += choice.extra_args
        if resume is not None:
            argv += ["-s", checked_session_id(resume)]
        return Invocation(argv=tuple(argv), stdin=prompt)

    def reader(self, worktree: Path) -> OpencodeReader:
        return OpencodeReader(worktree)


def _checked_model(model: str) -> str:
    provider, slash, name = model.partition("/")
    if not (provider and slash and name):
        raise ConfigurationError(
            f"opencode names a model as provider/model (e.g. anthropic/claude-sonnet-4-5), "
            f"not {shorten(model)!r}"
        )
    return model


class OpencodeReader(JsonEventReader):
    """Reads one ``opencode run --format json`` stream; see the module docstring for the facts."""

    def __init__(self, worktree: Path | None = None) -> None:
        super().__init__(worktree)
        self._steps = 0
        self._tokens: tuple[int, int, int] | None = None  # input, cached, output, summed
        self._cost: float | None = None
        self._last_reason: str | None = None
        self._failure: str | None = None
        self._status: int | None = None  # the HTTP status of the first error, if it gave one

    # Reading

    def _event(self, event: dict[str, Any]) -> list[str]:
        lines = []
        session_id = event.get("sessionID")
        if self._session_id is None and isinstance(session_id, str) and session_id:
            self._session_id = session_id
            lines.append("session started")
        kind = event.get("type")
        part = event.get("part")
        part = part if isinstance(part, dict) else {}
        if kind == "step_start":
            self._last_reason = None  # a step is open: the turn is not over
        elif kind == "text":
            text = part.get("text")
            if isinstance(text, str):
                self._final_message = cut(text)
        elif kind == "tool_use":
            lines += self._tool_use(part)
        elif kind == "step_finish":
            self._step_finish(part)
        elif kind == "error":
            self._error_event(event.get("error"))
        return lines

    def _tool_use(self, part: dict[str, Any]) -> list[str]:
        tool = part.get("tool")
        if not isinstance(tool, str) or not tool:
            return []
        state = part.get("state")
        tool_input = state.get("input") if isinstance(state, dict) else None
        return [self._tool_line(tool, tool_input if isinstance(tool_input, dict) else {})]

    def _tool_line(self, tool: str, tool_input: dict[str, Any]) -> str:
        if tool == "bash":
            command = tool_input.get("command")
            return bash_line(command) if isinstance(command, str) else "bash"
        if tool == "skill":
            skill = tool_input.get("name")
            return "skill " + (shorten(skill) if isinstance(skill, str) and skill else "?")
        tool = shorten(tool)
        for key in _DETAIL_KEYS:
            detail = tool_input.get(key)
            if isinstance(detail, str) and detail:
                return f"{tool} {shorten(relative(detail, self._worktree))}"
        return tool

    def _step_finish(self, part: dict[str, Any]) -> None:
        self._steps += 1
        reason = part.get("reason")
        self._last_reason = reason if isinstance(reason, str) else "unknown"
        if reason == "stop":
            self._turns_ended += 1  # opencode has no result line: this is its turn's end
        tokens = part.get("tokens")
        if isinstance(tokens, dict) and count(tokens.get("input")):
            # opencode counts uncached input, cache reads and cache writes apart, and reasoning
            # apart from output; here, as for every CLI, input is all of it and output too.
            cache = tokens.get("cache")
            cache = cache if isinstance(cache, dict) else {}
            cached, written = count_or_zero(cache.get("read")), count_or_zero(cache.get("write"))
            tokens_in = tokens["input"] + cached + written
            tokens_out = count_or_zero(tokens.get("output")) + count_or_zero(
                tokens.get("reasoning")
            )
            before = self._tokens or (0, 0, 0)
            self._tokens = (before[0] + tokens_in, before[1] + cached, before[2] + tokens_out)
        cost = dollars(part.get("cost"))
        if cost is not None:
            total = dollars((self._cost or 0.0) + cost)  # a sum that overflows is no amount
            self._cost = total if total is not None else self._cost

    def _error_event(self, error: object) -> None:
        if self._failure is not None:
            return  # the first error is the cause; later ones follow from it
        if not isinstance(error, dict):
            self._failure = "opencode reported an error"
            return
        name = error.get("name")
        data = error.get("data")
        data = data if isinstance(data, dict) else {}
        message, status = data.get("message"), data.get("statusCode")
        head = shorten(name) if isinstance(name, str) and name else "error"
        if count(status):
            head = f"{head} {status}"
            self._status = status
        self._failure = cut(f"{head}: {message}") if isinstance(message, str) and message else head

    # After the stream

    @property
    def killed(self) -> tuple[str, ...]:
        """Always empty: opencode's stream never reports background work it left behind."""
        return ()

    @property
    def usage(self) -> Usage | None:
        """Steps, tokens and cost summed over every ``step_finish``; None without tokens."""
        if self._tokens is None:
            return None
        tokens_in, cached, tokens_out = self._tokens
        return Usage(
            turns=self._steps,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cached_input_tokens=cached,
            cost_usd=self._cost,
            subagents="unknown",  # not seen to count its sub-agents: none was run under it
        )

    @property
    def usage_so_far(self) -> Usage | None:
        """Steps, tokens and cost of every ``step_finish`` so far, as the session goes."""
        return self.usage

    @property
    def summary(self) -> str | None:
        """``<n> step(s), <tokens>[, $<cost>]``; None without token counts."""
        if self._tokens is None:
            return None
        steps = f"{self._steps} step" if self._steps == 1 else f"{self._steps} steps"
        text = f"{steps}, {tokens_summary(*self._tokens)}"
        return text if self._cost is None else f"{text}, {cost_text(self._cost)}"

    @property
    def failed(self) -> bool:
        """True unless the last step finished with reason ``stop`` and no error came."""
        return self._failure is not None or self._last_reason != "stop"

    @property
    def error(self) -> str | None:
        """The first error event's; else why the last step did not finish the turn, if known.

        None for a stream with no finished step (opencode prints nothing when it fails to start
        or is killed), so that the CLI's stderr or exit tells what happened.
        """
        if self._failure is not None:
            return self._failure
        if self._last_reason is not None and self._last_reason != "stop":
            return f"opencode's last step ended with reason {shorten(self._last_reason)}, not stop"
        return None

    @property
    def failure(self) -> FailureInfo | None:
        """Which failure the stream shows, if it failed; see :meth:`failure_at`."""
        return self.failure_at(datetime.now().astimezone())

    def failure_at(self, now: datetime) -> FailureInfo | None:
        """Which failure the first error event shows: by its HTTP status, else by its text.

        None if no error came (an unfinished turn is no failure a rule tells apart), or no
        rule knows it. An unknown ``-s`` id prints nothing on stdout: stderr tells that one.
        """
        if self._failure is None:
            return None
        by_status = None if self._status is None else status_failure(self._status, now)
        return by_status or by_text(self._failure, now, RESUME_MISSING)
