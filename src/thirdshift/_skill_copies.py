"""Writing a skill's copy into the worktree, and removing it again, through folder descriptors.

The path into the worktree is walked one folder at a time with ``O_NOFOLLOW``, and everything
is created and removed relative to those descriptors; only a copy thirdshift made (it holds
:data:`~thirdshift._skill_check.MARKER`) is ever replaced or removed. See :mod:`thirdshift._skills`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from thirdshift._skill_check import FOLDER_MODE, GITIGNORE, MARKER, Item, Skill, refused
from thirdshift.errors import ThirdshiftError

IGNORE_ALL = b"# Written by thirdshift: this copy of a skill is for one session only.\n*\n"
"""What ends the ``.gitignore`` of every copy: ``*`` ignores the copy whole, this file too.

Per folder, it hides the copy in its own worktree only. The alternatives each outlive the
session or reach past its worktree: a line in the shared ``info/exclude`` hides the path in
every worktree of the repository, and stays if the orchestrator is killed; a per-worktree
``core.excludesFile`` needs ``extensions.worktreeConfig`` turned on for the whole repository
(a repository format change older git tools refuse), and would replace the user's own global
excludes file in that worktree.
"""

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK and O_NOCTTY: should a FIFO or a terminal be swapped in after the check, the open
# neither hangs nor adopts it; the fstat after it then refuses what was opened.
_SOURCE_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 16


@contextlib.contextmanager
def walked(
    root: int,
    root_path: Path,
    relative: str,
    *,
    made: list[int] | None = None,
    doing: str = "copy skills",
) -> Iterator[int]:
    """A descriptor of ``<root>/<relative>``, each folder on the way made if missing.

    No component is followed if it is a symlink: it is refused instead, saying what we were
    ``doing``. Without ``made`` no
    folder is made (a missing one is a ``FileNotFoundError``); with it, the index of each part
    made is added to it.
    """
    parts = PurePosixPath(relative).parts
    if not parts or any(part in ("/", ".", "..") for part in parts):
        raise ThirdshiftError(f"skills folder {relative!r} is not a plain relative path")
    fd = os.dup(root)
    try:
        shown = root_path
        for index, part in enumerate(parts):
            shown = shown / part
            if made is not None:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, FOLDER_MODE, dir_fd=fd)
                    made.append(index)
            inner = _open_folder(fd, part, shown, doing)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _open_folder(parent: int, name: str, shown: Path, doing: str = "copy skills") -> int:
    """Open the folder ``name`` in ``parent``; a symlink or a file there is refused."""
    try:
        return os.open(name, _DIRECTORY, dir_fd=parent)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        found = os.stat(name, dir_fd=parent, follow_symlinks=False)
        what = "a symlink" if stat.S_ISLNK(found.st_mode) else "not a folder"
        raise ThirdshiftError(f"refusing to {doing} through {shown}: it is {what}") from None


def _entry(parent: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


# Copying


def replace_copy(into: int, shown: Path, skill: Skill, started: list[str]) -> None:
    """Make ``shown`` (``into``'s entry of the skill's name) a fresh copy of ``skill``.

    Its name is added to ``started`` once the copy's folder is there.
    """
    name = shown.name
    found = _entry(into, name)
    if found is not None:
        if stat.S_ISLNK(found.st_mode) and os.readlink(name, dir_fd=into) == str(
            skill.source.absolute()
        ):
            os.unlink(name, dir_fd=into)  # what thirdshift once made instead of a copy
        elif stat.S_ISDIR(found.st_mode) and _is_our_copy(into, name):
            shutil.rmtree(name, dir_fd=into)  # fd-based: never follows a symlink inside
        else:
            raise ThirdshiftError(
                f"refusing to replace {shown} with a copy of the skill {name}: thirdshift did "
                "not put it there (move it away to use the skill)"
            )
    os.mkdir(name, FOLDER_MODE, dir_fd=into)
    started.append(name)
    fd = _open_folder(into, name, shown)
    try:
        # First, so that a copy cut short is still known as ours, and out of git, till the next.
        _write_new(fd, MARKER, 0o444, [_marker_text(skill.source).encode()])
        _write_gitignore(fd, skill)
        _copy_items(skill.name, tuple(i for i in skill.contents if i.name != GITIGNORE), fd)
    finally:
        os.close(fd)


def _write_gitignore(into: int, skill: Skill) -> None:
    """The copy's ``.gitignore``: the skill's own lines, if any, then :data:`IGNORE_ALL`.

    Last, so that ``*`` overrides any ``!`` line of the skill's: the copy is ignored whole.
    """
    own = next((item for item in skill.contents if item.name == GITIGNORE), None)
    if own is None:
        _write_new(into, GITIGNORE, 0o444, [IGNORE_ALL])
        return
    with _opened_source(skill.name, own) as original:
        _write_new(into, GITIGNORE, own.mode, _ending_with_ignore_all(_chunks(original)))


def _ending_with_ignore_all(chunks: Iterable[bytes]) -> Iterator[bytes]:
    last = b"\n"
    for chunk in chunks:
        last = chunk[-1:] or last
        yield chunk
    yield (b"" if last == b"\n" else b"\n") + IGNORE_ALL


def _marker_text(source: Path) -> str:
    return (
        f"Copied by thirdshift from {source.absolute()} for one session, and removed when it\n"
        "ends (or replaced at the next): edits made here are lost, and never reach the\n"
        "original.\n"
    )


def _copy_items(skill: str, items: tuple[Item, ...], into: int) -> None:
    """Copy the checked ``items`` into the folder ``into``."""
    for item in items:
        if item.inner is None:
            with _opened_source(skill, item) as original:
                _write_new(into, item.name, item.mode, _chunks(original))
            continue
        os.mkdir(item.name, item.mode, dir_fd=into)
        inner = os.open(item.name, _DIRECTORY, dir_fd=into)
        try:
            _copy_items(skill, item.inner, inner)
        finally:
            os.close(inner)


@contextlib.contextmanager
def _opened_source(skill: str, item: Item) -> Iterator[int]:
    """A descriptor of the file ``item``, which must still be the regular file checked."""
    try:
        fd = os.open(item.source, _SOURCE_FILE)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise refused(skill, item.shown, "changed while skills were copied") from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != item.identity:
            raise refused(skill, item.shown, "changed while skills were copied")
        yield fd
    finally:
        os.close(fd)


def _chunks(fd: int) -> Iterator[bytes]:
    while chunk := os.read(fd, _CHUNK):
        yield chunk


def _write_new(into: int, name: str, mode: int, chunks: Iterable[bytes]) -> None:
    """Create the file ``name`` in ``into`` (never an existing one, never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, mode, dir_fd=into)
    try:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)  # whatever the umask took away
    finally:
        os.close(fd)


