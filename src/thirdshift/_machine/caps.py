"""Caps on how many processes a session may have and how much memory they may use.

Through cgroups, the kernel's own accounting: a fork bomb in one session then stops at its
cap instead of taking the user's last process slot from every other session (and from the
orchestrator), and a session over its memory cap has its own processes killed by the OOM
killer, not the orchestrator. Where the controllers are:

- cgroup v2, on the session's own cgroup (the ``cgroup`` containment), where the ``pids`` and
  ``memory`` controllers are delegated to it (listed in its ``cgroup.controllers``);
- else the v1 ``pids`` and ``memory`` hierarchies, where they are mounted (a hybrid mount, as
  on older systemd hosts and many CI machines) and this process may make cgroups below its own
  there: a cgroup of the session's own in each, which the CLI joins before it execs.

Where neither is, no cap is set: the default cap (:data:`~thirdshift._sandbox.DEFAULT_PIDS`
processes) is then skipped, and a cap a Sandbox asks for explicitly fails the session before it
starts with :class:`~thirdshift.errors.SandboxUnavailable` (never silently uncapped).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from thirdshift._sandbox import DEFAULT_PIDS
from thirdshift.errors import SandboxUnavailable

_PREFIX = "thirdshift-"
# v1 and v2 name their files differently.
_V1_FILES = {
    "pids": ("pids.max",),
    "memory": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
}
_V2_FILES = {"pids": ("pids.max",), "memory": ("memory.max", "memory.swap.max")}


@dataclass(frozen=True)
class Caps:
    """At most ``pids`` processes and ``memory`` bytes for one session (``None``: no cap);
    ``required`` names those that were asked for, not defaults: they must be set."""

    pids: int | None = DEFAULT_PIDS
    memory: int | None = None
    required: frozenset[str] = frozenset()

    def wanted(self) -> dict[str, int]:
        """Each cap to set, by controller."""
        found = {"pids": self.pids, "memory": self.memory}
        return {name: value for name, value in found.items() if value is not None}


def _values(controller: str, limit: int, files: tuple[str, ...]) -> list[tuple[str, str]]:
    """What to write where for ``limit``: swap capped at nothing in v2 (else memory would
    swap rather than be capped), memory and swap together at the limit in v1."""
    if controller == "memory" and files == _V2_FILES["memory"]:
        return [(files[0], str(limit)), (files[1], "0")]
    return [(name, str(limit)) for name in files]


def _v1_mounts() -> dict[str, tuple[str, str]]:
    """Each v1 controller's mount point and the root path it shows, from mountinfo."""
    found: dict[str, tuple[str, str]] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return found
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or tail[:1] != ["cgroup"] or len(tail) < 3:
            continue
        for option in tail[2].split(","):
            if option in _V1_FILES:
                found[option] = (fields[4], fields[3])
    return found


def _v1_own(controller: str) -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        _, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if controller in names.split(","):
            return path
    return None


def _v1_parent(controller: str) -> Path | None:
    """Where this process may make a cgroup of ``controller``'s v1 hierarchy, if anywhere."""
    mount = _v1_mounts().get(controller)
    own = _v1_own(controller)
    if mount is None or own is None:
        return None
    point, root = mount
    if not own.startswith(root):
        return None
    parent = Path(point, own[len(root) :].lstrip("/"))
    if not os.access(parent, os.W_OK | os.X_OK):
        return None
    return parent


class CapGroups:
    """The cgroups that cap one session: each made for it, and joined by its CLI."""

    def __init__(self) -> None:
        self.folders: list[Path] = []
        self.fds: list[int] = []
        """The folders the CLI joins (each a descriptor, for the supervisor to hand on)."""
        self.applied: dict[str, int] = {}
        """Each cap set, by controller."""

    @classmethod
    def create(cls, caps: Caps, session_cgroup: Path | None) -> CapGroups:
        """Set ``caps`` where this machine allows, on ``session_cgroup`` (v2) where it may;
        :class:`SandboxUnavailable` when a required cap can be set nowhere."""
        made = cls()
        try:
            for controller, limit in caps.wanted().items():
                set_here = made._apply(controller, limit, session_cgroup)
                if not set_here and controller in caps.required:
                    raise SandboxUnavailable(
                        f"cannot cap the session's {controller} here: no cgroup v2 '{controller}' "
                        f"controller is delegated to it and no v1 '{controller}' hierarchy is "
                        "writable (docs/security.md)"
                    )
        except BaseException:
            made.remove()
            raise
        return made

    def _apply(self, controller: str, limit: int, session_cgroup: Path | None) -> bool:
        v2 = _values(controller, limit, _V2_FILES[controller])
        if (
            session_cgroup is not None
            and _delegated(session_cgroup, controller)
            and _written(session_cgroup, v2)
        ):
            self.applied[controller] = limit
            return True
        parent = _v1_parent(controller)
        if parent is None:
            return False
        folder = parent / f"{_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        try:
            folder.mkdir(mode=0o755)
        except OSError:
            return False
        self.folders.append(folder)
        if not _written(folder, _values(controller, limit, _V1_FILES[controller])):
            return False
        self.fds.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        self.applied[controller] = limit
        return True

    def remove(self) -> None:
        """Let go of the cgroups made, once their processes are gone."""
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []
        for folder in self.folders:
            for _ in range(100):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as error:
                    if error.errno != errno.EBUSY:
                        break
                    time.sleep(0.01)  # the last member's exit is still being accounted
        self.folders = []


def _delegated(cgroup: Path, controller: str) -> bool:
    try:
        return controller in (cgroup / "cgroup.controllers").read_text(encoding="ascii").split()
    except OSError:
        return False


def _written(folder: Path, values: list[tuple[str, str]]) -> bool:
    """Write each value; the first file must take it (the rest, swap, are best effort)."""
    for index, (name, value) in enumerate(values):
        try:
            (folder / name).write_text(value, encoding="ascii")
        except OSError:
            if index == 0:
                return False
    return True


DEFAULT_CAPS = Caps()
"""What caps every session without a Sandbox: the default number of processes."""
