"""The Gemini CLI Harness: ``gemini -o stream-json -y``, the prompt on stdin.

What the reader relies on, as observed on Gemini CLI 0.61.0 (see ``tests/transcripts/gemini-*``):

- Every line is one JSON object with a ``type`` and an ISO ``timestamp``. ``init`` carries the
  ``session_id`` (the only line that does) and the ``model``; ``message`` a ``role`` and its
  ``content``, the assistant's in pieces (``delta: true``); ``tool_use`` a ``tool_name`` and
  its ``parameters``; ``tool_result`` its ``status`` and ``output``; ``result`` the outcome
  (``status`` ``success`` or ``error``, ``error.message``, token ``stats``, no cost figure).
- **Exit 0 without a ``result`` is an interruption, not success**: on SIGINT and SIGTERM Gemini
  exits 0 at once and prints nothing more. So a stream without a ``result`` has failed, and the
  reader's ``finish`` (see :func:`thirdshift.harness._base.finish_reading`) says why once it
  knows the exit.
- An API error gives a ``result`` with ``status: "error"`` and the exit code is the HTTP status
  masked to 8 bits (401 exits 145); its own fatal errors exit 41 (auth), 42 (input, e.g. an
  unknown resume id, with nothing on stdout), 52 (config), 53 (turn limit) and so on.
- Background work never shows in the stream: ``run_shell_command`` with ``is_background`` says
  only "Command moved to background (PID: …)", and the process outlives the CLI. ``killed``
  is therefore always empty; only the supervisor can see such work.
- Without ``-p``, a stdin that is not a terminal is the prompt (``-p`` text would be appended to
  it), so the prompt goes to stdin alone.
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
from thirdshift.errors import (
    AuthFailed,
    ConfigurationError,
    Overloaded,
    RateLimited,
    SessionFailed,
    TurnLimitReached,
)
from thirdshift.harness._base import Choice, Harness, Invocation, checked_session_id
from thirdshift.harness._builtin.counts import count_or_zero, status_failure, tokens_summary
from thirdshift.harness._events import JsonEventReader
from thirdshift.harness._failures import FailureInfo, by_text
from thirdshift.harness._lines import ELLIPSIS, MAX_MESSAGE, bash_line, cut, relative, shorten
from thirdshift.harness._usage import count, models_named

# Gemini CLI's tools (and Qwen Code's, a fork of it) name their arguments alike; the first
# non-empty string of these details a tool's progress line, in order of preference.
_DETAIL_KEYS = (
    "file_path",
    "absolute_path",
    "pattern",
    "dir_path",
    "path",
    "url",
    "query",
    "description",
)
_SHELL_TOOL = "run_shell_command"
# The assistant's pieces are joined once this many have come, so that a stream of a million
# one-character deltas is not a list of a million strings.
_PIECES_KEPT = 256
_SKILL_TOOLS = frozenset({"activate_skill", "skill"})
# The status names of Google's APIs, as Gemini's API errors quote them ("status":"UNAUTHENTICATED").
_GOOGLE_STATUSES: dict[str, type[SessionFailed]] = {
    "UNAUTHENTICATED": AuthFailed,
    "PERMISSION_DENIED": AuthFailed,
    "RESOURCE_EXHAUSTED": RateLimited,
    "UNAVAILABLE": Overloaded,
}
# Gemini's own fatal exit codes that name a failure class (42, bad input, says too little).
_FATAL_EXITS: dict[int, type[SessionFailed]] = {41: AuthFailed, 53: TurnLimitReached}


def gemini_tool_line(name: str, tool_input: dict[str, Any], base: str | None) -> str:
    """The progress line of one Gemini CLI (or Qwen Code) tool call; paths relative to base."""
    if name == _SHELL_TOOL:
        command = tool_input.get("command")
        return bash_line(command) if isinstance(command, str) else name
    if name in _SKILL_TOOLS:
        for key in ("name", "skill"):
            skill = tool_input.get(key)
            if isinstance(skill, str) and skill:
                return "skill " + shorten(skill)
        return "skill ?"
    name = shorten(name)
    for key in _DETAIL_KEYS:
        detail = tool_input.get(key)
        if isinstance(detail, str) and detail:
            return f"{name} {shorten(relative(detail, base))}"
    return name


def refuse_effort(cli: str, choice: Choice) -> None:
    """A CLI with no effort setting: an effort in the Choice is a mistake, said in one line."""
    if choice.effort:
        raise ConfigurationError(
            f"{cli} has no effort setting: leave the effort out (got {shorten(choice.effort)!r})"
        )


RESUME_MISSING = re.compile(
    r"Error resuming session: (?:Invalid session identifier|No previous sessions found)",
    re.IGNORECASE,
)
"""Gemini CLI's wording for a Resume of a session it cannot find (on stderr)."""


