"""The steps of a scripted call: frozen dataclasses, made by the functions named after them.

A call of a fake CLI plays its steps in order, then ends its turn the way the real CLI does
(Claude's ``result``, Codex's ``turn.completed``) and exits 0, unless a step ended it already.
What each step emits is in ``docs/fake-clis.md``; the fake program plays them (``play.py``).

Four steps are options of the whole call wherever they stand (``CALL_OPTIONS``):
:func:`no_session_id`, :func:`session_id`, :func:`ignore_stdin` and :func:`no_events`.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import shlex
import signal as _signal
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar

Signal = _signal.Signals | int | str
"""A signal: ``signal.SIGTERM``, ``15`` or ``"SIGTERM"``."""


@dataclass(frozen=True)
class Step:
    """One step of a scripted call."""

    kind: ClassVar[str] = ""
    """The step's name in scripts and records: its class's name in snake case (``load_skill``)."""
    only_for: ClassVar[str | None] = None
    """The one fake that plays this step, if it is not a step of both."""
    ends_call: ClassVar[bool] = False
    """Whether no step can follow this one (the process is gone)."""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.kind = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    def to_json(self) -> dict[str, Any]:
        """The step as the fake program reads it (bytes as ``{"b64": …}``)."""
        data: dict[str, Any] = {"step": self.kind}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bytes):
                value = {"b64": base64.b64encode(value).decode("ascii")}
            data[field.name] = list(value) if isinstance(value, tuple) else value
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Step:
        """The step that :meth:`to_json` made ``data`` of."""
        fields: dict[str, Any] = {}
        for name, value in data.items():
            if isinstance(value, dict) and "b64" in value:
                fields[name] = base64.b64decode(value["b64"])
            else:
                fields[name] = tuple(value) if isinstance(value, list) else value
        return KINDS[data["step"]](**{k: v for k, v in fields.items() if k != "step"})


@dataclass(frozen=True)
class Run(Step):
    """Run ``command`` for real, in the foreground (``/bin/bash -c``, in the cwd), to its end."""

    command: str
    _: KW_ONLY
    description: str | None = None


@dataclass(frozen=True)
class Edit(Step):
    """Write ``text`` to ``path`` for real (relative to the cwd; parents made)."""

    path: str
    text: str


@dataclass(frozen=True)
class LoadSkill(Step):
    """Load the skill ``name`` linked into the cwd (an error if it is not there)."""

    name: str


@dataclass(frozen=True)
class Background(Step):
    """Start ``command`` for real and leave it running, as agents leave test runs.

    Claude kills it after its ``result``, once up to ``grace`` seconds have passed (reported
    completed, with a turn of its own, if it finished by then); Codex and Qwen kill it silently
    at exit (Qwen says so in its status file); opencode and Gemini leave it running.
    """

    command: str
    _: KW_ONLY
    description: str | None = None
    grace: float = 0.0


@dataclass(frozen=True)
class Say(Step):
    """An assistant message; the last one is the final message (Claude's ``result.result``)."""

    text: str


@dataclass(frozen=True)
class Stderr(Step):
    """Write ``text`` to stderr, with a final newline if it has none."""

    text: str


@dataclass(frozen=True)
class CodexError(Step):
    """A Codex top-level ``{"type": "error", "message": …}`` event (a retry or a warning)."""

    only_for: ClassVar[str | None] = "codex"

    message: str


@dataclass(frozen=True)
class FailTurn(Step):
    """End the turn as failed with ``message``; the call then exits ``exit_code``, by default
    as the real CLI would (1; Gemini: an API error's status & 255, so 401 exits 145).

    With ``api_error_status``, the failure is an API error, shown as each CLI shows one.
    """

    message: str
    _: KW_ONLY
    exit_code: int | None = None
    api_error_status: int | None = None


@dataclass(frozen=True)
class NoSessionId(Step):
    """(Call option.) No session id: Claude's lines lack it, Codex has no thread.started."""


@dataclass(frozen=True)
class SessionId(Step):
    """(Call option.) ``value`` as the session id, even a hostile one (``--help``, ``../x``)."""

    value: str


@dataclass(frozen=True)
class IgnoreStdin(Step):
    """(Call option.) Never read stdin (the real CLIs wait for it to close; this one won't)."""


@dataclass(frozen=True)
class NoEvents(Step):
    """(Call option.) None of the CLI's own events: stdout gets only what raw() and emit() write."""


@dataclass(frozen=True)
class Exit(Step):
    """Exit ``code`` after the turn's normal ending; ``abrupt``: at once, no ending."""

    ends_call: ClassVar[bool] = True

    code: int
    _: KW_ONLY
    abrupt: bool = False


@dataclass(frozen=True)
class Die(Step):
    """Kill the fake with ``signal`` after writing ``partial_line`` unended; background work
    is left behind, as a crashed CLI leaves it."""

    ends_call: ClassVar[bool] = True

    signal: str
    partial_line: bytes | None = None


@dataclass(frozen=True)
class Hang(Step):
    """Block until a signal ends the call (or ``timeout`` passes); those in ``ignore`` are
    recorded and change nothing from then on. The record says ``hanging`` meanwhile."""

    ignore: tuple[str, ...] = ()
    timeout: float | None = None


@dataclass(frozen=True)
class Sleep(Step):
    """Pause ``seconds``, writing nothing."""

    seconds: float


@dataclass(frozen=True)
class Leftover(Step):
    """``sleep seconds`` left behind after the call, in one of the three ways below."""

    seconds: float


class GrandchildHoldsStdout(Leftover):
    """Leave ``sleep seconds`` behind holding stdout: the stream stays open after the fake exits."""


class EscapeSetsid(Leftover):
    """Leave ``sleep seconds`` behind in its own session, ignoring SIGTERM, SIGINT and SIGHUP."""


class Daemon(Leftover):
    """Leave ``sleep seconds`` behind as a double-forked daemon: its parent has exited."""


@dataclass(frozen=True)
class Raw(Step):
    """Write ``data`` to stdout as it is, ``repeat`` times: no newline added, no checks."""

    data: bytes
    repeat: int = 1


@dataclass(frozen=True)
class Emit(Step):
    """Write ``line`` (one JSON text) and a newline to stdout, as it is."""

    line: str


@dataclass(frozen=True)
class CloseStdout(Step):
    """Close stdout and play on: the stream ends while the process keeps running."""


KINDS: dict[str, type[Step]] = {
    cls.kind: cls
    for cls in [*Step.__subclasses__(), *Leftover.__subclasses__()]
    if cls is not Leftover
}
CALL_OPTIONS = frozenset({"no_session_id", "session_id", "ignore_stdin", "no_events"})

# The public way to make steps: the classes themselves, and four functions that convert.
run, edit, load_skill, background, say = Run, Edit, LoadSkill, Background, Say
stderr, codex_error, fail_turn, exit, sleep = Stderr, CodexError, FailTurn, Exit, Sleep
no_session_id, session_id, ignore_stdin, no_events = NoSessionId, SessionId, IgnoreStdin, NoEvents
grandchild_holds_stdout, escape_setsid, daemon = GrandchildHoldsStdout, EscapeSetsid, Daemon
close_stdout = CloseStdout


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


def die(signal: Signal, *, partial_line: str | bytes | None = None) -> Die:
    """Kill the fake with ``signal`` (e.g. SIGKILL), after writing ``partial_line`` unended."""
    return Die(signal_name(signal), None if partial_line is None else _bytes(partial_line))


def hang(ignore: Iterable[Signal] = (), *, timeout: float | None = None) -> Hang:
    """Block until signalled: each signal is recorded; those in ``ignore`` change nothing.

    A SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2 not ignored ends the call with exit
    code 128 + signo, after killing background work. With ``timeout``, the call goes on after.
    """
    return Hang(tuple(signal_name(signal) for signal in ignore), timeout)


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


def check_script(harness: str, steps: Iterable[Step]) -> tuple[Step, ...]:
    """``steps`` as one call's script for ``harness``; raises on a misplaced or foreign step."""
    checked = tuple(steps)
    for index, step in enumerate(checked):
        if not isinstance(step, Step) or type(step) not in KINDS.values():
            raise TypeError(
                f"{step!r} is not a step: make steps with the functions of "
                "thirdshift.testing.fakecli (run, say, background…)"
            )
        if step.only_for not in (None, harness):
            raise ValueError(f"{step.kind}() is not a step of the fake {harness}")
        if step.ends_call and index < len(checked) - 1:
            raise ValueError(
                f"{step.kind}() must be the last step: the steps after it would never run"
            )
    return checked
