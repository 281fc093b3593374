"""A toy Harness over programs/toy_cli.py, for testing the machine adapter without a dialect."""

from __future__ import annotations

import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from thirdshift import Choice, Ended
from thirdshift._sandbox import SandboxNeeds
from thirdshift.harness import FailureInfo, Harness, Invocation, StreamReader

PROGRAM = Path(__file__).parent / "programs" / "toy_cli.py"
NO_NEEDS = SandboxNeeds()


def install_toy(bin_dir: Path, name: str = "toy") -> Path:
    """Put a ``toy`` program in ``bin_dir`` (a sh shim: a long shebang line fails on Linux)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / name
    shim.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(PROGRAM))} "$@"\n'
    )
    shim.chmod(0o755)
    return shim


@dataclass
class ToyReader(StreamReader):
    """Every line is a progress line; ``FINAL:x`` sets the final message, ``ID:x`` the session
    id, ``FAIL:x`` fails."""

    lines: list[str] = field(default_factory=list)
    session_id: str | None = None
    killed: tuple[str, ...] = ()
    final_message: str | None = None
    summary: str | None = None
    failed: bool = False
    error: str | None = None
    failure: FailureInfo | None = None  # the toy's stream tells no failure apart

    def feed(self, line: str) -> list[str]:
        self.lines.append(line)
        if line.startswith("FINAL:"):
            self.final_message = line.removeprefix("FINAL:")
        if line.startswith("ID:"):
            self.session_id = line.removeprefix("ID:")
        if line.startswith("FAIL:"):
            self.failed, self.error = True, line.removeprefix("FAIL:")
        return [f"line {line}"]

    def ended(self) -> Ended:
        return Ended(self.session_id, self.killed, self.final_message)


@dataclass
class Toy(Harness):
    """A Harness whose "prompt" is ignored and whose actions come from ``actions``."""

    actions: Sequence[str] = ()
    stop_signals: tuple[signal.Signals, ...] = (signal.SIGTERM,)
    name: str = "toy"
    skills_dir: str = ".toy/skills"
    readers: list[ToyReader] = field(default_factory=list)
    sandbox_needs: SandboxNeeds = NO_NEEDS

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        return Invocation(argv=(self.name, *self.actions), stdin=prompt)

    def reader(self, worktree: Path) -> ToyReader:
        self.readers.append(ToyReader())
        return self.readers[-1]
