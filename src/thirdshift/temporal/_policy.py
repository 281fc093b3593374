"""What a worker lets a request ask for: its policy, which no request can loosen.

A request comes from whoever can reach the Temporal frontend, and a frontend without
credentials is anyone on the machine (or the network): a request's ``extra_args`` can carry a
CLI's ``--settings`` with a hook that runs before the agent does, as the worker's user. So the
worker holds a :class:`WorkerPolicy` and :func:`refusal` checks each request against it before
anything runs; a refused request fails once, not retried, as :class:`RequestRefused` naming the
rule. Every rule is one clause of :func:`refusal`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from thirdshift._containment import CONTAINMENTS, checked_containment
from thirdshift.errors import ConfigurationError
from thirdshift.temporal._values import SessionRequest

# From the most isolated down: a request may ask for a containment no weaker than the worker's.
_STRENGTH = ("cgroup", "namespace", "scan")


class RequestRefused(ConfigurationError):
    """A request asked for what the worker's policy does not allow; ``rule`` names the rule
    (``worktrees``, ``extra_args``, ``containment``)."""

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        super().__init__(f"refused by the worker's policy ({rule}): {message}")


@dataclass(frozen=True)
class WorkerPolicy:
    """What a worker lets a request ask for.

    ``worktrees``: the folders a request's worktree must resolve inside (empty: anywhere);
    ``allow_extra_args``: whether a request may pass ``extra_args`` to its CLI (off: refused,
    since a flag such as Claude's ``--settings`` runs code of the request's choosing);
    ``containment``: the weakest containment a request may ask for (``auto``: the most
    isolated this machine allows, which is what a request's ``auto`` gets too).
    """

    worktrees: tuple[str, ...] = ()
    allow_extra_args: bool = False
    containment: str = "auto"

    def __post_init__(self) -> None:
        checked_containment(self.containment)
        if isinstance(self.worktrees, str | bytes):
            raise TypeError("worktrees must be a sequence of folders, not one string")
        object.__setattr__(self, "worktrees", tuple(str(root) for root in self.worktrees))
        for root in self.worktrees:
            if not root or not os.path.isabs(root):
                raise ValueError(f"a worktrees root must be an absolute path, not {root!r}")


def _machine_allows() -> Sequence[str]:
    # Only when a request names a containment: the adapter is imported on first use.
    from thirdshift._machine.allowed import allowed

    return allowed()


def refusal(
    policy: WorkerPolicy,
    request: SessionRequest,
    *,
    allowed: Callable[[], Sequence[str]] = _machine_allows,
) -> RequestRefused | None:
    """Why ``policy`` refuses ``request``, or ``None``; ``allowed`` gives the containments this
    machine allows, most isolated first."""
    if policy.worktrees and not _inside(request.worktree, policy.worktrees):
        roots = ", ".join(policy.worktrees)
        return RequestRefused(
            "worktrees", f"worktree {request.worktree!r} resolves outside every root ({roots})"
        )
    if request.extra_args and not policy.allow_extra_args:
        return RequestRefused(
            "extra_args",
            "the request passes extra_args to its CLI, which this worker does not allow "
            "(thirdshift worker --allow-extra-args)",
        )
    asked = request.containment
    if asked != "auto" and asked in CONTAINMENTS:
        here = allowed()
        least = here[0] if policy.containment == "auto" else policy.containment
        if _STRENGTH.index(asked) > _STRENGTH.index(least):
            return RequestRefused(
                "containment",
                f"containment {asked!r} is weaker than this worker's ({least!r})",
            )
    return None


def _inside(worktree: str, roots: tuple[str, ...]) -> bool:
    try:
        real = Path(os.path.realpath(worktree))
    except (OSError, ValueError):
        return False
    return any(real.is_relative_to(os.path.realpath(root)) for root in roots)
