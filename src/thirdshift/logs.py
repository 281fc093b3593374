"""Where Session logs go, and the command stamp that makes one run's logs sort together."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from thirdshift.errors import ThirdshiftError

PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


_stamp_lock = threading.Lock()
_stamp: list[str] = []  # made once; a list so that first use can fill it without `global`


def command_stamp() -> str:
    """This process's command stamp: local time of first use, as ``%Y%m%dT%H%M%S%z``.

    Made under a lock, so that sessions started at once in several threads share one stamp.
    """
    with _stamp_lock:
        if not _stamp:
            _stamp.append(time.strftime("%Y%m%dT%H%M%S%z", time.localtime()))
        return _stamp[0]


def check_plain_name(what: str, name: str) -> str:
    """Return ``name`` if it is a plain name (no separators, no ``..``), else raise."""
    if not PLAIN_NAME.fullmatch(name):
        raise ValueError(
            f"{what} {name!r} is not a plain name: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class Logs:
    """Session logs of one command: ``<dir>/<name>-<stamp>-<kind>.jsonl``."""

    dir: Path
    name: str

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or "\0" in self.name or self.name in {".", ".."}:
            raise ValueError(f"log name {self.name!r} must not be empty or hold a path separator")

    def path(self, kind: str) -> Path:
        """The Session log for a session labelled ``kind``."""
        check_plain_name("session kind", kind)
        return Path(self.dir) / f"{self.name}-{command_stamp()}-{kind}.jsonl"


def create_private(path: Path) -> int:
    """Create (or truncate) ``path`` readable by its owner only, in a 0700 folder; return its fd.

    Session logs hold prompts and tool output, which may hold secrets. A symlink planted where
    the file goes is not followed (the stream is never written, nor a mode changed, through it).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o600)
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    except OSError as error:
        raise ThirdshiftError(f"could not create {path}: {error.strerror or error}") from error
    return fd
