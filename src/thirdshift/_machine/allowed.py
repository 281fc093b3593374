"""Which containments this machine allows, and the session cgroups of the ``cgroup`` one.

Looked at once per process, the first time a session starts (or ``thirdshift check`` asks):

- ``cgroup`` where a cgroup v2 hierarchy is mounted (found in ``/proc/self/mountinfo``, e.g.
  ``/sys/fs/cgroup`` or, in hybrid mode, ``/sys/fs/cgroup/unified``) and the cgroup this
  process is in (``/proc/self/cgroup``) lets it make a child with ``cgroup.kill`` and move
  processes into it: as root, or in a delegated subtree such as systemd's ``user@UID.service``;
- ``namespace`` where the supervisor, run as a probe, can make PID and mount namespaces (a user
  namespace too, when not root) and mount a ``/proc`` inside;
- ``scan`` always.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from thirdshift._containment import Containment
from thirdshift._machine.launch import SUPERVISOR, launch_argv
from thirdshift._machine.supervisor import protocol as program
from thirdshift.errors import ConfigurationError, ThirdshiftError

_PREFIX = "thirdshift-"


@dataclass(frozen=True)
class _Machine:
    allowed: tuple[str, ...]
    cgroup_parent: Path | None
    """Where session cgroups are made, if the cgroup containment is allowed."""


@functools.cache
def _machine() -> _Machine:
    """What this machine allows, looked at once per process (functools.cache locks for us)."""
    parent = cgroup_parent()
    found = [program.CGROUP] if parent is not None else []
    if _namespace_allowed():
        found.append(program.NAMESPACE)
    return _Machine(allowed=(*found, program.SCAN), cgroup_parent=parent)


def allowed() -> tuple[str, ...]:
    """The containments this machine allows this process, most isolated first."""
    return _machine().allowed


def resolved(requested: Containment) -> str:
    """The containment a session runs under: ``requested``, or the first allowed for ``auto``.

    Forcing one this machine does not allow is an error, raised before anything starts.
    """
    here = allowed()
    if requested == "auto":
        return here[0]
    if requested not in here:
        raise ConfigurationError(
            f"containment {requested!r} is not allowed on this machine "
            f"(allowed: {', '.join(here)}); see docs/stopping.md"
        )
    return requested


def _namespace_allowed() -> bool:
    try:
        probe = subprocess.run(  # noqa: S603 - our own program, no shell
            launch_argv(SUPERVISOR, [program.PROBE]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _unescaped(field: str) -> str:
    """A path as mountinfo writes it: space, tab, newline and backslash as octal escapes."""
    for code in ("040", "011", "012", "134"):
        field = field.replace(f"\\{code}", chr(int(code, 8)))
    return field


def _cgroup2_mount() -> tuple[str, str] | None:
    """The cgroup v2 hierarchy's mount point here and the cgroup path it shows as its root."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        before, _, after = line.partition(" - ")
        fields = before.split()
        if after.split()[:1] == ["cgroup2"] and len(fields) >= 5:
            return _unescaped(fields[4]), _unescaped(fields[3])
    return None


def _own_cgroup() -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:]
    return None


def cgroup_parent() -> Path | None:
    """The cgroup v2 folder this process is in, if it may make session cgroups below it."""
    mount, own = _cgroup2_mount(), _own_cgroup()
    if mount is None or own is None:
        return None
    point, root = mount
    if not own.startswith(root):
        return None  # our cgroup is outside what this mount shows
    parent = Path(point, own[len(root) :].lstrip("/"))
    if not os.access(parent, os.W_OK | os.X_OK) or not os.access(parent / "cgroup.procs", os.W_OK):
        return None
    try:
        trial = SessionCgroup.create(parent)
    except OSError:
        return None
    has_kill = (trial.path / "cgroup.kill").exists()
    trial.remove()
    return parent if has_kill else None


