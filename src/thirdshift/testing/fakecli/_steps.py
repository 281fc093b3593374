"""The fake CLIs' own steps, besides the shared ones (:mod:`thirdshift.testing.steps`).

:mod:`thirdshift.testing.fakecli` offers those a test of an orchestrator needs
(:func:`fail_turn`, :func:`session_id`, :func:`no_session_id`, :func:`codex_error`,
:func:`stderr`, :func:`sleep`). The hostile-process ones (:func:`die`, :func:`raw`,
:func:`emit`, :func:`close_stdout`, :func:`grandchild_holds_stdout`, :func:`escape_setsid`,
:func:`daemon`, :func:`no_events`, :func:`ignore_stdin`) test thirdshift's own supervisor and
reader, and stay here: thirdshift's suite imports them from this module.

A call of a fake CLI plays its steps in order, then ends its turn the way the real CLI does
(Claude's ``result``, Codex's ``turn.completed``) and exits 0, unless a step ended it already.
What each step emits is in ``docs/fake-clis.md``; the fake program plays them (``play.py``).

Four steps are options of the whole call wherever they stand (``CALL_OPTIONS``):
:func:`no_session_id`, :func:`session_id`, :func:`ignore_stdin` and :func:`no_events`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar

from thirdshift.testing._steps import (
    CLI,
    Background,
    Edit,
    Exit,
    Hang,
    HttpError,
    LoadSkill,
    Run,
    Say,
    Signal,
    Step,
    background,
    edit,
    exit,
    hang,
    http_error,
    load_skill,
    run,
    say,
    signal_name,
    step_types,
)

# Every step a fake CLI plays, the shared ones too: the fake program's modules take them from
# here (thirdshift.testing.fakecli offers the public ones of its own, steps the shared ones).
__all__ = [
    "Background",
    "Edit",
    "Exit",
    "Hang",
    "HttpError",
    "LoadSkill",
    "Run",
    "Say",
    "Signal",
    "Step",
    "background",
    "close_stdout",
    "codex_error",
    "daemon",
    "die",
    "edit",
    "emit",
    "escape_setsid",
    "exit",
    "fail_turn",
    "grandchild_holds_stdout",
    "hang",
    "http_error",
    "ignore_stdin",
    "load_skill",
    "no_events",
    "no_session_id",
    "raw",
    "run",
    "say",
    "session_id",
    "sleep",
    "stderr",
]


@dataclass(frozen=True)
class CLIStep(Step):
    """A step only a fake program can act out."""

    abstract: ClassVar[bool] = True
    played_by: ClassVar[frozenset[str]] = frozenset({CLI})


@dataclass(frozen=True)
class Stderr(CLIStep):
    """Write ``text`` to stderr, with a final newline if it has none."""

    text: str


@dataclass(frozen=True)
class CodexError(CLIStep):
    """A Codex top-level ``{"type": "error", "message": …}`` event (a retry or a warning)."""

    only_for: ClassVar[str | None] = "codex"

    message: str


@dataclass(frozen=True)
class FailTurn(CLIStep):
    """End the turn as failed with ``message``; the call then exits ``exit_code``, by default
    as the real CLI would (1; Gemini: an API error's status & 255, so 401 exits 145).

    With ``api_error_status``, the failure is an API error, shown as each CLI shows one.
    """

    message: str
    _: KW_ONLY
    exit_code: int | None = None
    api_error_status: int | None = None


@dataclass(frozen=True)
class NoSessionId(CLIStep):
    """(Call option.) No session id: Claude's lines lack it, Codex has no thread.started."""


@dataclass(frozen=True)
class SessionId(CLIStep):
    """(Call option.) ``value`` as the session id, even a hostile one (``--help``, ``../x``)."""

    value: str


@dataclass(frozen=True)
class IgnoreStdin(CLIStep):
    """(Call option.) Never read stdin (the real CLIs wait for it to close; this one won't)."""


@dataclass(frozen=True)
class NoEvents(CLIStep):
    """(Call option.) None of the CLI's own events: stdout gets only what raw() and emit() write."""


@dataclass(frozen=True)
class Die(CLIStep):
    """Kill the fake with ``signal`` after writing ``partial_line`` unended; background work
    is left behind, as a crashed CLI leaves it."""

    ends_call: ClassVar[bool] = True

    signal: str
    partial_line: bytes | None = None


@dataclass(frozen=True)
class Sleep(CLIStep):
    """Pause ``seconds``, writing nothing."""

    seconds: float


@dataclass(frozen=True)
class Leftover(CLIStep):
    """``sleep seconds`` left behind after the call, in one of the three ways below."""

    abstract: ClassVar[bool] = True

    seconds: float


class GrandchildHoldsStdout(Leftover):
    """Leave ``sleep seconds`` behind holding stdout: the stream stays open after the fake exits."""


class EscapeSetsid(Leftover):
    """Leave ``sleep seconds`` behind in its own session, ignoring SIGTERM, SIGINT and SIGHUP."""


class Daemon(Leftover):
    """Leave ``sleep seconds`` behind as a double-forked daemon: its parent has exited."""


@dataclass(frozen=True)
class Raw(CLIStep):
    """Write ``data`` to stdout as it is, ``repeat`` times: no newline added, no checks."""

    data: bytes
    repeat: int = 1


@dataclass(frozen=True)
class Emit(CLIStep):
    """Write ``line`` (one JSON text) and a newline to stdout, as it is."""

    line: str


@dataclass(frozen=True)
class CloseStdout(CLIStep):
    """Close stdout and play on: the stream ends while the process keeps running."""


CALL_OPTIONS = frozenset({"no_session_id", "session_id", "ignore_stdin", "no_events"})

# The public way to make steps: the classes themselves, and functions that convert.
stderr, codex_error, fail_turn, sleep = Stderr, CodexError, FailTurn, Sleep
no_session_id, session_id, ignore_stdin, no_events = NoSessionId, SessionId, IgnoreStdin, NoEvents
grandchild_holds_stdout, escape_setsid, daemon = GrandchildHoldsStdout, EscapeSetsid, Daemon
close_stdout = CloseStdout


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def die(signal: Signal, *, partial_line: str | bytes | None = None) -> Die:
    """Kill the fake with ``signal`` (e.g. SIGKILL), after writing ``partial_line`` unended."""
    return Die(signal_name(signal), None if partial_line is None else _bytes(partial_line))


def raw(data: str | bytes, *, repeat: int = 1) -> Raw:
    """Write ``data`` to stdout as it is, ``repeat`` times: invalid UTF-8, NUL bytes, no final
    newline, huge lines (``raw(b"x", repeat=64 << 20)``), bulk output."""
    if repeat < 0:
        raise ValueError("repeat must not be negative")
    return Raw(_bytes(data), repeat)


def emit(event: dict[str, Any]) -> Emit:
    """Write ``event`` as one JSON line, as it is: any shape, any nesting (hostile events)."""
    return Emit(json.dumps(event, ensure_ascii=False, separators=(",", ":")))


def read_skill(skills_dir: str, name: str) -> Run:
    """What a CLI with no skill tool of its own does to load skill ``name``: reads its file."""
    return Run(f"cat {shlex.quote(f'{skills_dir}/{name}/SKILL.md')}")


def shell_tool_input(step: Run | Background, background: bool) -> dict[str, Any]:
    """The input of the ``run_shell_command`` tool of Gemini CLI and of Qwen Code, its fork."""
    return {"command": step.command, "is_background": background, "description": step.described}


def check_script(harness: str, steps: Iterable[Step]) -> tuple[Step, ...]:
    """``steps`` as one call's script for ``harness``; raises on a misplaced or foreign step."""
    checked = tuple(steps)
    for index, step in enumerate(checked):
        if not isinstance(step, Step) or type(step) not in step_types().values():
            raise TypeError(
                f"{step!r} is not a step: make steps with the functions of "
                "thirdshift.testing.steps (run, say, background…) and of "
                "thirdshift.testing.fakecli (fail_turn, session_id…)"
            )
        if CLI not in step.played_by or step.only_for not in (None, harness):
            raise ValueError(f"{step.verb}() is not a step of the fake {harness}")
        if step.ends_call and index < len(checked) - 1:
            raise ValueError(
                f"{step.verb}() must be the last step: the steps after it would never run"
            )
    return checked
