"""How a session's processes are held together so that a stop reaches every one of them.

A value of the bottom layer: the names, and the check of a name a user gave. What this machine
allows, and the kernel mechanisms themselves, are the machine adapter's
(:mod:`thirdshift._machine.allowed`); why each exists is in ``docs/stopping.md``.

- ``cgroup``: a cgroup v2 of the session's own; the stop ends with ``cgroup.kill``.
- ``namespace``: new PID and mount namespaces whose pid 1 is the supervisor; its end makes the
  kernel kill everything inside.
- ``scan``: the supervisor finds the session's processes in ``/proc`` (a child subreaper keeps
  them below it) and chases them down; nothing the kernel enforces.
- ``auto`` (the default): the first of these that the machine allows.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

Containment: TypeAlias = Literal["auto", "cgroup", "namespace", "scan"]
CONTAINMENTS: tuple[Containment, ...] = ("auto", "cgroup", "namespace", "scan")


def checked_containment(value: object) -> Containment:
    """``value`` if it names a containment; otherwise a ``ValueError`` listing the names."""
    for name in CONTAINMENTS:
        if value == name:
            return name
    raise ValueError(f"containment must be one of {', '.join(CONTAINMENTS)}, not {value!r}")
