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

import pytest

MARK = "THIRDSHIFT_E2E_TEST"


def processes_marked(mark: str) -> list[int]:
    """Live processes (not ourselves) whose environment holds ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if needle not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
        except OSError:
            continue
        found.append(int(entry))
    return found


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
