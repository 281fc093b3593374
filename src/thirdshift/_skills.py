"""Copying project skills into a worktree for one ``within``, out of ``git status``.

Each skill is a folder with a ``SKILL.md``. A read-only copy of it goes into the Harness's
skills folder in the worktree for as long as :func:`deployed_skills` lasts, and is removed when
it ends, however it ends. Each copy holds a ``.gitignore`` of ``*`` (:data:`IGNORE_ALL`), as
pytest's and ruff's caches do, so that git ignores the copy in every worktree it is in and in
no other. Nothing is written outside the worktree: the repository's shared ``info/exclude``,
which every worktree of a repository reads, would hide the user's own skill of the same name
in the other worktrees while a session ran and after it (see ``docs/security.md``).

A worktree's contents come from an agent, an issue or a pull request, and a skills folder may
hold a skill pack from anywhere, so nothing found in either is trusted (see
``docs/security.md``):

- A copy, not a symlink to the operator's folder, so that an agent editing a ``SKILL.md``
  changes its own worktree only, not every later session's skill.
- Only regular files and folders are copied, and every skill is checked whole before anything
  is written. A symlink inside a skill is copied as what it leads to, but only when that lies
  in the skills folder or in the skill's own folder, and is a regular file or a folder; a link
  out of them (``~/.ssh``), into ``/proc``, ``/sys`` or ``/dev`` (``/proc/self/environ`` would
  put the orchestrator's environment in the worktree), a loop, a dangling link, and a FIFO,
  socket or device, linked or not, are refused naming the skill and the path. Nothing but a
  regular file is ever opened, and a file opened must still be the one that was checked. A
  skill may go :data:`MAX_DEPTH` folders deep and hold :data:`MAX_ENTRIES` entries.
- The path into the worktree is walked one folder at a time with directory file descriptors
  and ``O_NOFOLLOW``, and everything is created relative to those descriptors: swapping a
  folder for a symlink, even mid-copy, cannot make a write or a deletion land outside.
- Only a copy thirdshift made (it holds :data:`MARKER`), or a symlink an earlier thirdshift
  made to the same skill, is ever replaced or removed. Anything else in the way, a skill folder
  committed to the repository say, is refused with an error rather than deleted.
- Neither git nor the worktree's ``.git`` is ever asked anything: a hostile ``.git`` has
  nothing to redirect.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from thirdshift._skill_check import MARKER, MAX_DEPTH, MAX_ENTRIES, SPECIAL, checked_skills
from thirdshift._skill_copies import IGNORE_ALL, removed, replace_copy, walked
from thirdshift.errors import ConfigurationError, ThirdshiftError

__all__ = [
    "IGNORE_ALL",
    "MARKER",
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "SPECIAL",
    "copy_skills",
    "deployed_skills",
    "skill_names",
]


def skill_names(skills: Path) -> list[str]:
    """The skills in ``skills``: its sub-folders holding a ``SKILL.md``, sorted by name.

    Each is checked as :func:`copy_skills` checks it, so what it would refuse is refused here.
    Any other folder, unless hidden (``.git``), is an error: a typo (``skill.md``) would
    otherwise drop the skill without a word while the session asks for it.
    """
    return [skill.name for skill in checked_skills(skills)]


@contextlib.contextmanager
def deployed_skills(
    skills: Path, worktree: Path, skills_dir: str, report: Callable[[str], None]
) -> Iterator[list[str]]:
    """Copy the skills in for the block (see :func:`copy_skills`); remove them when it ends.

    The copies, and the folders on the way that were made for them while they are empty, go
    however the block ends, and also when the copying itself fails part way. They go from the
    worktree opened when the block began, held open till it ends: an agent that moves its
    worktree away and leaves a symlink to another one in its place cannot make the other's
    copies go. What cannot be removed (the agent replaced a copy with its own folder, or
    swapped a folder on the way for a symlink) is left and ``report``-ed, never raised over the
    block's own outcome; a copy left behind stays ignored by git, and the next session
    replaces it.
    """
    started: list[str] = []
    made: list[int] = []
    with _opened_worktree(worktree, skills_dir) as root:
        try:
            _copy_into(skills, root, worktree, skills_dir, started=started, made=made)
            yield list(started)
        finally:
            for problem in removed(root, worktree, skills_dir, started, made):
                report(problem)


def copy_skills(skills: Path, worktree: Path, skills_dir: str) -> list[str]:
    """Copy every skill of ``skills`` into ``<worktree>/<skills_dir>``; return their names.

    The copies stay: :func:`deployed_skills` is the one that removes them again.
    """
    started: list[str] = []
    with _opened_worktree(worktree, skills_dir) as root:
        _copy_into(skills, root, worktree, skills_dir, started=started, made=[])
    return started


@contextlib.contextmanager
def _opened_worktree(worktree: Path, skills_dir: str) -> Iterator[int]:
    """A descriptor of the worktree (the operator named it: a symlink to it is followed)."""
    if not worktree.is_dir():  # never made here: a session must not run in a fresh folder
        raise ConfigurationError(f"worktree {worktree} is not a folder")
    try:
        root = os.open(worktree, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise ThirdshiftError(
            f"could not copy skills into {worktree / skills_dir}: {error.strerror or error}"
        ) from error
    try:
        yield root
    finally:
        os.close(root)


def _copy_into(
    skills: Path, root: int, worktree: Path, skills_dir: str, *, started: list[str], made: list[int]
) -> None:
    """Copy the skills into the worktree ``root`` (``worktree``, for messages); add each copy
    begun to ``started``, each folder part made to ``made``.

    Both are filled as it goes, so that a copying cut short can be undone.
    """
    checked = checked_skills(skills)
    if not checked:
        return
    target = worktree / skills_dir
    try:
        with walked(root, worktree, skills_dir, made=made) as into:
            for skill in checked:
                replace_copy(into, target / skill.name, skill, started)
    except OSError as error:
        raise ThirdshiftError(
            f"could not copy skills into {target}: {error.strerror or error}"
        ) from error
