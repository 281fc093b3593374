"""Copying project skills into a worktree, and keeping them out of ``git status``.

Each skill is a folder with a ``SKILL.md``. A read-only copy of it goes into the Harness's
skills folder in the worktree, and its path is added to the repository's shared
``info/exclude`` (every worktree of a repository shares one), under a lock so that sessions
starting at once in several worktrees do not corrupt it.

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
  made to the same skill, is ever replaced. Anything else in the way, a skill folder committed
  to the repository say, is refused with an error rather than deleted.
- The shared ``info/exclude`` is used only when the worktree's ``.git`` leads to a repository
  that leads back to it, and it must be a regular file of at most :data:`MAX_EXCLUDE` bytes;
  git, which reads the worktree's ``.git``, gets :data:`GIT_TIMEOUT` seconds to answer.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from thirdshift.errors import CLINotFound, ConfigurationError, ThirdshiftError
from thirdshift.logs import PLAIN_NAME
from thirdshift.programs import find_program

MARKER = ".thirdshift-copy"
"""The file that marks a skill folder as a copy thirdshift made, and may replace."""

GIT_TIMEOUT = 30.0
"""How long ``git rev-parse`` may take: it reads the worktree's ``.git``, where a FIFO hangs it."""

MAX_EXCLUDE = 1 << 20
"""The largest shared ``info/exclude`` thirdshift reads (1 MiB); a real one is a few lines."""

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
_ASKED = ("--show-toplevel", "--git-dir", "--git-common-dir")


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


def copy_skills(skills: Path, worktree: Path, skills_dir: str) -> list[str]:
    """Copy every skill of ``skills`` into ``<worktree>/<skills_dir>``; return their names."""
    if not worktree.is_dir():  # never made here: a session must not run in a fresh folder
        raise ConfigurationError(f"worktree {worktree} is not a folder")
    checked = _checked_skills(skills)
    if not checked:
        return []
    target = worktree / skills_dir
    try:
        with _opened_directory(worktree) as root, _walked(root, worktree, skills_dir) as into:
            for skill in checked:
                _replace_copy(into, target / skill.name, skill)
    except OSError as error:
        raise ThirdshiftError(
            f"could not copy skills into {target}: {error.strerror or error}"
        ) from error
    names = [skill.name for skill in checked]
    _exclude_from_git(worktree, [f"{skills_dir.strip('/')}/{name}" for name in names])
    return names


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
        if any(item.name == "SKILL.md" and item.inner is not None for item in contents):
            raise _refused(name, source / "SKILL.md", "is a folder, not a file")
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
def _walked(root: int, root_path: Path, relative: str, doing: str = "copy skills") -> Iterator[int]:
    """A descriptor of ``<root>/<relative>``, each folder on the way made if missing.

    No component is followed if it is a symlink: it is refused instead, saying what we were
    ``doing``.
    """
    parts = PurePosixPath(relative).parts
    if not parts or any(part in ("/", ".", "..") for part in parts):
        raise ThirdshiftError(f"skills folder {relative!r} is not a plain relative path")
    fd = os.dup(root)
    try:
        shown = root_path
        for part in parts:
            shown = shown / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
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


def _replace_copy(into: int, shown: Path, skill: _Skill) -> None:
    """Make ``shown`` (``into``'s entry of the skill's name) a fresh copy of ``skill``."""
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
    fd = _open_folder(into, name, shown)
    try:
        # First, so that a copy cut short is still known as ours and replaced next time.
        _write_new(fd, MARKER, 0o444, [_marker_text(skill.source).encode()])
        _copy_items(skill.name, skill.contents, fd)
    finally:
        os.close(fd)


