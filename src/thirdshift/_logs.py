"""Where Session logs go, and the command stamp that makes one run's logs sort together."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from thirdshift.errors import ConfigurationError, ThirdshiftError

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


_token: list[str] = []


def command_token() -> str:
    """A token made once per process, at random: every record of this process's sessions holds
    it (``"command"``), so that two commands of one name started in the same second, whose logs
    share a name and a stamp, are still told apart."""
    with _stamp_lock:
        if not _token:
            _token.append(secrets.token_hex(6))
        return _token[0]


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
    """Session logs of one command: ``<dir>/<name>-<stamp>-<kind>.jsonl``.

    A log is never overwritten: when that name is taken (another run in the same second, or a
    file planted there), the session logs to ``<name>-<stamp>-<kind>-2.jsonl``, then ``-3``…
    """

    dir: Path
    name: str

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or "\0" in self.name or self.name in {".", ".."}:
            raise ValueError(f"log name {self.name!r} must not be empty or hold a path separator")

    def path(self, kind: str, attempt: int = 1) -> Path:
        """The Session log for a session labelled ``kind``; ``attempt`` > 1 adds ``-<attempt>``."""
        check_plain_name("session kind", kind)
        clash = f"-{attempt}" if attempt > 1 else ""
        return Path(self.dir) / f"{self.name}-{command_stamp()}-{kind}{clash}.jsonl"


# How many names ``-2``, ``-3``… a session tries before giving up on a folder full of clashes.
MAX_ATTEMPTS = 1000


class LogExists(ThirdshiftError):
    """The Session log's name is taken; the rules retry with the next name (``-2``, ``-3``…)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path} exists already")


def sidecar_path(log: Path) -> Path:
    """The file holding the CLI's stderr: the log's path with ``.stderr`` for ``.jsonl``."""
    return log.with_name(log.name.removesuffix(".jsonl") + ".stderr")


RECORD_SUFFIX = ".record.json"
STDERR_TAIL = 64 * 1024
"""How much of a sidecar's end :func:`last_line` reads."""


def record_path(log: Path) -> Path:
    """The session's record, written once it ended: the log's path with ``.record.json``."""
    return log.with_name(log.name.removesuffix(".jsonl") + RECORD_SUFFIX)


