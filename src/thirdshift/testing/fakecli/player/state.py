"""The state folder the fakes share with the test: script queues, counters, call records.

Layout of ``$THIRDSHIFT_FAKE_CLI_STATE``::

    state.json                  queues, counters, sessions; read and written under ``lock``
    lock                        fcntl.flock'ed around every read-modify-write of state.json
    calls/claude-0001.json      one record per call, written by that call alone (atomically)
    calls/claude-0001.stdout    every byte the call wrote to stdout (and .stderr), if kept
    tasks/claude-0001-0.out     output of background commands (call 1's first)

Everything lives in one folder per test, so tests in parallel (``pytest -n auto``) share
nothing, and calls running at once within one test serialise only on ``lock``.

Used both by the fake program and by the test's side (:mod:`thirdshift.testing.fakecli.control`);
stdlib only, and light to import.
"""

from __future__ import annotations

import fcntl
import json
import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs each call ~10 ms
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, TypeAlias

    Json: TypeAlias = dict[str, Any]

STATE_ENV = "THIRDSHIFT_FAKE_CLI_STATE"
"""The environment variable that points the fakes at their state folder."""

HARNESSES = ("claude", "codex")

NO_SCRIPT_EXIT = 97
"""The exit code of a call that found no script left for it."""

SESSION_PREFIXES = {"claude": "fake-session-", "codex": "fake-thread-"}

ALWAYS_RECORDED_ENV = ("CLAUDECODE", "PATH")


def new_state() -> Json:
    """The contents of a fresh state.json."""
    return {
        "record_env": list(ALWAYS_RECORDED_ENV),
        "copy_output": True,
        "sessions": {},
        **{name: {"queue": [], "calls": 0, "sessions": 0} for name in HARNESSES},
    }


class Folder:
    """The paths of one state folder."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.state = os.path.join(root, "state.json")
        self.lock = os.path.join(root, "lock")
        self.calls = os.path.join(root, "calls")
        self.tasks = os.path.join(root, "tasks")

    def record(self, harness: str, number: int) -> str:
        return os.path.join(self.calls, f"{harness}-{number:04d}.json")

    def output(self, harness: str, number: int, stream: str) -> str:
        return os.path.join(self.calls, f"{harness}-{number:04d}.{stream}")

    def open(self, *, fresh: bool) -> None:
        """Make the folder if needed; keep the state it holds, unless ``fresh`` (test side only).

        Records hold prompts and environments: the folders are 0700 and the files 0600,
        also when the folders were there before.
        """
        for path in (self.root, self.calls, self.tasks):
            os.makedirs(path, mode=0o700, exist_ok=True)
            os.chmod(path, 0o700)
        fd = private_file(self.lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if fresh:
                for folder in (self.calls, self.tasks):
                    for entry in os.listdir(folder):
                        os.unlink(os.path.join(folder, entry))
            if fresh or not os.path.isfile(self.state):
                write_json(self.state, new_state())
        finally:
            os.close(fd)


class Transaction:
    """``with Transaction(folder) as state:`` reads state.json under the lock, writes it back.

    The state is written back only if the block did not raise.
    """

    def __init__(self, folder: Folder) -> None:
        self._folder = folder
        self._fd = -1
        self.state: Json = {}

    def __enter__(self) -> Json:
        self._fd = os.open(self._folder.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.state = read_json(self._folder.state)
        return self.state

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                write_json(self._folder.state, self.state)
        finally:
            os.close(self._fd)  # closing releases the flock


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def private_file(path: str, flags: int) -> int:
    """Open (or make) ``path`` readable by its owner alone, whatever the umask says."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def write_json(path: str, data: object) -> None:
    """Write ``data`` to ``path`` atomically, so a reader never sees half a file."""
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = private_file(temporary, os.O_WRONLY | os.O_TRUNC)
    with open(fd, "w", encoding="utf-8") as file:
        file.write(json.dumps(data, ensure_ascii=False))  # dumps: C speed, unlike dump
    os.replace(temporary, path)


# Processes, as /proc shows them (the fakes are Linux-only, like thirdshift's process code).


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None if there is no such."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].decode("ascii", "replace").split()


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), which tells a reused pid from its first."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def is_alive(pid: int, started: int | None) -> bool:
    """Whether ``pid`` runs and is the process that started at ``started`` (zombies are dead).

    An unknown start time counts as gone: the pid alone may name another process by now.
    """
    fields = _stat_fields(pid)
    if started is None or fields is None or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == started


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, children before their own children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    frontier = [pid]
    while frontier:
        below = [child for parent in frontier for child in children.get(parent, [])]
        found += below
        frontier = below
    return found
