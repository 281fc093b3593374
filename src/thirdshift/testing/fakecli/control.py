"""The test's side of the fakes: make them, script their calls, read what each call did.

Imports no pytest: :class:`FakeCLIs` works in any test runner, and in ``thirdshift demo``.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thirdshift.testing.fakecli.player.state import (
    HARNESSES,
    NO_SCRIPT_EXIT,
    STATE_ENV,
    Folder,
    Transaction,
    is_alive,
    read_json,
)
from thirdshift.testing.fakecli.steps import Step, check_script

_PROGRAM = Path(__file__).resolve().parent / "__main__.py"

_SHIM = """\
#!/bin/sh
# The fake {name} of thirdshift.testing.fakecli; its state: {state}
{env}={state}
export {env}
exec {python} -S {program} {name} "$@"
"""


@dataclass(frozen=True)
class StartedProcess:
    """A process that a step of a call started."""

    pid: int
    what: str
    """``run``, ``background``, ``grandchild_holds_stdout``, ``escape_setsid`` or ``daemon``."""
    command: str
    start: int | None = field(default=None, repr=False)
    """Its start time in clock ticks since boot, which tells it from a later holder of its pid."""

    @property
    def running(self) -> bool:
        """Whether it still runs (a zombie does not)."""
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
    signals: list[str]
    """Names of the signals received, in order: ``["SIGINT", "SIGTERM"]``."""
    started: list[StartedProcess]
    hanging: bool
    """Whether the call is in a ``hang`` step."""
    ended: bool
    """Whether the call ran to its exit (False: still running, or killed, or died by a step)."""
    exit_code: int | None
    """Its exit code; None while it runs, or if it died by a signal."""
    died_by: str | None
    """The signal a ``die`` step killed it with."""
    unscripted: bool
    """Whether it found no script left (it then exits 97)."""
    refused: str | None
    """The message with which it refused its argv, as the real CLI would have."""
    steps: list[str] | None
    """The kinds of the steps it was scripted with; None if it took no script."""
    error: str | None
    """An internal error of the fake (a bug of the fake, or a step it could not play)."""
    stdout_path: Path
    stderr_path: Path
    started_at: float = field(default=0.0, repr=False)
    """When it started (``time.time()``)."""
    start: int | None = field(default=None, repr=False)

    @classmethod
    def from_record(cls, folder: Folder, record: dict[str, Any]) -> FakeCall:
        harness, number = record["harness"], record["number"]
        return cls(
            harness=harness,
            number=number,
            argv=list(record["argv"]),
            cwd=Path(record["cwd"]),
            stdin=record["stdin"],
            env=dict(record["env"]),
            pid=record["pid"],
            ppid=record["ppid"],
            pgid=record["pgid"],
            sid=record["sid"],
            session_id=record["session_id"],
            resumed=record["resumed"],
            signals=list(record["signals"]),
            started=[
                StartedProcess(p["pid"], p["what"], p["command"], p["start"])
                for p in record["started"]
            ],
            hanging=record["hanging"],
            ended=record["ended"],
            exit_code=record["exit_code"],
            died_by=record["died_by"],
            unscripted=record["unscripted"],
            refused=record["refused"],
            steps=record["steps"],
            error=record["error"],
            stdout_path=Path(folder.output(harness, number, "stdout")),
            stderr_path=Path(folder.output(harness, number, "stderr")),
            started_at=record["started_at"],
            start=record["start"],
        )

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


class FakeCLI:
    """One fake program (``claude`` or ``codex``) of a :class:`FakeCLIs`."""

    def __init__(self, fakes: FakeCLIs, name: str) -> None:
        self._fakes = fakes
        self.name = name
        self.path = fakes.bin_dir / name
        """The program (a shell script) that the fakes' PATH finds."""

    def __repr__(self) -> str:
        return f"<FakeCLI {self.name} in {self._fakes.root}>"

    def script(self, *steps: Step) -> FakeCLI:
        """Queue one call's behaviour: the next call not yet scripted plays ``steps``.

        Returns this fake, so that calls can be chained: ``.script(...).script(...)``.
        """
        checked = check_script(self.name, steps)
        with Transaction(self._fakes._folder) as state:
            state[self.name]["queue"].append([step.to_json() for step in checked])
        return self

    @property
    def calls(self) -> list[FakeCall]:
        """Every call so far, in the order they started (their records as they are now)."""
        calls = [call for call in self._fakes.calls if call.harness == self.name]
        return sorted(calls, key=lambda call: call.number)

    @property
    def unconsumed(self) -> list[tuple[Step, ...]]:
        """Scripts no call has taken yet, in order."""
        state = read_json(self._fakes._folder.state)
        queue = state[self.name]["queue"]
        return [tuple(Step.from_json(step) for step in queued) for queued in queue]

    @property
    def unscripted(self) -> list[FakeCall]:
        """The calls that found no script left."""
        return [call for call in self.calls if call.unscripted]

    def wait_for_call(
        self, index: int, *, hanging: bool = False, ended: bool = False, timeout: float = 10.0
    ) -> FakeCall:
        """``calls[index]`` once it exists (and is hanging, or has ended, if asked).

        For tests that must act while a call runs, e.g. interrupt it once it hangs. Raises
        TimeoutError after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            calls = self.calls
            if len(calls) > index:
                call = calls[index]
                if (not hanging or call.hanging) and (not ended or call.ended):
                    return call
            if time.monotonic() > deadline:
                wanted = "hanging" if hanging else "ended" if ended else "started"
                raise TimeoutError(f"fake {self.name}'s calls[{index}] not {wanted} in {timeout}s")
            time.sleep(0.01)


class FakeCLIs:
    """Fake ``claude`` and ``codex`` programs in ``root/bin``, scripted per call.

    ``FakeCLIs(root)`` makes ``root/bin/{claude,codex}`` (each a ``#!/bin/sh`` shim that runs
    the fake program with ``python``, by default this interpreter) and the state folder
    ``root/state``. Put ``bin_dir`` first on PATH (:meth:`env` does), script the calls with
    ``fakes.claude.script(...)``, and read what they did from ``fakes.claude.calls``.

    On a ``root`` that already holds fakes, ``FakeCLIs(root)`` keeps their state (queues,
    counters, records), so that a second process can open them to read what the calls did;
    :meth:`create` (or :meth:`reset`) starts afresh.
    """

    def __init__(self, root: Path, *, python: str | None = None, fresh: bool = False) -> None:
        self.root = Path(root)
        self.bin_dir = self.root / "bin"
        self.state_dir = self.root / "state"
        self._folder = Folder(str(self.state_dir))
        self._folder.open(fresh=fresh)
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        for name in HARNESSES:
            shim = _SHIM.format(
                name=name,
                env=STATE_ENV,
                state=shlex.quote(str(self.state_dir)),
                python=shlex.quote(python or sys.executable),
                program=shlex.quote(str(_PROGRAM)),
            )
            temporary = self.bin_dir / f".{name}.{os.getpid()}.tmp"
            temporary.write_text(shim, encoding="utf-8")
            temporary.chmod(0o755)
            temporary.replace(self.bin_dir / name)  # a call starting meanwhile sees a whole shim
        self.claude = FakeCLI(self, "claude")
        self.codex = FakeCLI(self, "codex")

    @classmethod
    def create(cls, root: Path, *, python: str | None = None) -> FakeCLIs:
        """Fakes in ``root`` with a fresh state: whatever an earlier run left there is gone."""
        return cls(root, python=python, fresh=True)

    def reset(self) -> None:
        """Forget every script, counter, session and record, as :meth:`create` does."""
        self._folder.open(fresh=True)

    def __repr__(self) -> str:
        return f"<FakeCLIs in {self.root}>"

    def harness(self, name: str) -> FakeCLI:
        """The fake named ``name`` (``"claude"`` or ``"codex"``)."""
        fakes = {"claude": self.claude, "codex": self.codex}
        if name not in fakes:
            raise ValueError(f"no fake named {name!r}: there are {', '.join(fakes)}")
        return fakes[name]

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: ``os.environ``) with the fakes first on PATH and their state set."""
        env = dict(os.environ if base is None else base)
        path = env.get("PATH")
        env["PATH"] = str(self.bin_dir) if not path else f"{self.bin_dir}{os.pathsep}{path}"
        env[STATE_ENV] = str(self.state_dir)
        return env

    def record_env(self, *names: str) -> None:
        """Record these environment variables too in each later call's ``env``."""
        with Transaction(self._folder) as state:
            state["record_env"] += [name for name in names if name not in state["record_env"]]

    def copy_output(self, enabled: bool) -> None:
        """Keep a copy of each later call's stdout and stderr (the default), or not.

        Off, a fake writing gigabytes (benchmarks) costs no disk; ``FakeCall.stdout`` is empty.
        """
        with Transaction(self._folder) as state:
            state["copy_output"] = enabled

    @property
    def calls(self) -> list[FakeCall]:
        """The calls of both fakes, in the order they started."""
        calls = []
        for entry in sorted(os.listdir(self._folder.calls)):
            if entry.endswith(".json"):
                try:
                    record = read_json(os.path.join(self._folder.calls, entry))
                except FileNotFoundError:
                    continue
                calls.append(FakeCall.from_record(self._folder, record))
        return sorted(calls, key=lambda call: (call.started_at, call.harness, call.number))

    def survivors(self) -> list[str]:
        """What the fakes recorded that still runs, described: fakes, and what steps started."""
        found = []
        for call in self.calls:
            if call.running:
                found.append(f"{call.describe()} (pid {call.pid})")
            found += [
                f"{process.what} `{process.command}` of {call.describe()} (pid {process.pid})"
                for process in call.started
                if process.running
            ]
        return found

    def kill_survivors(self, settle: float = 0.5) -> list[str]:
        """SIGKILL whatever :meth:`survivors` lists; return what it listed.

        Waits up to ``settle`` seconds first, for processes already on their way out.
        """
        deadline = time.monotonic() + settle
        while self.survivors() and time.monotonic() < deadline:
            time.sleep(0.02)
        found = self.survivors()
        for call in self.calls:
            processes = [(call.pid, call.start)] + [(p.pid, p.start) for p in call.started]
            for pid, start in processes:
                _kill_if_still(pid, start)
        return found

    def problems(self, *, include_unconsumed: bool = True) -> list[str]:
        """What a test's teardown should complain of: calls with no script, unused scripts."""
        found = [
            f"{call.describe()} ran with no script left (it exited {NO_SCRIPT_EXIT}); "
            f"argv {call.argv[1:]}"
            for call in self.calls
            if call.unscripted
        ]
        if include_unconsumed:
            for name in HARNESSES:
                found += [
                    f"a script of fake {name} was never used: "
                    f"{', '.join(repr(step) for step in script) or '(no steps)'}"
                    for script in self.harness(name).unconsumed
                ]
        return found


def _kill_if_still(pid: int, start: int | None) -> None:
    """SIGKILL ``pid`` if it is still the process that started at ``start``.

    Through a pidfd, checked after it is opened: the pid cannot be reused between the check
    and the kill, so another test's process (another xdist worker's) is never hit.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if is_alive(pid, start):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        os.close(pidfd)
