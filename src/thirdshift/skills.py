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
import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from thirdshift.errors import ConfigurationError, ThirdshiftError
from thirdshift.logs import PLAIN_NAME

MARKER = ".thirdshift-copy"
"""The file that marks a skill folder as a copy thirdshift made, and may replace."""

GITIGNORE = ".gitignore"

IGNORE_ALL = b"# Written by thirdshift: this copy of a skill is for one session only.\n*\n"
"""What ends the ``.gitignore`` of every copy: ``*`` ignores the copy whole, this file too.

Per folder, it hides the copy in its own worktree only. The alternatives each outlive the
session or reach past its worktree: a line in the shared ``info/exclude`` hides the path in
every worktree of the repository, and stays if the orchestrator is killed; a per-worktree
``core.excludesFile`` needs ``extensions.worktreeConfig`` turned on for the whole repository
(a repository format change older git tools refuse), and would replace the user's own global
excludes file in that worktree.
"""

MAX_DEPTH = 64
"""How many folders deep a skill may go; the walk recurses, and a real skill goes a few deep."""

MAX_ENTRIES = 10_000
"""How many files and folders one skill may hold, counting each symlink as what it leads to.

A few links to folders that link on (a symlink bomb) would otherwise be walked and copied
without end: 20 levels of two links each are a million entries. A real skill holds a few
files; checking 10,000 entries took 0.7 s of CPU here (100,000: 5 s), and every session
copies them all again.
"""

SPECIAL = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Where nothing of a skill may lead: the kernel's files and the devices, never a skill's."""

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK and O_NOCTTY: should a FIFO or a terminal be swapped in after the check, the open
# neither hangs nor adopts it; the fstat after it then refuses what was opened.
_SOURCE_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 16


@dataclass(frozen=True)
class _Item:
    """A file or folder of a skill, checked and ready to copy."""

    name: str
    """Its name in the copy: a symlink's own name, not its target's."""
    source: Path
    """Where it really is, every symlink on the way resolved."""
    shown: Path
    """Where the skill shows it (through the symlinks), for messages."""
    identity: tuple[int, int]
    """Its device and inode when checked: the file opened to copy it must be this one."""
    mode: int
    """A file's mode in the copy: read-only, its execute bits kept."""
    inner: tuple[_Item, ...] | None
    """A folder's contents; None for a file."""


@dataclass(frozen=True)
class _Skill:
    """A skill of the operator's skills folder, checked whole before any of it is copied."""

    name: str
    source: Path
    """The skill's folder as the skills folder names it (maybe the operator's symlink)."""
    contents: tuple[_Item, ...]


def skill_names(skills: Path) -> list[str]:
    """The skills in ``skills``: its sub-folders holding a ``SKILL.md``, sorted by name.

    Each is checked as :func:`copy_skills` checks it, so what it would refuse is refused here.
    Any other folder, unless hidden (``.git``), is an error: a typo (``skill.md``) would
    otherwise drop the skill without a word while the session asks for it.
    """
    return [skill.name for skill in _checked_skills(skills)]


@contextlib.contextmanager
def deployed_skills(
    skills: Path, worktree: Path, skills_dir: str, report: Callable[[str], None]
) -> Iterator[list[str]]:
    """Copy the skills in for the block (see :func:`copy_skills`); remove them when it ends.

    The copies, and the folders on the way that were made for them while they are empty, go
    however the block ends, and also when the copying itself fails part way. What cannot be
    removed (the agent replaced a copy with its own folder, or swapped a folder on the way for
    a symlink) is left and ``report``-ed, never raised over the block's own outcome; a copy
    left behind stays ignored by git, and the next session replaces it.
    """
    started: list[str] = []
    made: list[int] = []
    try:
        _copy_into(skills, worktree, skills_dir, started, made)
        yield list(started)
    finally:
        for problem in _removed(worktree, skills_dir, started, made):
            report(problem)


def copy_skills(skills: Path, worktree: Path, skills_dir: str) -> list[str]:
    """Copy every skill of ``skills`` into ``<worktree>/<skills_dir>``; return their names.

    The copies stay: :func:`deployed_skills` is the one that removes them again.
    """
    started: list[str] = []
    _copy_into(skills, worktree, skills_dir, started, [])
    return started


