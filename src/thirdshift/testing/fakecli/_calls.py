"""What a call records: :class:`FakeCall`, one schema, written by the call and read by the test.

The fake program makes a ``FakeCall`` as it starts, replaces it as things happen (signals,
processes started, its exit) and writes it with :meth:`FakeCall.to_json`; the test's side reads
it back with :meth:`FakeCall.from_json`. Nothing else knows the record's fields.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thirdshift.testing.fakecli._procs import is_alive


@dataclass(frozen=True)
class StartedProcess:
    """A process that a step of a call started."""

    pid: int
    what: str
    """``run``, ``background``, ``grandchild_holds_stdout``, ``escape_setsid``, ``daemon``, or
    ``worker`` (Qwen's worker process, which plays the call: the call's ``pid`` is its entry)."""
    command: str
    start: int | None = field(default=None, repr=False)
    """Its start time in clock ticks since boot, which tells it from a later holder of its pid."""

    @property
    def running(self) -> bool:
        """Whether it still runs (a zombie does not; nor does a later holder of its pid)."""
        return is_alive(self.pid, self.start)


@dataclass(frozen=True)
class FakeCall:
    """What one call (one run) of a fake CLI did, as far as it got: a snapshot of its record."""

    harness: str
    number: int
    """1 for the Harness's first call, 2 for its second…: ``calls[0].number == 1``."""
    argv: list[str]
    """The arguments, after the program's name, which comes first: ``["claude", "-p", …]``."""
    cwd: Path
    stdin: str | None
    """Everything read from stdin (the prompt), or None if it was not read (yet)."""
    env: dict[str, str]
    """The recorded variables (``CLAUDECODE``, ``PATH``, any added by ``record_env``), if set."""
    pid: int
    ppid: int
    pgid: int
    sid: int
    session_id: str | None
    """The id the call's stream gave (a Resume's is the id it continued); None if it gave none."""
    resumed: str | None
    """The id the argv asked to resume, if any."""
    stdout_path: Path
    stderr_path: Path
    signals: list[str] = field(default_factory=list)
    """Names of the signals received, in order: ``["SIGINT", "SIGTERM"]``."""
    started: list[StartedProcess] = field(default_factory=list)
    hanging: bool = False
    """Whether the call is in a ``hang`` step."""
    ended: bool = False
    """Whether the call ran to its exit (False: still running, or killed, or died by a step)."""
    exit_code: int | None = None
    """Its exit code; None while it runs, or if it died by a signal."""
    died_by: str | None = None
    """The signal a ``die`` step killed it with."""
    unscripted: bool = False
    """Whether it found no script left (it then exits 97)."""
    refused: str | None = None
    """The message with which it refused its argv, as the real CLI would have."""
    steps: list[str] | None = None
    """The verbs of the steps it was scripted with; None if it took no script."""
    error: str | None = None
    """An internal error of the fake (a bug of the fake, or a step it could not play)."""
    started_at: float = field(default=0.0, repr=False)
    """When it started (``time.time()``)."""
    start: int | None = field(default=None, repr=False)
    """The fake's own start time (see :attr:`StartedProcess.start`)."""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), default=str, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> FakeCall:
        data: dict[str, Any] = json.loads(text)
        data["started"] = [StartedProcess(**process) for process in data["started"]]
        for name in ("cwd", "stdout_path", "stderr_path"):
            data[name] = Path(data[name])
        return cls(**data)

    @property
    def started_pids(self) -> list[int]:
        """The pids of every process its steps started, in order."""
        return [process.pid for process in self.started]

    @property
    def running(self) -> bool:
        """Whether the fake's own process still runs."""
        return is_alive(self.pid, self.start)

    @property
    def stdout(self) -> bytes:
        """Every byte the call wrote to stdout so far (empty if copies are off)."""
        try:
            return self.stdout_path.read_bytes()
        except FileNotFoundError:
            return b""

    @property
    def stderr(self) -> str:
        """What the call wrote to stderr so far."""
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def events(self) -> list[dict[str, Any]]:
        """The JSON objects among its stdout lines, in order."""
        found = []
        for line in self.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                found.append(event)
        return found

    def describe(self) -> str:
        return f"fake {self.harness} call {self.number}"
