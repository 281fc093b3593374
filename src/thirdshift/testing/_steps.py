"""The steps of a scripted session: the classes, and what the doubles need of them (their
JSON form, their names, which double plays which). :mod:`thirdshift.testing.steps` offers the
functions a test scripts sessions with.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import signal as _signal
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Any, ClassVar

Signal = _signal.Signals | int | str
"""A signal: ``signal.SIGTERM``, ``15`` or ``"SIGTERM"``."""

CLI, MODEL = "fake CLI", "fake model"
"""The doubles that play steps (:attr:`Step.played_by`)."""
BOTH = frozenset({CLI, MODEL})


@dataclass(frozen=True)
class Step:
    """One step of a scripted session."""

    verb: ClassVar[str] = ""
    """The step's name in scripts and in a fake call's steps: its function's (``load_skill``)."""
    played_by: ClassVar[frozenset[str]] = BOTH
    """The doubles that can play it: :data:`CLI`, :data:`MODEL` or both."""
    only_for: ClassVar[str | None] = None
    """The one CLI whose fake plays this step, if not every fake CLI does."""
    ends_call: ClassVar[bool] = False
    """Whether no step can follow this one (the process is gone)."""
    abstract: ClassVar[bool] = False
    """Whether the class itself says it is a family of steps, not one (:class:`Fault`)."""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.verb = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    def to_json(self) -> dict[str, Any]:
        """The step as the fake CLI program reads it (bytes as ``{"b64": …}``)."""
        data: dict[str, Any] = {"step": self.verb}
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
            elif isinstance(value, list):
                fields[name] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            else:
                fields[name] = value
        return step_types()[data["step"]](**{k: v for k, v in fields.items() if k != "step"})


def step_types() -> dict[str, type[Step]]:
    """Every kind of step by its verb: these and the fake CLIs' own."""
    found: dict[str, type[Step]] = {}
    pending = list(Step.__subclasses__())
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        if not cls.__dict__.get("abstract", False):  # its own word: a family, not a step
            found[cls.verb] = cls
    return found


# What the agent does


@dataclass(frozen=True)
class _Command(Step):
    """A step that runs ``command`` (:class:`Run`, :class:`Background`)."""

    abstract: ClassVar[bool] = True

    command: str
    _: KW_ONLY
    description: str | None = None

    @property
    def described(self) -> str:
        """How the model describes the command to a shell tool that takes a description (the
        fake model's and the fakes' alike): its ``description``, else the command itself."""
        return self.command if self.description is None else self.description


@dataclass(frozen=True)
class Run(_Command):
    """Run ``command`` for real, in the foreground (``/bin/bash -c``, in the cwd), to its end."""


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
class Background(_Command):
    """Start ``command`` for real and leave it running, as agents leave test runs.

    Claude kills it after its ``result``, once up to ``grace`` seconds have passed (reported
    completed, with a turn of its own, if it finished by then); Codex and Qwen kill it silently
    at exit (Qwen says so in its status file); opencode and Gemini leave it running. The real
    CLIs under the fake model have their own grace (Claude's ~5 s) and ignore ``grace``.
    """

    _: KW_ONLY
    grace: float = 0.0


@dataclass(frozen=True)
class Say(Step):
    """An assistant message; the last one is the final message (Claude's ``result.result``)."""

    text: str


# What the model's API does instead of answering


@dataclass(frozen=True)
class Fault(Step):
    """A step the model server answers with a failure instead of a reply: one request, or,
    when it ends its script, that request and every retry of it (the CLI gives up at last)."""

    abstract: ClassVar[bool] = True


@dataclass(frozen=True)
class HttpError(Fault):
    """An HTTP error with the API's own error body. A fake CLI shows it as its real CLI shows
    an API error it gives up on, and fails the turn."""

    status: int
    message: str | None = None
    retry_after: float | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AtCapacity(Fault):
    """The API has no capacity: Anthropic's 529 ``overloaded_error``, OpenAI's 503."""

    played_by: ClassVar[frozenset[str]] = frozenset({MODEL})