def _copy_into(
    skills: Path, worktree: Path, skills_dir: str, started: list[str], made: list[int]
) -> None:
    """Copy the skills in; add each copy begun to ``started``, each folder part made to ``made``.

    Both are filled as it goes, so that a copying cut short can be undone.
    """
    if not worktree.is_dir():  # never made here: a session must not run in a fresh folder
        raise ConfigurationError(f"worktree {worktree} is not a folder")
    checked = _checked_skills(skills)
    if not checked:
        return
    target = worktree / skills_dir
    try:
        with (
            _opened_directory(worktree) as root,
            _walked(root, worktree, skills_dir, made=made) as into,
        ):
            for skill in checked:
                _replace_copy(into, target / skill.name, skill, started)
    except OSError as error:
        raise ThirdshiftError(
            f"could not copy skills into {target}: {error.strerror or error}"
        ) from error


# Checking what a skill holds


def _checked_skills(skills: Path) -> list[_Skill]:
    try:
        entries = sorted(skills.iterdir())
    except OSError as error:
        raise ConfigurationError(
            f"could not read skills folder {skills}: {error.strerror or error}"
        ) from error
    within = Path(os.path.realpath(skills))
    checked = []
    for entry in entries:
        if not os.path.lexists(entry / "SKILL.md"):
            # A file (a README) or a hidden folder (.git) is not meant as a skill; any other
            # folder is, and skipping it would leave the agent asking for a skill not there.
            if entry.is_dir() and not entry.name.startswith("."):
                raise ConfigurationError(f"skill folder {entry} has no SKILL.md{_near_miss(entry)}")
            continue
        if not PLAIN_NAME.fullmatch(entry.name):
            raise ConfigurationError(f"skill name {entry.name!r} is not a plain name")
        checked.append(_checked_skill(entry, within))
    return checked


def _near_miss(folder: Path) -> str:
    """`` (it has skill.md)`` when ``folder`` holds SKILL.md under another case, else ``""``."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ""
    miss = next((name for name in names if name.lower() == "skill.md"), None)
    return f" (it has {miss})" if miss else ""


def _checked_skill(source: Path, within: Path) -> _Skill:
    """Check the skill folder ``source`` of the skills folder ``within`` (resolved)."""
    name = source.name
    try:
        # The operator's own symlink to a skill kept elsewhere is followed, wherever it leads.
        root = _resolved(name, source, source, ())
        walk = _Walk(name, (within, root))
        contents = walk.folder(root, source, frozenset({_id(root)}))
        for special in ("SKILL.md", GITIGNORE):  # the copy's .gitignore keeps it out of git
            if any(item.name == special and item.inner is not None for item in contents):
                raise _refused(name, source / special, "is a folder, not a file")
    except OSError as error:
        raise ConfigurationError(
            f"could not read the skill {name}: {error.filename}: {error.strerror or error}"
        ) from error
    return _Skill(name, source, contents)


class _Walk:
    """The check of one skill's folders: what its links may lead to, and how much it holds."""

    def __init__(self, skill: str, allowed: tuple[Path, ...]) -> None:
        self.skill = skill
        self.allowed = allowed
        """The folders a symlink must lead inside: the skills folder and the skill's own."""
        self.left = MAX_ENTRIES

    def folder(
        self, folder: Path, shown: Path, above: frozenset[tuple[int, int]]
    ) -> tuple[_Item, ...]:
        """The contents of ``folder`` (resolved; ``shown`` for messages), every one checked.

        ``above`` are the folders this one is in, which it must not lead back to.
        """
        items = []
        for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
            if entry.name == MARKER:
                continue  # a copy of a copy: its own marker is already written
            where = shown / entry.name
            self.left -= 1
            if self.left < 0:
                raise _refused(self.skill, where, f"is past the skill's {MAX_ENTRIES} entries")
            items.append(self._item(entry, folder / entry.name, where, above))
        return tuple(items)

    def _item(
        self, entry: os.DirEntry[str], path: Path, where: Path, above: frozenset[tuple[int, int]]
    ) -> _Item:
        found = entry.stat(follow_symlinks=False)
        linked = stat.S_ISLNK(found.st_mode)
        if linked:
            path = _resolved(self.skill, path, where, self.allowed)
            found = os.stat(path)
        identity = (found.st_dev, found.st_ino)
        if stat.S_ISDIR(found.st_mode):
            if identity in above:
                raise _refused(self.skill, where, "is a folder that holds itself")
            if len(above) > MAX_DEPTH:
                raise _refused(self.skill, where, f"is over {MAX_DEPTH} folders deep")
            inner = self.folder(path, where, above | {identity})
            return _Item(entry.name, path, where, identity, 0o755, inner)
        if stat.S_ISREG(found.st_mode):
            return _Item(entry.name, path, where, identity, 0o444 | (found.st_mode & 0o111), None)
        if linked:
            raise _refused(self.skill, where, f"leads to {_kind(found.st_mode)} ({path})")
        raise _refused(self.skill, where, f"is {_kind(found.st_mode)}")


