"""The steps of a scripted call, and the functions that make them.

A call of a fake CLI plays its steps in order, then ends its turn the way the real CLI does
(Claude's ``result``, Codex's ``turn.completed``) and exits 0, unless a step ended it already.
Steps are frozen dataclasses; the fake program receives them as JSON (:meth:`Step.to_json`).

Four steps are options of the whole call wherever they stand: :func:`no_session_id`,
:func:`session_id`, :func:`ignore_stdin` and :func:`no_events`.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import signal as _signal
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

BOTH = frozenset({"claude", "codex"})

Signal = _signal.Signals | int | str
"""A signal: ``signal.SIGTERM``, ``15`` or ``"SIGTERM"``."""


@dataclass(frozen=True)
class Step:
    """One step of a scripted call."""

    kind: ClassVar[str] = ""
    harnesses: ClassVar[frozenset[str]] = BOTH
    ends_call: ClassVar[bool] = False
    """Whether no step can follow this one (the process is gone)."""

    def to_json(self) -> dict[str, Any]:
        """The step as the fake program reads it."""
        data: dict[str, Any] = {"step": self.kind}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bytes):
                value = {"b64": base64.b64encode(value).decode("ascii")}
            elif isinstance(value, tuple):
                value = list(value)
            data[field.name] = value
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Step:
        """The step that :meth:`to_json` made ``data`` of."""
        cls = _KINDS[data["step"]]
        fields: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            value = data[field.name]
            if isinstance(value, dict) and "b64" in value:
                value = base64.b64decode(value["b64"])
            elif isinstance(value, list):
                value = tuple(value)
            fields[field.name] = value
        return cls(**fields)


@dataclass(frozen=True)
class Run(Step):
    """Run ``command`` for real in the session's cwd (``/bin/bash -c``), to its end."""

    kind: ClassVar[str] = "run"
    command: str
    description: str | None = None


@dataclass(frozen=True)
class Edit(Step):
    """Write ``text`` to ``path`` (relative to the session's cwd, or absolute)."""

    kind: ClassVar[str] = "edit"
    path: str
    text: str


@dataclass(frozen=True)
class LoadSkill(Step):
    """Load the skill ``name`` from the session's cwd."""

    kind: ClassVar[str] = "load_skill"
    name: str


@dataclass(frozen=True)
class Background(Step):
    """Start ``command`` for real and leave it running; the end of the call kills it."""

    kind: ClassVar[str] = "background"
    command: str
    description: str | None = None
    grace: float = 0.0


@dataclass(frozen=True)
class Say(Step):
    """An assistant message; the last one is the session's final message."""

    kind: ClassVar[str] = "say"
    text: str


@dataclass(frozen=True)
class Stderr(Step):
    """Write ``text`` to stderr (with a final newline if it has none)."""

    kind: ClassVar[str] = "stderr"
    text: str


@dataclass(frozen=True)
class CodexError(Step):
    """A top-level Codex ``error`` event (a retry or warning: not a failure by itself)."""

    kind: ClassVar[str] = "codex_error"
    harnesses: ClassVar[frozenset[str]] = frozenset({"codex"})
    message: str


@dataclass(frozen=True)
class FailTurn(Step):
    """End the turn as failed with ``message``; the call then exits ``exit_code``."""

    kind: ClassVar[str] = "fail_turn"
    message: str
    exit_code: int = 1
    api_error_status: int | None = None


@dataclass(frozen=True)
class NoSessionId(Step):
    """(Call option.) Say no session id: Claude's lines lack it, Codex has no thread.started."""

    kind: ClassVar[str] = "no_session_id"


@dataclass(frozen=True)
class SessionId(Step):
    """(Call option.) Use ``value`` as the session id, instead of the counted one."""

    kind: ClassVar[str] = "session_id"
    value: str


@dataclass(frozen=True)
class IgnoreStdin(Step):
    """(Call option.) Never read stdin (the real CLIs wait for it to close; this one won't)."""

    kind: ClassVar[str] = "ignore_stdin"


@dataclass(frozen=True)
class NoEvents(Step):
    """(Call option.) Write none of the CLI's own events: stdout gets only raw() and emit()."""

    kind: ClassVar[str] = "no_events"


@dataclass(frozen=True)
class Exit(Step):
    """Exit with ``code``: after the turn's normal ending, or at once if ``abrupt``."""

    kind: ClassVar[str] = "exit"
    ends_call: ClassVar[bool] = True
    code: int
    abrupt: bool = False


@dataclass(frozen=True)
class Die(Step):
    """Kill the fake itself with ``signal``, after writing ``partial_line`` (no newline)."""

    kind: ClassVar[str] = "die"
    ends_call: ClassVar[bool] = True
    signal: str
    partial_line: bytes | None = None


