"""Helpers shared by the fault, hostile-input, security and concurrency tests."""

from __future__ import annotations

import filecmp
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from pytest_thirdshift import FakeCLIs
from thirdshift import claude, codex
from thirdshift._logs import command_stamp
from thirdshift.testing.fakecli import FakeCall
from thirdshift.testing.fakecli._state import STATE_ENV

MARK = "THIRDSHIFT_E2E_TEST"
"""Set by e2e/conftest.py's ``no_process_left`` for each test; whatever it starts inherits it."""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


def still_running(pids: list[int], settle: float = 2.0) -> list[int]:
    """Those of ``pids`` still running after up to ``settle`` seconds."""
    deadline = time.monotonic() + settle
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def fakes_running(
    fakes: FakeCLIs, settle: float = 2.0, *, ignore: tuple[int, ...] = ()
) -> list[int]:
    """Live processes of ``fakes``' calls (each carries their state folder in its environment,
    set by the fake's own shim: a sandbox's minimal environment keeps it), after up to
    ``settle`` seconds; ``ignore`` are processes of the test's that have it too (a worker
    started in the test's environment). Unlike the pids a call records, this holds in a
    sandbox too, where those are its PID namespace's own."""
    deadline = time.monotonic() + settle

    def left() -> list[int]:
        found = processes_with_env(STATE_ENV, str(fakes.state_dir))
        return [pid for pid in found if pid not in ignore]

    while (running := left()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return running


def every_pid(call: FakeCall) -> list[int]:
    """The fake's own pid and the pids of everything its steps started."""
    return [call.pid, *call.started_pids]


def assert_logged_exactly(log: Path, call: FakeCall) -> None:
    """The Session log holds every byte the call wrote to stdout, and nothing else.

    Compared file to file, so that a stream of many megabytes costs no memory here.
    """
    assert log.exists(), f"no Session log at {log}"
    assert log.stat().st_size == call.stdout_path.stat().st_size
    assert filecmp.cmp(log, call.stdout_path, shallow=False), f"{log} differs from the stream"


class InThread(threading.Thread):
    """Runs ``target`` in a thread and keeps what it returned or raised (any BaseException)."""

    def __init__(self, target: Callable[[], Any], name: str | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self._target_call = target
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished_at: float | None = None

    def run(self) -> None:
        try:
            self.result = self._target_call()
        except BaseException as error:  # kept for the test to look at
            self.error = error
        finally:
            self.finished_at = time.monotonic()

    def outcome(self, timeout: float = 30.0) -> Any:
        """Join; re-raise what the target raised, else return its result."""
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} still running after {timeout}s"
        if self.error is not None:
            raise self.error
        return self.result


def cmdline(pid: int) -> list[bytes]:
    with open(f"/proc/{pid}/cmdline", "rb") as file:
        return file.read().split(b"\0")


def environ(pid: int) -> bytes:
    with open(f"/proc/{pid}/environ", "rb") as file:
        return file.read()


def processes_with_env(name: str, value: str) -> list[int]:
    """Live processes (not this one) whose environment holds ``name=value``."""
    found = []
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        try:
            if process.environ().get(name) == value and alive(process.pid):
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


CHOICES = [claude(), codex()]
IDS = ["claude", "codex"]


def log_of(logs_dir: Path, kind: str, name: str = "repo") -> Path:
    """The Session log ``Logs(logs_dir, name)`` gives a session of ``kind`` in this process."""
    return logs_dir / f"{name}-{command_stamp()}-{kind}.jsonl"