@dataclass(frozen=True)
class GeminiHarness(Harness):
    """Gemini CLI: ``gemini``, stopped with SIGTERM, project skills in ``.gemini/skills``.

    SIGTERM and SIGINT both end Gemini at once with exit 0; a foreground tool runs in a session
    of its own and survives them, which the supervisor deals with.
    """

    name: ClassVar[str] = "gemini"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = (signal.SIGTERM,)
    skills_dir: ClassVar[str] = ".gemini/skills"
    # Only the result's stats say tokens; no cost, no turn count.
    budget_checks: ClassVar[BudgetChecks] = BudgetChecks(
        while_running=frozenset(), at_end=frozenset({"tokens"})
    )
    # Its authentication (each way it picks from the environment: a Gemini API key, Vertex AI,
    # Google sign-in, a machine's default credentials), where its settings and cached sign-in
    # live, and the switches thirdshift's tests use.
    env_passthrough: ClassVar[tuple[str, ...]] = (
        "GEMINI_API_KEY",
        "GEMINI_CLI_HOME",
        "GEMINI_CLI_NO_RELAUNCH",
        "GEMINI_CLI_USE_COMPUTE_ADC",
        "GEMINI_TELEMETRY_ENABLED",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_ACCESS_TOKEN",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_GENAI_USE_VERTEXAI",
    )
    # In a sandbox: its settings, Google sign-in and instructions are copied in (never its
    # chats); a Google sign-in (Code Assist) reaches Google's token and Code Assist endpoints.
    sandbox_needs: ClassVar[SandboxNeeds] = SandboxNeeds(
        state=(
            StateFolder(
                ".gemini",
                copied=("settings.json", "oauth_creds.json", "google_accounts.json", "GEMINI.md"),
            ),
        ),
        apis=(
            Api(
                "https://generativelanguage.googleapis.com",
                "GOOGLE_GEMINI_BASE_URL",
                ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            ),
        ),
        endpoints=("oauth2.googleapis.com", "cloudcode-pa.googleapis.com"),
    )
    # Printed in every headless run (no terminal, yolo mode, no ripgrep, startup metrics), or
    # after the line that tells: never the reason a session failed.
    stderr_noise: ClassVar[tuple[str, ...]] = (
        "Warning: Basic terminal detected",
        "Warning: 256-color support not detected",
        "YOLO mode is enabled.",
        "Ripgrep is not available.",
        "[STARTUP] ",
        # The hints after "Error resuming session: …", which is the line that tells
        "Searched for sessions in ",
        "Use --list-sessions to see available sessions",
    )

    resume_missing: ClassVar[re.Pattern[str]] = RESUME_MISSING

    def genai_provider(self, choice: Choice) -> str:
        """Google's Gemini API (AI Studio): ``gcp.gemini``."""
        return "gcp.gemini"

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        """The argv of a session (or of a Resume of ``resume``); the prompt goes to stdin.

        ``-y`` approves every tool call, as an unattended session needs. Gemini has a model
        (``-m``) but no effort setting, so an effort is refused. An empty model counts as none.
        ``skills`` is unused: Gemini offers its skills to the model itself, so the prompt is
        passed on as written.
        """
        refuse_effort(self.name, choice)
        argv = ["gemini", "-o", "stream-json", "-y"]
        if choice.model:
            argv += ["-m", choice.model]
        argv += choice.extra_args
        if resume is not None:
            argv += ["-r", checked_session_id(resume)]
        return Invocation(argv=tuple(argv), stdin=prompt)

    def reader(self, worktree: Path) -> GeminiReader:
        return GeminiReader(worktree)

    def unwrap_command(self, script: str) -> str:
        """The command inside the script Gemini runs it as (:func:`unwrap_gemini_script`)."""
        return unwrap_gemini_script(script)


