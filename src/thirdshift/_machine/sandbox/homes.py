"""A sandboxed session's private home: what its CLI needs of the user's, and nothing else.

Inside the sandbox ``HOME`` is a folder of the session's own (mounted at the same path, so that
variables naming folders in it still hold), in ``<logs>/.sandbox/<worktree>-<hash>/home``: one
per worktree and logs folder, kept across calls and ``within`` blocks, so that a Resume, or a
later attempt continuing a session by id, finds the session the CLI saved there. Each of the
Harness's state folders (:class:`~thirdshift._sandbox.StateFolder`) is seen there, or, where
a variable puts it outside ``HOME``, in a folder of its own mounted at its path.

Before each call, what each state folder declares ``copied`` (configuration, sign-in,
instructions) is copied afresh from the user's own, where the user has it: what the agent
changed in those copies last time (a hook planted in ``settings.json``) is gone, and a new
sign-in reaches the session. What the user has not is left as the CLI left it in the private
home (Claude's ``.claude.json``, which it writes itself): whatever an agent plants there acts
only inside the sandbox, as the agent itself does. No session of the user's other projects is
copied. The copy follows links in the user's folders
(they are the user's) and copies regular files and folders only, at most
:data:`MOST_ENTRIES` of them; in the private home it never follows a link: whatever the agent
planted in the way is removed first. Nothing of the session runs while this happens (every
call's processes are gone before the next starts), so no race can put a link back.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from thirdshift._sandbox import SandboxNeeds, StateFolder

FOLDER = ".sandbox"
"""The folder of the logs folder that holds the sandboxes' private homes."""
MOST_ENTRIES = 10_000
MOST_DEPTH = 64


@dataclass(frozen=True)
class PrivateHome:
    """Where a session's private home is on the machine (``folder``), where it shows inside
    the sandbox (``inside``, the CLI's ``HOME``), and each private state folder outside
    ``HOME``, as (folder on the machine, path inside)."""

    folder: Path
    inside: Path
    elsewhere: tuple[tuple[Path, Path], ...] = ()


def _key(worktree: Path) -> str:
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in worktree.name)[:40] or "root"
    digest = hashlib.sha256(os.fsencode(worktree.absolute())).hexdigest()[:12]
    return f"{name}-{digest}"


def _private_folder(path: Path) -> Path:
    """``path`` as a folder of our own: made 0700 where missing; a link or a file in its place
    (which only an agent could have put there) removed first."""
    with contextlib.suppress(FileNotFoundError):
        found = os.lstat(path)
        if stat.S_ISDIR(found.st_mode):
            return path
        os.unlink(path)
    path.mkdir(mode=0o700)
    return path


def _private_path(root: Path, relative: str) -> Path:
    """``root / relative`` with every folder on the way made a private folder of ours."""
    path = root
    for part in Path(relative).parts[:-1]:
        path = _private_folder(path / part)
    return path / Path(relative).name if relative else root


def prepared_home(
    logs: Path, worktree: Path, home: Path, needs: SandboxNeeds, env: Mapping[str, str]
) -> PrivateHome:
    """The private home for sessions in ``worktree`` whose log goes to ``logs``, the user's
    ``home`` and ``env`` (the CLI's) copied in as ``needs`` declares, ready for a call."""
    base = _private_folder(_private_folder(logs / FOLDER) / _key(worktree))
    folder = _private_folder(base / "home")
    elsewhere: list[tuple[Path, Path]] = []
    for index, state in enumerate(needs.state):
        location = _location(state, home, env)
        if location is None:
            continue
        if location == home or home in location.parents:
            private = _private_path(folder, str(location.relative_to(home)))
            if location != home:
                private = _private_folder(private)
        else:
            private = _private_folder(base / f"state-{index}")
            elsewhere.append((private, location))
        for name in state.copied:
            _copy_afresh(location / name, _private_path(private, name))
    return PrivateHome(folder=folder, inside=home, elsewhere=tuple(elsewhere))


def _location(state: StateFolder, home: Path, env: Mapping[str, str]) -> Path | None:
    """Where the CLI keeps ``state``: the folder its variable names, else under ``home``."""
    named = env.get(state.variable, "") if state.variable else ""
    if named and os.path.isabs(named):
        return Path(os.path.normpath(named))
    return home / state.default if state.default else home


def _remove(path: Path) -> None:
    """Remove whatever is at ``path`` (a link itself, never where it leads)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(found.st_mode):
        shutil.rmtree(path)  # rmtree never follows a link inside what it removes
    else:
        os.unlink(path)


def _copy_afresh(source: Path, target: Path) -> None:
    """Replace ``target`` by a copy of ``source``, where there is one."""
    try:
        found = os.stat(source)
    except OSError:
        return
    _remove(target)
    budget = [MOST_ENTRIES]
    if stat.S_ISDIR(found.st_mode):
        _copy_folder(source, target, budget, depth=0, seen={(found.st_dev, found.st_ino)})
    elif stat.S_ISREG(found.st_mode):
        _copy_file(source, target)


def _copy_file(source: Path, target: Path) -> None:
    try:
        with open(source, "rb") as reading:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as writing:
                shutil.copyfileobj(reading, writing)
    except OSError:
        return  # unreadable: the CLI inside does without it, as it would without the file


def _copy_folder(
    source: Path, target: Path, budget: list[int], *, depth: int, seen: set[tuple[int, int]]
) -> None:
    target.mkdir(mode=0o700)
    if depth >= MOST_DEPTH:
        return
    try:
        entries = sorted(os.scandir(source), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if budget[0] <= 0:
            return
        budget[0] -= 1
        try:
            found = entry.stat()  # through a link: the user's own links lead to their files
        except OSError:
            continue
        if stat.S_ISDIR(found.st_mode) and (found.st_dev, found.st_ino) not in seen:
            seen.add((found.st_dev, found.st_ino))
            _copy_folder(Path(entry.path), target / entry.name, budget, depth=depth + 1, seen=seen)
        elif stat.S_ISREG(found.st_mode):
            _copy_file(Path(entry.path), target / entry.name)
