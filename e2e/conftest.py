"""End-to-end tests: real processes, the fake CLIs on PATH, the thirdshift command.

Every test here runs with a marker in its environment, which every process it starts inherits
(setsid escapees and double-forked daemons included); after the test, any live process still
carrying the marker fails it.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sessionkit import MARK, processes_with_env
from temporal_server import DevServer, running_dev_server
from toy import install_toy


def processes_marked(mark: str) -> list[int]:
    """Live processes (not ourselves) whose environment holds ``MARK=mark``."""
    return processes_with_env(MARK, mark)


@pytest.fixture(autouse=True)
def no_process_left(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Fail the test if a process it started is still alive after it (then kill it)."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv(MARK, mark)
    yield mark
    deadline = time.monotonic() + 2.0  # a process may be between its last signal and exit
    while (left := processes_marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.02)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"processes left running after the test: {left}"


@pytest.fixture(autouse=True)
def own_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own: what a CLI or a fake keeps there (a fake Qwen's status files)
    must reach neither the developer's home nor a later test, whose fake Qwen has the same
    session ids and would read them as its own killed work."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    return home


# For the tests of the machine adapter that run the toy CLI (e2e/toy.py).


@pytest.fixture
def toy_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``toy`` in a folder of ``tmp_path``, first on PATH."""
    bin_dir = tmp_path / "bin"
    install_toy(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    """An empty folder for a toy session to run in."""
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


# For the fleet tests (e2e/test_fleet*.py): one real Temporal dev server per pytest process.


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A dev server from the venv's ``temporal`` on a free loopback port, for this process."""
    with running_dev_server(tmp_path_factory.mktemp("temporal")) as server:
        yield server
