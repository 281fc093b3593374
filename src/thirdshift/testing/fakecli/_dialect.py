"""What a fake CLI's dialect is: how one CLI shows the steps it plays, and its module.

Each of :mod:`.claude`, :mod:`.codex`, :mod:`.opencode`, :mod:`.gemini` and :mod:`.qwen` is
one; :mod:`.play` plays a call's steps through it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._argv import Argv
from thirdshift.testing.fakecli._calls import FakeCall
from thirdshift.testing.fakecli._output import Output
from thirdshift.testing.fakecli._procs import Command
from thirdshift.testing.fakecli._state import HARNESSES


@dataclass
class Task:
    """Background work of a call (bookkeeping, changed as the call goes on)."""

    step: steps.Background
    description: str
    process: Command
    output: str
    task_id: str = ""
    tool_use_id: str = ""


@dataclass(frozen=True)
class Profile:
    """What a CLI does that no stream of it shows: one per dialect module (``PROFILE``)."""

    valued_flags: frozenset[str]
    """Its flags that take a value, which its argv parser skips with the flag."""
    resumes: Literal["cwd", "known", "any id"]
    """Which session id a Resume may name: one it made in the same cwd (Claude, Gemini, Qwen),
    one it made anywhere (opencode), any id at all (Codex)."""
    own_session: bool = False
    """Whether its commands run in sessions of their own, which it never kills (opencode,
    Gemini): they outlive a stop of the CLI, and background work outlives its exit."""
    stop_exits: Mapping[int, int] = field(default_factory=dict)
    """Its exit status when a signal stops it, where that is not 128 + the signal's number."""
    dies_by_stop: bool = False
    """Whether a signal that stops it kills it, instead of its exiting (opencode, Qwen)."""
    runs_a_worker: bool = False
    """Whether it runs as an entry process and a worker, stopped only as a group (Qwen)."""
    stdin_notice: str | None = None
    """What it says on stderr before it reads a stdin that is not a terminal (Codex)."""
    api_error_wording: Mapping[int | None, str] = field(default_factory=dict)
    """How it words an API error it gives up on, by status (None: any other; none at all:
    the API's message as it is), ``{status}`` and ``{message}`` filled in."""


class Played(Protocol):
    """What a dialect uses of the call it shows (:class:`.play.Call`): declared here, so that
    the dialects and the player do not import each other."""

    cwd: str
    number: int
    session_id: str | None
    resumed: str | None
    sessions_here: bool
    skills_dir: str
    """The CLI's project skills folder, relative to its cwd: its Harness's ``skills_dir``."""
    fake_call: FakeCall | None
    out: Output
    tasks: list[Task]

    def path(self, path: str) -> str: ...
    def write_file(self, target: str, text: str) -> bool: ...
    def run_command(self, command: str) -> tuple[str, str, int]: ...
    def start_task(self, step: steps.Background, output: str | None = None) -> Task: ...
    def wait_out_grace(self, tasks: list[Task]) -> None: ...
    def stop_background(self) -> None: ...
    def remember_killed(self, tasks: list[dict[str, Any]]) -> None: ...
    def session_requests(self, requests: int) -> int: ...


class Dialect(Protocol):
    """How one CLI shows the steps it plays (:mod:`.claude`, :mod:`.codex`, :mod:`.opencode`,
    :mod:`.gemini`, :mod:`.qwen`)."""

    def begin(self) -> None: ...
    def refuse_resume(self) -> int: ...
    def run(self, step: steps.Run) -> None: ...
    def edit(self, step: steps.Edit) -> None: ...
    def load_skill(self, step: steps.LoadSkill) -> None: ...
    def background(self, step: steps.Background) -> None: ...
    def say(self, step: steps.Say) -> None: ...
    def fail_turn(self, step: steps.FailTurn) -> int:
        """Show the failed turn; the exit code the real CLI would then exit with."""

    def end_turn(self) -> None: ...
    def stopped(self, signo: int) -> None:
        """Show a stop by ``signo`` (how the CLI then ends is its :class:`Profile`'s)."""


class DialectModule(Protocol):
    """A dialect's module (:mod:`.claude`…): its argv parser and its :class:`Dialect`."""

    PROFILE: Profile

    def parse(self, args: list[str]) -> Argv: ...
    def dialect(self, call: Played, argv: Argv, replay: list[dict[str, Any]]) -> Dialect: ...


def dialect_module(harness: str) -> DialectModule:
    """The module of ``harness`` (one of ``HARNESSES``), imported now.

    A call imports its own dialect only, as each costs its start 1-2 ms (module and templates,
    ``python -S -X importtime``). Measured on the 2-core machine while it was loaded (medians of
    40 interleaved fake claude calls): importing all five dialects made a call 7% slower than
    the two of before (282 vs 263 ms); importing its own only, 11% faster (177 vs 198 ms).
    """
    assert harness in HARNESSES
    return cast(DialectModule, importlib.import_module(f"thirdshift.testing.fakecli._{harness}"))
