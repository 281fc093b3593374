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
from thirdshift._sandbox import Sandbox, endpoint
from thirdshift.errors import ConfigurationError
from thirdshift.temporal._values import SessionRequest

# From the most isolated down: a request may ask for a containment no weaker than the worker's.
_STRENGTH = ("cgroup", "namespace", "scan")


class RequestRefused(ConfigurationError):
    """A request asked for what the worker's policy does not allow; ``rule`` names the rule
    (``worktrees``, ``extra_args``, ``containment``, ``sandbox``)."""

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
    isolated this machine allows, which is what a request's ``auto`` gets too);
    ``sandbox``: whether every session runs in a :class:`~thirdshift.Sandbox` (on by default:
    a fleet is the most unattended place there is), which no request can turn off;
    ``network``: the endpoints every sandboxed session may reach besides its model API, and
    the only ones a request's own ``sandbox`` may name. A request's sandbox paths must lie
    inside ``worktrees`` (without roots, inside its own worktree).
    """

    worktrees: tuple[str, ...] = ()
    allow_extra_args: bool = False
    containment: str = "auto"
    sandbox: bool = True
    network: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        checked_containment(self.containment)
        if isinstance(self.worktrees, str | bytes):
            raise TypeError("worktrees must be a sequence of folders, not one string")
        object.__setattr__(self, "worktrees", tuple(str(root) for root in self.worktrees))
        if isinstance(self.network, str):
            raise TypeError("network must be a sequence of endpoints, not one string")
        object.__setattr__(self, "network", Sandbox(network=tuple(self.network)).network)
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
    return _sandbox_refusal(policy, request)


def _sandbox_refusal(policy: WorkerPolicy, request: SessionRequest) -> RequestRefused | None:
    """What of a request's own sandbox the policy refuses: paths outside the worktree roots
    (or its worktree), endpoints the worker does not allow."""
    asked = request.sandbox
    if asked is None:
        return None
    roots = policy.worktrees or (request.worktree,)
    for path in (*asked.read, *asked.write):
        if not _inside(path, roots):
            return RequestRefused(
                "sandbox", f"the request's sandbox adds {path!r}, outside {', '.join(roots)}"
            )
    allowed = {endpoint(text) for text in policy.network}
    for text in asked.network:
        if endpoint(text) not in allowed:
            return RequestRefused(
                "sandbox",
                f"the request's sandbox reaches {text!r}, which this worker does not allow "
                "(thirdshift worker --allow-net)",
            )
    return None


def sandbox_for(policy: WorkerPolicy, request: SessionRequest) -> Sandbox | None:
    """The Sandbox a request's session runs in, once :func:`refusal` let it through: the
    request's, with the worker's endpoints; the worker's own where it asks for none and the
    worker's sandbox is on; else none."""
    asked = request.sandbox
    if asked is None:
        return Sandbox(network=policy.network) if policy.sandbox else None
    return Sandbox(
        network=tuple(dict.fromkeys((*policy.network, *asked.network))),
        read=asked.read,
        write=asked.write,
        pids=asked.pids,
        memory=asked.memory,
    )


def _inside(worktree: str, roots: tuple[str, ...]) -> bool:
    try:
        real = Path(os.path.realpath(worktree))
    except (OSError, ValueError):
        return False
    return any(real.is_relative_to(os.path.realpath(root)) for root in roots)
