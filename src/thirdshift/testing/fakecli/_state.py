"""The state folder the fakes share with the test: script queues, counters, call records.

Layout of ``$THIRDSHIFT_FAKE_CLI_STATE``::

    state.json                  queues, counters, sessions; read and written under ``lock``
    lock                        fcntl.flock'ed around every read-modify-write of state.json
    calls/claude-0001.json      one record per call, written by that call alone (atomically)
    calls/claude-0001.stdout    every byte the call wrote to stdout (and .stderr), if kept
    tasks/claude-0001-0.out     output of background commands (call 1's first)

One folder per test, so tests in parallel (``pytest -n auto``) share nothing, and calls
running at once within one test serialise only on ``lock``. Records hold prompts and
environments: folders are 0700 and files 0600, whatever the umask.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

STATE_ENV = "THIRDSHIFT_FAKE_CLI_STATE"
"""The environment variable that points the fakes at their state folder."""

HARNESSES = ("claude", "codex", "opencode", "gemini", "qwen")

QUEUES_IN = "queues_in"
"""A harness's scripts for calls run in one folder (its real path), ahead of its ``queue``."""

NO_SCRIPT_EXIT = 97
"""The exit code of a call that found no script left for it."""

ALWAYS_RECORDED_ENV = ("CLAUDECODE", "PATH")


def new_state() -> dict[str, Any]:
    """The contents of a fresh state.json (``skills_dirs`` is the Harnesses', see :meth:`open`)."""
    return {
        "skills_dirs": {},
        "record_env": list(ALWAYS_RECORDED_ENV),
        "copy_output": True,
        "sessions": {},
        **{name: {"queue": [], QUEUES_IN: {}, "calls": 0, "sessions": 0} for name in HARNESSES},
    }


class Folder:
    """The paths of one state folder."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.state = os.path.join(root, "state.json")
        self.lock = os.path.join(root, "lock")
        self.calls = os.path.join(root, "calls")
        self.tasks = os.path.join(root, "tasks")

    def call_file(self, harness: str, number: int, suffix: str) -> str:
        """``calls/<harness>-<number>.<suffix>``: the record (json), or a copy of its output."""
        return os.path.join(self.calls, f"{harness}-{number:04d}.{suffix}")

    def open(self, *, fresh: bool, skills_dirs: Mapping[str, str]) -> None:
        """Make the folder if needed; keep the state it holds, unless ``fresh``.

        ``skills_dirs``: each CLI's project skills folder, its Harness's ``skills_dir``. The fake
        programs cannot import the Harnesses (they start without site-packages), so they read
        it here rather than restate it."""
        for path in (self.root, self.calls, self.tasks):
            os.makedirs(path, mode=0o700, exist_ok=True)
            os.chmod(path, 0o700)  # also when it was there before
        with transaction(self, create=True) as state:
            if fresh:
                for folder in (self.calls, self.tasks):
                    for entry in os.listdir(folder):
                        os.unlink(os.path.join(folder, entry))
            if fresh or not state:
                state.clear()
                state.update(new_state())
            state["skills_dirs"] = dict(skills_dirs)


@contextmanager
def transaction(folder: Folder, *, create: bool = False) -> Iterator[dict[str, Any]]:
    """Read state.json under the lock and write it back, unless the block raised."""
    fd = private_file(folder.lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            state = read_json(folder.state)
        except FileNotFoundError:
            if not create:
                raise
            state = {}
        yield state
        write_json(folder.state, state)
    finally:
        os.close(fd)  # closing releases the flock


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def private_folders(path: str) -> None:
    """Make ``path`` and each missing folder above it readable by their owner alone."""
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:  # made by a call running at once, as privately
            continue
        os.chmod(folder, 0o700)  # whatever the umask says


def private_file(path: str, flags: int) -> int:
    """Open (or make) ``path`` readable by its owner alone, whatever the umask says."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def write_json(path: str, data: object) -> None:
    write_text(path, json.dumps(data, ensure_ascii=False))  # dumps: C speed, unlike dump


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically, so a reader never sees half a file."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(private_file(temporary, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)
