"""Linking project skills into a worktree, and keeping them out of ``git status``.

Each skill is a folder with a ``SKILL.md``. It is symlinked into the Harness's skills folder in
the worktree, and its path is added to the repository's shared ``info/exclude`` (found through
``git rev-parse --git-common-dir``, so every worktree of the repository shares one), under a lock
so that sessions starting at once in several worktrees do not corrupt it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from thirdshift.errors import CLINotFound, ThirdshiftError
from thirdshift.logs import PLAIN_NAME
from thirdshift.programs import find_program


def skill_names(skills: Path) -> list[str]:
    """The skills in ``skills``: its sub-folders holding a ``SKILL.md``, sorted by name."""
    try:
        entries = sorted(skills.iterdir())
    except OSError as error:
        raise ThirdshiftError(
            f"could not read skills folder {skills}: {error.strerror or error}"
        ) from error
    names = []
    for entry in entries:
        if not (entry / "SKILL.md").is_file():
            continue
        if not PLAIN_NAME.fullmatch(entry.name):
            raise ThirdshiftError(f"skill name {entry.name!r} is not a plain name")
        names.append(entry.name)
    return names


def link_skills(skills: Path, worktree: Path, skills_dir: str) -> list[str]:
    """Link every skill of ``skills`` into ``<worktree>/<skills_dir>``; return their names."""
    if not worktree.is_dir():  # never made here: a session must not run in a fresh folder
        raise ThirdshiftError(f"worktree {worktree} is not a folder")
    names = skill_names(skills)
    if not names:
        return names
    target_dir = worktree / skills_dir
    # A worktree's contents may come from an agent: a skills folder that is (or passes through)
    # a symlink out of the worktree would have folders replaced, and links made, out there.
    try:
        leads_to = target_dir.resolve()
        inside = leads_to.is_relative_to(worktree.resolve())
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop
        raise ThirdshiftError(f"could not link skills into {target_dir}: {error}") from error
    if not inside:
        raise ThirdshiftError(
            f"refusing to link skills into {target_dir}: it leads outside the worktree, "
            f"to {leads_to}"
        )
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in names:
            _replace_with_link(target_dir / name, (skills / name).absolute())
    except OSError as error:
        raise ThirdshiftError(
            f"could not link skills into {target_dir}: {error.strerror or error}"
        ) from error
    exclude = _shared_exclude(worktree)
    if exclude is not None:
        _exclude([f"/{skills_dir.strip('/')}/{name}" for name in names], exclude)
    return names


def _replace_with_link(link: Path, target: Path) -> None:
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    link.symlink_to(target, target_is_directory=True)


def _shared_exclude(worktree: Path) -> Path | None:
    """The repository's shared ``info/exclude``, or None when ``worktree`` is not in git."""
    try:
        git = find_program("git")
    except CLINotFound:
        return None
    found = subprocess.run(  # noqa: S603 - fixed argv, no shell
        [git, "rev-parse", "--git-common-dir"],
        cwd=worktree,
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        return None
    return (worktree / found.stdout.strip()).resolve() / "info" / "exclude"


def _exclude(patterns: list[str], exclude: Path) -> None:
    exclude.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(exclude, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "r+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)  # released when the file closes
        text = file.read()
        present = set(text.splitlines())
        missing = [p for p in patterns if p not in present]
        if missing:
            if text and not text.endswith("\n"):
                file.write("\n")
            file.write("".join(f"{p}\n" for p in missing))
