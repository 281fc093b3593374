"""The fast tier: every test in ``tests/`` runs in this process, and starts no other.

No subprocess, no pytester subprocess or xdist run, no fake CLI, fake model or dev server:
what needs one belongs in ``e2e/`` (by subject). Two guards keep it so: ``test_source_guards``
refuses the names that start one, and this plugin (loaded by pyproject.toml's ``-p fast_tier``,
a plugin rather than a conftest.py so that mypy sees one module named ``conftest``) refuses,
while a test of ``tests/`` runs, every way a process starts: a test that reaches one through
the library (a ``Sessions.within`` without a stand-in) fails saying where it belongs. What
this machine allows is e2e's to find out, as the probes are processes: here containment
allows ``scan`` alone (the supervisor's probe), and the sandbox is unavailable (bwrap's).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import pytest

from thirdshift._cli import check
from thirdshift._machine import allowed, sandbox
from thirdshift._machine.sandbox import bwrap

TESTS = Path(__file__).resolve().parent
REFUSED = (
    "tests/ starts no process (the fast tier: `make check`); a test that needs one belongs in "
    "e2e/, by subject"
)


NO_SANDBOX = "the fast tier tries no sandbox (bwrap is a process): e2e/ does"


def _refused(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise AssertionError(REFUSED)


@pytest.fixture(autouse=True)
def no_process_started(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if not request.path.resolve().is_relative_to(TESTS):
        return  # e2e/ starts what it needs
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refused)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp"):
        monkeypatch.setattr(os, name, _refused)
    monkeypatch.setattr(allowed, "_machine", lambda: allowed._Machine(("scan",), None))
    for module in (bwrap, sandbox, check):  # each holds the probe by a name of its own
        name = "sandbox_unavailable" if module is check else "unavailable"
        monkeypatch.setattr(module, name, lambda: NO_SANDBOX)
