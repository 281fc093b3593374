"""Which parts of a worktree's git folders a sandboxed session may write.

A commit in the worktree writes objects, refs, logs and the worktree's own folder (its index,
its HEAD); it never needs the repository's ``hooks/``, ``config`` or ``info/``, which every
later ``git`` of the orchestrator runs or reads (a ``pre-push`` hook, ``core.hooksPath``,
``core.fsmonitor``). So those stay read-only, as do the files that say where the git folders
are (the worktree's ``.git`` file, its ``commondir`` and ``gitdir``) and a per-worktree
``config.worktree``: rewritten, they would send the orchestrator's ``git`` to a repository the
agent made. The ``.git`` of the worktree is a mount point of its own, so that it cannot be
renamed away and replaced either.

Nothing here asks git: the worktree's ``.git`` and ``commondir`` are read as files (a few
hundred bytes at most, never following a link), as git itself reads them.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

# Written by a commit (or a fetch, a rebase): writable in the repository's shared folder.
WRITTEN = ("objects", "refs", "logs", "packed-refs")
# Read by the orchestrator's own git, never written by a commit: read-only wherever they are.
GUARDED = ("hooks", "config", "info", "config.worktree", "commondir", "gitdir")
_MOST = 4096


@dataclass(frozen=True)
class GitView:
    """The git folders of one worktree, as the sandbox shows them: ``read_only`` first, then
    ``writable`` within them, then ``guarded`` (read-only again) within those."""

    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    guarded: tuple[Path, ...] = ()


def _small_text(path: Path) -> str | None:
    """The text of a small regular file at ``path``, not following a link; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _MOST).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def git_view(worktree: Path) -> GitView:
    """The git folders of ``worktree`` (a main checkout, or a linked worktree); an empty view
    where it has no ``.git`` git could use."""
    dotgit = worktree / ".git"
    try:
        mode = os.lstat(dotgit).st_mode
    except OSError:
        return GitView()
    if stat.S_ISDIR(mode):
        own = dotgit
    elif stat.S_ISREG(mode):
        text = _small_text(dotgit) or ""
        first = text.splitlines()[0] if text else ""
        if not first.startswith("gitdir: "):
            return GitView()
        own = (worktree / first.removeprefix("gitdir: ").strip()).resolve()
        if not own.is_dir():
            return GitView()
    else:
        return GitView()
    pointer = _small_text(own / "commondir")
    common = (own / pointer.strip()).resolve() if pointer and pointer.strip() else own
    if not common.is_dir():
        return GitView()
    guarded = [common / name for name in GUARDED]
    guarded += [own / name for name in GUARDED if own != common]
    if own == dotgit:
        # A main checkout: its .git is inside the worktree, written as the worktree is; only
        # the guarded parts are read-only, and .git itself a mount point.
        return GitView(writable=(dotgit,), guarded=_existing(guarded))
    writable = [common / name for name in WRITTEN] + [own]
    return GitView(
        read_only=(common,),
        writable=_existing(writable),
        guarded=_existing([*guarded, dotgit]),
    )


def _existing(paths: list[Path]) -> tuple[Path, ...]:
    found = []
    for path in paths:
        if path.exists() and path not in found:
            found.append(path)
    return tuple(found)
