"""The fake's stdout and stderr: written unbuffered, and copied into the call's record folder.

Each line is written with one ``os.write`` loop as soon as it is made, the way the real CLIs
flush per line, so whoever follows the stream sees it at once. The copies let a test check that
a Session log holds every byte the CLI wrote. A reader that closes the pipe does not stop the
fake: what it would have written is dropped (the copy keeps it), and the call plays on.
"""

from __future__ import annotations

import json
import os
from typing import Any

from thirdshift.testing.fakecli._state import private_file

_CHUNK = 1 << 20


def _open_copy(path: str | None) -> int:
    if path is None:
        return -1
    return private_file(path, os.O_WRONLY | os.O_TRUNC)


class Output:
    """Stdout and stderr of one call, with optional copies to files."""

    def __init__(self, stdout_copy: str | None, stderr_copy: str | None) -> None:
        self._copies = {1: _open_copy(stdout_copy), 2: _open_copy(stderr_copy)}
        self._open = {1: True, 2: True}
        self.events = True
        """Whether :meth:`line` writes (the ``no_events`` option turns the CLI's own events off)."""

    def write(self, data: bytes, fd: int = 1) -> None:
        """Write ``data`` as it is (to stdout unless ``fd`` is 2)."""
        copy = self._copies[fd]
        if copy >= 0:
            _write_all(copy, data)
        if self._open[fd]:
            try:
                _write_all(fd, data)
            except OSError:  # EPIPE, EBADF: whoever read us has gone; play on
                self._open[fd] = False

    def write_repeated(self, data: bytes, times: int) -> None:
        """Write ``data`` ``times`` times over, in big chunks (huge lines, bulk streams)."""
        if not data or times <= 0:
            return
        per_chunk = max(1, _CHUNK // len(data))
        chunk = data * per_chunk
        full, rest = divmod(times, per_chunk)
        for _ in range(full):
            self.write(chunk)
        if rest:
            self.write(data * rest)

    def line(self, event: dict[str, Any]) -> None:
        """Write one JSON line, compact and UTF-8 like the real CLIs' own."""
        if not self.events:
            return
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        self.write(text.encode("utf-8", "surrogateescape") + b"\n")

    def err(self, text: str) -> None:
        """Write ``text`` to stderr, with a final newline if it has none."""
        if not text.endswith("\n"):
            text += "\n"
        self.write(text.encode("utf-8", "surrogateescape"), fd=2)

    def close_stdout(self) -> None:
        """Close the stdout pipe while the call plays on (fd 1 then points at /dev/null).

        Keeping fd 1 taken means no file opened later can land on it by accident.
        """
        if self._open[1]:
            self._open[1] = False
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)

    def close(self) -> None:
        for fd, copy in self._copies.items():
            if copy >= 0:
                os.close(copy)
                self._copies[fd] = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
