"""The processes a play left in its folder, found through ``/proc`` (Linux only, as thirdshift).

Everything a session starts runs with its cwd in the play's worktree (the CLI, its shells, the
commands they run), so a process whose cwd is under the play's folder belongs to the play.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def _cmdline(pid: str) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _alive(pid: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]  # a zombie has already ended


def processes_under(folder: Path) -> list[tuple[int, list[str]]]:
    """Live processes (pid, argv) whose cwd is ``folder`` or below it."""
    root = str(folder.resolve())
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if (cwd == root or cwd.startswith(root + os.sep)) and _alive(pid):
            found.append((int(pid), _cmdline(pid)))
    return found


def running_program(folder: Path, program: str) -> bool:
    """Whether a process named ``program`` (its argv[0]'s last part) runs under ``folder``."""
    return any(argv and os.path.basename(argv[0]) == program for _, argv in processes_under(folder))


def leftovers(folder: Path, *, settle: float = 5.0) -> tuple[str, ...]:
    """Processes still running under ``folder`` once ``settle`` seconds let them go."""
    deadline = time.monotonic() + settle
    while True:
        found = processes_under(folder)
        if not found or time.monotonic() >= deadline:
            return tuple(f"{pid} {' '.join(argv)}" for pid, argv in found)
        time.sleep(0.05)
