"""The workflow side: claim a host, run a session there. Safe to import in workflow code.

Workflow code runs in Temporal's sandbox, which re-imports every module it is given; this one
imports only the engine's workflow API and, passed through, the plain values of
:mod:`thirdshift.temporal._values`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from thirdshift.temporal._values import (
        HOST_QUEUE,
        NON_RETRYABLE_TYPES,
        RUN_SESSION,
        SessionRequest,
        SessionResult,
    )

HEARTBEAT_TIMEOUT = timedelta(seconds=30)
"""A session that sends no heartbeat for this long (its worker gone) is retried elsewhere, and
a cancel reaches a running session within it."""
CLAIM_TIMEOUT = timedelta(minutes=1)
UNLIMITED_SESSION = timedelta(hours=24)
"""The start-to-close timeout of a request whose watchdogs set no ``wall``."""


FIRST_RETRY = timedelta(seconds=1)
LONGEST_RETRY = timedelta(hours=1)


def retry_policy() -> RetryPolicy:
    """The default: a lost or stopped worker's attempt is retried after 1 s, doubling (once
    its heartbeat timeout has told the server it is gone; it then waits in the host's queue for
    a worker); an API limit sets its own delay, until the time its CLI said, else from 60 s
    doubling, as ``wait_for_limits`` waits one out, up to the policy's maximum interval of an
    hour (:mod:`thirdshift.temporal._failures`); a non-retryable failure is never retried."""
    return RetryPolicy(
        initial_interval=FIRST_RETRY,
        backoff_coefficient=2.0,
        maximum_interval=LONGEST_RETRY,
        non_retryable_error_types=list(NON_RETRYABLE_TYPES),
    )


def start_to_close(request: SessionRequest) -> timedelta:
    """Long enough for the session and its Resume to each run to the request's ``wall``
    watchdog and be stopped through every stop signal's grace; a day when it has no ``wall``.

    No check here: the request's :class:`~thirdshift.Watchdogs` was checked when it was made.
    """
    watchdogs = request.watchdogs
    if watchdogs.wall is None:
        return UNLIMITED_SESSION
    one = watchdogs.wall + 4 * watchdogs.stop_grace + 60
    return timedelta(seconds=2 * one)


async def claim_host(task_queue: str) -> str:
    """The task queue of a host, from whichever worker on the shared ``task_queue`` answers
    first: send every session of one worktree there (a Resume needs the same machine)."""
    host: str = await workflow.execute_activity(
        HOST_QUEUE,
        task_queue=task_queue,
        start_to_close_timeout=CLAIM_TIMEOUT,
        result_type=str,
    )
    return host


async def run_session(request: SessionRequest, *, task_queue: str, **options: Any) -> SessionResult:
    """Run ``request`` as the ``thirdshift.run_session`` activity on ``task_queue`` (a host's).

    ``options`` are ``workflow.execute_activity``'s own, over these defaults: a heartbeat
    timeout of 30 s, a start-to-close timeout from the request's watchdogs, :func:`retry_policy`
    (a lost worker's session is continued about 30 s later, limits wait their own time), and a
    cancel that waits until the session's processes are stopped.
    """
    chosen: dict[str, Any] = {
        "heartbeat_timeout": HEARTBEAT_TIMEOUT,
        "start_to_close_timeout": start_to_close(request),
        "retry_policy": retry_policy(),
        "cancellation_type": ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        **options,
    }
    result: SessionResult = await workflow.execute_activity(
        RUN_SESSION, request, task_queue=task_queue, result_type=SessionResult, **chosen
    )
    return result
