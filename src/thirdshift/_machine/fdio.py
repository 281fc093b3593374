"""Writing to a file descriptor without a buffer in between."""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``, however many writes that takes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