@dataclass(frozen=True)
class Hang(Step):
    """Block until a signal ends the call (or ``timeout`` passes); ``ignore`` lists survivors."""

    kind: ClassVar[str] = "hang"
    ignore: tuple[str, ...] = ()
    timeout: float | None = None


@dataclass(frozen=True)
class Sleep(Step):
    """Pause for ``seconds`` (signals still end the call)."""

    kind: ClassVar[str] = "sleep"
    seconds: float


@dataclass(frozen=True)
class GrandchildHoldsStdout(Step):
    """Start ``sleep seconds`` holding the fake's stdout and stderr, and leave it behind."""

    kind: ClassVar[str] = "grandchild_holds_stdout"
    seconds: float


@dataclass(frozen=True)
class EscapeSetsid(Step):
    """Start ``sleep seconds`` in a new session, ignoring SIGTERM, SIGINT and SIGHUP."""

    kind: ClassVar[str] = "escape_setsid"
    seconds: float


@dataclass(frozen=True)
class Daemon(Step):
    """Start ``sleep seconds`` as a double-forked daemon (own session, parent gone)."""

    kind: ClassVar[str] = "daemon"
    seconds: float


@dataclass(frozen=True)
class Raw(Step):
    """Write ``data`` to stdout ``repeat`` times, as it is: no newline added, no checks."""

    kind: ClassVar[str] = "raw"
    data: bytes
    repeat: int = 1


@dataclass(frozen=True)
class Emit(Step):
    """Write ``line`` (one JSON text) and a newline to stdout, as it is."""

    kind: ClassVar[str] = "emit"
    line: str


@dataclass(frozen=True)
class CloseStdout(Step):
    """Close stdout and play on (the stream ends; the process does not)."""

    kind: ClassVar[str] = "close_stdout"


_KINDS: dict[str, type[Step]] = {cls.kind: cls for cls in Step.__subclasses__()}


def signal_name(signal: Signal) -> str:
    """``signal`` as its name, e.g. ``"SIGTERM"``; raises ValueError if there is no such."""
    try:
        if isinstance(signal, str):
            return _signal.Signals[signal if signal.startswith("SIG") else f"SIG{signal}"].name
        return _signal.Signals(signal).name
    except (KeyError, ValueError):
        raise ValueError(f"no such signal: {signal!r}") from None


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


# The step functions: the public way to make steps.


def run(command: str, *, description: str | None = None) -> Run:
    """Run ``command`` for real, in the foreground, in the session's cwd.

    Claude: a ``Bash`` tool use, then its ``tool_result`` (``is_error`` and ``Exit code N`` when
    it fails). Codex: ``item.started`` / ``item.completed`` ``command_execution`` with
    ``command`` ``/bin/bash -lc '<command>'``, ``aggregated_output`` and ``exit_code``.
    """
    return Run(command, description)


def edit(path: str, text: str) -> Edit:
    """Write ``text`` to ``path`` for real (relative paths are under the session's cwd).

    Claude: a ``Write`` tool use (a new file) or ``Edit`` (an existing one), ``file_path``
    absolute. Codex: an ``item.completed`` ``file_change`` with kind ``add`` or ``update``.
    """
    return Edit(path, text)


def load_skill(name: str) -> LoadSkill:
    """Load skill ``name`` as linked into the session's cwd.

    Claude: a ``Skill`` tool use (``input.skill``), its result an error unless
    ``.claude/skills/<name>/SKILL.md`` exists. Codex: a ``command_execution`` that really runs
    ``cat .agents/skills/<name>/SKILL.md`` (so it fails if the skill is not there).
    """
    return LoadSkill(name)


def background(command: str, *, description: str | None = None, grace: float = 0.0) -> Background:
    """Start ``command`` for real and leave it running, as agents leave test runs.

    ``description`` defaults to the command itself. Claude: a ``Bash`` tool use with
    ``run_in_background``, ``system``/``task_started``, and the "Command running in background
    with ID: …" result; after the turn's ``result`` the fake waits up to ``grace`` seconds (the
    real CLI waits ~5 s), then kills the command and reports ``task_updated`` killed and
    ``task_notification`` stopped; a command that finished within the grace is reported
    completed, with a turn of its own. A later Resume of the session replays the real CLI's
    "No completion record" notices. Codex: an ``item.started`` that never completes; the fake
    kills the command at exit and says nothing (``grace`` is unused).
    """
    return Background(command, description, grace)


def say(text: str) -> Say:
    """An assistant message; the last one is the final message (Claude's ``result.result``)."""
    return Say(text)


def stderr(text: str) -> Stderr:
    """Write ``text`` to stderr, with a final newline if it has none."""
    return Stderr(text)


def codex_error(message: str) -> CodexError:
    """A Codex top-level ``{"type": "error", "message": …}`` event (Codex only)."""
    return CodexError(message)


