"""``thirdshift fake-model`` started as a person starts it, for the tests that paste its lines."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))
SERVING = "# serving until Ctrl-C; each request answered is a line on stderr"


@dataclass(frozen=True)
class Served:
    """A running ``thirdshift fake-model``: what it printed to paste, where its stderr goes."""

    process: subprocess.Popen[str]
    printed: str
    exports: Path
    """``printed`` written to a file, for ``sh -c '. FILE; ...'``: pasting it into a shell."""
    stderr: Path

    def in_its_shell(self, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``argv`` run by ``sh`` after it read the printed lines, as a person pastes them."""
        return subprocess.run(
            ["sh", "-c", '. "$0" && exec "$@"', str(self.exports), *argv],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``signum``; the exit code and all of stderr once it has exited."""
        self.process.send_signal(signum)
        code = self.process.wait(timeout=30)
        return code, self.stderr.read_text()


@contextmanager
def fake_model(tmp_path: Path, *args: str) -> Iterator[Served]:
    """``thirdshift fake-model ARGS`` running, once everything to paste is printed."""
    stderr = tmp_path / "fake-model.stderr"
    with stderr.open("w") as errors:
        process = subprocess.Popen(
            [THIRDSHIFT, "fake-model", *args],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        assert process.stdout is not None
        lines = []
        while (line := process.stdout.readline()) and line.rstrip("\n") != SERVING:
            lines.append(line)
        assert line, f"fake-model ended before serving: {stderr.read_text()}"
        printed = "".join(lines)
        exports = tmp_path / "exports.sh"
        exports.write_text(printed)
        yield Served(process, printed, exports, stderr)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
