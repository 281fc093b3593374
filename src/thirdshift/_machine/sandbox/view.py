"""What a sandboxed session sees of the machine's files, as the mounts ``bwrap`` makes.

The root is empty; onto it go, in order:

- the system, read-only (``/usr``, ``/etc``, ``/opt`` and the rest of :data:`SYSTEM`; a merged
  ``/bin -> usr/bin`` stays a link), less the files in it that hold secrets (:data:`MASKED`);
  a new ``/proc`` (of the session's PID namespace), a minimal ``/dev``, a private ``/tmp``;
- ``HOME``: the session's private home (:mod:`.homes`), and its private state folders;
- read-only, what runs: the CLI's program (the folders of each link on its way, and a whole
  ``node_modules`` where it is in one), the folders of ``PATH``, the Python the supervisor runs
  on and thirdshift's package;
- read-write, the worktree, with its git folders as :mod:`.gitdirs` says;
- what ``Sandbox(read=..., write=...)`` and the testing toolkit add;
- and over all of that, a private empty folder where the logs folder or the skills' source
  would show: nothing above may reveal them.

Mounts are ordered by depth (a folder before what is mounted inside it), keeping the order
above among equals, so that a later, deeper mount refines an earlier one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from thirdshift._machine.sandbox.gitdirs import git_view
from thirdshift._machine.sandbox.homes import PrivateHome

SYSTEM = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
)
"""What a sandbox shows of the system, read-only, where it exists."""
MASKED = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/sudoers",
    "/etc/sudoers.d",
)
"""Files of the system that hold secrets: hidden, whatever user the session runs as (its root
owns them, and in a sandbox of root's, they would be readable)."""

Kind = Literal["ro", "rw", "tmpfs", "symlink", "dev", "proc", "mask"]


@dataclass(frozen=True)
class Mount:
    """One mount of the sandbox: ``kind`` at ``dest``, from ``source`` (a link's target)."""

    kind: Kind
    dest: Path
    source: Path | None = None

    def argv(self) -> list[str]:
        """The ``bwrap`` options that make it."""
        dest, source = str(self.dest), str(self.source)
        options: dict[Kind, list[str]] = {
            "ro": ["--ro-bind", source, dest],
            "rw": ["--bind", source, dest],
            "tmpfs": ["--tmpfs", dest],
            "symlink": ["--symlink", source, dest],
            "dev": ["--dev", dest],
            "proc": ["--proc", dest],
            # A folder hidden by an empty one, a file by an empty device it cannot open.
            "mask": ["--tmpfs", dest] if self.source is None else ["--ro-bind", source, dest],
        }
        return options[self.kind]


@dataclass(frozen=True)
class Seen:
    """What the view is made from: the session's places, and what is added."""

    worktree: Path
    home: PrivateHome
    program: Path
    path: str
    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()


def mounts(seen: Seen) -> list[Mount]:
    """Every mount of the view, in the order ``bwrap`` must make them."""
    made: list[Mount] = [*_system(), Mount("proc", Path("/proc")), Mount("dev", Path("/dev"))]
    made.append(Mount("tmpfs", Path("/tmp")))
    made.append(Mount("rw", seen.home.inside, seen.home.folder))
    made += [Mount("rw", inside, folder) for folder, inside in seen.home.elsewhere]
    running = [*program_roots(seen.program), *_path_folders(seen.path), *_python()]
    made += [Mount("ro", path, path.resolve()) for path in _kept(running)]
    worktree = seen.worktree
    made.append(Mount("rw", worktree, worktree))
    git = git_view(worktree)
    made += [Mount("ro", path, path) for path in git.read_only]
    made += [Mount("rw", path, path) for path in git.writable]
    made += [Mount("ro", path, path) for path in git.guarded]
    made += [Mount("ro", path, path) for path in seen.read if path.exists()]
    made += [Mount("rw", path, path) for path in seen.write if path.exists()]
    made += [Mount("mask", shown) for shown in _where_shown(seen.hidden, made)]
    return _in_order(made)


def _system() -> list[Mount]:
    found: list[Mount] = []
    for name in SYSTEM:
        path = Path(name)
        if path.is_symlink():
            found.append(Mount("symlink", path, Path(os.readlink(path))))
        elif path.is_dir():
            found.append(Mount("ro", path, path))
    for name in MASKED:
        path = Path(name)
        if path.is_dir() and not path.is_symlink():
            found.append(Mount("mask", path))
        elif path.exists():
            found.append(Mount("mask", path, Path(os.devnull)))
    return found


def _root_of(path: Path) -> Path:
    """The folder a program's file needs beside it: its whole ``node_modules`` (the outermost
    one on its path), where it is in one; else the folder it is in."""
    parts = path.parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules") + 1])
    return path.parent


def program_roots(program: Path) -> list[Path]:
    """The folders to show for ``program`` (absolute, as found on PATH): that of the path and
    of each link on the way to the file, so that every hop resolves inside as outside."""
    roots, path = [], Path(os.path.normpath(program))
    for _ in range(40):  # the kernel follows no more links than this either
        roots.append(_root_of(path))
        if not path.is_symlink():
            break
        path = Path(os.path.normpath(path.parent / os.readlink(path)))
    return roots


def _path_folders(path: str) -> list[Path]:
    """The folders of ``PATH`` (absolute ones only: thirdshift runs no other), each as a
    program in it needs it: a ``node_modules/.bin`` as its whole ``node_modules``, where its
    programs' links lead."""
    return [
        _root_of(Path(entry) / "program")
        for entry in path.split(os.pathsep)
        if os.path.isabs(entry)
    ]


def _python() -> list[Path]:
    """What the supervisor, and a fake CLI, run on inside: this Python and thirdshift."""
    package = Path(__file__).resolve().parents[2]  # thirdshift/_machine/sandbox/view.py
    return [*program_roots(Path(sys.executable)), Path(sys.prefix), Path(sys.base_prefix), package]


def _kept(paths: Iterable[Path]) -> list[Path]:
    """The folders of ``paths`` that exist and that neither a system folder nor another of
    them already shows, once each."""
    kept: list[Path] = []
    shown = [Path(name) for name in SYSTEM]
    for path in sorted((p for p in paths if p.is_dir()), key=lambda p: len(p.parts)):
        if any(path == other or other in path.parents for other in (*shown, *kept)):
            continue
        kept.append(path)
    return kept


def _where_shown(hidden: Iterable[Path], made: list[Mount]) -> list[Path]:
    """Where inside the sandbox a bind of ``made`` would show each of ``hidden`` (to be hidden
    there, under an empty folder): a bind shows what is below its source."""
    found: list[Path] = []
    for path in (p.resolve() for p in hidden):
        for mount in made:
            if mount.kind not in ("ro", "rw") or mount.source is None:
                continue
            source = mount.source.resolve()
            if source == path or source in path.parents:
                where = mount.dest / path.relative_to(source)
                if where not in found:
                    found.append(where)
    return found


def _in_order(made: list[Mount]) -> list[Mount]:
    """Folders before what is mounted in them: by depth, the order made among equals."""
    return sorted(made, key=lambda mount: len(mount.dest.parts))