def fail_turn(message: str, *, exit_code: int = 1, api_error_status: int | None = None) -> FailTurn:
    """End the turn as failed; the call exits ``exit_code`` (1, as the real CLIs do).

    Claude: a ``result`` with ``subtype`` ``error_during_execution``, ``is_error`` true and
    ``errors: [message]``; with ``api_error_status``, an API error instead: a synthetic
    assistant message and a ``result`` with ``subtype`` ``success``, ``is_error`` true and
    ``result: message``. Codex: an ``error`` event then ``turn.failed``. Steps after it run
    after the failed turn (a later :func:`exit` sets the exit code instead).
    """
    return FailTurn(message, exit_code, api_error_status)


def no_session_id() -> NoSessionId:
    """Give no session id: Claude's lines leave out ``session_id``; Codex has no thread.started."""
    return NoSessionId()


def session_id(value: str) -> SessionId:
    """Use ``value`` as the session id, even a hostile one (``--help``, ``../../x``)."""
    return SessionId(value)


def ignore_stdin() -> IgnoreStdin:
    """Never read stdin (a CLI that does not, so that its writer must not wait for it)."""
    return IgnoreStdin()


def no_events() -> NoEvents:
    """Write none of the CLI's own events, so that stdout holds exactly what :func:`raw` and
    :func:`emit` steps write (nothing at all without them). The steps' effects still happen."""
    return NoEvents()


def exit(code: int, *, abrupt: bool = False) -> Exit:
    """Exit with ``code``, after the turn's normal ending (``result``, kill notices…).

    With ``abrupt``, exit at once: no ending, background work killed silently.
    """
    return Exit(code, abrupt)


def die(signal: Signal, *, partial_line: str | bytes | None = None) -> Die:
    """Kill the fake with ``signal`` (e.g. SIGKILL), after writing ``partial_line`` unended.

    Background work it started is left behind, as a crashed CLI leaves it.
    """
    return Die(signal_name(signal), None if partial_line is None else _bytes(partial_line))


def hang(ignore: Iterable[Signal] = (), *, timeout: float | None = None) -> Hang:
    """Block until signalled: each signal is recorded; those in ``ignore`` change nothing.

    A SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2 not ignored ends the call with
    exit code 128 + signo, as the real CLIs exit, after killing background work. ``ignore``
    takes effect when the hang starts and lasts to the end of the call. With ``timeout``, the
    call goes on after that many seconds. The call's record says ``hanging`` meanwhile.
    """
    return Hang(tuple(signal_name(signal) for signal in ignore), timeout)


def sleep(seconds: float) -> Sleep:
    """Pause ``seconds`` (write nothing meanwhile)."""
    return Sleep(seconds)


def grandchild_holds_stdout(seconds: float) -> GrandchildHoldsStdout:
    """Leave ``sleep seconds`` behind holding stdout: the stream stays open after the fake exits."""
    return GrandchildHoldsStdout(seconds)


def escape_setsid(seconds: float) -> EscapeSetsid:
    """Leave ``sleep seconds`` behind in its own session, ignoring SIGTERM, SIGINT and SIGHUP."""
    return EscapeSetsid(seconds)


def daemon(seconds: float) -> Daemon:
    """Leave ``sleep seconds`` behind as a double-forked daemon: its parent has exited."""
    return Daemon(seconds)


def raw(data: str | bytes, *, repeat: int = 1) -> Raw:
    """Write ``data`` to stdout as it is, ``repeat`` times (no newline added).

    For hostile streams: invalid UTF-8, NUL bytes, no final newline, huge lines
    (``raw(b"x", repeat=64 << 20)``), bulk output (``raw(line, repeat=n)``).
    """
    if repeat < 0:
        raise ValueError("repeat must not be negative")
    return Raw(_bytes(data), repeat)


def emit(event: dict[str, Any]) -> Emit:
    """Write ``event`` as one JSON line, as it is: any shape, any nesting (for hostile events)."""
    return Emit(json.dumps(event, ensure_ascii=False, separators=(",", ":")))


def close_stdout() -> CloseStdout:
    """Close stdout and play on: the stream ends while the process keeps running."""
    return CloseStdout()


def check_script(harness: str, steps: Iterable[Step]) -> tuple[Step, ...]:
    """``steps`` as one call's script for ``harness``; raises on a misplaced or foreign step."""
    checked = tuple(steps)
    for index, step in enumerate(checked):
        if not isinstance(step, Step) or type(step) is Step:
            raise TypeError(
                f"{step!r} is not a step: make steps with the functions of "
                "thirdshift.testing.fakecli (run, say, background…)"
            )
        if harness not in step.harnesses:
            raise ValueError(f"{step.kind}() is not a step of the fake {harness}")
        if step.ends_call and index < len(checked) - 1:
            raise ValueError(
                f"{step.kind}() must be the last step: the steps after it would never run"
            )
    return checked