@dataclass(frozen=True)
class TooManyRequests(Fault):
    """A 429 with ``retry-after``."""

    played_by: ClassVar[frozenset[str]] = frozenset({MODEL})

    retry_after: float


@dataclass(frozen=True)
class QuotaSpent(Fault):
    """The plan or quota is spent until ``resets_at`` (seconds since the epoch)."""

    played_by: ClassVar[frozenset[str]] = frozenset({MODEL})

    resets_at: float


@dataclass(frozen=True)
class Stall(Fault):
    """Answer with the first events of a stream, then nothing (until the fake model closes)."""

    played_by: ClassVar[frozenset[str]] = frozenset({MODEL})


@dataclass(frozen=True)
class Hang(Fault):
    """Nothing more comes: the fake model accepts the request and never answers it (until it
    closes); a fake CLI blocks until a signal ends the call (or ``timeout`` passes), and the
    signals in ``ignore`` are recorded and change nothing from then on."""

    ignore: tuple[str, ...] = ()
    timeout: float | None = None


# How the CLI ends


@dataclass(frozen=True)
class Exit(Step):
    """Exit ``code`` after the turn's normal ending; ``abrupt``: at once, no ending."""

    played_by: ClassVar[frozenset[str]] = frozenset({CLI})
    ends_call: ClassVar[bool] = True

    code: int
    _: KW_ONLY
    abrupt: bool = False


# The public way to make steps: the classes themselves, and functions that convert.
run, edit, load_skill, background, say, exit = Run, Edit, LoadSkill, Background, Say, Exit


def signal_name(signal: Signal) -> str:
    """``signal`` as its name, e.g. ``"SIGTERM"``; raises ValueError if there is no such."""
    try:
        if isinstance(signal, str):
            return _signal.Signals[signal if signal.startswith("SIG") else f"SIG{signal}"].name
        return _signal.Signals(signal).name
    except (KeyError, ValueError):
        raise ValueError(f"no such signal: {signal!r}") from None


def http_error(
    status: int,
    *,
    message: str | None = None,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpError:
    """Answer one request with HTTP ``status`` and the API's error body (``message`` in it)."""
    if not 400 <= status <= 599:
        raise ValueError(f"http_error: status must be 400-599, got {status}")
    return HttpError(status, message, retry_after, tuple((headers or {}).items()))


def at_capacity() -> AtCapacity:
    """Answer one request as an API with no capacity left (Anthropic 529, OpenAI 503)."""
    return AtCapacity()


def too_many_requests(retry_after: float) -> TooManyRequests:
    """Answer one request with a 429 and ``retry-after: <retry_after>``."""
    return TooManyRequests(retry_after)


def quota_spent(resets_at: datetime | float) -> QuotaSpent:
    """Answer one request the way each API says the plan or quota is spent until ``resets_at``.

    Claude: a 429 ``rate_limit_error`` with the ``anthropic-ratelimit-unified-*`` headers
    (``status: rejected``, the reset time); with an API key Claude takes it as any 429 (retried,
    then "API Error: Request rejected (429) · You have reached your usage limit").
    Codex: a 429 ``usage_limit_reached`` error with ``resets_at``, which Codex reports as
    "You've hit your usage limit. … try again at <time>." without retrying.
    """
    when = resets_at.timestamp() if isinstance(resets_at, datetime) else float(resets_at)
    return QuotaSpent(when)


def stall() -> Stall:
    """Start answering one request (the response's first events), then send nothing more."""
    return Stall()


def hang(ignore: Iterable[Signal] = (), *, timeout: float | None = None) -> Hang:
    """Nothing more comes: the fake model never answers the request; a fake CLI blocks until
    signalled, each signal recorded, those in ``ignore`` changing nothing.

    On a fake CLI a SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2 not ignored ends the
    call with exit code 128 + signo, after killing background work. With ``timeout``, the
    call goes on after. The fake model ignores both.
    """
    return Hang(tuple(signal_name(signal) for signal in ignore), timeout)


def describe(step: Step) -> str:
    """``step`` the way a test writes it, for failure messages: ``run('make test')``."""
    first = next(iter(vars(step).values()), None)
    return f"{step.verb}({first!r})" if first not in (None, ()) else f"{step.verb}()"