def _marker_text(source: Path) -> str:
    return (
        f"Copied by thirdshift from {source.absolute()} for one session, and replaced at the\n"
        "next: edits made here are lost, and never reach the original.\n"
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


# Keeping the copies out of git status


def _exclude_from_git(worktree: Path, paths: list[str]) -> None:
    """Add ``/<paths>`` (relative to ``worktree``) to its repository's shared exclude."""
    found = _repository(worktree)
    if found is None:
        return
    top, common = found
    try:
        where = worktree.resolve().relative_to(top)
    except ValueError:  # git saw the folder by another path (a bind mount, say)
        raise ThirdshiftError(
            f"refusing to exclude skills from git: {worktree} is not inside {top}"
        ) from None
    patterns = [_pattern(PurePosixPath("/", where, path).as_posix()) for path in paths]
    exclude = common / "info" / "exclude"
    try:
        with (
            _opened_directory(common) as common_fd,
            _walked(common_fd, common, "info", f"add to {exclude}") as info,
        ):
            _add_lines(info, exclude, patterns)
    except OSError as error:
        raise ThirdshiftError(f"could not add to {exclude}: {error.strerror or error}") from error


def _pattern(path: str) -> str:
    """``path`` as a gitignore pattern that matches it alone."""
    if "\n" in path or "\r" in path:
        raise ThirdshiftError(f"refusing to exclude {path!r} from git: it holds a line break")
    escaped = "".join("\\" + c if c in "\\*?[" else c for c in path)
    return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped


def _repository(worktree: Path) -> tuple[Path, Path] | None:
    """The work tree's top folder and the repository's common git folder, both resolved.

    None when ``worktree`` is not in git (or git is missing). What git reports is checked,
    since it comes from the worktree's ``.git``: the top folder's ``.git`` must be that
    repository's own folder; or a linked worktree's file naming an admin folder under the
    common folder's ``worktrees/`` that names this ``.git`` back; or a submodule's file naming
    a git folder whose ``core.worktree`` is this top folder.
    """
    try:
        git = find_program("git")
    except CLINotFound:
        return None
    asked = _git(git, worktree, "rev-parse", "--path-format=absolute", *_ASKED)
    lines = asked.stdout.splitlines()
    if asked.returncode != 0 or len(lines) != 3:
        return None
    top, git_dir, common = (Path(os.path.realpath(line)) for line in lines)
    dot_git = top / ".git"
    try:
        found = os.lstat(dot_git)
        if git_dir != common:
            leads_back = (
                stat.S_ISREG(found.st_mode)
                and git_dir.parent == common / "worktrees"
                and _named_back(git_dir / "gitdir") == dot_git
            )
        elif stat.S_ISDIR(found.st_mode):
            leads_back = Path(os.path.realpath(dot_git)) == common
        else:
            leads_back = stat.S_ISREG(found.st_mode) and _submodule_top(git, git_dir) == top
    except OSError:
        leads_back = False
    if not leads_back:
        raise ThirdshiftError(
            f"refusing to exclude skills from git: {dot_git} leads to {common}, which is not "
            f"the repository of {top}"
        )
    return top, common


def _git(git: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``git args`` in ``cwd``; a git that does not answer in time is an error."""
    try:
        return subprocess.run(  # noqa: S603 - fixed argv, no shell
            [git, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            check=False,
            start_new_session=True,
            timeout=GIT_TIMEOUT,
        )
    except subprocess.TimeoutExpired:  # killed and reaped by run()
        raise ThirdshiftError(
            f"refusing to exclude skills from git: git {args[0]} did not answer within "
            f"{GIT_TIMEOUT:g} s in {cwd} (a FIFO in its .git?)"
        ) from None


def _submodule_top(git: str, git_dir: Path) -> Path | None:
    """The work tree a submodule's git folder names (``core.worktree``), resolved."""
    asked = _git(git, git_dir, "config", "--file", "config", "--get", "core.worktree")
    named = asked.stdout.strip()
    if asked.returncode != 0 or not named:
        return None
    return Path(os.path.realpath(git_dir / named))


def _named_back(gitdir_file: Path) -> Path | None:
    """The ``.git`` that a linked worktree's admin file names, resolved (a short read)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(gitdir_file, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, 4096).decode(errors="replace").strip()
    finally:
        os.close(fd)
    return Path(os.path.realpath(text)) if text else None


def _add_lines(info: int, exclude: Path, patterns: list[str]) -> None:
    """Append the missing ``patterns`` to the ``exclude`` file in the folder ``info``."""
    found = _entry(info, "exclude")
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise ThirdshiftError(f"refusing to add to {exclude}: it is not a regular file")
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open("exclude", flags, 0o644, dir_fd=info)
    except OSError as error:
        if error.errno == errno.ELOOP:  # swapped for a symlink since it was looked at
            raise ThirdshiftError(f"refusing to add to {exclude}: it is a symlink") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ThirdshiftError(f"refusing to add to {exclude}: it is not a regular file")
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file closes
        text = _read_bounded(fd, exclude)
        present = set(text.splitlines())
        missing = [pattern for pattern in patterns if pattern not in present]
        if missing:
            lead = "\n" if text and not text.endswith("\n") else ""
            addition = (lead + "".join(f"{p}\n" for p in missing)).encode(errors="surrogateescape")
            os.lseek(fd, 0, os.SEEK_END)
            while addition:
                addition = addition[os.write(fd, addition) :]
    finally:
        os.close(fd)


def _read_bounded(fd: int, exclude: Path) -> str:
    data = b""
    while len(data) <= MAX_EXCLUDE:
        chunk = os.read(fd, MAX_EXCLUDE + 1 - len(data))
        if not chunk:
            return data.decode(errors="surrogateescape")
        data += chunk
    raise ThirdshiftError(f"refusing to add to {exclude}: it is over {MAX_EXCLUDE} bytes")