# How Gemini CLI 0.61.0 wraps each shell command (``wrapCommandForBackgroundPIDs``), behind a
# ``shopt …; `` prefix: a subshell that records its background jobs' pids on exit.
_WRAP_OPEN = "\n(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n"
_WRAP_CLOSE = "\n)\n__code=$?\nexit $__code"


def unwrap_gemini_script(script: str) -> str:
    """The command Gemini was asked to run, out of the ``bash -c`` script it ran it as.

    A process left running is seen by its command line, which for Gemini's commands is that
    script; people want to read the command. Any other script is returned unchanged.
    """
    head, opened, rest = script.partition(_WRAP_OPEN)
    if not opened or "_bgpids_file=" not in head or not rest.endswith(_WRAP_CLOSE):
        return script
    return rest[: -len(_WRAP_CLOSE)]


class GeminiReader(JsonEventReader):
    """Reads one ``gemini -o stream-json`` stream; see the module docstring for the facts."""

    def __init__(self, worktree: Path | None = None) -> None:
        super().__init__(worktree)
        self._replying = False  # whether the last event was a piece of the assistant's text
        # The pieces of the assistant's latest text, at most MAX_MESSAGE characters of them,
        # and the length of all of them (so that a cut can say how much the log has).
        self._reply: list[str] = []
        self._reply_length = 0
        self._result_seen = False
        self._result_failure: str | None = None
        self._last_error: str | None = None
        self._stats: tuple[int, int, int] | None = None  # input, cached, output
        self._models: tuple[str, ...] = ()
        self._exit_code: int | None = None
        self._interrupted = False

    # Reading

    def _event(self, event: dict[str, Any]) -> list[str]:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            self._assistant_text(event)
            return []
        self._replying = False
        if kind == "init":
            session_id = event.get("session_id")
            if self._session_id is None and isinstance(session_id, str) and session_id:
                self._session_id = session_id
                return ["session started"]
        elif kind == "tool_use":
            name = event.get("tool_name")
            if isinstance(name, str) and name:
                self._tool(event.get("tool_id"), name, "started")
                parameters = event.get("parameters")
                tool_input = parameters if isinstance(parameters, dict) else {}
                return [gemini_tool_line(name, tool_input, self._worktree)]
        elif kind == "tool_result":
            failed = event.get("status") not in ("success", None)
            self._tool(event.get("tool_id"), None, "failed" if failed else "ended")
        elif kind == "result":
            self._result(event)
        elif kind == "error":
            message = event.get("message")
            if isinstance(message, str) and message:
                self._last_error = cut(message)
        return []

    def _assistant_text(self, event: dict[str, Any]) -> None:
        content = event.get("content")
        if not isinstance(content, str):
            return
        if not self._replying or event.get("delta") is not True:
            self._reply, self._reply_length = [], 0  # a new reply, or a whole one replacing it
        room = MAX_MESSAGE - min(self._reply_length, MAX_MESSAGE)
        if room:
            self._reply.append(content[:room])
            if len(self._reply) > _PIECES_KEPT:
                self._reply = ["".join(self._reply)]
        self._reply_length += len(content)
        self._replying = True

    def _result(self, event: dict[str, Any]) -> None:
        self._result_seen = True
        self._turns_ended += 1
        status = event.get("status")
        if status == "success":
            self._result_failure = None
        else:
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            if isinstance(message, str) and message:
                self._result_failure = cut(message)
            else:
                self._result_failure = f"the turn ended with status {_shown(status)}"
        stats = event.get("stats")
        # input_tokens holds the cached ones (its `input` is the rest), as thirdshift counts
        if isinstance(stats, dict) and count(stats.get("input_tokens")):
            self._stats = (
                stats["input_tokens"],
                count_or_zero(stats.get("cached")),
                count_or_zero(stats.get("output_tokens")),
            )
            models = stats.get("models")
            if isinstance(models, dict):
                self._models = models_named(*models)

    def finish(self, exit_code: int | None) -> None:
        """Take the exit code: exit 0 without a ``result`` means the turn was interrupted, and
        an API error's exit code is its HTTP status masked to 8 bits (see :attr:`failure`)."""
        self._exit_code = exit_code
        self._interrupted = exit_code == 0 and not self._result_seen

    # After the stream

    @property
    def killed(self) -> tuple[str, ...]:
        """Always empty: Gemini's stream never reports background work it left behind."""
        return ()

    @property
    def final_message(self) -> str | None:
        """The assistant's latest text, its pieces joined (cut past ``MAX_MESSAGE``)."""
        if not self._reply:
            return None
        text = "".join(self._reply)
        if self._reply_length <= MAX_MESSAGE:
            return text
        more = self._reply_length - MAX_MESSAGE
        return f"{text}{ELLIPSIS} (cut: {more} more characters in the Session log)"

    @property
    def usage(self) -> Usage | None:
        """The last ``result``'s token stats and the models they name; None without them."""
        if self._stats is None:
            return None
        tokens_in, cached, tokens_out = self._stats
        return Usage(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cached_input_tokens=cached,
            models=self._models,
            subagents="unknown",  # not seen to count its sub-agents: none was run under it
        )

    @property
    def summary(self) -> str | None:
        """``<in> input tokens (<cached> cached), <out> output tokens``; None without stats."""
        return None if self._stats is None else tokens_summary(*self._stats)

    @property
    def failed(self) -> bool:
        """True unless the last ``result`` succeeded: no ``result`` at all is a failure too."""
        return not self._result_seen or self._result_failure is not None

    @property
    def error(self) -> str | None:
        """The failed result's error; an interruption, once ``finish`` knows; else the last error.

        None for a stream without a ``result`` whose exit is not known to be 0 (Gemini prints
        its own fatal errors on stderr, with nothing on stdout), so that stderr tells.
        """
        if self._result_failure is not None:
            return self._result_failure
        if self._interrupted:
            return "gemini exited 0 without a result: its turn was interrupted"
        return self._last_error

    @property
    def failure(self) -> FailureInfo | None:
        """Which failure the stream (and the exit code) show; see :meth:`failure_at`."""
        return self.failure_at(datetime.now().astimezone())

    def failure_at(self, now: datetime) -> FailureInfo | None:
        """Which failure the failed result's error names, else what the exit code says.

        The error text is read by the shared rules and for a Google API status name; then an
        exit of 144 to 255 is read as the HTTP status 400 to 511 it was masked from (401 exits
        145), and 41 and 53 as Gemini's own auth and turn-limit errors. None if the turn did
        not fail, was interrupted, or failed in a way none of these tells apart.
        """
        if not self.failed or self._interrupted:
            return None
        if self._result_failure is not None:
            info = by_text(self._result_failure, now, RESUME_MISSING)
            if info is not None:
                return info
            for name, kind in _GOOGLE_STATUSES.items():
                if f'"{name}"' in self._result_failure:
                    return FailureInfo(kind)
        code = self._exit_code
        if code is not None and 144 <= code <= 255:
            return status_failure(code + 256, now)
        fatal = _FATAL_EXITS.get(code) if code is not None else None
        return None if fatal is None else FailureInfo(fatal)


def _shown(value: object) -> str:
    return shorten(value) if isinstance(value, str) and value else "none"
