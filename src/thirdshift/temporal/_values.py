"""What a session activity takes and returns: plain frozen dataclasses, which Temporal's default
converter carries as JSON (by their type hints), so that workflow code can build and read them.

Nothing here imports the engine or process code: workflow code imports this module too. No
``from __future__ import annotations``: the converter reads the fields' types from the
classes, in the workflow sandbox too, where a type named only as a string may not resolve.
"""

from dataclasses import dataclass
from typing import Any

from thirdshift._budget import Budget
from thirdshift._sandbox import Sandbox
from thirdshift._watchdogs import Watchdogs

RUN_SESSION = "thirdshift.run_session"
"""The activity that runs one session (and its Resume) on the host whose queue it was sent to."""
HOST_QUEUE = "thirdshift.host_queue"
"""The activity, on the fleet's shared queue, that names the task queue of the host it ran on."""

NON_RETRYABLE_TYPES = (
    "AuthFailed",
    "BudgetExhausted",
    "CLINotFound",
    "ConfigurationError",
    "LogLimitReached",
    "RequestRefused",
    "ResumeTargetMissing",
    "SandboxUnavailable",
    "SessionStalled",
    "TurnLimitReached",
    "WorkKilledAgain",
)
"""Thirdshift failures that no retry can cure: a retry policy lists them as never retried, on
top of each error's own ``non_retryable``."""


@dataclass(frozen=True)
class SessionRequest:
    """One session to run in ``worktree`` (a folder on the host), as ``thirdshift run`` would.

    ``kind`` labels it (its log's name), ``harness`` names the CLI; ``model``, ``effort`` and
    ``extra_args`` are the :class:`~thirdshift.Choice`'s; ``name`` is the log name (default:
    the worktree folder's name). ``watchdogs`` is ``within``'s :class:`~thirdshift.Watchdogs`,
    passed unchanged (checked when made). ``budget`` spans the first session and its Resume.
    ``resume`` is the id of a session to continue with ``prompt`` (a review's findings sent
    back to the implementer's session): send the request to the host queue that ran that
    session (its result's ``host``), whose CLI holds it; an id the CLI does not know fails as
    ``ResumeTargetMissing``, not retried. ``sandbox`` is what the session may reach beyond
    the worker's sandbox (paths within the worker's worktree roots, endpoints the worker
    allows: :class:`~thirdshift.temporal.WorkerPolicy`); a worker with its sandbox on runs every
    session in one, with or without it. ``env_policy`` ``None`` is ``minimal`` in a sandbox,
    ``inherit`` without.
    """

    worktree: str
    kind: str
    prompt: str
    harness: str = "claude"
    model: str | None = None
    effort: str | None = None
    extra_args: tuple[str, ...] = ()
    name: str | None = None
    skills: str | None = None
    env_policy: str | None = None
    containment: str = "auto"
    watchdogs: Watchdogs = Watchdogs()
    budget: Budget | None = None
    resume: str | None = None
    sandbox: Sandbox | None = None

    def __post_init__(self) -> None:
        # A relative folder would be taken relative to wherever the worker was started.
        if not self.worktree.startswith("/"):
            raise ValueError(
                f"SessionRequest worktree must be an absolute path (a folder on the host), not "
                f"{self.worktree!r}: the worker runs it from its own current folder"
            )
        if not isinstance(self.watchdogs, Watchdogs):
            raise TypeError(
                f"SessionRequest watchdogs must be a thirdshift.Watchdogs, not {self.watchdogs!r}"
            )


@dataclass(frozen=True)
class SessionResult:
    """What one ``thirdshift.run_session`` ended with.

    ``records`` holds each session it ran (first, Resume), over all its attempts, each as
    ``thirdshift run --json`` writes it (an earlier attempt's as its heartbeats carried it, its
    texts cut); ``endings`` the sessions that ended with killed work and were not resumed away
    (:attr:`~thirdshift.Sessions.endings`); ``host`` the task queue it ran on.
    """

    final_message: str | None
    session_id: str | None
    records: tuple[dict[str, Any], ...] = ()
    endings: tuple[str, ...] = ()
    host: str = ""