def last_line(path: Path, noise: tuple[str, ...] = ()) -> str | None:
    """The last non-empty line of the file at ``path`` that is not ``noise`` (a sidecar's, say).

    Only its last :data:`STDERR_TAIL` bytes are read; ``None`` if it cannot be read, or is no
    regular file (opened without blocking, so that a FIFO in its place cannot hang the reader).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - STDERR_TAIL))
            tail = file.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    for raw in reversed(tail.splitlines()):
        line = raw.strip()
        if line and not line.startswith(noise):
            return line
    return None


def create_private(path: Path) -> int:
    """Create ``path`` exclusively, readable by its owner only, in a trusted folder; its fd.

    Session logs hold prompts and tool output, which may hold secrets, so an existing file is
    never truncated or written through: any file or symlink already at ``path`` raises
    :class:`LogExists`. The folder is made 0700 if missing, and refused if another user owns
    it or group or others may write to it (they could plant or swap names in it).
    """
    folder_fd = trusted_folder(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(path.name, flags, 0o600, dir_fd=folder_fd)
    except FileExistsError as error:
        raise LogExists(path) from error
    except OSError as error:
        raise ThirdshiftError(f"could not create {path}: {error.strerror or error}") from error
    finally:
        os.close(folder_fd)
    os.fchmod(fd, 0o600)  # the umask may have taken bits away; never more than these
    return fd


def create_log_files(log: Path) -> tuple[int, int]:
    """Create ``log`` and its sidecar (:func:`sidecar_path`) exclusively; their fds, in order.

    The record's name (:func:`record_path`) is taken too, by an empty file the record replaces
    once the session has ended: a record planted there before the session (its name is
    predictable: the command stamp is shared by every session of a command) would otherwise be
    read back as the session's. Either all three are made, or none is left behind: any name
    taken makes the log name count as taken (:class:`LogExists`), so the retry moves all three
    to the next name.
    """
    fds: list[int] = []
    made: list[Path] = []
    try:
        for path in (log, sidecar_path(log), record_path(log)):
            fds.append(create_private(path))
            made.append(path)
        os.close(fds.pop())  # the record's: nothing is written to it till the session ended
        return fds[0], fds[1]
    except BaseException:
        for fd in fds:
            os.close(fd)
        for path in made:
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise


def trusted_folder(path: Path) -> int:
    """An fd of ``path``'s folder, made 0700 if missing; refused unless it is ours and private.

    The way to it is walked a folder at a time (:func:`_walked`): a symlink on it that another
    user owns is refused, not followed.
    """
    folder = path.parent
    fd = _walked(folder)
    found = os.fstat(fd)
    problem = None
    if found.st_uid != os.geteuid():
        problem = f"it is owned by another user (uid {found.st_uid})"
    elif found.st_mode & 0o022:
        problem = (
            f"group or others may write to it (mode {stat.S_IMODE(found.st_mode):04o}): "
            f"chmod go-w {folder}"
        )
    if problem is not None:
        os.close(fd)
        raise ConfigurationError(f"refusing to write Session logs to {folder}: {problem}")
    return fd


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40  # as the kernel's own limit on the symlinks one path may lead through


def _walked(folder: Path) -> int:
    """An fd of ``folder``, each folder on the way made if missing (the last 0700), each symlink
    followed only if we or root own it.

    Whoever owns a symlink decides where it leads, and may change that at any time: one that
    another user planted in a folder all may write to (``/tmp/logs``, leading to a private
    folder of yours) would have your Session logs written where they chose, or read by them
    later. The kernel's own guard against that (``fs.protected_symlinks``) is off on some
    machines, and covers sticky folders only. Each step opens the next folder relative to the
    last, without following a symlink, so what was checked is what is opened.
    """
    parts = folder.absolute().parts
    pending = list(reversed(parts[1:]))
    where = Path("/")
    fd = os.open("/", _FOLDER)
    links = 0
    try:
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            found = _entry(fd, name, last=not pending)
            if stat.S_ISLNK(found.st_mode):
                if found.st_uid not in (os.geteuid(), 0):
                    raise ConfigurationError(
                        f"refusing to write Session logs to {folder}: {where / name} is a "
                        f"symlink owned by another user (uid {found.st_uid})"
                    )
                links += 1
                if links > _MAX_LINKS:
                    raise ConfigurationError(
                        f"could not create the logs folder {folder}: too many symlinks"
                    )
                target = os.readlink(name, dir_fd=fd)
                if _identity(_entry(fd, name, last=False)) != _identity(found):
                    pending.append(name)  # replaced as we read it: look again
                    continue
                if target.startswith("/"):
                    os.close(fd)
                    fd, where = os.open("/", _FOLDER), Path("/")
                pending.extend(reversed(Path(target).parts[1 if target.startswith("/") else 0 :]))
                continue
            if not stat.S_ISDIR(found.st_mode):
                if pending:
                    raise ConfigurationError(
                        f"could not create the logs folder {folder}: part of its path is not "
                        "a folder"
                    )
                raise ConfigurationError(f"logs folder {folder} is not a folder")
            inner = os.open(name, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd, where = inner, where.parent if name == ".." else where / name
    except OSError as error:
        os.close(fd)
        reason = error.strerror or error
        raise ConfigurationError(f"could not create the logs folder {folder}: {reason}") from error
    except BaseException:
        os.close(fd)
        raise
    return fd


def _entry(fd: int, name: str, *, last: bool) -> os.stat_result:
    """What ``name`` in the folder ``fd`` is (a symlink not followed); a folder made if missing
    (0700 if it is the ``last``, the logs folder itself; before it, as ``mkdir -p`` makes them)."""
    for _ in range(2):  # a name made or removed by another between our two calls
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o700 if last else 0o777, dir_fd=fd)
    return os.stat(name, dir_fd=fd, follow_symlinks=False)


def _identity(found: os.stat_result) -> tuple[int, int, int]:
    return found.st_dev, found.st_ino, found.st_uid
