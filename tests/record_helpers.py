"""An Outside that logs each session as the real adapter does, so that records are written."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_thirdshift import ScriptedOutside
from thirdshift import Ended
from thirdshift._logs import create_log_files


class LoggingOutside:
    """The script's sessions, each logged first as the real adapter logs one (the log and its
    sidecar created exclusively, holding ``stdout`` and ``stderr``), so that the rules find a
    log to write the record beside."""

    def __init__(self, script: ScriptedOutside, stdout: bytes = b"", stderr: bytes = b"") -> None:
        self.script = script
        self.stdout = stdout
        self.stderr = stderr

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        log_fd, stderr_fd = create_log_files(log)
        os.write(log_fd, self.stdout)
        os.write(stderr_fd, self.stderr)
        os.close(log_fd)
        os.close(stderr_fd)
        return self.script.run_session(kind, resume, prompt, log)

    def report(self, line: str) -> None:
        self.script.report(line)

    def wait(self, seconds: float) -> None:
        self.script.wait(seconds)

    def cancel(self) -> None:
        self.script.cancel()
