"""Checking a skill whole before any of it is copied: what it holds, and where its links lead.

Only regular files and folders, at most :data:`MAX_DEPTH` deep and :data:`MAX_ENTRIES` in all;
a symlink counts as what it leads to, which must lie in the skills folder or the skill's own
folder and never in :data:`SPECIAL`. See :mod:`thirdshift._skills` for why.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from thirdshift._logs import PLAIN_NAME
from thirdshift.errors import ConfigurationError, ThirdshiftError

MARKER = ".thirdshift-copy"
"""The file that marks a skill folder as a copy thirdshift made, and may replace."""

GITIGNORE = ".gitignore"
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

FOLDER_MODE = 0o700
"""Every folder of a copy: the skill's own may be private, and the copy's folders are the
session's (its CLI runs as their owner); nothing in them is for other users of the machine."""
_NO_WRITE = 0o555  # and no set-id or sticky bit either


@dataclass(frozen=True)
class Item:
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
    """A file's mode in the copy: its own, less its write bits (so a file only its owner may
    read stays so); a folder's, :data:`FOLDER_MODE`."""
    inner: tuple[Item, ...] | None
    """A folder's contents; None for a file."""


@dataclass(frozen=True)
class Skill:
    """A skill of the operator's skills folder, checked whole before any of it is copied."""

    name: str
    source: Path
    """The skill's folder as the skills folder names it (maybe the operator's symlink)."""
    contents: tuple[Item, ...]


def checked_skills(skills: Path) -> list[Skill]:
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


def _checked_skill(source: Path, within: Path) -> Skill:
    """Check the skill folder ``source`` of the skills folder ``within`` (resolved)."""
    name = source.name
    try:
        # The operator's own symlink to a skill kept elsewhere is followed, wherever it leads.
        root = _resolved(name, source, source, ())
        walk = _Walk(name, (within, root))
        contents = walk.folder(root, source, frozenset({_id(root)}))
        for special in ("SKILL.md", GITIGNORE):  # the copy's .gitignore keeps it out of git
            if any(item.name == special and item.inner is not None for item in contents):
                raise refused(name, source / special, "is a folder, not a file")
    except OSError as error:
        raise ConfigurationError(
            f"could not read the skill {name}: {error.filename}: {error.strerror or error}"
        ) from error
    return Skill(name, source, contents)


class _Walk:
    """The check of one skill's folders: what its links may lead to, and how much it holds."""

    def __init__(self, skill: str, allowed: tuple[Path, ...]) -> None:
        self.skill = skill
        self.allowed = allowed
        """The folders a symlink must lead inside: the skills folder and the skill's own."""
        self.left = MAX_ENTRIES

    def folder(
        self, folder: Path, shown: Path, above: frozenset[tuple[int, int]]
    ) -> tuple[Item, ...]:
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
                raise refused(self.skill, where, f"is past the skill's {MAX_ENTRIES} entries")
            items.append(self._item(entry, folder / entry.name, where, above))
        return tuple(items)

    def _item(
        self, entry: os.DirEntry[str], path: Path, where: Path, above: frozenset[tuple[int, int]]
    ) -> Item:
        found = entry.stat(follow_symlinks=False)
        linked = stat.S_ISLNK(found.st_mode)
        if linked:
            path = _resolved(self.skill, path, where, self.allowed)
            found = os.stat(path)
        identity = (found.st_dev, found.st_ino)
        if stat.S_ISDIR(found.st_mode):
            if identity in above:
                raise refused(self.skill, where, "is a folder that holds itself")
            if len(above) > MAX_DEPTH:
                raise refused(self.skill, where, f"is over {MAX_DEPTH} folders deep")
            inner = self.folder(path, where, above | {identity})
            return Item(entry.name, path, where, identity, FOLDER_MODE, inner)
        if stat.S_ISREG(found.st_mode):
            mode = stat.S_IMODE(found.st_mode) & _NO_WRITE
            return Item(entry.name, path, where, identity, mode, None)
        if linked:
            raise refused(self.skill, where, f"leads to {_kind(found.st_mode)} ({path})")
        raise refused(self.skill, where, f"is {_kind(found.st_mode)}")


def _resolved(skill: str, path: Path, shown: Path, allowed: tuple[Path, ...]) -> Path:
    """Where ``path`` really is: never in :data:`SPECIAL`, and inside ``allowed`` if any."""
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise refused(skill, shown, "is a symlink that loops") from None
        if error.errno == errno.ENOENT:
            raise refused(skill, shown, "is a symlink to nothing") from None
        raise
    special = next((top for top in SPECIAL if _inside(real, top)), None)
    if special is not None:
        raise refused(skill, shown, f"leads into {special} ({real})")
    if allowed and not any(_inside(real, folder) for folder in allowed):
        raise refused(skill, shown, f"leads out of the skills folder ({real})")
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


def refused(skill: str, shown: Path, why: str) -> ThirdshiftError:
    return ConfigurationError(f"refusing to copy the skill {skill}: {shown} {why}")


def _id(path: Path) -> tuple[int, int]:
    found = os.stat(path)
    return found.st_dev, found.st_ino