class SessionCgroup:
    """One session's cgroup: made before the supervisor starts, removed once it is empty.

    The adapter keeps it to check for itself that nothing is left (``populated 0``) and to kill
    what is, should the supervisor be lost or lie; it never trusts the supervisor's word alone.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    @classmethod
    def create(cls, parent: Path | None = None) -> SessionCgroup:
        if parent is None:
            parent = _machine().cgroup_parent
        if parent is None:
            raise ThirdshiftError("no cgroup v2 folder may be made here")
        _remove_stale(parent)
        path = parent / f"{_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        path.mkdir(mode=0o755)
        return cls(path)

    def populated(self) -> bool:
        try:
            events = (self.path / "cgroup.events").read_text(encoding="ascii")
        except OSError:
            return False  # removed: nothing can be in it
        return "populated 0" not in events.splitlines()

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            (self.path / "cgroup.kill").write_text("1", encoding="ascii")

    def kill_and_wait(self, seconds: float) -> bool:
        """``cgroup.kill``, then wait up to ``seconds`` for it to empty; True once empty."""
        if not self.populated():
            return True
        self.kill()
        deadline = time.monotonic() + seconds
        while self.populated():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def remove(self) -> str | None:
        """Let go of the folder and remove it, and first every cgroup made inside it, deepest
        first; one still populated is killed first. What was left, and why, or None.

        The session's processes may make cgroups of their own inside its cgroup (where they
        may write it: as root, or in a delegated subtree), and a cgroup with one inside cannot
        be removed: the session's was left behind for good. ``cgroup.kill`` ends the processes
        in all of them; then each goes once it is empty.
        """
        self.kill_and_wait(program.KILL_WAIT_SECONDS)
        deadline = time.monotonic() + _REMOVE_SECONDS
        try:
            inner = _inner_removed(self.fd, self.path, deadline)
        finally:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        if inner is not None:
            where, why = inner
            return (
                f"could not remove the session's cgroup {self.path}: {where}, made inside it, "
                f"could not be removed: {why}"
            )
        reason = _removed(str(self.path), None, deadline)
        if reason is None:
            return None
        return f"could not remove the session's cgroup {self.path}: {reason}"


# How long a removal waits for the last members' exits to be accounted (EBUSY till then).
_REMOVE_SECONDS = 1.0


def _inner_removed(fd: int, path: Path, deadline: float) -> tuple[Path, str] | None:
    """Remove every cgroup inside the one open at ``fd`` (``path``), the deepest first; the
    first that could not be, and why."""
    problem = None
    try:
        for folder, inner, _, folder_fd in os.fwalk(dir_fd=fd, topdown=False):
            for name in inner:
                why = _removed(name, folder_fd, deadline)
                if why is not None and problem is None:
                    problem = (Path(os.path.normpath(path / folder / name)), why)
    except OSError as error:
        problem = problem or (path, error.strerror or str(error))
    return problem


def _removed(path: str, dir_fd: int | None, deadline: float) -> str | None:
    """Remove the (empty) cgroup at ``path``; why it could not be, or None (gone already too)."""
    while True:
        try:
            os.rmdir(path, dir_fd=dir_fd)
            return None
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return error.strerror or str(error)
        time.sleep(0.01)  # the last member's exit is still being accounted


_stale_checked: set[Path] = set()


def _remove_stale(parent: Path) -> None:
    """Once per parent: remove empty session cgroups left by processes that no longer live
    (an orchestrator SIGKILLed before it could remove its own)."""
    if parent in _stale_checked:
        return
    _stale_checked.add(parent)
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            owner = entry.name[len(_PREFIX) :].split("-", 1)[0]
            if entry.name.startswith(_PREFIX) and owner.isdigit() and not _alive(int(owner)):
                with contextlib.suppress(OSError):
                    fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    try:
                        _inner_removed(fd, entry, time.monotonic())  # none with anything in it
                    finally:
                        os.close(fd)
                    entry.rmdir()


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()