def _resolved(skill: str, path: Path, shown: Path, allowed: tuple[Path, ...]) -> Path:
    """Where ``path`` really is: never in :data:`SPECIAL`, and inside ``allowed`` if any."""
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _refused(skill, shown, "is a symlink that loops") from None
        if error.errno == errno.ENOENT:
            raise _refused(skill, shown, "is a symlink to nothing") from None
        raise
    special = next((top for top in SPECIAL if _inside(real, top)), None)
    if special is not None:
        raise _refused(skill, shown, f"leads into {special} ({real})")
    if allowed and not any(_inside(real, folder) for folder in allowed):
        raise _refused(skill, shown, f"leads out of the skills folder ({real})")
    return Path(real)


def _inside(real: str, folder: Path) -> bool:
    """Whether the resolved path ``real`` is ``folder`` or in it.

    On strings: ``Path.is_relative_to`` made the check of a symlink bomb 4 times slower.
    """
    top = str(folder)
    return real == top or real.startswith(os.path.join(top, ""))


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "neither a file nor a folder"


def _refused(skill: str, shown: Path, why: str) -> ThirdshiftError:
    return ConfigurationError(f"refusing to copy the skill {skill}: {shown} {why}")


def _id(path: Path) -> tuple[int, int]:
    found = os.stat(path)
    return found.st_dev, found.st_ino


# Walking without following


@contextlib.contextmanager
def _opened_directory(path: Path) -> Iterator[int]:
    """A descriptor of the folder ``path``, which the operator named (symlinks followed)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _walked(
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
                    os.mkdir(part, 0o755, dir_fd=fd)
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


def _replace_copy(into: int, shown: Path, skill: _Skill, started: list[str]) -> None:
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
    os.mkdir(name, 0o755, dir_fd=into)
    started.append(name)
    fd = _open_folder(into, name, shown)
    try:
        # First, so that a copy cut short is still known as ours, and out of git, till the next.
        _write_new(fd, MARKER, 0o444, [_marker_text(skill.source).encode()])
        _write_gitignore(fd, skill)
        _copy_items(skill.name, tuple(i for i in skill.contents if i.name != GITIGNORE), fd)
    finally:
        os.close(fd)


def _write_gitignore(into: int, skill: _Skill) -> None:
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


def _copy_items(skill: str, items: tuple[_Item, ...], into: int) -> None:
    """Copy the checked ``items`` into the folder ``into``."""
    for item in items:
        if item.inner is None:
            with _opened_source(skill, item) as original:
                _write_new(into, item.name, item.mode, _chunks(original))
            continue
        os.mkdir(item.name, 0o755, dir_fd=into)
        inner = os.open(item.name, _DIRECTORY, dir_fd=into)
        try:
            _copy_items(skill, item.inner, inner)
        finally:
            os.close(inner)


@contextlib.contextmanager
def _opened_source(skill: str, item: _Item) -> Iterator[int]:
    """A descriptor of the file ``item``, which must still be the regular file checked."""
    try:
        fd = os.open(item.source, _SOURCE_FILE)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise _refused(skill, item.shown, "changed while skills were copied") from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != item.identity:
            raise _refused(skill, item.shown, "changed while skills were copied")
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


def _removed(worktree: Path, skills_dir: str, names: list[str], made: list[int]) -> list[str]:
    """Remove the copies ``names`` and the folder parts ``made``; say what was left."""
    if not names and not made:
        return []
    target = worktree / skills_dir
    parts = PurePosixPath(skills_dir).parts
    problems = []
    try:
        with _opened_directory(worktree) as root:
            if names:
                with _walked(root, worktree, skills_dir, doing="remove skill copies") as into:
                    for name in names:
                        problem = _remove_copy(into, name)
                        if problem is not None:
                            problems.append(
                                f"left the skill copy {target / name} in place: {problem}"
                            )
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
            walked = _walked(root, worktree, parent, doing="remove skill copies")
            fd = stack.enter_context(walked) if parent else root
            try:
                os.rmdir(parts[index], dir_fd=fd)
            except FileNotFoundError:
                continue  # the agent removed it
            except OSError:
                return  # not empty (the user's own files, or a copy left): kept, and those above