def _is_our_copy(into: int, name: str) -> bool:
    fd = os.open(name, _DIRECTORY, dir_fd=into)
    try:
        marker = _entry(fd, MARKER)
    finally:
        os.close(fd)
    return marker is not None and stat.S_ISREG(marker.st_mode)


# Removing the copies


def removed(
    root: int, worktree: Path, skills_dir: str, names: list[str], made: list[int]
) -> list[str]:
    """Remove the copies ``names`` and the folder parts ``made`` from the worktree ``root``
    (the one they were copied into, whatever is at ``worktree``'s path now); say what was left.
    """
    if not names and not made:
        return []
    target = worktree / skills_dir
    parts = PurePosixPath(skills_dir).parts
    problems = []
    try:
        if names:
            with walked(root, worktree, skills_dir, doing="remove skill copies") as into:
                for name in names:
                    problem = _remove_copy(into, name)
                    if problem is not None:
                        problems.append(f"left the skill copy {target / name} in place: {problem}")
        _remove_made_folders(root, worktree, parts, min(made, default=len(parts)))
    except FileNotFoundError:
        pass  # the agent removed the skills folder, copies and all
    except ThirdshiftError as error:
        problems.append(f"left the skill copies in {target} in place: {error}")
    except OSError as error:
        problems.append(f"left the skill copies in {target} in place: {error.strerror or error}")
    return problems


def _remove_copy(into: int, name: str) -> str | None:
    """Remove the copy ``name`` in ``into`` if it is still one; else why it was left."""
    try:
        found = _entry(into, name)
        if found is None:
            return None  # the agent removed it
        if not stat.S_ISDIR(found.st_mode) or not _is_our_copy(into, name):
            return f"it is no longer a copy thirdshift made (it has no {MARKER})"
        shutil.rmtree(name, dir_fd=into)  # fd-based: never follows a symlink inside
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or error}"
    return None


def _remove_made_folders(root: int, worktree: Path, parts: tuple[str, ...], made: int) -> None:
    """Remove ``parts[made:]`` (made for the copies), innermost first, while each is empty."""
    for index in reversed(range(made, len(parts))):
        parent = "/".join(parts[:index])
        with contextlib.ExitStack() as stack:
            way = walked(root, worktree, parent, doing="remove skill copies")
            fd = stack.enter_context(way) if parent else root
            try:
                os.rmdir(parts[index], dir_fd=fd)
            except FileNotFoundError:
                continue  # the agent removed it
            except OSError:
                return  # not empty (the user's own files, or a copy left): kept, and those above
