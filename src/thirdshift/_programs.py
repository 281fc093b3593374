"""Finding a program on PATH, the way a session may safely run it.

A session runs in its worktree, which is untrusted: a relative ``PATH`` entry (``.``, ``bin``,
or an empty one, which means ``.``) would resolve against whatever folder the program is
started from. Only absolute entries are searched, and the result is an absolute path, so the
same binary is run wherever the process starts.
"""

from __future__ import annotations

import os
from pathlib import Path

from thirdshift.errors import CLINotFound


def find_program(name: str, path: str | None = None) -> str:
    """The absolute path of ``name`` on ``path`` (default: ``PATH`` now), or raise.

    Raises :class:`~thirdshift.errors.CLINotFound` saying why: not on PATH, found but not
    executable, or found only through relative entries, which are skipped.
    """
    search = os.environ.get("PATH", os.defpath) if path is None else path
    skipped: list[str] = []
    not_executable: Path | None = None
    for entry in search.split(os.pathsep):
        if not os.path.isabs(entry):
            if (Path(entry or ".") / name).is_file():
                skipped.append(entry or "(empty)")
            continue
        candidate = Path(entry) / name
        if candidate.is_file():
            if os.access(candidate, os.X_OK):
                return str(candidate)
            not_executable = not_executable or candidate
    if not_executable is not None:
        raise CLINotFound(name, f"{name} on PATH at {not_executable} is not executable")
    if skipped:
        raise CLINotFound(
            name,
            f"{name} is not on PATH: only relative PATH entries hold it "
            f"({', '.join(skipped)}), and those are skipped, as they would resolve inside "
            "the worktree",
        )
    raise CLINotFound(name, f"{name} is not on PATH: install it, or choose another Harness")
