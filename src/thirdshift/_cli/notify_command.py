"""``--notify-command CMD`` (``run``, ``worker``): each event of a run handed to a command.

The command is split as a shell would split it (``shlex``) and run without a shell, once per
event, with the event as one line of ASCII JSON on its stdin (:mod:`thirdshift._notices`
says what it holds). Its stdout goes to stderr, so that ``run``'s own stdout stays the final
message or the JSON a script reads. A command that fails, or runs past ``TIMEOUT`` seconds
(then it is killed), is a progress line, never the run's end.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import IO, Any

from thirdshift._cli.as_json import dumps
from thirdshift._notices import Notify

TIMEOUT = 30.0


def notify_command(command: str) -> Notify:
    """The ``notify`` that runs ``command`` per event; a ``ValueError`` (one line, naming the
    flag) for a command that cannot be split or whose program is not on PATH."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise ValueError(f"--notify-command {command!r} cannot be split: {error}") from None
    if not argv:
        raise ValueError("--notify-command is empty: give the command to run on each event")
    if shutil.which(argv[0]) is None:
        raise ValueError(f"--notify-command: {argv[0]} is not a program on PATH")

    def notify(event: Mapping[str, Any]) -> None:
        line = (dumps(dict(event)) + "\n").encode("ascii")
        try:
            done = subprocess.run(  # noqa: S603 - the user's own command, no shell
                argv,
                input=line,
                stdout=_stderr(),
                timeout=TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{argv[0]} ran past {TIMEOUT:g}s and was killed") from None
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} exited {done.returncode}")

    return notify


def _stderr() -> IO[Any] | int:
    """Where the command's stdout goes: this process's stderr, if it has a real one."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return subprocess.DEVNULL
    return sys.stderr
