"""Session logs named by sessions in processes of their own: each gets a log, none is
overwritten."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from thirdshift import Ended, Logs, Sessions
from thirdshift._logs import (
    command_stamp,
    create_log_files,
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "logs"
    made.mkdir(mode=0o700)
    return made


class CreatingOutside:
    """An Outside that makes its log files as the real adapter does, then writes one line."""

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        log_fd, stderr_fd = create_log_files(log)
        os.write(log_fd, f"{prompt}\n".encode())
        os.close(log_fd)
        os.close(stderr_fd)
        return Ended(session_id=None)

    def report(self, line: str) -> None:
        pass

    def wait(self, seconds: float) -> None:
        raise AssertionError("no API limit is hit here")

    def cancel(self) -> None:
        raise AssertionError("nothing is cancelled here")


def _run_in_a_child(folder: str, index: int) -> str:
    sessions = Sessions(Logs(Path(folder), "repo"), CreatingOutside())
    sessions.run("implement", f"process {index}")
    return str(sessions.last_log)


def _logs_of_forked_children(folder: str) -> list[str]:
    command_stamp()  # made here, so that every forked child shares it and their names clash
    with multiprocessing.get_context("fork").Pool(4) as pool:
        return pool.starmap(_run_in_a_child, [(folder, index) for index in range(8)])


def test_sessions_in_processes_each_get_a_log_of_their_own(folder: Path) -> None:
    # The forks happen in a fresh interpreter: a pytest worker may hold threads (the Temporal
    # SDK's, from an earlier fleet test) whose locks a forked child inherits held, and such a
    # child hung CI for good.
    forking = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "from test_logs_in_processes import _logs_of_forked_children as logs; "
        f"print(json.dumps(logs({str(folder)!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", forking], capture_output=True, text=True, timeout=120, check=True
    )
    made: list[str] = json.loads(done.stdout)

    assert len(set(made)) == 8
    assert sorted(Path(path).read_text() for path in made) == [f"process {i}\n" for i in range(8)]
