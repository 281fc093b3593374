"""The test's side of the fakes: make them, script their calls, read what each call did.

Imports no pytest: :class:`FakeCLIs` works in any test runner, and in ``thirdshift demo``.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from thirdshift._sandbox import WRITE_HOOK
from thirdshift.harness._builtin.claude import ClaudeHarness
from thirdshift.harness._builtin.codex import CodexHarness
from thirdshift.harness._builtin.gemini import GeminiHarness
from thirdshift.harness._builtin.opencode import OpencodeHarness
from thirdshift.harness._builtin.qwen import QwenHarness
from thirdshift.testing._wire import CLAUDE_TMP_ENV
from thirdshift.testing.fakecli._calls import FakeCall
from thirdshift.testing.fakecli._procs import kill_if_still
from thirdshift.testing.fakecli._shared import waiting_elsewhere
from thirdshift.testing.fakecli._state import (
    HARNESSES,
    NO_SCRIPT_EXIT,
    QUEUES_IN,
    STATE_ENV,
    Folder,
    read_json,
    transaction,
)
from thirdshift.testing.fakecli._steps import Step, check_script

_PROGRAM = Path(__file__).resolve().parent / "__main__.py"
_SKILLS_DIRS = {
    harness.name: harness.skills_dir
    for harness in (ClaudeHarness, CodexHarness, OpencodeHarness, GeminiHarness, QwenHarness)
}
"""Each fake's project skills folder: its Harness's, handed to the programs in their state."""

_SHIM = """\
#!/bin/sh
# The fake {name} of thirdshift.testing.fakecli; its state: {state}
{env}={state}
export {env}
exec {python} -S {program} {name} "$@"
"""


class FakeCLI:
    """One fake program (``claude``, ``codex``, ``opencode``, ``gemini`` or ``qwen``) of a
    :class:`FakeCLIs`."""

    def __init__(self, fakes: FakeCLIs, name: str) -> None:
        self._fakes = fakes
        self.name = name
        self.path = fakes.bin_dir / name
        """The program (a shell script) that the fakes' PATH finds."""

    def __repr__(self) -> str:
        return f"<FakeCLI {self.name} in {self._fakes.root}>"

    def script(self, *steps: Step, worktree: Path | None = None) -> FakeCLI:
        """Queue one call's behaviour: the next call not yet scripted plays ``steps``.

        With ``worktree``, only a call run in that folder takes it (ahead of the shared
        queue), so that sessions running at once in several worktrees each play their own.
        Returns this fake, so that calls can be chained: ``.script(...).script(...)``.
        """
        checked = [step.to_json() for step in check_script(self.name, steps)]
        with transaction(self._fakes._folder) as state:
            if worktree is None:
                state[self.name]["queue"].append(checked)
            else:
                by_folder = state[self.name].setdefault(QUEUES_IN, {})
                by_folder.setdefault(os.path.realpath(worktree), []).append(checked)
        return self

    @property
    def calls(self) -> list[FakeCall]:
        """Every call so far, in the order they started (their records as they are now)."""
        calls = [call for call in self._fakes.calls if call.harness == self.name]
        return sorted(calls, key=lambda call: call.number)

    @property
    def unconsumed(self) -> list[tuple[Step, ...]]:
        """Scripts no call has taken yet, in order (the shared queue's, then each worktree's)."""
        mine = read_json(self._fakes._folder.state)[self.name]
        queue = list(mine["queue"])
        for scripts in mine.get(QUEUES_IN, {}).values():
            queue += scripts
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
    """Fake ``claude``, ``codex``, ``opencode``, ``gemini`` and ``qwen`` programs in ``root/bin``,
    scripted per call.

    ``FakeCLIs(root)`` makes ``root/bin/<name>`` for each (a ``#!/bin/sh`` shim that runs
    the fake program with ``python``, by default this interpreter) and the state folder
    ``root/state``. Put ``bin_dir`` first on PATH (:meth:`env` does), script the calls with
    ``fakes.claude.script(...)``, and read what they did from ``fakes.claude.calls``.

    On a ``root`` that already holds fakes, ``FakeCLIs(root)`` keeps their state (queues,
    counters, records), so that a second process can open them to read what the calls did;
    :meth:`create` (or :meth:`reset`) starts afresh.
    """

    def __init__(self, root: Path, *, python: str | None = None, fresh: bool = False) -> None:
        # Absolute: the shims and env() carry these paths into calls made from other folders.
        self.root = Path(os.path.abspath(root))
        self.bin_dir = self.root / "bin"
        self.state_dir = self.root / "state"
        self.tmp_dir = self.root / "tmp"
        self._folder = Folder(str(self.state_dir))
        self._folder.open(fresh=fresh, skills_dirs=_SKILLS_DIRS)
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(mode=0o700, exist_ok=True)
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
        self.opencode = FakeCLI(self, "opencode")
        self.gemini = FakeCLI(self, "gemini")
        self.qwen = FakeCLI(self, "qwen")

    @classmethod
    def create(cls, root: Path, *, python: str | None = None) -> FakeCLIs:
        """Fakes in ``root`` with a fresh state: whatever an earlier run left there is gone."""
        return cls(root, python=python, fresh=True)

    def reset(self) -> None:
        """Forget every script, counter, session and record, as :meth:`create` does."""
        self._folder.open(fresh=True, skills_dirs=_SKILLS_DIRS)

    def __repr__(self) -> str:
        return f"<FakeCLIs in {self.root}>"

    def harness(self, name: str) -> FakeCLI:
        """The fake named ``name`` (``"claude"``, ``"codex"``, ``"opencode"``…)."""
        fakes = {fake.name: fake for fake in self._fakes()}
        if name not in fakes:
            raise ValueError(f"no fake named {name!r}: there are {', '.join(fakes)}")
        return fakes[name]

    def _fakes(self) -> tuple[FakeCLI, ...]:
        return (self.claude, self.codex, self.opencode, self.gemini, self.qwen)

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: ``os.environ``) with the fakes first on PATH and their state set,
        and the fake Claude's temporary folder (``CLAUDE_CODE_TMPDIR``, as the real one's) in
        their folder."""
        env = dict(os.environ if base is None else base)
        path = env.get("PATH")
        env["PATH"] = str(self.bin_dir) if not path else f"{self.bin_dir}{os.pathsep}{path}"
        env[STATE_ENV] = str(self.state_dir)
        env[CLAUDE_TMP_ENV] = str(self.tmp_dir)
        written = [part for part in env.get(WRITE_HOOK, "").split(os.pathsep) if part]
        env[WRITE_HOOK] = os.pathsep.join(dict.fromkeys([*written, str(self.root)]))
        return env

    def record_env(self, *names: str) -> None:
        """Record these environment variables too in each later call's ``env``."""
        with transaction(self._folder) as state:
            state["record_env"] += [name for name in names if name not in state["record_env"]]

    def copy_output(self, enabled: bool) -> None:
        """Keep a copy of each later call's stdout and stderr (the default), or not.

        Off, a fake writing gigabytes (benchmarks) costs no disk; ``FakeCall.stdout`` is empty.
        """
        with transaction(self._folder) as state:
            state["copy_output"] = enabled

    @property
    def calls(self) -> list[FakeCall]:
        """The calls of all the fakes, in the order they started."""
        calls = []
        for entry in sorted(os.listdir(self._folder.calls)):
            if entry.endswith(".json"):
                try:
                    with open(os.path.join(self._folder.calls, entry), encoding="utf-8") as file:
                        calls.append(FakeCall.from_json(file.read()))
                except FileNotFoundError:  # a reset() meanwhile
                    continue
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
                kill_if_still(pid, start)
        return found

    def problems(self, *, include_unconsumed: bool = True) -> list[str]:
        """What a test's teardown should complain of: calls with no script, unused scripts."""
        state = read_json(self._folder.state)
        found = []
        for call in self.calls:
            if not call.unscripted:
                continue
            elsewhere = waiting_elsewhere(call.harness, state, str(call.cwd))
            waiting = f"; scripts wait for {', '.join(elsewhere)}" if elsewhere else ""
            found.append(
                f"{call.describe()} ran with no script left (it exited {NO_SCRIPT_EXIT}){waiting}; "
                f"argv {call.argv[1:]}"
            )
        if include_unconsumed:
            for name in HARNESSES:
                found += [
                    f"a script of fake {name} was never used: "
                    f"{', '.join(repr(step) for step in script) or '(no steps)'}"
                    for script in self.harness(name).unconsumed
                ]
        return found
