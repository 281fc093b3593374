"""Qwen Code's own status files of the background shells it killed as it exited.

Qwen kills its background shells at exit and says so only in a status file per shell:
``$HOME/.qwen/tmp/<sha256 of the cwd>/background-shells/<session id>/shell-<id>.status``
(``.status.json`` from the fake), JSON with ``command`` and ``status: "cancelled"``. The
folder and the files are hostile input, as the worktree is: no symlink below ``$HOME`` is
followed, a session id that is not a plain name names no folder at all, and only so many
files, of so many bytes each, are read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from thirdshift._shown import shown
from thirdshift.harness._lines import MAX_KILLED, shorten

PLAIN_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
PROJECT = re.compile(r"[0-9a-f]{64}")
MAX_FILES = 1000
"""How many entries of a folder are looked at; a real session has a handful of shells."""
MAX_STATUS_BYTES = 64 * 1024
"""A status file is a few hundred bytes; one larger than this is not Qwen's and is skipped."""
_NOFOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
_ENDINGS = (".status", ".status.json")


def cancelled_shells(home: Path, cwd: Path, session_id: str) -> dict[str, str]:
    """Each cancelled shell of ``session_id``: its status file's name → what it ran.

    The project folder is the sha256 of the cwd (as given, or resolved); failing both, the
    first project folder (of at most ``MAX_FILES``) that holds the session's is taken, as the
    session id is a UUID of its own. Unreadable folders and files count as none.
    """
    if not PLAIN_SESSION.fullmatch(session_id) or not home.is_absolute():
        return {}
    try:
        home_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC  # $HOME itself may be a link
        with _opened(str(home), home_flags) as home_fd, _below(home_fd, ".qwen", "tmp") as tmp_fd:
            for project in _projects(tmp_fd, cwd):
                with (
                    suppress(OSError),
                    _below(tmp_fd, project, "background-shells", session_id) as folder_fd,
                ):
                    return _cancelled(folder_fd)
    except OSError:
        pass
    return {}


def _projects(tmp_fd: int, cwd: Path) -> Iterator[str]:
    """Candidate project folders: the cwd's digests first, then every other one, bounded."""
    tried: list[str] = []
    for path in (str(cwd), os.path.realpath(cwd)):
        digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()
        if digest not in tried:
            tried.append(digest)
            yield digest
    for name in _names(tmp_fd):
        if PROJECT.fullmatch(name) and name not in tried:
            yield name


def _names(folder_fd: int) -> list[str]:
    names: list[str] = []
    with os.scandir(folder_fd) as entries:
        for entry in entries:
            if len(names) >= MAX_FILES:
                break
            names.append(entry.name)
    return names


def _cancelled(folder_fd: int) -> dict[str, str]:
    found = {}
    for name in _names(folder_fd):
        if not (name.startswith("shell-") and name.endswith(_ENDINGS)):
            continue
        command = _cancelled_command(folder_fd, name)
        if command is not None:
            found[name] = shorten(shown(command), MAX_KILLED)
    return found


def _cancelled_command(folder_fd: int, name: str) -> str | None:
    """The ``command`` of the status file ``name`` if it says ``cancelled``, else None."""
    try:
        with _opened(name, _NOFOLLOW | os.O_NONBLOCK, folder_fd) as fd:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None  # a FIFO or device planted here would block or never end
            data = os.read(fd, MAX_STATUS_BYTES + 1)
        if len(data) > MAX_STATUS_BYTES:
            return None
        record = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("status") != "cancelled":
        return None
    command = record.get("command")
    return command if isinstance(command, str) and command else None


@contextmanager
def _opened(path: str, flags: int, dir_fd: int | None = None) -> Iterator[int]:
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def _below(fd: int, *names: str) -> Iterator[int]:
    """The folder ``fd/names...``, each step opened without following a symlink."""
    opened: list[int] = []
    try:
        current = fd
        for name in names:
            current = os.open(name, _NOFOLLOW | os.O_DIRECTORY, dir_fd=current)  # ELOOP: a link
            opened.append(current)
        yield current
    finally:
        for each in opened:
            os.close(each)


def home_of(env: Mapping[str, str]) -> Path:
    """The ``$HOME`` the CLI ran with, else this process's."""
    return Path(env.get("HOME") or os.path.expanduser("~"))
